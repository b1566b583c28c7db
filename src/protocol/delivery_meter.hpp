// Receive side of rate control: what one peer delivered to us since our last feedback to it.
//
// The reported interval starts at the first packet counted, not at the previous report. Training
// traffic comes in bursts separated by compute; an interval stretched over such an idle gap would
// report a delivered rate near zero, and a sender that also saw a CE mark would cut its rate to
// almost nothing for what was only its own silence.
//
// Loss is counted from the peer's packet counter (DataHeader::pair_seq), as the simulator counts
// it: the packets the peer numbered up to the highest counter seen in the interval, less those
// that arrived. Spraying reorders a little, so one report may count a packet still in flight as
// lost; the report in which it arrives then counts one fewer. A message's last packets are
// judged too, once any later packet of the peer arrives: its retransmission round or its next
// message. Judging by message sequence numbers instead could never judge a message's tail, so
// short messages' losses never reached the rate controller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "common/time.hpp"
#include "wire/control.hpp"

namespace dlcp::protocol {

// The loss in one report: the packets the peer numbered in the interval less those that arrived,
// never below zero (a late packet counted lost in an earlier report arrives in this one).
constexpr std::uint64_t packets_lost(std::uint64_t numbered, std::uint64_t arrived) {
  return numbered > arrived ? numbered - arrived : 0;
}

class DeliveryMeter {
 public:
  // `paths`: how many receive sockets to count packets for (the feedback's per-path counts).
  explicit DeliveryMeter(std::size_t paths = 0);

  // `pair_seq`: the packet's DataHeader::pair_seq. The peer numbers from 0 on each connection.
  void on_packet(std::size_t bytes, std::size_t path, std::uint16_t pair_seq, TimePoint now);
  // A CE mark is read after the packet was counted (the TOS comes with the payload).
  // `shared_band`: the packet's DSCP is in the switch class best effort shares.
  void on_ce_mark(bool shared_band) {
    ++ce_marked_;
    if (shared_band) ++ce_marked_shared_band_;
  }

  // True once packets were counted and at least `interval` has passed since the first of them.
  bool due(TimePoint now, Duration interval) const;
  // When the next report falls due (none before a packet was counted).
  std::optional<TimePoint> due_at(Duration interval) const;
  // When the last packet was counted, reported or not (empty before the first): whether the peer
  // is one of the senders this host's receive rate is shared among (counts_as_sender).
  std::optional<TimePoint> last_packet() const { return last_; }
  // The report for the packets counted so far, with the loss estimate; starts afresh.
  wire::RateFeedback take(TimePoint now);

 private:
  TimePoint first_{};
  std::optional<TimePoint> last_;
  std::uint64_t bytes_ = 0;
  std::uint64_t packets_ = 0;
  std::uint64_t ce_marked_ = 0;
  std::uint64_t ce_marked_shared_band_ = 0;
  // Packets the peer numbered up to the highest counter seen (the counter widened to 64 bits),
  // and that count at the last report.
  std::uint64_t numbered_ = 0;
  std::uint64_t numbered_at_report_ = 0;
  std::vector<std::uint32_t> path_packets_;
};

}  // namespace dlcp::protocol
