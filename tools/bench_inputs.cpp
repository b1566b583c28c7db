#include "bench_inputs.hpp"

#include <cmath>

namespace dlcp::tools {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Integer in [-1000, 1000], divided down by a per-4096-entry power of two so block magnitudes
// differ by up to 2^7.
float base_value(std::size_t i) {
  const auto raw = static_cast<std::int64_t>(mix(i) % 2001) - 1000;
  const auto shift = static_cast<int>(mix(i / 4096 + 0x5151) % 8);
  return static_cast<float>(raw / (std::int64_t{1} << shift));
}

}  // namespace

void fill_bench_input(std::span<float> values, int rank, int iteration) {
  const auto weight = static_cast<float>(rank + 1);
  const auto offset = static_cast<float>(iteration % 64);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = base_value(i) * weight + offset;
}

ErrorStats compare_with_exact_sum(std::span<const float> result, int ranks, int iteration,
                                  std::size_t first_index) {
  ErrorStats stats;
  const auto weight = static_cast<double>(ranks) * (ranks + 1) / 2.0;
  const auto offset = static_cast<double>(ranks) * (iteration % 64);
  for (std::size_t i = 0; i < result.size(); ++i) {
    const double exact = base_value(first_index + i) * weight + offset;
    const double error = static_cast<double>(result[i]) - exact;
    stats.max_abs_error = std::max(stats.max_abs_error, std::abs(error));
    stats.sum_error += error;
    stats.sum_abs_exact += std::abs(exact);
    stats.max_abs_exact = std::max(stats.max_abs_exact, std::abs(exact));
    if (error != 0) ++stats.wrong_entries;
  }
  stats.count = result.size();
  return stats;
}

std::uint64_t hash_bytes(std::span<const float> values) {
  std::uint64_t hash = 0xCBF29CE484222325ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t i = 0; i < values.size_bytes(); ++i) {
    hash = (hash ^ bytes[i]) * 0x100000001B3ull;
  }
  return hash;
}

}  // namespace dlcp::tools
