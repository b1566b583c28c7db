// The library's policy, protocol endpoint and block layout, as the C++17 simulator sees them.
//
// ns-3.37's headers do not compile as C++20 and the library's public headers use C++20
// (std::span), so the simulator cannot include them. It calls the library through this facade
// instead; bridge/library_bridge.cpp is compiled as C++20 with the library's own policy, protocol
// core (src/protocol/) and block layout, and only forwards. No policy or protocol logic lives here
// or there: every protocol decision is protocol::Endpoint's (HostEndpoint below).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
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
  friend class HostEndpoint;
  struct Options;
  std::unique_ptr<Options> options_;
};

int priority_class(int layer, int num_layers);  // policy::priority_class
std::uint32_t budget_ppm(double fraction);      // policy::budget_ppm

// collectives::aligned_part: part `index` of `parts` contiguous parts of [0, total) floats, whole
// blocks as equal as possible, earlier parts taking the extra blocks (the parameter server's
// shard of a buffer). Returns {begin, size} in floats.
struct FloatRange {
  std::size_t begin = 0;
  std::size_t size = 0;
};
FloatRange aligned_part(std::size_t total, std::size_t parts, std::size_t block, std::size_t index);

// The protocol endpoint of one host (protocol::Endpoint, src/protocol/endpoint.hpp) with plain
// types: every protocol decision (the send queue, bursts with their path, codepoint and flags,
// rounds, settlement, budget groups, deadlines, early arrivals, rate reports, Stop) is the
// library's, exactly as its socket engine drives it; the simulator only moves the bytes it hands
// out and calls again when it says. Times are simulated nanoseconds.
struct HostEndpointOptions {
  int rank = 0;
  int world_size = 2;  // hosts
  // The host's line rate in bytes/s: every sender's initial and highest rate and what a receiver
  // shares among its senders; the lowest rate is a thousandth of it.
  double line_rate_bytes = 0;
  bool shared_band_pacing = false;        // RateControlOptions::shared_band_pacing
  std::int64_t feedback_interval_ns = 0;  // EndpointOptions::feedback_interval
  std::int64_t quiet_before_report_ns = 0;
  bool offer_receive_share = true;  // EndpointOptions::offer_receive_share
  bool ecn_capable = true;          // EndpointOptions::ecn_capable
  bool drop_precedence = true;      // EndpointOptions::drop_precedence
  std::uint8_t parity_members = 0;  // EndpointOptions::parity_members (0: no parity)
  // Per DSCP: in best effort's band (SwitchBands::shares_best_effort).
  std::array<bool, kDscpCount> shared_band_dscps{};
  // The pacers count IP and UDP headers too, since the simulator's rates are line rates.
  std::size_t datagram_overhead_bytes = 28;
  std::size_t burst_packets = 1;    // the driver sends one packet per NIC slot
  std::size_t max_run_packets = 1;  // every packet sprayed on a path of its own
};

// A peer as EndpointOptions' PeerLink has it.
struct PeerPath {
  std::size_t datagram_bytes = 0;  // a full data datagram: 40-byte header and stride floats
  std::uint16_t stride = 0;        // float32 values per packet
  std::size_t send_paths = 1;
  std::size_t receive_paths = 1;
};

// One send or receive of a simulated payload (nothing is read or placed).
struct Request {
  int peer = -1;
  std::uint64_t message_id = 0;
  std::uint64_t token = 0;  // the driver's, handed back with the completion
  std::uint32_t total_floats = 0;
  int layer = 0;
  int num_layers = 1;
  double loss_budget = 0;
  std::int64_t deadline_ms = 30000;  // MessageOptions::deadline
  std::uint64_t budget_group = 0;    // receive: MessageOptions::budget_group
  std::uint32_t budget_group_size = 0;
  // Send: one flag per packet, the protected set chosen by the driver's synthetic ranking
  // (ignored by a reliable message, which protects every packet).
  std::vector<std::uint8_t> protected_flags;
};

inline constexpr std::size_t kDataHeaderBytes = 40;   // checked against wire::kDataHeaderBytes
inline constexpr std::uint8_t kParityFlag = 1u << 6;  // checked against wire::data_flags::kParity

// One data packet to put on the wire: its encoded header, followed by payload_bytes of payload.
struct DataPacket {
  int peer = -1;
  std::size_t path = 0;
  std::uint8_t tos = 0;
  std::array<std::uint8_t, kDataHeaderBytes> header{};
  std::uint32_t payload_bytes = 0;
  // Read from the header, for the driver's counters and logs only.
  std::uint64_t message_id = 0;
  std::uint32_t seq = 0;
  std::uint8_t flags = 0;  // wire::data_flags
  bool retransmission = false;
};

// A control frame, encoded as on the library's control connection (length prefix included).
struct ControlFrame {
  int peer = -1;
  std::vector<std::uint8_t> bytes;
};

struct Completion {
  std::uint64_t token = 0;
  bool is_send = false;
  bool ok = true;
  std::string error;  // when not ok
  std::uint64_t entries_missing = 0;
};

struct HostOutputs {
  std::vector<ControlFrame> control;
  std::vector<Completion> completions;
  std::vector<int> lost_peers;
  void clear() {
    control.clear();
    completions.clear();
    lost_peers.clear();
  }
};

// What the endpoint said, counted as the driver reports it (observation only).
struct HostCounters {
  std::uint64_t missing_reports = 0;    // MissingRanges frames sent
  std::uint64_t shared_band_marks = 0;  // RateFeedback::ce_marked_shared_band sent
  std::uint64_t rejected = 0;           // datagrams or frames the decoders or the endpoint refused
  std::uint64_t packets_rebuilt = 0;    // lost packets rebuilt from parity
};

class HostEndpoint {
 public:
  HostEndpoint(const Policy& policy, const HostEndpointOptions& options);
  HostEndpoint(HostEndpoint&&) noexcept;
  ~HostEndpoint();

  void peer_joined(int peer, const PeerPath& path, std::int64_t now_ns);
  void post_send(const Request& request, std::int64_t now_ns);
  void post_receive(const Request& request, std::int64_t now_ns);

  // The next burst the send queue and the pacers allow now (false: none), then that the network
  // took all of it.
  bool next_burst(std::int64_t now_ns, std::vector<DataPacket>& packets);
  void burst_sent(std::int64_t now_ns);

  // A data datagram arrived on receive path `path`: its 40 header bytes, then `payload_bytes` of
  // payload the simulator does not carry (read as zeros). False if the decoder refused it.
  bool on_datagram(const std::uint8_t* header, std::size_t payload_bytes, std::uint8_t tos,
                   std::size_t path, std::int64_t now_ns);
  // A control frame from `peer`, in order, as encoded by its endpoint. False if refused.
  bool on_control(int peer, const std::uint8_t* bytes, std::size_t size, std::int64_t now_ns);

  void on_timeout(std::int64_t now_ns);
  // When to call on_timeout next (INT64_MAX: never); when a queued packet may leave (-1: none).
  std::int64_t next_timeout_ns(std::int64_t now_ns) const;
  std::int64_t next_send_ns(std::int64_t now_ns);

  bool has_outputs() const;
  void take_outputs(HostOutputs& out);
  const HostCounters& counters() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace dlcp::sim::library
