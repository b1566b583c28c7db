// Time-driven work: rate reports to the peers, message deadlines and missing-range reports (on a
// heap, so a tick costs nothing per open message), expiring handshakes and early arrivals, and
// when the loop must wake next.
#include <algorithm>

#include "transport/engine.hpp"

namespace dlcp::transport {

void Engine::send_feedback(PeerState& peer, std::size_t active_senders, TimePoint now) {
  wire::RateFeedback feedback = peer.delivered.take(now);
  feedback.offered_rate =
      protocol::offer_on_wire(protocol::offered_share(receive_rate_, active_senders));
  peer.control.send(feedback);
}

std::size_t Engine::active_senders(TimePoint now) const {
  std::vector<bool> mid_round(peers_.size(), false);
  for (const auto& [key, message] : incoming_) {
    if (message->receiver->mid_round()) mid_round[static_cast<std::size_t>(key.peer)] = true;
  }
  std::size_t senders = 0;
  for (const auto& peer : peers_) {
    const auto last = peer.delivered.last_packet();
    if (!peer.connected || !last) continue;
    const Duration window = protocol::sending_window(options_.feedback_interval, receive_rate_,
                                                     counted_senders_, peer.datagram_bytes);
    if (protocol::counts_as_sender(now - *last, mid_round[static_cast<std::size_t>(peer.rank)],
                                   options_.feedback_interval, window)) {
      ++senders;
    }
  }
  return senders;
}

void Engine::on_timers(TimePoint now) {
  if (now < next_timer_check_) return;
  next_timer_check_ = now + kTimerTick;
  std::optional<std::size_t> senders;  // counted once per tick, only when a report is due
  for (auto& peer : peers_) {
    if (peer.connected && peer.delivered.due(now, options_.feedback_interval)) {
      if (!senders) {
        senders = active_senders(now);
        counted_senders_ = *senders;
      }
      send_feedback(peer, *senders, now);
    }
  }
  if (now >= next_expiry_check_) {
    next_expiry_check_ = now + std::chrono::seconds(1);
    early_.expire(
        now, [this](int peer) { return !peers_[static_cast<std::size_t>(peer)].failure.empty(); });
  }
  // Pending handshakes that never completed.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now - it->second.accepted > kHandshakeTimeout) {
      rejects_.add(wire::RejectReason::kHandshakeLimit);
      unwatch(it->second.control.fd());
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  // Message timers: as many entries as are due, whatever the number of open messages.
  MessageTimer timer;
  while (timers_.pop_due(now, timer)) on_message_timer(timer, now);
}

void Engine::on_message_timer(const MessageTimer& timer, TimePoint now) {
  if (timer.kind == MessageTimer::Kind::kSendDeadline) {
    const auto it = outgoing_.find(timer.key);
    // Settled, or a later message under the same id with a deadline of its own.
    if (it == outgoing_.end() || now < it->second->deadline) return;
    OutgoingMessage& message = *it->second;
    fail_outgoing(message, ErrorCode::kDeadline,
                  "message " + std::to_string(message.key.id) + " to " +
                      describe_peer(message.key.peer) + " was not settled by the receiver within " +
                      std::to_string(message.options.deadline.count()) + " ms (" +
                      std::to_string(message.stats.packets_sent) + " packets sent in " +
                      std::to_string(message.sender->round() + 1) + " rounds)");
    return;
  }
  const auto it = incoming_.find(timer.key);
  if (it == incoming_.end()) return;
  IncomingMessage& message = *it->second;
  if (timer.kind == MessageTimer::Kind::kReport) {
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
  if (now < message.deadline) return;
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

Duration Engine::next_wakeup(TimePoint now) {
  // Posted commands wake the loop through the eventfd, so they need no check here.
  Duration wait = std::chrono::milliseconds(50);
  if (!outgoing_.empty() || !incoming_.empty() || !pending_.empty()) wait = kTimerTick;
  const Duration blocked = send_blocked_until_ > now ? send_blocked_until_ - now : Duration::zero();
  if (const auto next = timers_.next()) {
    wait = std::min(wait, *next > now ? *next - now : Duration::zero());
  }
  send_queue_.visit([&](const OutgoingMessage& message) {
    PeerState& peer = peers_[static_cast<std::size_t>(message.key.peer)];
    const Duration pacing = peer.pacing->wait(message.shared_band, now);
    wait = std::min(wait, std::max(blocked, pacing));
    return wait != blocked;
  });
  return wait;
}

}  // namespace dlcp::transport
