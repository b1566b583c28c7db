#include "protocol/early_arrivals.hpp"

#include <utility>

namespace dlcp::protocol {

std::size_t EarlyArrivals::flow_bytes() const {
  return flow ? sizeof(wire::FlowStart) + flow->protected_bitmap.size() : 0;
}

std::optional<wire::RejectReason> EarlyArrivalBacklog::refusal(const MessageKey& key,
                                                               std::size_t bytes) const {
  if (datagram_bytes_ + bytes > limits_.bytes || !room_for_another(key)) {
    return wire::RejectReason::kUnknownMessage;
  }
  return std::nullopt;
}

void EarlyArrivalBacklog::hold(const MessageKey& key, std::vector<std::byte> datagram,
                               TimePoint now) {
  EarlyArrivals& arrivals = entry(key, now);
  arrivals.bytes += datagram.size();
  datagram_bytes_ += datagram.size();
  ++datagrams_;
  arrivals.datagrams.push_back(std::move(datagram));
}

std::optional<wire::RejectReason> EarlyArrivalBacklog::hold(const MessageKey& key,
                                                            const wire::FlowStart& flow,
                                                            TimePoint now) {
  // The protected bitmap can be megabytes: FlowStarts have a bound of their own.
  const std::size_t bytes = sizeof(wire::FlowStart) + flow.protected_bitmap.size();
  if (flow_bytes_ + bytes > limits_.bytes || !room_for_another(key)) {
    return wire::RejectReason::kUnknownMessage;
  }
  EarlyArrivals& arrivals = entry(key, now);
  flow_bytes_ -= arrivals.flow_bytes();
  arrivals.flow = flow;
  flow_bytes_ += arrivals.flow_bytes();
  return std::nullopt;
}

std::optional<wire::RejectReason> EarlyArrivalBacklog::hold(const MessageKey& key,
                                                            const wire::RoundFinished& finished,
                                                            TimePoint now) {
  // Kept even when no packet was (the byte bound may have been reached): once the receive is
  // posted, it starts the missing-ranges report that recovers them.
  if (!room_for_another(key)) return wire::RejectReason::kUnknownMessage;
  entry(key, now).round_finished = finished;
  return std::nullopt;
}

std::optional<EarlyArrivals> EarlyArrivalBacklog::take(const MessageKey& key) {
  auto it = held_.find(key);
  if (it == held_.end()) return std::nullopt;
  EarlyArrivals arrivals = std::move(it->second);
  held_.erase(it);
  account_removed(arrivals);
  return arrivals;
}

void EarlyArrivalBacklog::expire(TimePoint now, const std::function<bool(int peer)>& lost) {
  // Arrivals for a receive that is never posted (a sender that gave up, a peer that died, forged
  // packets with the right token) must not hold backlog space forever.
  for (auto it = held_.begin(); it != held_.end();) {
    if (lost(it->first.peer) || now - it->second.first_arrival > limits_.ttl) {
      account_removed(it->second);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
}

EarlyArrivals& EarlyArrivalBacklog::entry(const MessageKey& key, TimePoint now) {
  auto [it, inserted] = held_.try_emplace(key);
  if (inserted) it->second.first_arrival = now;
  return it->second;
}

void EarlyArrivalBacklog::account_removed(const EarlyArrivals& arrivals) {
  datagram_bytes_ -= arrivals.bytes;
  flow_bytes_ -= arrivals.flow_bytes();
  datagrams_ -= arrivals.datagrams.size();
}

}  // namespace dlcp::protocol
