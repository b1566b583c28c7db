#include "collectives/reduction.hpp"

#include <algorithm>
#include <cassert>

#include "collectives/block_layout.hpp"

namespace dlcp::collectives {
namespace {

Range block_range(std::size_t b, std::size_t block, std::size_t size) {
  const std::size_t begin = b * block;
  return {begin, std::min(size, begin + block) - begin};
}

// The element-wise loops run in blocks of kLanes with a fixed trip count: g++ -O2's cost model
// vectorizes only loops that need no scalar remainder, and these loops are what a reduction
// costs per value. Element-wise, so the results are those of the plain loops.
constexpr std::size_t kLanes = 8;

void add_into(float* __restrict out, const float* __restrict add, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) out[i + j] += add[i + j];
  }
  for (; i < n; ++i) out[i] += add[i];
}

void divide_by(float* values, float divisor, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) values[i + j] /= divisor;
  }
  for (; i < n; ++i) values[i] /= divisor;
}

void multiply_by(float* values, float factor, std::size_t n) {
  std::size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (std::size_t j = 0; j < kLanes; ++j) values[i + j] *= factor;
  }
  for (; i < n; ++i) values[i] *= factor;
}

}  // namespace

float fallback_scale(ReduceOp op, int reduced_world, std::uint16_t input_contributions) {
  const float contributions = static_cast<float>(input_contributions);
  return op == ReduceOp::kSum ? static_cast<float>(reduced_world) / contributions
                              : 1.0f / contributions;
}

void accumulate(std::span<float> acc, std::span<std::uint16_t> acc_counts,
                std::span<const float> in, std::span<const std::uint16_t> in_counts,
                std::size_t block) {
  assert(acc.size() == in.size());
  assert(acc_counts.size() == in_counts.size());
  for (std::size_t b = 0; b < in_counts.size(); ++b) {
    if (in_counts[b] == 0) continue;
    acc_counts[b] = static_cast<std::uint16_t>(acc_counts[b] + in_counts[b]);
    const Range r = block_range(b, block, acc.size());
    add_into(acc.data() + r.begin, in.data() + r.begin, r.size);
  }
}

void sum_in_order(std::span<float> acc, std::span<const Contribution> contributions, Range entries,
                  std::size_t block) {
  if (entries.size == 0) return;
  float* out = acc.data();
  bool first = true;
  for (const Contribution& contribution : contributions) {
    assert(contribution.values.size() == acc.size());
    const float* add = contribution.values.data();
    for (std::size_t b = entries.begin / block; b * block < entries.end(); ++b) {
      const std::size_t begin = std::max(entries.begin, b * block);
      const std::size_t end = std::min(entries.end(), (b + 1) * block);
      if (contribution.counts[b] == 0) {
        // -0.0 is addition's exact identity (-0 + x == x, even for x = +0), so the next
        // contribution that arrived lands as if copied.
        if (first) std::fill(out + begin, out + end, -0.0f);
        continue;
      }
      if (first) {
        std::copy(add + begin, add + end, out + begin);
      } else {
        add_into(out + begin, add + begin, end - begin);
      }
    }
    first = false;
  }
}

void sum_counts(std::span<std::uint16_t> acc_counts, std::span<const Contribution> contributions) {
  std::ranges::fill(acc_counts, std::uint16_t{0});
  for (const Contribution& contribution : contributions) {
    assert(contribution.counts.size() == acc_counts.size());
    for (std::size_t b = 0; b < acc_counts.size(); ++b) {
      acc_counts[b] = static_cast<std::uint16_t>(acc_counts[b] + contribution.counts[b]);
    }
  }
}

void clear_missing(std::span<float> values, std::span<const std::uint16_t> counts,
                   std::size_t block) {
  for (std::size_t b = 0; b < counts.size(); ++b) {
    if (counts[b] != 0) continue;
    const Range r = block_range(b, block, values.size());
    std::fill_n(values.begin() + static_cast<std::ptrdiff_t>(r.begin), r.size, 0.0f);
  }
}

FinalizeStats finalize(std::span<float> values, std::span<const std::uint16_t> counts,
                       std::size_t block, int world, ReduceOp op, Aggregation aggregation) {
  FinalizeStats stats;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    const Range r = block_range(b, block, values.size());
    const std::uint16_t count = counts[b];
    stats.contributions_expected += r.size * static_cast<std::uint64_t>(world);
    stats.contributions_received += r.size * std::uint64_t{count};
    float scale = 1.0f;
    if (count == 0) {
      scale = 0.0f;
    } else if (aggregation == Aggregation::kUnbiased) {
      // Division rather than multiplication by a reciprocal: with every contribution present
      // the average is then exactly what a reliable all-reduce computes.
      if (op == ReduceOp::kAverage) {
        divide_by(values.data() + r.begin, static_cast<float>(count), r.size);
        continue;
      }
      if (count == world) continue;
      scale = static_cast<float>(world) / static_cast<float>(count);
    } else if (op == ReduceOp::kAverage) {
      divide_by(values.data() + r.begin, static_cast<float>(world), r.size);
      continue;
    } else {
      continue;
    }
    multiply_by(values.data() + r.begin, scale, r.size);
  }
  return stats;
}

std::uint64_t fall_back_to_local(std::span<float> values, std::span<const std::uint16_t> counts,
                                 std::uint16_t required, std::span<const float> local, float scale,
                                 std::size_t block) {
  std::uint64_t fell_back = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    if (counts[b] >= required) continue;
    const Range r = block_range(b, block, values.size());
    for (std::size_t i = r.begin; i < r.end(); ++i) values[i] = local[i] * scale;
    fell_back += r.size;
  }
  return fell_back;
}

}  // namespace dlcp::collectives
