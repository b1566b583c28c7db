// The early-arrival backlog (packets and control frames for receives not posted yet, bounded and
// expiring) and the memory of settled messages, whose late packets are refused as stale.
#include "transport/engine.hpp"

namespace dlcp::transport {

bool Engine::may_hold_early(const MessageKey& key, std::size_t bytes) {
  if (settled_.contains(key)) {
    rejects_.add(wire::RejectReason::kStaleMessage);
    return false;
  }
  if (early_bytes_ + bytes > options_.backlog_bytes ||
      (!early_.contains(key) && early_.size() >= kMaxEarlyMessages)) {
    rejects_.add(wire::RejectReason::kUnknownMessage);
    return false;
  }
  return true;
}

void Engine::hold_early(const MessageKey& key, std::vector<std::byte> datagram, TimePoint now) {
  EarlyArrivals& early = early_entry(key, now);
  early.bytes += datagram.size();
  early_bytes_ += datagram.size();
  early.datagrams.push_back(std::move(datagram));
}

void Engine::remember_settled(const MessageKey& key, bool flow_seen) {
  const std::uint64_t generation = next_settled_generation_++;
  settled_[key] = {flow_seen, generation};
  settled_order_.emplace_back(key, generation);
  while (settled_order_.size() > kSettledMemory) {
    const auto& [old_key, old_generation] = settled_order_.front();
    auto it = settled_.find(old_key);
    if (it != settled_.end() && it->second.generation == old_generation) settled_.erase(it);
    settled_order_.pop_front();
  }
}

EarlyArrivals& Engine::early_entry(const MessageKey& key, TimePoint now) {
  auto [it, inserted] = early_.try_emplace(key);
  if (inserted) it->second.first_arrival = now;
  return it->second;
}

void Engine::expire_early_arrivals(TimePoint now) {
  // Arrivals for a receive that is never posted (a sender that gave up, a peer that died, forged
  // packets with the right token) must not hold backlog space forever.
  for (auto it = early_.begin(); it != early_.end();) {
    const bool peer_lost = !peers_[static_cast<std::size_t>(it->first.peer)].failure.empty();
    if (peer_lost || now - it->second.first_arrival > options_.early_arrival_ttl) {
      early_bytes_ -= it->second.bytes;
      early_flow_bytes_ -= it->second.flow_bytes();
      it = early_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dlcp::transport
