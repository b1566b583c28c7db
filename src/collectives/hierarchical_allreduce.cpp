// Hierarchical all-reduce: every host reduces each stripe at the stripe's leader (loss-free local
// transfers, in rank order), the leaders of a stripe run the network algorithm on it with counts
// in workers (a host's sum counts as its workers' contributions), and each leader hands the
// finished stripe to the rest of its host. Every stripe is finalized once, by its network owner,
// and only copied afterwards, so every rank ends bit-identical.
#include <algorithm>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/reduction.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {
namespace {

// The group of a stripe's leaders, one per host, whose inputs are their hosts' sums.
Group stripe_group(const Group& g, const HostLayout& hosts, int stripe) {
  Group network = g;
  network.members = hosts.stripe_group(stripe);
  network.rank = hosts.host_of(g.rank);
  network.size = hosts.hosts();
  network.input_contributions = static_cast<std::uint16_t>(hosts.host_members(network.rank).size());
  network.workers_reduced = g.size;
  return network;
}

}  // namespace

CollectiveResult hierarchical_allreduce(const Group& g, const HostLayout& hosts, std::uint32_t seq,
                                        std::span<float> values, const CollectiveOptions& options,
                                        const NetworkAllreduce& network) {
  CollectiveResult result;
  result.entries = values.size();
  if (g.size == 1 || values.empty()) return result;
  const std::size_t block = g.block_for(options.wire);
  const int host = hosts.host_of(g.rank);
  const auto local = hosts.host_members(host);
  const int led = hosts.stripe_led_by(g.rank);
  const auto stripe = [&](int s) { return hosts.stripe_range(values.size(), block, s); };
  const std::size_t segment =
      segment_floats(g.segment_bytes / sizeof(float), block, stripe(0).size, kMaxSegments);
  const auto segments = [&](int s) { return segment_count(stripe(s).size, segment); };
  const auto seg = [&](int s, std::size_t k) { return segment_of(stripe(s), segment, k); };
  // Within the host: no loss, values as the wire carries them (the input is rounded already and
  // the result is rounded by its owner, so nothing is rounded again on the way).
  const MessageOptions local_message = g.message_options(options, 0);
  const auto local_id = [&](Phase phase, std::size_t k) {
    return message_id(seq, phase, 0, static_cast<std::uint32_t>(k));
  };

  Transfers transfers(g);
  std::vector<Transfers::Handle> sends;
  // The stripe this rank leads: every other local worker's contribution, segment by segment.
  const std::size_t led_size = led >= 0 ? stripe(led).size : 0;
  const std::size_t peers = local.size() - 1;
  auto incoming = g.scratch.floats.acquire(peers * led_size);
  std::vector<std::vector<Transfers::Handle>> reduce_receives(peers);
  // Results of the stripes others lead, by stripe and segment.
  std::vector<std::vector<Transfers::Handle>> gather_receives(
      static_cast<std::size_t>(hosts.stripes()));
  std::size_t i = 0;
  for (const int peer : local) {
    if (peer == g.rank) continue;
    if (led >= 0) {
      for (std::size_t k = 0; k < segments(led); ++k) {
        const Range s = seg(led, k);
        reduce_receives[i].push_back(transfers.recv(
            peer, local_id(Phase::kLocalReduce, k),
            incoming.span().subspan(i * led_size + (s.begin - stripe(led).begin), s.size),
            local_message));
      }
    }
    ++i;
  }
  // A stripe is written only by its leader's result, which comes after our contribution to it
  // arrived, so posting these receives cannot clobber what we still have to send.
  for (int s = 0; s < hosts.stripes(); ++s) {
    if (s == led) continue;
    const int leader = hosts.stripe_leader(host, s);
    for (std::size_t k = 0; k < segments(s); ++k) {
      const Range r = seg(s, k);
      gather_receives[static_cast<std::size_t>(s)].push_back(
          transfers.recv(leader, local_id(Phase::kLocalGather, k), values.subspan(r.begin, r.size),
                         local_message));
    }
  }
  // Segment-major, so every leader starts reducing early.
  for (std::size_t k = 0; k < segments(0); ++k) {
    for (int s = 0; s < hosts.stripes(); ++s) {
      if (s == led || k >= segments(s)) continue;
      const Range r = seg(s, k);
      sends.push_back(transfers.send(hosts.stripe_leader(host, s), local_id(Phase::kLocalReduce, k),
                                     values.subspan(r.begin, r.size), local_message));
    }
  }

  if (led >= 0) {
    const Range own = stripe(led);
    const std::span<float> sum = values.subspan(own.begin, own.size);
    // The host's sum in rank order: this rank's input first, then the others' in turn.
    auto counts = g.scratch.counts.acquire(blocks_in(own.size, block));
    auto ones = g.scratch.counts.acquire(blocks_in(own.size, block));
    std::ranges::fill(counts.span(), std::uint16_t{1});
    std::ranges::fill(ones.span(), std::uint16_t{1});
    for (std::size_t k = 0; k < segments(led); ++k) {
      const Range r = seg(led, k);
      const std::size_t offset = r.begin - own.begin;
      const auto segment_counts = counts.span().subspan(offset / block, blocks_in(r.size, block));
      for (std::size_t p = 0; p < peers; ++p) {
        transfers.await(reduce_receives[p][k]);
        accumulate(sum.subspan(offset, r.size), segment_counts,
                   incoming.span().subspan(p * led_size + offset, r.size),
                   ones.span().first(segment_counts.size()), block);
      }
    }
    // The host's sum enters the network as the wire carries it, this leader's copy too.
    wire::round_to_wire(sum, options.wire, block);
    if (hosts.hosts() == 1) {
      // No network: the leader owns its stripe outright.
      const FinalizeStats stats =
          finalize(sum, counts.span(), block, g.size, options.op, options.aggregation);
      wire::round_to_wire(sum, options.wire, block);
      result.contributions_expected = stats.contributions_expected;
      result.contributions_received = stats.contributions_received;
    } else if (!sum.empty()) {  // a buffer of fewer blocks than stripes leaves some empty
      const CollectiveResult among_hosts =
          network(stripe_group(g, hosts, led), seq, led, sum, options);
      result.contributions_expected = among_hosts.contributions_expected;
      result.contributions_received = among_hosts.contributions_received;
      result.broadcast_entries_missing = among_hosts.broadcast_entries_missing;
      // A fallback block (lossy broadcast side) holds this host's own values: round it as the
      // others will receive it (a no-op on rounded values).
      if (options.broadcast_loss_budget > 0) wire::round_to_wire(sum, options.wire, block);
    }
    for (std::size_t k = 0; k < segments(led); ++k) {
      const Range r = seg(led, k);
      for (const int peer : local) {
        if (peer == g.rank) continue;
        sends.push_back(transfers.send(peer, local_id(Phase::kLocalGather, k),
                                       values.subspan(r.begin, r.size), local_message));
      }
    }
  }
  for (const auto& receives : gather_receives) transfers.await_all(receives);
  transfers.await_all(sends);
  return result;
}

}  // namespace dlcp::collectives
