// Where a received message's time went: its first round (from the sender's first sign to the end
// of the sender's first pass over the message) and its recovery (from that end to settlement,
// when the receiver had to ask for missing packets). A message the budget settled before the
// sender finished its first pass had its tail cut. Times come in as arguments (see time.hpp).
#pragma once

#include <cstdint>

#include "common/time.hpp"

namespace dlcp::protocol {

struct SettlePhases {
  double first_round_seconds = 0;
  double recovery_seconds = 0;    // 0 when no missing-range round was needed
  bool before_round_end = false;  // settled before the sender's first round ended
};

class SettleTiming {
 public:
  explicit SettleTiming(TimePoint posted) : posted_(posted) {}

  // The sender's first sign for this receive (its FlowStart or a packet; for arrivals held before
  // the receive was posted, the posting). Only the first call counts.
  void on_sender_seen(TimePoint now);
  // The sender said it finished its first round (RoundFinished of round 0). Only the first call
  // counts.
  void on_first_round_end(TimePoint now);

  // The phases at settlement `now`, after `recovery_rounds` missing-range reports.
  SettlePhases at_settlement(TimePoint now, std::uint32_t recovery_rounds) const;

 private:
  TimePoint posted_;
  TimePoint seen_{};
  TimePoint round_end_{};
  bool has_seen_ = false;
  bool has_round_end_ = false;
};

}  // namespace dlcp::protocol
