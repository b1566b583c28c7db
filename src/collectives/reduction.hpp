// Block-wise arithmetic of unbiased aggregation. Every block carries how many ranks' values are
// summed into it; a block that never arrived has count 0 and contributes nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "collectives/block_layout.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp::collectives {

// acc += in and acc_counts += in_counts for every block with in_counts[b] > 0. Blocks are
// `block` floats (the last may be short); the count spans hold one entry per block.
void accumulate(std::span<float> acc, std::span<std::uint16_t> acc_counts,
                std::span<const float> in, std::span<const std::uint16_t> in_counts,
                std::size_t block);

// One rank's contribution to a reduced range: its values and one count per block (0 = the block
// never arrived; its values are whatever the buffer held).
struct Contribution {
  std::span<const float> values;
  std::span<const std::uint16_t> counts;
};

// acc = the sum of the contributions that arrived, block by block, added in the order given (the
// first one that arrived is copied, each later one added: accumulate's arithmetic, so the order
// decides the rounding); only the entries in `entries` are written. Blocks are `block` floats
// from the spans' start, so `entries` may begin or end inside a block. acc must not overlap the
// contributions. An entry no contribution reached is left at -0.0.
void sum_in_order(std::span<float> acc, std::span<const Contribution> contributions, Range entries,
                  std::size_t block);

// acc_counts = the sum of the contributions' counts, block by block.
void sum_counts(std::span<std::uint16_t> acc_counts, std::span<const Contribution> contributions);

// Zeroes the values of blocks whose count is 0: their bytes are whatever the buffer held before.
void clear_missing(std::span<float> values, std::span<const std::uint16_t> counts,
                   std::size_t block);

struct FinalizeStats {
  std::uint64_t contributions_expected = 0;
  std::uint64_t contributions_received = 0;
};

// Turns per-block sums of `counts` contributions into the collective's result for `world` ranks:
//   unbiased: average = sum / count, sum = sum * world / count (exact when count == world);
//   zero-fill: average = sum / world, sum unchanged (lost contributions count as zero).
// A block with count 0 (every contribution lost) becomes 0.
FinalizeStats finalize(std::span<float> values, std::span<const std::uint16_t> counts,
                       std::size_t block, int world, ReduceOp op, Aggregation aggregation);

// What a block the broadcast side lost falls back to, as a multiple of the rank's input: the
// input's share of the result, when the input already sums `input_contributions` of the
// `reduced_world` workers (1 in a flat collective; a host's workers in a hierarchical one).
float fallback_scale(ReduceOp op, int reduced_world, std::uint16_t input_contributions);

// Broadcast-side fallback: every block whose count is below `required` takes local * scale.
// Returns the entries that fell back.
std::uint64_t fall_back_to_local(std::span<float> values, std::span<const std::uint16_t> counts,
                                 std::uint16_t required, std::span<const float> local, float scale,
                                 std::size_t block);

}  // namespace dlcp::collectives
