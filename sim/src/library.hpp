// The library's policy, rate controller, pacer and block layout, as the C++17 simulator sees
// them.
//
// ns-3.37's headers do not compile as C++20 and the library's public headers use C++20
// (std::span), so the simulator cannot include them. It calls the library through this facade
// instead; bridge/library_bridge.cpp is compiled as C++20 with the library's own policy.hpp,
// rate_controller.hpp, pacer.hpp and block_layout.hpp and only forwards. No policy logic lives
// here or there.
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
// transport::offered_share and transport::paced_rate: a receiver's fair share, and the rate a
// sender paces at given its controller's rate and the share offered to it. Rates in bytes/s.
double offered_share(double receive_rate, std::size_t active_senders);
double paced_rate(double controller_rate, double offered_rate, double min_rate);
// transport::split_by_band: of one report's `ce_marked` marks, those the peer's controller gets
// and those the shared band's gets (the rest of the report goes to both).
struct BandMarks {
  std::uint64_t peer = 0;
  std::uint64_t shared_band = 0;
};
BandMarks split_marks(std::uint64_t ce_marked, std::uint64_t shared_band_marks);
// transport::sending_window and transport::counts_as_sender, in nanoseconds: which peers a
// receiver counts when it shares its rate.
std::int64_t sending_window_ns(std::int64_t feedback_interval_ns, double receive_rate,
                               std::size_t counted_senders, std::uint64_t datagram_bytes);
bool counts_as_sender(std::int64_t since_last_packet_ns, bool mid_round,
                      std::int64_t feedback_interval_ns, std::int64_t sending_window_ns);
// transport::packets_lost: the loss a receiver reports for one interval of a sender's packets.
std::uint64_t packets_lost(std::uint64_t numbered, std::uint64_t arrived);

// collectives::aligned_part: part `index` of `parts` contiguous parts of [0, total) floats, whole
// blocks as equal as possible, earlier parts taking the extra blocks (the parameter server's
// shard of a buffer). Returns {begin, size} in floats.
struct FloatRange {
  std::size_t begin = 0;
  std::size_t size = 0;
};
FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block, std::size_t index);

// dlcp::transport::RateController with RateControlOptions defaults except the three rates.
class RateController {
 public:
  RateController(double initial_rate, double min_rate, double max_rate);  // bytes/s
  RateController(RateController&&) noexcept;
  ~RateController();

  // One receiver report (dlcp::transport::Feedback); returns the new rate in bytes/s.
  double on_feedback(std::int64_t interval_ns, std::uint64_t received_bytes,
                     std::uint64_t received_packets, std::uint64_t lost_packets,
                     std::uint64_t ce_marked);
  double rate() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// dlcp::transport::Pacer (a token bucket) driven as the library's engine drives it: a packet
// leaves once a whole datagram's tokens are there, and every new rate goes through
// transport::apply_rate (the burst follows the rate; a cut drops saved tokens). Times are
// simulated nanoseconds.
class Pacer {
 public:
  // rate in bytes/s; the receiver reports every feedback_interval_ns; the bucket starts full.
  Pacer(double rate, std::uint64_t datagram_bytes, std::int64_t feedback_interval_ns,
        std::int64_t now_ns);
  Pacer(Pacer&&) noexcept;
  ~Pacer();

  // Nanoseconds until a datagram may leave (0: now).
  std::int64_t wait_ns(std::int64_t now_ns);
  void consume(std::uint64_t bytes, std::int64_t now_ns);
  void set_rate(double rate, std::int64_t now_ns);  // transport::apply_rate
  std::uint64_t burst() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlcp::sim::library
