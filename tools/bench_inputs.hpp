// Inputs and checks of `dlcp bench allreduce`. Every rank can compute every other rank's input,
// so each rank knows the exact result without any extra communication:
//   input(r, i, iter) = a(i) * (r + 1) + iter, a(i) an integer in [-1000, 1000] whose magnitude
//   also varies block by block (so drop precedence has something to rank),
// and the exact sum over W ranks is a(i) * W(W+1)/2 + W * iter. All values are integers well
// below 2^24, so every partial sum is exact in float whatever the reduction order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dlcp::tools {

void fill_bench_input(std::span<float> values, int rank, int iteration);

// Error of `result` against the exact sum over `ranks` ranks; result[0] is the sum's entry
// `first_index` (a reduce-scatter's shard).
struct ErrorStats {
  double max_abs_error = 0;
  double sum_error = 0;      // signed
  double sum_abs_exact = 0;  // for normalising
  double max_abs_exact = 0;
  std::uint64_t count = 0;
  std::uint64_t wrong_entries = 0;
};
ErrorStats compare_with_exact_sum(std::span<const float> result, int ranks, int iteration,
                                  std::size_t first_index = 0);

// FNV-1a over the bytes: equal hashes on every rank mean bit-identical replicas (in practice).
std::uint64_t hash_bytes(std::span<const float> values);

}  // namespace dlcp::tools
