// Transpose all-reduce: worker j owns part j of the buffer. Every worker sends its part j
// straight to j; j reduces the contributions that arrived and sends the result to everyone.
// Two steps whatever the world size, and a lost packet costs exactly one contribution of one
// block. Parts are cut into segments so the owner reduces and returns segment k while later
// segments are still arriving.
#include <algorithm>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/reduction.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {

CollectiveResult transpose_allreduce(const Group& g, std::uint32_t seq, std::span<float> values,
                                     const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = values.size();
  const int world = g.size;
  if (world == 1) return result;
  const std::size_t block = g.block_for(options.wire);
  const auto part = [&](int j) {
    return aligned_part(values.size(), static_cast<std::size_t>(world), block,
                        static_cast<std::size_t>(j));
  };
  const std::size_t max_part = part(0).size;
  const std::size_t segment =
      segment_floats(g.segment_bytes / sizeof(float), block, max_part, kMaxSegments);
  const auto segments = [&](int j) { return segment_count(part(j).size, segment); };
  const auto seg = [&](int j, std::size_t k) { return segment_of(part(j), segment, k); };
  const std::size_t part_blocks = blocks_in(max_part, block);
  const auto seg_blocks = [&](std::span<std::uint16_t> counts, int j, std::size_t k) {
    return counts.subspan(k * (segment / block), blocks_in(seg(j, k).size, block));
  };
  const bool lossy_gather = options.broadcast_loss_budget > 0;
  const auto peers = static_cast<std::size_t>(world - 1);
  // Peer i (0 .. world-2) is rank (rank + 1 + i) % world.
  const auto peer = [&](std::size_t i) { return (g.rank + 1 + static_cast<int>(i)) % world; };

  const Range own = part(g.rank);
  auto incoming = g.scratch.floats.acquire(peers * max_part);
  auto incoming_counts = g.scratch.counts.acquire(peers * part_blocks);
  auto own_counts = g.scratch.counts.acquire(part_blocks);
  BufferPool<std::uint16_t>::Lease gathered;
  if (lossy_gather) gathered = g.scratch.counts.acquire(peers * part_blocks);
  const auto counts_from = [&](std::span<std::uint16_t> all, std::size_t i) {
    return all.subspan(i * part_blocks, part_blocks);
  };

  Transfers transfers(g);
  std::vector<std::vector<Transfers::Handle>> reduce_receives(peers);
  std::vector<std::vector<Transfers::Handle>> gather_receives(peers);
  std::vector<Transfers::Handle> sends;
  for (std::size_t i = 0; i < peers; ++i) {
    const int j = peer(i);
    for (std::size_t k = 0; k < segments(g.rank); ++k) {
      const Range s = seg(g.rank, k);
      const std::uint64_t id = message_id(seq, Phase::kReduce, 0, static_cast<std::uint32_t>(k));
      MessageOptions reduce = g.message_options(options, options.loss_budget);
      if (options.loss_budget > 0) {
        // The contributions to one segment share their budget: a late or lossy peer's tail is
        // left out when the others arrived whole.
        reduce.budget_group = id;
        reduce.budget_group_size = static_cast<std::uint32_t>(peers);
      }
      reduce_receives[i].push_back(transfers.recv(
          j, id, incoming.span().subspan(i * max_part + (s.begin - own.begin), s.size), reduce,
          seg_blocks(counts_from(incoming_counts.span(), i), g.rank, k)));
    }
    // Part j is written only by j's result, and j sends it only after our contribution to it
    // arrived, so posting here cannot clobber what we still have to send.
    for (std::size_t k = 0; k < segments(j); ++k) {
      const Range s = seg(j, k);
      gather_receives[i].push_back(
          transfers.recv(j, message_id(seq, Phase::kGather, 0, static_cast<std::uint32_t>(k)),
                         values.subspan(s.begin, s.size),
                         g.message_options(options, options.broadcast_loss_budget),
                         lossy_gather ? seg_blocks(counts_from(gathered.span(), i), j, k)
                                      : std::span<std::uint16_t>{}));
    }
  }
  // Our contributions already sum input_contributions workers (hierarchical: a host's).
  MessageOptions contribution = g.message_options(options, options.loss_budget);
  contribution.contributions = g.input_contributions;
  // Segment-major order: every owner gets its first segments early.
  std::size_t max_segments = 0;
  for (int j = 0; j < world; ++j) max_segments = std::max(max_segments, segments(j));
  for (std::size_t k = 0; k < max_segments; ++k) {
    for (std::size_t i = 0; i < peers; ++i) {
      const int j = peer(i);
      if (k >= segments(j)) continue;
      const Range s = seg(j, k);
      sends.push_back(
          transfers.send(j, message_id(seq, Phase::kReduce, 0, static_cast<std::uint32_t>(k)),
                         values.subspan(s.begin, s.size), contribution));
    }
  }

  std::ranges::fill(own_counts.span(), g.input_contributions);
  for (std::size_t k = 0; k < segments(g.rank); ++k) {
    const Range s = seg(g.rank, k);
    const auto acc = values.subspan(s.begin, s.size);
    const auto acc_counts = seg_blocks(own_counts.span(), g.rank, k);
    for (std::size_t i = 0; i < peers; ++i) {
      transfers.await(reduce_receives[i][k]);
      accumulate(acc, acc_counts,
                 incoming.span().subspan(i * max_part + (s.begin - own.begin), s.size),
                 seg_blocks(counts_from(incoming_counts.span(), i), g.rank, k), block);
    }
    const FinalizeStats stats =
        finalize(acc, acc_counts, block, g.reduced_world(), options.op, options.aggregation);
    // The owner keeps what the others will receive.
    wire::round_to_wire(acc, options.wire, block);
    result.contributions_expected += stats.contributions_expected;
    result.contributions_received += stats.contributions_received;
    for (std::size_t i = 0; i < peers; ++i) {
      sends.push_back(
          transfers.send(peer(i), message_id(seq, Phase::kGather, 0, static_cast<std::uint32_t>(k)),
                         acc, g.message_options(options, options.broadcast_loss_budget)));
    }
  }

  // Blocks of the result that never arrived keep this rank's own input (scaled for a sum).
  const float fallback_scale = g.fallback_scale(options.op);
  for (std::size_t i = 0; i < peers; ++i) {
    const int j = peer(i);
    for (std::size_t k = 0; k < gather_receives[i].size(); ++k) {
      transfers.await(gather_receives[i][k]);
      if (!lossy_gather) continue;
      const Range s = seg(j, k);
      const auto target = values.subspan(s.begin, s.size);
      result.broadcast_entries_missing +=
          fall_back_to_local(target, seg_blocks(counts_from(gathered.span(), i), j, k), 1, target,
                             fallback_scale, block);
    }
  }
  transfers.await_all(sends);
  return result;
}

}  // namespace dlcp::collectives
