// Sender rate control driven by receiver feedback and loss.
//
// Loss tolerance tempts a sender to blast; this keeps the bottleneck busy without collapse.
// Each feedback interval reports the rate at which the receiver got our packets and the share that
// went missing. Loss is judged over consecutive reports pooled until they hold at least
// `loss_sample_packets` packets; the report that completes a sample judges it. Rules (all
// fractions of the current rate):
//  - congestion loss (a judged sample above `congestion_loss`): the rate drops to
//    max(min_rate, decrease * delivered_rate) -- what actually got through, minus headroom --
//    but to no less than half the rate per report, and stays there for `hold_intervals`
//    feedbacks;
//  - otherwise CE marks on a share F of the packets: the rate drops by F/2 (DCTCP's cut), but
//    not below decrease * delivered_rate, and is held likewise;
//  - otherwise, while the reports pooled towards the next sample already lose more than
//    `congestion_loss`: hold the rate (too few packets to cut on, and no reason to raise it);
//  - otherwise, when the receiver kept up (delivered >= keep_up * rate): multiplicative increase
//    by `increase`, capped at max_rate;
//  - otherwise, below initial_rate: grow by `increase`, up to initial_rate. A sender with little
//    to send (a small layer, a message's tail) never delivers keep_up * rate; without this, one
//    cut by a single marked burst would stay cut for the rest of the job, below the rate any new
//    sender starts at;
//  - otherwise (receiver not keeping up but no loss yet, e.g. a queue building): hold the rate.
// Loss below congestion_loss is treated as random (gray) loss and does not slow the sender: the
// bounded-loss completion rule and retransmission handle it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/time.hpp"
#include "dlcp/options.hpp"

namespace dlcp::protocol {

using RateControlConfig = dlcp::RateControlOptions;

struct Feedback {
  Duration interval{};
  std::uint64_t received_bytes = 0;
  std::uint64_t received_packets = 0;
  std::uint64_t lost_packets = 0;
  std::uint64_t ce_marked = 0;
};

class RateController {
 public:
  explicit RateController(const RateControlConfig& config);

  // Applies one feedback report; returns the new rate in bytes/s. An interval of zero length
  // or with no packets at all is ignored (rate unchanged).
  double on_feedback(const Feedback& feedback);
  double rate() const { return rate_; }
  // Loss fraction of the last judged sample, lost / (received + lost).
  double last_loss() const { return last_loss_; }
  // Reports accepted so far, and those among them that completed a sample whose loss exceeded
  // congestion_loss (each cut the rate towards what got through).
  std::uint64_t reports() const { return reports_; }
  std::uint64_t congested_reports() const { return congested_reports_; }

 private:
  RateControlConfig config_;
  double rate_;
  double last_loss_ = 0.0;
  int hold_ = 0;
  std::uint64_t reports_ = 0;
  std::uint64_t congested_reports_ = 0;
  // Packets (received + lost) and losses of the reports not judged yet (loss_sample_packets).
  std::uint64_t sample_packets_ = 0;
  std::uint64_t sample_lost_ = 0;
};

// Receiver side: the rate offered to each of `active_senders` peers sending to a host that takes
// in `receive_rate` bytes/s: an equal share, all of it to a lone sender (or when none is counted).
double offered_share(double receive_rate, std::size_t active_senders);

// Receiver side: how long a peer part-way through a round (packets of one of its messages arrived
// since it last said RoundFinished) may go without a packet and still count as an active sender:
// two packet gaps of a sender paced at the share `counted_senders` peers are offered now, and at
// least the feedback interval; at most 64 intervals, so that a peer stalled mid-round (behind its
// own more urgent messages, or dead) drops out of the count.
Duration sending_window(Duration feedback_interval, double receive_rate,
                        std::size_t counted_senders, std::uint64_t datagram_bytes);

// Receiver side: whether a peer whose last packet came `since_last_packet` ago counts among the
// senders the receive rate is shared among. Heard within the feedback interval, it does. So does
// a peer part-way through a round and heard within `sending_window`: once many senders share a
// link, each one's share spaces its packets further apart than a short interval, and counting
// only those heard within it would leave some out of every count, offer the rest more than the
// link takes, and overflow the receiver's switch port (in the simulator, 42 senders per server
// and a 20 us interval: ten times the losses; docs/simulation.md, revision 8).
bool counts_as_sender(Duration since_last_packet, bool mid_round, Duration feedback_interval,
                      Duration sending_window);

// The offer as RateFeedback carries it (whole bytes/s), saturated at 1.8e19: receive_rate need
// only be finite, and a double beyond 2^64 has no u64 value. Anything not above 0 is 0 (none).
std::uint64_t offer_on_wire(double offered_rate);

// Sender side, with RateControlOptions::shared_band_pacing: one report split between the peer's
// controller and the controller of the shared band's pacer. A mark says its own queue is long:
// those in the switch class best effort shares (`shared_band_marks`, of report.ce_marked) cut only
// the pacer that dlcp's packets in that class pass; the others cut only the peer's, which every
// packet passes. Both see the rest of the report (rates, loss, the share marked over all packets).
struct BandReports {
  Feedback peer;
  Feedback shared_band;
};
BandReports split_by_band(const Feedback& report, std::uint64_t shared_band_marks);

// Sender side: the rate to pace at, the controller's rate capped by the share the receiver
// offered (0 = no offer yet), never below min_rate. The controller still decides on its own
// rate, so that the sender speeds up at once when the receiver's other senders go quiet.
double paced_rate(double controller_rate, double offered_rate, double min_rate);

}  // namespace dlcp::protocol
