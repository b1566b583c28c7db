#include "collectives/value_transform.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "collectives/hadamard.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {
namespace {

// Every rank must rotate alike; the signs depend only on this seed and the entry's position, so
// one tensor's error-feedback residual stays in the same rotated basis from call to call.
constexpr std::uint64_t kRotationSeed = 0x646C6370'726F7461ull;

// Rotates, then rounds to the wire with `residual` as the error feedback (empty = none).
void transform_input(std::span<float> values, const CollectiveOptions& options,
                     std::span<float> residual, std::size_t block) {
  if (options.hadamard_rotation) hadamard_rotate(values, kRotationSeed);
  if (options.wire == WireDtype::kFloat32) return;
  if (residual.empty()) {
    wire::round_to_wire(values, options.wire, block);
    return;
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    values[i] += residual[i];
    residual[i] = values[i];
  }
  wire::round_to_wire(values, options.wire, block);
  for (std::size_t i = 0; i < values.size(); ++i) {
    residual[i] -= values[i];
    // An infinite or NaN input must not poison every later call through its residual.
    if (!std::isfinite(residual[i])) residual[i] = 0;
  }
}

}  // namespace

void prepare_allreduce_input(std::span<float> values, const CollectiveOptions& options,
                             std::size_t block) {
  transform_input(values, options, options.error_feedback, block);
}

void prepare_reduce_scatter_input(std::span<const float> input, std::span<float> copy,
                                  std::size_t shard, const CollectiveOptions& options,
                                  std::size_t block) {
  std::ranges::copy(input, copy.begin());
  if (shard == 0) return;
  for (std::size_t begin = 0; begin < copy.size(); begin += shard) {
    transform_input(copy.subspan(begin, shard), options,
                    options.error_feedback.empty() ? std::span<float>{}
                                                   : options.error_feedback.subspan(begin, shard),
                    block);
  }
}

void require_float32_values(const CollectiveOptions& options, const std::string& collective) {
  if (options.wire == WireDtype::kFloat32 && options.error_feedback.empty() &&
      !options.hadamard_rotation) {
    return;
  }
  throw Error(
      ErrorCode::kInvalidArgument, -1,
      collective + " sends float32 values as given: CollectiveOptions.wire (" +
          to_string(options.wire) +
          "), error_feedback and hadamard_rotation apply to reduce_scatter and allreduce only");
}

void finish_allreduce_output(std::span<float> values, const CollectiveOptions& options) {
  if (options.hadamard_rotation) hadamard_unrotate(values, kRotationSeed);
}

}  // namespace dlcp::collectives
