#include "protocol/settle_timing.hpp"

#include <algorithm>

namespace dlcp::protocol {

void SettleTiming::on_sender_seen(TimePoint now) {
  if (has_seen_) return;
  seen_ = std::max(now, posted_);
  has_seen_ = true;
}

void SettleTiming::on_first_round_end(TimePoint now) {
  if (has_round_end_) return;
  round_end_ = now;
  has_round_end_ = true;
}

SettlePhases SettleTiming::at_settlement(TimePoint now, std::uint32_t recovery_rounds) const {
  const TimePoint start = has_seen_ ? seen_ : posted_;
  SettlePhases phases;
  phases.before_round_end = !has_round_end_;
  if (recovery_rounds == 0 || !has_round_end_) {
    // Settled by the first round's packets (perhaps after a quiet wait that saw them arrive).
    phases.first_round_seconds = to_seconds(std::max(now, start) - start);
    return phases;
  }
  const TimePoint end = std::clamp(round_end_, start, std::max(now, start));
  phases.first_round_seconds = to_seconds(end - start);
  phases.recovery_seconds = to_seconds(std::max(now, end) - end);
  return phases;
}

}  // namespace dlcp::protocol
