// The receiving side of one message, without I/O: where its packets stand, when to ask the
// sender for missing ones, and whether it may settle. The socket engine and the simulator both
// drive it with the events they see (a packet, the sender's FlowStart and RoundFinished, time)
// and act on what it returns; a budget group's shared decision is in budget_groups.hpp.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/time.hpp"
#include "protocol/receive_tracker.hpp"
#include "protocol/settle_timing.hpp"
#include "wire/control.hpp"

namespace dlcp::protocol {

// The margin a missing-ranges report adds against loss of the retransmission itself, as a
// fraction of the drop-eligible deficit (ReceiveTracker::retransmit_request's `extra`): twice the
// path's loss, at most a half.
double retransmit_margin(double path_loss);

struct RetransmitRequest {
  std::uint16_t round = 0;  // the sender's round this report answers
  std::vector<wire::SeqRange> ranges;
};

class MessageReceiver {
 public:
  // A receive of `posted_floats` entries with the receiver's own loss budget; `posted` is when
  // it was posted.
  MessageReceiver(std::uint64_t posted_floats, std::uint32_t budget_ppm, TimePoint posted);

  // The message's shape as a packet or the FlowStart states it. False when it disagrees with the
  // posted size or with the shape seen first (the packet or FlowStart must then be refused).
  bool accept_shape(std::uint32_t total_floats, std::uint16_t stride_floats);
  // Null until a shape was accepted.
  const ReceiveTracker* tracker() const { return tracker_ ? &*tracker_ : nullptr; }
  bool has_packet(std::uint32_t seq) const { return tracker_ && tracker_->received(seq); }

  // Packet `seq` (of an accepted shape, not had yet) was placed. Returns the floats it carried.
  std::uint32_t on_packet(std::uint32_t seq, TimePoint now);
  // A parity packet arrived: the sender is still sending (a report waits for quiet).
  void on_parity(TimePoint now);
  // The sender's FlowStart, after accept_shape: its protected set and its budget (the lower of
  // the two budgets holds). Returns the entries the message may now miss.
  std::uint64_t on_flow(const std::vector<std::uint8_t>& protected_bitmap,
                        std::uint32_t sender_budget_ppm, TimePoint now);
  bool flow_seen() const { return flow_seen_; }
  // The sender finished round `round`: a report is due once packets stop arriving for a while.
  void on_round_finished(std::uint16_t round, TimePoint now);

  // The message's own standing (open before any shape).
  Settlement settlement() const;
  // Whether it settles on its own: complete, or within its budget outside a budget group. A
  // group member settles incomplete only on its group's budget (BudgetGroups).
  bool settles_alone(bool in_group) const;
  // Whether a group member may settle incomplete once its group's budget allows: its FlowStart is
  // known and no protected packet is missing.
  bool may_settle_with_group() const;

  // When a report becomes due, `quiet` after the last packet (or RoundFinished); none when no
  // report is pending.
  std::optional<TimePoint> report_due(Duration quiet) const;
  // The report, when one is due at `now`: the missing protected packets and enough drop-eligible
  // ones (ReceiveTracker::retransmit_request with retransmit_margin(path_loss) and the slack
  // `extra_allowed` of a budget group). Clears the pending report even when there is nothing to
  // ask for; counts a recovery round when there is.
  std::optional<RetransmitRequest> take_report(TimePoint now, Duration quiet, double path_loss,
                                               std::uint64_t extra_allowed);
  // Missing-ranges reports sent so far.
  std::uint32_t recovery_rounds() const { return recovery_rounds_; }

  // Packets arrived since the sender last said it finished a round: it is still sending.
  bool mid_round() const { return mid_round_; }
  TimePoint last_packet() const { return last_packet_; }
  SettlePhases phases_at(TimePoint now) const {
    return timing_.at_settlement(now, recovery_rounds_);
  }

 private:
  std::uint64_t posted_floats_;
  std::uint32_t budget_ppm_;
  std::optional<ReceiveTracker> tracker_;
  SettleTiming timing_;
  TimePoint last_packet_;
  bool flow_seen_ = false;
  bool mid_round_ = false;
  bool report_pending_ = false;
  bool round_finished_seen_ = false;
  std::uint16_t report_round_ = 0;
  std::uint32_t recovery_rounds_ = 0;
};

}  // namespace dlcp::protocol
