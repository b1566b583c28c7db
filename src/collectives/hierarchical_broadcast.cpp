// Hierarchical broadcast and all-gather: what crosses the network goes once to each host, cut in
// stripes so that every leader of the receiving host takes a share, and the host's leaders then
// hand it on to their host's other workers, loss-free. Values are only copied, never combined, so
// every rank ends with the bits its leaders received.
#include <algorithm>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"

namespace dlcp::collectives {
namespace {

MessageOptions whole_messages(const Group& g, const CollectiveOptions& options, double budget) {
  MessageOptions message = g.message_options(options, budget);
  message.packet_floats = 0;
  return message;
}

}  // namespace

CollectiveResult hierarchical_broadcast(const Group& g, const HostLayout& hosts, std::uint32_t seq,
                                        std::span<float> values, int root,
                                        const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = values.size();
  if (g.size == 1 || values.empty()) return result;
  const MessageOptions network = whole_messages(g, options, options.broadcast_loss_budget);
  const MessageOptions local = whole_messages(g, options, 0);
  const std::uint64_t network_id = message_id(seq, Phase::kBroadcast, 0, 0);
  const std::uint64_t local_id = message_id(seq, Phase::kLocalGather, 0, 0);
  const int host = hosts.host_of(g.rank);
  const int root_host = hosts.host_of(root);
  const auto stripe = [&](int s) {
    const Range r = hosts.stripe_range(values.size(), 1, s);
    return values.subspan(r.begin, r.size);
  };
  Transfers transfers(g);
  std::vector<Transfers::Handle> posted;
  if (g.rank == root) {
    // The root's own host takes the whole buffer locally, every other host stripe by stripe.
    for (const int peer : hosts.host_members(host)) {
      if (peer != root) posted.push_back(transfers.send(peer, local_id, values, local));
    }
    for (int h = 0; h < hosts.hosts(); ++h) {
      if (h == root_host) continue;
      for (int s = 0; s < hosts.stripes(); ++s) {
        if (stripe(s).empty()) continue;
        posted.push_back(transfers.send(hosts.stripe_leader(h, s), network_id, stripe(s), network));
      }
    }
    transfers.await_all(posted);
    return result;
  }
  if (host == root_host) {
    transfers.await(transfers.recv(root, local_id, values, local));
    return result;
  }
  const int led = hosts.stripe_led_by(g.rank);
  for (int s = 0; s < hosts.stripes(); ++s) {
    if (s == led || stripe(s).empty()) continue;
    posted.push_back(transfers.recv(hosts.stripe_leader(host, s), local_id, stripe(s), local));
  }
  if (led >= 0 && !stripe(led).empty()) {
    // Entries that never arrived keep this leader's own values, and so does its host.
    result.broadcast_entries_missing =
        transfers.await(transfers.recv(root, network_id, stripe(led), network))
            .stats.entries_missing;
    for (const int peer : hosts.host_members(host)) {
      if (peer != g.rank) posted.push_back(transfers.send(peer, local_id, stripe(led), local));
    }
  }
  transfers.await_all(posted);
  return result;
}

// Worker r's input is carried between hosts by the leader of stripe (local_index(r) mod
// stripes) of r's host, which sends it to the same stripe's leader on every other host; that one
// hands it to the rest of its host. Within a host every worker sends its input to every other.
// A transfer's step is the rank whose input it carries, so one pair's transfers stay apart.
CollectiveResult hierarchical_allgather(const Group& g, const HostLayout& hosts, std::uint32_t seq,
                                        std::span<const float> input, std::span<float> output,
                                        const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = output.size();
  const std::size_t n = input.size();
  const auto slot = [&](int rank) { return output.subspan(static_cast<std::size_t>(rank) * n, n); };
  std::ranges::copy(input, slot(g.rank).begin());
  if (g.size == 1 || n == 0) return result;
  const MessageOptions network = whole_messages(g, options, options.broadcast_loss_budget);
  const MessageOptions local = whole_messages(g, options, 0);
  const auto id = [&](Phase phase, int rank) {
    return message_id(seq, phase, static_cast<std::uint32_t>(rank), 0);
  };
  const int host = hosts.host_of(g.rank);
  const auto members = hosts.host_members(host);
  const auto carrier_stripe = [&](int rank) { return hosts.local_index(rank) % hosts.stripes(); };
  const int led = hosts.stripe_led_by(g.rank);

  Transfers transfers(g);
  std::vector<Transfers::Handle> sends;
  std::vector<Transfers::Handle> local_receives;
  std::vector<std::pair<int, Transfers::Handle>> network_receives;  // (rank, transfer)
  std::vector<std::pair<int, Transfers::Handle>> carried_local;     // our host's, to forward
  for (int rank = 0; rank < g.size; ++rank) {
    if (rank == g.rank) continue;
    const int their_host = hosts.host_of(rank);
    const int carrier = hosts.stripe_leader(host, carrier_stripe(rank));
    if (their_host == host) {
      const auto handle = transfers.recv(rank, id(Phase::kLocalGather, rank), slot(rank), local);
      if (carrier == g.rank) {
        carried_local.emplace_back(rank, handle);
      } else {
        local_receives.push_back(handle);
      }
    } else if (carrier == g.rank) {
      network_receives.emplace_back(
          rank, transfers.recv(hosts.stripe_leader(their_host, carrier_stripe(rank)),
                               id(Phase::kAllgather, rank), slot(rank), network));
    } else {
      local_receives.push_back(
          transfers.recv(carrier, id(Phase::kLocalGather, rank), slot(rank), local));
    }
  }
  const auto send_to_other_hosts = [&](int rank) {
    for (int h = 0; h < hosts.hosts(); ++h) {
      if (h == host) continue;
      sends.push_back(transfers.send(hosts.stripe_leader(h, led), id(Phase::kAllgather, rank),
                                     slot(rank), network));
    }
  };
  const auto send_to_own_host = [&](int rank) {
    for (const int peer : members) {
      if (peer != g.rank && peer != rank) {
        sends.push_back(transfers.send(peer, id(Phase::kLocalGather, rank), slot(rank), local));
      }
    }
  };
  send_to_own_host(g.rank);
  if (led >= 0) {
    send_to_other_hosts(g.rank);
    for (const auto& [rank, handle] : carried_local) {
      transfers.await(handle);
      send_to_other_hosts(rank);
    }
    for (const auto& [rank, handle] : network_receives) {
      // Entries that never arrived keep what the output held, here and in the rest of the host.
      result.broadcast_entries_missing += transfers.await(handle).stats.entries_missing;
      send_to_own_host(rank);
    }
  }
  transfers.await_all(local_receives);
  transfers.await_all(sends);
  return result;
}

}  // namespace dlcp::collectives
