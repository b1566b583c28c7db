// Reduce-scatter: the reduce half of the transpose all-reduce. Worker j owns shard j, the n =
// output.size() values at j * n of every worker's input: every worker sends its shard j straight
// to j, segment by segment, and j reduces what arrived into its output. Each worker sends
// (W-1)/W of its input, receives as much, and nothing comes back.
//
// Shards start wherever n puts them, so segments and blocks (the unit of packets and of
// contribution counts) are cut from each shard's own start. The owner adds an entry's
// contributions in the order the transpose all-reduce of the whole input would (starting from the
// rank that owns the entry there), so without loss a float32 reduce-scatter gives that
// all-reduce's shard bit for bit, whatever n.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/reduction.hpp"
#include "collectives/value_transform.hpp"

namespace dlcp::collectives {
namespace {

bool overlap(std::span<const float> a, std::span<const float> b) {
  const std::less<const float*> before;
  return !a.empty() && !b.empty() && before(a.data(), b.data() + b.size()) &&
         before(b.data(), a.data() + a.size());
}

// Values that change before they travel (16-bit wire, rotation), or that the output would
// overwrite while they are still being sent (an in-place call), travel from a private copy: the
// caller's input is const.
bool needs_private_copy(std::span<const float> input, std::span<float> output,
                        const CollectiveOptions& options) {
  return options.wire != WireDtype::kFloat32 || options.hadamard_rotation || overlap(input, output);
}

}  // namespace

CollectiveResult reduce_scatter(const Group& g, std::uint32_t seq, std::span<const float> input,
                                std::span<float> output, const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = output.size();
  const int world = g.size;
  const std::size_t n = output.size();
  if (world == 1) {
    // Nothing travels, so nothing is rounded or rotated: the sum and the average of one input are
    // the input.
    if (n > 0 && input.data() != output.data()) {
      std::memmove(output.data(), input.data(), n * sizeof(float));
    }
    return result;
  }
  if (n == 0) return result;

  const std::size_t block = g.block_for(options.wire);
  const Range shard_range{0, n};
  const std::size_t segment =
      segment_floats(g.segment_bytes / sizeof(float), block, n, kMaxSegments);
  const std::size_t segments = segment_count(n, segment);
  const auto seg = [&](std::size_t k) { return segment_of(shard_range, segment, k); };
  const std::size_t shard_blocks = blocks_in(n, block);
  const auto seg_blocks = [&](std::span<std::uint16_t> counts, std::size_t k) {
    return counts.subspan(k * (segment / block), blocks_in(seg(k).size, block));
  };
  const auto shard = [&](std::span<const float> all, int j) {
    return all.subspan(static_cast<std::size_t>(j) * n, n);
  };
  const auto peers = static_cast<std::size_t>(world - 1);
  // Peer i (0 .. world-2) is rank (rank + 1 + i) % world.
  const auto peer = [&](std::size_t i) { return (g.rank + 1 + static_cast<int>(i)) % world; };

  std::span<const float> contribution = input;
  BufferPool<float>::Lease private_copy;
  if (needs_private_copy(input, output, options)) {
    private_copy = g.scratch.floats.acquire(input.size());
    prepare_reduce_scatter_input(input, private_copy.span(), n, options, block);
    contribution = private_copy.span();
  }

  auto incoming = g.scratch.floats.acquire(peers * n);
  auto incoming_counts = g.scratch.counts.acquire(peers * shard_blocks);
  auto own_counts = g.scratch.counts.acquire(shard_blocks);
  auto counts = g.scratch.counts.acquire(shard_blocks);
  const auto from_peer = [&](std::size_t i) { return incoming.span().subspan(i * n, n); };
  const auto counts_from_peer = [&](std::size_t i) {
    return incoming_counts.span().subspan(i * shard_blocks, shard_blocks);
  };

  Transfers transfers(g);
  std::vector<std::vector<Transfers::Handle>> receives(peers);
  std::vector<Transfers::Handle> sends;
  for (std::size_t i = 0; i < peers; ++i) {
    for (std::size_t k = 0; k < segments; ++k) {
      const Range s = seg(k);
      const std::uint64_t id = message_id(seq, Phase::kReduce, 0, static_cast<std::uint32_t>(k));
      MessageOptions reduce = g.message_options(options, options.loss_budget);
      if (options.loss_budget > 0) {
        // The contributions to one segment share their budget: a late or lossy peer's tail is
        // left out when the others arrived whole.
        reduce.budget_group = id;
        reduce.budget_group_size = static_cast<std::uint32_t>(peers);
      }
      receives[i].push_back(transfers.recv(peer(i), id, from_peer(i).subspan(s.begin, s.size),
                                           reduce, seg_blocks(counts_from_peer(i), k)));
    }
  }
  // Segment-major order: every owner gets its first segments early.
  for (std::size_t k = 0; k < segments; ++k) {
    const Range s = seg(k);
    for (std::size_t i = 0; i < peers; ++i) {
      const int j = peer(i);
      sends.push_back(
          transfers.send(j, message_id(seq, Phase::kReduce, 0, static_cast<std::uint32_t>(k)),
                         shard(contribution, j).subspan(s.begin, s.size),
                         g.message_options(options, options.loss_budget)));
    }
  }

  // This rank's own contribution never travels: every block of it is there.
  std::ranges::fill(own_counts.span(), std::uint16_t{1});
  const std::size_t total = input.size();
  const std::size_t first_entry = static_cast<std::size_t>(g.rank) * n;
  std::vector<Contribution> ordered(static_cast<std::size_t>(world));
  const auto contribution_of = [&](int rank, std::size_t k) {
    const Range s = seg(k);
    if (rank == g.rank) {
      return Contribution{shard(contribution, g.rank).subspan(s.begin, s.size),
                          seg_blocks(own_counts.span(), k)};
    }
    const auto i = static_cast<std::size_t>((rank - g.rank - 1 + world) % world);
    return Contribution{from_peer(i).subspan(s.begin, s.size), seg_blocks(counts_from_peer(i), k)};
  };
  for (std::size_t k = 0; k < segments; ++k) {
    for (std::size_t i = 0; i < peers; ++i) transfers.await(receives[i][k]);
    const Range s = seg(k);
    const auto acc = output.subspan(s.begin, s.size);
    const auto acc_counts = seg_blocks(counts.span(), k);
    for (int r = 0; r < world; ++r) ordered[static_cast<std::size_t>(r)] = contribution_of(r, k);
    sum_counts(acc_counts, ordered);
    // Each stretch of the segment takes its order from its owner in a transpose all-reduce of
    // the whole input: that owner first, then the ranks after it.
    const std::size_t seg_begin = first_entry + s.begin;
    for (int owner = 0; owner < world; ++owner) {
      const Range part = aligned_part(total, static_cast<std::size_t>(world), block,
                                      static_cast<std::size_t>(owner));
      const std::size_t begin = std::max(part.begin, seg_begin);
      const std::size_t end = std::min(part.end(), seg_begin + s.size);
      if (begin >= end) continue;
      for (int t = 0; t < world; ++t) {
        ordered[static_cast<std::size_t>(t)] = contribution_of((owner + t) % world, k);
      }
      sum_in_order(acc, ordered, Range{begin - seg_begin, end - begin}, block);
    }
    const FinalizeStats stats =
        finalize(acc, acc_counts, block, world, options.op, options.aggregation);
    result.contributions_expected += stats.contributions_expected;
    result.contributions_received += stats.contributions_received;
  }
  transfers.await_all(sends);
  // Only the owner holds its shard, so the result stays float32 (no rounding to the wire).
  finish_allreduce_output(output, options);
  return result;
}

}  // namespace dlcp::collectives
