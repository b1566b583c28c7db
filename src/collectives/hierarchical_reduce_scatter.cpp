// Hierarchical reduce-scatter. Worker j's shard is routed through the stripe its local index
// falls in (local_index(j) mod stripes): on every host that stripe's leader sums the host's
// copies of shard j (loss-free, rank order), and sends the host sum to the stripe's leader on j's
// host, which reduces the hosts' sums (its own host's first, then the others in host order),
// finalizes them and, when it is not j itself, hands the result to j. Host sums travel as the
// wire carries them; the result stays float32, as in the flat reduce-scatter.
#include <algorithm>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/reduction.hpp"
#include "collectives/value_transform.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {

CollectiveResult hierarchical_reduce_scatter(const Group& g, const HostLayout& hosts,
                                             std::uint32_t seq, std::span<const float> input,
                                             std::span<float> output,
                                             const CollectiveOptions& options) {
  const std::size_t n = output.size();
  if (g.size == 1) return reduce_scatter(g, seq, input, output, options);
  CollectiveResult result;
  result.entries = n;
  if (n == 0) return result;
  const std::size_t block = g.block_for(options.wire);
  const std::size_t segment =
      segment_floats(g.segment_bytes / sizeof(float), block, n, kMaxSegments);
  const std::size_t segments = segment_count(n, segment);
  const auto seg = [&](std::size_t k) { return segment_of(Range{0, n}, segment, k); };
  const auto seg_blocks = [&](std::span<std::uint16_t> counts, std::size_t k) {
    return counts.subspan(k * (segment / block), blocks_in(seg(k).size, block));
  };
  const std::size_t shard_blocks = blocks_in(n, block);

  // Host sums are built in place, so the input always travels from a private copy (rounded to
  // the wire and rotated shard by shard, as the flat reduce-scatter does).
  auto copy = g.scratch.floats.acquire(input.size());
  prepare_reduce_scatter_input(input, copy.span(), n, options, block);
  const auto shard = [&](int j) { return copy.span().subspan(static_cast<std::size_t>(j) * n, n); };

  const int host = hosts.host_of(g.rank);
  const auto local = hosts.host_members(host);
  const auto local_peers = local.size() - 1;
  const auto host_workers = static_cast<std::uint16_t>(local.size());
  const int led = hosts.stripe_led_by(g.rank);
  const auto route = [&](int j) { return hosts.local_index(j) % hosts.stripes(); };
  const auto other_hosts = static_cast<std::size_t>(hosts.hosts() - 1);
  // Network rank i (0 .. hosts-2) of a shard's owner is host (host + 1 + i) % hosts.
  const auto other_host = [&](std::size_t i) {
    return (host + 1 + static_cast<int>(i)) % hosts.hosts();
  };

  const MessageOptions local_message = g.message_options(options, 0);
  // The result is float32 (it is not rounded), so its last hop is too.
  CollectiveOptions float32 = options;
  float32.wire = WireDtype::kFloat32;
  const MessageOptions result_message = g.message_options(float32, 0);
  const auto id = [&](Phase phase, int j, std::size_t k) {
    return message_id(seq, phase, static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(k));
  };

  // The shards whose host sum this rank builds, and of those the ones it also finalizes.
  std::vector<int> summed;
  for (int j = 0; j < g.size; ++j) {
    if (led >= 0 && route(j) == led) summed.push_back(j);
  }
  std::vector<int> owned;
  for (const int j : summed) {
    if (hosts.host_of(j) == host) owned.push_back(j);
  }

  Transfers transfers(g);
  std::vector<Transfers::Handle> sends;
  // Local contributions to the shards this rank sums: [shard][peer][segment].
  auto local_in = g.scratch.floats.acquire(summed.size() * local_peers * n);
  std::vector<std::vector<Transfers::Handle>> local_receives(summed.size() * local_peers);
  for (std::size_t x = 0; x < summed.size(); ++x) {
    std::size_t p = 0;
    for (const int peer : local) {
      if (peer == g.rank) continue;
      const std::size_t slot = x * local_peers + p++;
      for (std::size_t k = 0; k < segments; ++k) {
        const Range s = seg(k);
        local_receives[slot].push_back(
            transfers.recv(peer, id(Phase::kLocalReduce, summed[x], k),
                           local_in.span().subspan(slot * n + s.begin, s.size), local_message));
      }
    }
  }
  // Other hosts' sums of the shards this rank finalizes: [shard][host][segment].
  auto network_in = g.scratch.floats.acquire(owned.size() * other_hosts * n);
  auto network_counts = g.scratch.counts.acquire(owned.size() * other_hosts * shard_blocks);
  std::vector<std::vector<Transfers::Handle>> network_receives(owned.size() * other_hosts);
  for (std::size_t x = 0; x < owned.size(); ++x) {
    for (std::size_t i = 0; i < other_hosts; ++i) {
      const std::size_t slot = x * other_hosts + i;
      const auto counts = network_counts.span().subspan(slot * shard_blocks, shard_blocks);
      for (std::size_t k = 0; k < segments; ++k) {
        const Range s = seg(k);
        const std::uint64_t message = id(Phase::kReduce, owned[x], k);
        MessageOptions reduce = g.message_options(options, options.loss_budget);
        if (options.loss_budget > 0) {
          // The hosts' sums of one segment share their budget, as in the flat reduce-scatter.
          reduce.budget_group = message;
          reduce.budget_group_size = static_cast<std::uint32_t>(other_hosts);
        }
        network_receives[slot].push_back(transfers.recv(
            hosts.stripe_leader(other_host(i), led), message,
            network_in.span().subspan(slot * n + s.begin, s.size), reduce, seg_blocks(counts, k)));
      }
    }
  }
  // This rank's result from its stripe's leader, unless it finalizes its shard itself.
  const int my_finalizer = hosts.stripe_leader(host, route(g.rank));
  std::vector<Transfers::Handle> result_receives;
  if (my_finalizer != g.rank) {
    for (std::size_t k = 0; k < segments; ++k) {
      const Range s = seg(k);
      result_receives.push_back(transfers.recv(my_finalizer, id(Phase::kLocalGather, g.rank, k),
                                               output.subspan(s.begin, s.size), result_message));
    }
  }
  // This rank's copies of the shards others sum, segment-major.
  for (std::size_t k = 0; k < segments; ++k) {
    for (int j = 0; j < g.size; ++j) {
      if (led >= 0 && route(j) == led) continue;
      const Range s = seg(k);
      sends.push_back(transfers.send(hosts.stripe_leader(host, route(j)),
                                     id(Phase::kLocalReduce, j, k),
                                     shard(j).subspan(s.begin, s.size), local_message));
    }
  }

  // Host sums, in rank order (this rank's copy first), each sent on as soon as it is complete.
  MessageOptions contribution = g.message_options(options, options.loss_budget);
  contribution.contributions = host_workers;
  for (std::size_t k = 0; k < segments; ++k) {
    const Range s = seg(k);
    for (std::size_t x = 0; x < summed.size(); ++x) {
      const auto sum = shard(summed[x]).subspan(s.begin, s.size);
      for (std::size_t p = 0; p < local_peers; ++p) {
        const std::size_t slot = x * local_peers + p;
        transfers.await(local_receives[slot][k]);
        const auto in = local_in.span().subspan(slot * n + s.begin, s.size);
        std::ranges::transform(sum, in, sum.begin(), std::plus<>{});
      }
      // The host's sum travels as the wire carries it; its finalizer's own copy too.
      wire::round_to_wire(sum, options.wire, block);
      const int owner_host = hosts.host_of(summed[x]);
      if (owner_host != host) {
        sends.push_back(transfers.send(hosts.stripe_leader(owner_host, led),
                                       id(Phase::kReduce, summed[x], k), sum, contribution));
      }
    }
  }

  // The shards this rank finalizes: its host's sum, then the other hosts' in host order.
  auto counts = g.scratch.counts.acquire(shard_blocks);
  for (std::size_t x = 0; x < owned.size(); ++x) {
    const int j = owned[x];
    std::ranges::fill(counts.span(), host_workers);
    for (std::size_t k = 0; k < segments; ++k) {
      const Range s = seg(k);
      const auto acc = shard(j).subspan(s.begin, s.size);
      const auto acc_counts = seg_blocks(counts.span(), k);
      std::vector<std::pair<int, std::size_t>> by_host;  // (host, slot)
      for (std::size_t i = 0; i < other_hosts; ++i) {
        by_host.emplace_back(other_host(i), x * other_hosts + i);
      }
      std::ranges::sort(by_host);
      for (const auto& [their_host, slot] : by_host) {
        transfers.await(network_receives[slot][k]);
        accumulate(acc, acc_counts, network_in.span().subspan(slot * n + s.begin, s.size),
                   seg_blocks(network_counts.span().subspan(slot * shard_blocks, shard_blocks), k),
                   block);
      }
      const FinalizeStats stats =
          finalize(acc, acc_counts, block, g.size, options.op, options.aggregation);
      result.contributions_expected += stats.contributions_expected;
      result.contributions_received += stats.contributions_received;
      if (j == g.rank) {
        std::ranges::copy(acc, output.begin() + static_cast<std::ptrdiff_t>(s.begin));
      } else {
        sends.push_back(transfers.send(j, id(Phase::kLocalGather, j, k), acc, result_message));
      }
    }
  }
  transfers.await_all(result_receives);
  transfers.await_all(sends);
  finish_allreduce_output(output, options);
  return result;
}

}  // namespace dlcp::collectives
