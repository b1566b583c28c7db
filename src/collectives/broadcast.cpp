// Broadcast, all-gather and barrier: direct transfers between every pair that needs one. They
// move parameters or small results, so they are reliable unless the caller allows loss.
#include <algorithm>
#include <vector>

#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"

namespace dlcp::collectives {

CollectiveResult broadcast(const Group& g, std::uint32_t seq, std::span<float> values, int root,
                           const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = values.size();
  if (g.size == 1 || values.empty()) return result;
  MessageOptions message = g.message_options(options, options.broadcast_loss_budget);
  message.packet_floats = 0;
  const std::uint64_t id = message_id(seq, Phase::kBroadcast, 0, 0);
  if (g.rank == root) {
    Transfers transfers(g);
    std::vector<Transfers::Handle> sends;
    for (int peer = 0; peer < g.size; ++peer) {
      if (peer != root) sends.push_back(transfers.send(peer, id, values, message));
    }
    transfers.await_all(sends);
    return result;
  }
  Transfers transfers(g);
  const auto received = transfers.recv(root, id, values, message);
  // Entries that never arrived keep this rank's own values.
  result.broadcast_entries_missing = transfers.await(received).stats.entries_missing;
  return result;
}

CollectiveResult allgather(const Group& g, std::uint32_t seq, std::span<const float> input,
                           std::span<float> output, const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = output.size();
  const std::size_t n = input.size();
  std::ranges::copy(input, output.begin() + static_cast<std::ptrdiff_t>(n) * g.rank);
  if (g.size == 1 || n == 0) return result;
  MessageOptions message = g.message_options(options, options.broadcast_loss_budget);
  message.packet_floats = 0;
  const std::uint64_t id = message_id(seq, Phase::kAllgather, 0, 0);
  Transfers transfers(g);
  std::vector<Transfers::Handle> posted;
  for (int peer = 0; peer < g.size; ++peer) {
    if (peer == g.rank) continue;
    posted.push_back(
        transfers.recv(peer, id, output.subspan(static_cast<std::size_t>(peer) * n, n), message));
    posted.push_back(transfers.send(peer, id, input, message));
  }
  for (std::size_t i = 0; i < posted.size(); ++i) {
    const MessageResult r = transfers.await(posted[i]);
    if (i % 2 == 0) result.broadcast_entries_missing += r.stats.entries_missing;
  }
  return result;
}

void barrier(const Group& g, std::uint32_t seq) {
  if (g.size == 1) return;
  // One float each way between every pair: nobody leaves before everybody arrived.
  const auto peers = static_cast<std::size_t>(g.size - 1);
  std::vector<float> tokens(2 * peers, 0.0f);
  CollectiveOptions reliable;
  MessageOptions message = g.message_options(reliable, 0);
  message.packet_floats = 0;
  const std::uint64_t id = message_id(seq, Phase::kBarrier, 0, 0);
  Transfers transfers(g);
  std::vector<Transfers::Handle> posted;
  std::size_t slot = 0;
  for (int peer = 0; peer < g.size; ++peer) {
    if (peer == g.rank) continue;
    posted.push_back(transfers.recv(peer, id, std::span<float>(&tokens[slot], 1), message));
    posted.push_back(
        transfers.send(peer, id, std::span<const float>(&tokens[peers + slot], 1), message));
    ++slot;
  }
  transfers.await_all(posted);
}

}  // namespace dlcp::collectives
