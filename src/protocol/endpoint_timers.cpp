// The endpoint's time-driven work: rate reports to the peers, message deadlines and
// missing-range reports (on a heap, so a tick costs nothing per open message), expiring early
// arrivals, and when the driver must call again.
#include <algorithm>

#include "protocol/endpoint.hpp"
#include "protocol/endpoint_state.hpp"

namespace dlcp::protocol {
namespace {

// How often early arrivals are checked for expiry (their ttl is tens of seconds).
constexpr Duration kExpiryCheck = std::chrono::seconds(1);

}  // namespace

void Endpoint::send_feedback(Peer& p, std::size_t active_senders, TimePoint now) {
  wire::RateFeedback feedback = p.delivered.take(now);
  feedback.offered_rate = options_.offer_receive_share
                              ? offer_on_wire(offered_share(options_.receive_rate, active_senders))
                              : 0;
  send_control(p.rank, feedback);
}

std::size_t Endpoint::active_senders(TimePoint now) const {
  std::vector<bool> mid_round(peers_.size(), false);
  for (const auto& [key, message] : incoming_) {
    if (message->receiver->mid_round()) mid_round[static_cast<std::size_t>(key.peer)] = true;
  }
  std::size_t senders = 0;
  for (const auto& p : peers_) {
    const auto last = p->delivered.last_packet();
    if (!p->connected || !last) continue;
    const Duration window =
        sending_window(options_.feedback_interval, options_.receive_rate, counted_senders_,
                       p->link.datagram_bytes + options_.datagram_overhead_bytes);
    if (counts_as_sender(now - *last, mid_round[static_cast<std::size_t>(p->rank)],
                         options_.feedback_interval, window)) {
      ++senders;
    }
  }
  return senders;
}

void Endpoint::on_timeout(TimePoint now) {
  std::optional<std::size_t> senders;  // counted once per call, only when a report is due
  for (const auto& p : peers_) {
    if (p->connected && p->delivered.due(now, options_.feedback_interval)) {
      if (!senders) {
        senders = active_senders(now);
        counted_senders_ = *senders;
      }
      send_feedback(*p, *senders, now);
    }
  }
  if (now >= next_expiry_check_) {
    next_expiry_check_ = now + kExpiryCheck;
    early_.expire(now, [this](int rank) { return !peer(rank).failure.empty(); });
  }
  // Message timers: as many entries as are due, whatever the number of open messages.
  Timer timer;
  while (timers_.pop_due(now, timer)) on_timer(timer, now);
}

TimePoint Endpoint::next_timeout(TimePoint /*now*/) const {
  TimePoint next = TimePoint::max();
  if (const auto timer = timers_.next()) next = std::min(next, *timer);
  for (const auto& p : peers_) {
    if (!p->connected) continue;
    if (const auto due = p->delivered.due_at(options_.feedback_interval)) {
      next = std::min(next, *due);
    }
  }
  if (early_.messages() > 0) next = std::min(next, next_expiry_check_);
  return next;
}

void Endpoint::on_timer(const Timer& timer, TimePoint now) {
  if (timer.kind == Timer::Kind::kSendDeadline) {
    const auto it = outgoing_.find(timer.key);
    // Settled, or a later message under the same id with a deadline of its own.
    if (it != outgoing_.end() && now >= it->second->deadline) on_send_deadline(*it->second);
    return;
  }
  const auto it = incoming_.find(timer.key);
  if (it == incoming_.end()) return;
  Incoming& message = *it->second;
  if (timer.kind == Timer::Kind::kReport) {
    // Packets since the report was scheduled push it out; a later timer may already stand.
    const auto due = message.receiver->report_due(options_.quiet_before_report);
    if (!due) return;
    if (now < *due) {
      timers_.schedule(*due, timer);
    } else {
      send_missing_report(message, now);
    }
    return;
  }
  if (now >= message.deadline) on_receive_deadline(message);
}

void Endpoint::on_send_deadline(Outgoing& message) {
  fail_outgoing(message, ErrorCode::kDeadline,
                "message " + std::to_string(message.key.id) + " to " +
                    describe_peer(message.key.peer) + " was not settled by the receiver within " +
                    std::to_string(message.options.deadline.count()) + " ms (" +
                    std::to_string(message.stats.packets_sent) + " packets sent in " +
                    std::to_string(message.sender->round() + 1) + " rounds)");
}

void Endpoint::on_receive_deadline(Incoming& message) {
  const auto* tracker = message.receiver->tracker();
  const std::string detail = tracker ? std::to_string(tracker->received_count()) + " of " +
                                           std::to_string(tracker->packet_count()) + " packets, " +
                                           std::to_string(tracker->protected_missing()) +
                                           " protected missing"
                                     : "no packets at all";
  fail_incoming(message, ErrorCode::kDeadline,
                "message " + std::to_string(message.key.id) + " from " +
                    describe_peer(message.key.peer) + " did not settle within " +
                    std::to_string(message.options.deadline.count()) + " ms (" + detail + ")",
                true);
}

}  // namespace dlcp::protocol
