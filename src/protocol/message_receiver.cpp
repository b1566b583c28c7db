#include "protocol/message_receiver.hpp"

#include <algorithm>

namespace dlcp::protocol {

double retransmit_margin(double path_loss) {
  return std::min(0.5, 2 * std::max(0.0, path_loss));
}

MessageReceiver::MessageReceiver(std::uint64_t posted_floats, std::uint32_t budget_ppm,
                                 TimePoint posted)
    : posted_floats_(posted_floats),
      budget_ppm_(budget_ppm),
      timing_(posted),
      last_packet_(posted) {}

bool MessageReceiver::accept_shape(std::uint32_t total_floats, std::uint16_t stride_floats) {
  if (total_floats != posted_floats_ || stride_floats == 0) return false;
  if (!tracker_) {
    tracker_.emplace(total_floats, stride_floats);
    return true;
  }
  return tracker_->floats_in(0) == std::min<std::uint32_t>(stride_floats, total_floats);
}

std::uint32_t MessageReceiver::on_packet(std::uint32_t seq, TimePoint now) {
  tracker_->mark_received(seq);
  timing_.on_sender_seen(now);
  last_packet_ = now;
  mid_round_ = true;
  return tracker_->floats_in(seq);
}

void MessageReceiver::on_parity(TimePoint now) {
  timing_.on_sender_seen(now);
  last_packet_ = now;
  mid_round_ = true;
}

std::uint64_t MessageReceiver::on_flow(const std::vector<std::uint8_t>& protected_bitmap,
                                       std::uint32_t sender_budget_ppm, TimePoint now) {
  flow_seen_ = true;
  timing_.on_sender_seen(now);
  tracker_->set_flow(protected_bitmap, std::min(sender_budget_ppm, budget_ppm_));
  return tracker_->allowed_missing_floats();
}

void MessageReceiver::on_round_finished(std::uint16_t round, TimePoint now) {
  const bool repeat = round_finished_seen_ && round == report_round_;
  round_finished_seen_ = true;
  if (round == 0) timing_.on_first_round_end(now);
  mid_round_ = false;
  report_pending_ = true;
  report_round_ = round;
  // Packets sent just before the round ended may still be queued behind the RoundFinished
  // (control has priority on the wire): the report waits for a quiet period from here. A repeat
  // of it (a sender that heard nothing back) does not push the report out again.
  if (!repeat) last_packet_ = std::max(last_packet_, now);
}

Settlement MessageReceiver::settlement() const {
  return tracker_ ? tracker_->settlement() : Settlement::kOpen;
}

bool MessageReceiver::settles_alone(bool in_group) const {
  const Settlement own = settlement();
  return own == Settlement::kComplete || (own != Settlement::kOpen && !in_group);
}

bool MessageReceiver::may_settle_with_group() const {
  return tracker_ && tracker_->has_flow() && tracker_->protected_missing() == 0;
}

std::optional<TimePoint> MessageReceiver::report_due(Duration quiet) const {
  if (!report_pending_) return std::nullopt;
  return last_packet_ + quiet;
}

std::optional<RetransmitRequest> MessageReceiver::take_report(TimePoint now, Duration quiet,
                                                              double path_loss,
                                                              std::uint64_t extra_allowed) {
  if (!report_pending_ || now - last_packet_ < quiet) return std::nullopt;
  report_pending_ = false;
  if (!tracker_) return std::nullopt;
  RetransmitRequest request;
  request.round = report_round_;
  request.ranges = tracker_->retransmit_request(retransmit_margin(path_loss), extra_allowed);
  if (request.ranges.empty()) return std::nullopt;
  ++recovery_rounds_;
  return request;
}

}  // namespace dlcp::protocol
