// The library's policy, protocol core and block layout, as the C++17 simulator sees them.
//
// ns-3.37's headers do not compile as C++20 and the library's public headers use C++20
// (std::span), so the simulator cannot include them. It calls the library through this facade
// instead; bridge/library_bridge.cpp is compiled as C++20 with the library's own policy, protocol
// core (src/protocol/) and block layout, and only forwards. No policy or protocol logic lives here
// or there: rounds, the completion rule, missing-range reports and pacing are the library's.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace dlcp::sim::library {

inline constexpr int kPriorityClasses = 8;  // checked against dlcp::kPriorityClasses in the bridge
inline constexpr int kDscpCount = 64;

// What a switch port makes of each DSCP under the library's switch plan
// (switchconf::make_switch_plan with the policy's table): its traffic class, which is the
// strict-priority band (0 = most urgent), and whether it is drop-eligible.
struct SwitchBands {
  std::array<std::int8_t, kDscpCount> band{};
  std::array<bool, kDscpCount> drop_eligible{};
  // In best effort's band (switchconf::shares_best_effort_class): what the shared-band pacer
  // paces and whose marks it counts.
  std::array<bool, kDscpCount> shares_best_effort{};
};

// dlcp::PolicyOptions (library defaults unless changed) and the policy functions that read it.
class Policy {
 public:
  Policy();
  Policy(const Policy& other);
  Policy& operator=(const Policy& other);
  ~Policy();

  void set_protected_share(double share);  // PolicyOptions::protected_share, validated
  double protected_share() const;

  // policy::data_tos with Precedence::kProtected or kDropEligible.
  std::uint8_t data_tos(int priority_class, bool is_protected) const;
  std::uint8_t control_tos() const;  // policy::control_tos
  std::uint8_t control_dscp() const;
  int class_of_dscp(std::uint8_t dscp) const;  // policy::class_of_dscp over the table
  // The switch plan's bands for this policy's table; best_effort_alone as in
  // switchconf::PortOptions (the other port options do not move a codepoint).
  SwitchBands switch_bands(bool best_effort_alone) const;
  // policy::protected_packets with this policy's protected_share.
  std::vector<std::uint8_t> protected_packets(const float* values, std::size_t count,
                                              std::size_t stride) const;

 private:
  struct Options;
  std::unique_ptr<Options> options_;
};

int priority_class(int layer, int num_layers);  // policy::priority_class
std::uint32_t budget_ppm(double fraction);      // policy::budget_ppm
std::uint64_t allowed_missing_entries(std::uint64_t total_entries, std::uint32_t loss_budget_ppm);
bool is_ce_marked(std::uint8_t tos);  // policy::is_ce_marked
// protocol::offered_share: a receiver's fair share of its rate (bytes/s) among its senders.
double offered_share(double receive_rate, std::size_t active_senders);
// protocol::sending_window and protocol::counts_as_sender, in nanoseconds: which peers a
// receiver counts when it shares its rate.
std::int64_t sending_window_ns(std::int64_t feedback_interval_ns, double receive_rate,
                               std::size_t counted_senders, std::uint64_t datagram_bytes);
bool counts_as_sender(std::int64_t since_last_packet_ns, bool mid_round,
                      std::int64_t feedback_interval_ns, std::int64_t sending_window_ns);
// protocol::packets_lost: the loss a receiver reports for one interval of a sender's packets.
std::uint64_t packets_lost(std::uint64_t numbered, std::uint64_t arrived);

// collectives::aligned_part: part `index` of `parts` contiguous parts of [0, total) floats, whole
// blocks as equal as possible, earlier parts taking the extra blocks (the parameter server's
// shard of a buffer). Returns {begin, size} in floats.
struct FloatRange {
  std::size_t begin = 0;
  std::size_t size = 0;
};
FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block, std::size_t index);

// The protocol core (src/protocol/) as the simulator drives it: the same per-message sender and
// receiver and per-peer pacing the library's socket engine drives. Times are simulated
// nanoseconds; packets are numbered from 0 as on the wire.

// A half-open range of packet sequence numbers [first, first + count) (wire::SeqRange).
struct SeqRange {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
};

// protocol::MessageSender: which packet goes next, rounds, and what a report starts.
class MessageSender {
 public:
  // `protected_flags` has one entry per packet; the first round sends the protected ones first
  // (policy::first_round_order), as the library does.
  MessageSender(std::uint32_t total_floats, std::uint32_t stride_floats,
                std::vector<std::uint8_t> protected_flags);
  MessageSender(MessageSender&&) noexcept;
  ~MessageSender();

  bool has_next() const;
  std::uint32_t take_next();
  // Sent with the protected codepoint: a protected packet, or any retransmission.
  bool sends_protected(std::uint32_t seq) const;
  std::uint32_t round() const;
  std::uint32_t floats_in(std::uint32_t seq) const;
  // A receiver's report for `round`: true when it starts the next round (false: stale, empty or
  // invalid).
  bool on_missing_ranges(std::uint32_t round, const std::vector<SeqRange>& ranges);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// protocol::MessageReceiver with its shape and FlowStart applied at once (the simulated receiver
// knows both when the message is posted): placement, the completion rule and missing-range
// reports.
class MessageReceiver {
 public:
  MessageReceiver(std::uint32_t total_floats, std::uint32_t stride_floats, std::uint32_t budget_ppm,
                  const std::vector<std::uint8_t>& protected_flags, std::int64_t posted_ns);
  MessageReceiver(MessageReceiver&&) noexcept;
  ~MessageReceiver();

  // Packet `seq` arrived; false for a duplicate (which changes nothing).
  bool on_packet(std::uint32_t seq, std::int64_t now_ns);
  // Whether the message settles now (complete, or every protected packet and all but the
  // budget).
  bool settles() const;
  void on_round_finished(std::uint32_t round, std::int64_t now_ns);
  // When the pending report is due, or -1 when none is pending.
  std::int64_t report_due_ns(std::int64_t quiet_ns) const;
  // The report due at `now_ns`, if any: the round it answers and the ranges to resend. `path_loss`
  // is the receiving host's loss estimate towards the sender (PeerPacing::last_loss).
  bool take_report(std::int64_t now_ns, std::int64_t quiet_ns, double path_loss,
                   std::uint32_t& round, std::vector<SeqRange>& ranges);
  bool mid_round() const;
  std::uint64_t missing_floats() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// protocol::PeerPacing: the rate controller and pacer (and, with shared_band_pacing, the shared
// band's pair) of one destination, RateControlOptions defaults except the three rates.
class PeerPacing {
 public:
  // Rates in bytes/s; paced in datagrams of `datagram_bytes`; reports every feedback_interval_ns.
  PeerPacing(double initial_rate, double min_rate, double max_rate, bool shared_band_pacing,
             std::uint64_t datagram_bytes, std::int64_t feedback_interval_ns, std::int64_t now_ns);
  PeerPacing(PeerPacing&&) noexcept;
  ~PeerPacing();

  // Nanoseconds until a datagram in (or out of) the shared band may leave (0: now).
  std::int64_t wait_ns(bool shared_band, std::int64_t now_ns);
  void consume(std::uint64_t bytes, bool shared_band, std::int64_t now_ns);
  // One receiver report (wire::RateFeedback's fields; offered_rate 0 = no offer).
  void on_report(std::int64_t interval_ns, std::uint64_t received_bytes,
                 std::uint64_t received_packets, std::uint64_t lost_packets,
                 std::uint64_t ce_marked, std::uint64_t shared_band_marks, double offered_rate,
                 std::int64_t now_ns);
  double last_loss() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlcp::sim::library
