// Options for the dlcp transport. Every struct validates itself: validate() throws
// dlcp::Error(ErrorCode::kInvalidArgument) whose message is "<Struct>.<field> <what is required>,
// got <value>", e.g. "TransportOptions.paths must be 1..64, got 0".
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace dlcp {

inline constexpr int kPriorityClasses = 8;

// How a message's values travel. Senders convert once when they build a packet, receivers convert
// back to float32 when they place it; every packet says which it carries, so a receiver takes
// either. The 16-bit dtypes halve the bytes on the wire and round each value to nearest even:
enum class WireDtype : std::uint8_t {
  kFloat32,   // IEEE binary32 as given: exact
  kBfloat16,  // the upper half of binary32: float32's range, 8 significant bits
  kFloat16,   // IEEE binary16 (11 significant bits) times a power of two chosen per packet so
              // that the packet's largest magnitude lands in (2^14, 2^15]: no overflow, and small
              // gradients keep their precision (see docs/protocol.md)
};

const char* to_string(WireDtype dtype);  // "fp32", "bf16", "fp16"
// Parses "fp32"/"float32", "bf16"/"bfloat16", "fp16"/"float16"; throws
// Error(kInvalidArgument) naming the accepted spellings.
WireDtype parse_wire_dtype(const std::string& name);

// DSCP per (priority class, drop precedence) and for control traffic. Defaults (see
// DscpTable::defaults): class c -> CS(7 - c) with AF-style low-drop bits (0b010) when protected and
// high-drop bits (0b110) when drop-eligible, so class 0 (front layers) is the most urgent;
// protected packets are ECN-capable; control traffic uses DSCP 63, above every data codepoint.
struct DscpTable {
  std::array<std::uint8_t, kPriorityClasses> protected_dscp{};
  std::array<std::uint8_t, kPriorityClasses> drop_eligible_dscp{};
  std::uint8_t control_dscp = 63;
  bool protected_ect = true;

  static DscpTable defaults();
  void validate() const;  // refuses a codepoint > 63 and colliding codepoints
};

struct PolicyOptions {
  DscpTable dscp = DscpTable::defaults();
  // Share of each tensor's packets, ranked by mean |g|, that are protected (never lost).
  double protected_share = 0.5;

  void validate() const;
};

// Sender rate control (see src/protocol/rate_controller.hpp for the rules). Rates in bytes/s.
struct RateControlOptions {
  double initial_rate = 1.25e9;
  double min_rate = 12.5e6;
  double max_rate = 12.5e9;
  double increase = 1.25;
  double decrease = 0.9;
  double keep_up = 0.8;
  double congestion_loss = 0.1;
  // Loss is judged over at least this many packets (received + lost), pooling consecutive
  // reports: a report of a few packets, or one that takes a burst's tail losses at once, reads far
  // above congestion_loss by chance. 1 = judge every report on its own.
  int loss_sample_packets = 16;
  int hold_intervals = 2;
  // What this host can take in, shared fairly among the peers sending to it: each is offered
  // receive_rate / (peers heard within the last feedback interval, or part-way through a message
  // and heard within two packet gaps at their share) and paces at no more, so an incast fills the
  // receiver's link instead of overflowing its switch port. 0 = the link speed of the hardware
  // NICs the data sockets are bound to (summed over distinct NICs; with a wildcard bind, the NICs
  // the routes to the peers go through), or max_rate where there is none (loopback, virtual
  // devices such as a container's veth, NICs reporting no speed).
  // TransportCounters::receive_rate_bytes_per_s says which was used.
  double receive_rate = 0.0;
  // Off (the default): one pacer per peer, which every CE mark cuts. On: dlcp's packets in the
  // switch class best effort shares (DSCP 0's class under the switch plan with
  // best_effort_alone off: dlcp's least urgent class) also pass a second pacer per peer, which
  // only the marks on such packets cut; the other marks cut only the peer's pacer. The
  // background's backlog then slows only the class that waits behind it, not the urgent classes
  // in their own queues. Receivers always report those marks apart, so the peers' settings need
  // not agree. In the simulator it lowered ring all-reduce's tail at 2% size and did not move
  // full-size runs (docs/simulation.md, "Marks in the shared band").
  bool shared_band_pacing = false;

  void validate() const;
};

// Diagnostic receive-path loss injection for testing; off unless drop_rate, a class rate or a
// class mark rate > 0.
struct LossInjectionOptions {
  double drop_rate = 0.0;          // long-run fraction of data packets dropped, 0..1
  double mean_burst_length = 1.0;  // >= 1; 1 = independent drops, larger = Gilbert-Elliott bursts
  std::array<double, kPriorityClasses> class_drop_rate{-1, -1, -1, -1,
                                                       -1, -1, -1, -1};  // <0: drop_rate
  // Fraction of each class's arriving (not dropped) data packets read as CE-marked, as if a switch
  // had marked them, 0..1: exercises the reaction to ECN where no queue marks (loopback).
  std::array<double, kPriorityClasses> class_mark_rate{};
  // Per sending rank (index): a rate >= 0 replaces the class's rate for that rank's packets, as
  // independent drops (a lossy or straggling peer); negative or beyond the list: not set.
  std::vector<double> source_drop_rate;
  std::uint64_t seed = 1;

  bool enabled() const;
  void validate() const;
};

struct TransportOptions {
  int rank = 0;
  int world_size = 2;
  // Identifies the job; packets and connections carrying another token are refused.
  std::uint64_t job_token = 0;
  // Authenticates every control connection (both directions) and keys the packet MAC: 16..64
  // bytes shared by all ranks of the job. Empty derives a key from job_token instead, which
  // keeps out only those who cannot see the traffic (see docs/security.md); the communicator
  // always sets a real secret.
  std::vector<std::uint8_t> job_secret;
  // Authenticates every data packet with a MAC (needs job_secret); packets without a valid MAC,
  // or replayed, never reach a buffer. Costs throughput, see docs/security.md.
  bool packet_mac = false;
  // Address the control listener and data sockets bind to.
  std::string bind_host = "127.0.0.1";
  std::uint16_t control_port = 0;  // 0 = ephemeral
  // Extra local addresses for data sockets; socket k binds to local_addresses[k % size] when set.
  std::vector<std::string> local_addresses;
  // Data sockets (paths) to spray packets over.
  int paths = 4;
  // Largest IP packet to send; 0 = the route's MTU to each peer (IP_MTU), e.g. 65536 on loopback.
  int mtu = 0;
  int socket_buffer_bytes = 32 << 20;
  // Packets per sendmmsg/recvmmsg call.
  int batch = 64;
  // Receive-side buffer for packets of messages not yet posted, in bytes.
  std::size_t backlog_bytes = 256u << 20;
  // Early arrivals whose receive is not posted within this time are dropped (and re-requested by
  // the missing-ranges round if the receive is posted later).
  std::chrono::milliseconds early_arrival_ttl{60000};
  std::chrono::milliseconds connect_timeout{30000};
  // How often a receiver reports its receive rate and loss to each sender.
  std::chrono::microseconds feedback_interval{2000};
  // After a sender's round ends, wait this long without new packets before asking for the gaps.
  std::chrono::microseconds quiet_before_report{1000};
  // Parity for protected packets: one parity packet per this many protected packets of a message
  // (1..255; 0: none), sent in the first round after them, from which a receiver rebuilds one lost
  // packet of the group without a recovery round (docs/protocol.md, "Sending"). It costs 1/k more
  // protected packets; it pays where a round is dear: long or lossy paths. Messages sent with
  // per-packet contribution counts carry no parity.
  int parity_members = 0;
  // The control connections' least retransmission timeout (and most delayed-ACK time). Linux's
  // 200 ms default made one control frame lost on a lossy path cost 200 ms. It applies where
  // the kernel has the TCP_RTO_MIN_US socket option (recent kernels; 6.18 has it, Debian
  // bookworm's 6.1 does not), elsewhere the default stays; TransportCounters::control_rto_min_us
  // says which. 0 keeps the kernel's default.
  std::chrono::microseconds control_rto_min{5000};
  // Peers on this host (the same kernel boot and network namespace, learnt in the handshake)
  // exchange messages through shared memory instead of UDP, when both have this on: loss-free,
  // one copy into a shared ring and one out, no system call per packet. The segments are
  // anonymous (memfd) and handed over only after the job-key proof, so nothing is left behind
  // after a crash and no other job or user can map them (docs/protocol.md, "The local path").
  // Off where loss injection is on (`inject`), a diagnostic of the UDP path. Peers running a dlcp
  // older than the local path refuse its handshake field.
  bool local_path = true;
  PolicyOptions policy;
  RateControlOptions rate;
  LossInjectionOptions inject;

  void validate() const;
};

// Per message. The effective loss budget of a transfer is the smaller of the sender's and the
// receiver's.
struct MessageOptions {
  int layer = 0;           // position of the tensor's layer, 0 = nearest the input
  int num_layers = 1;      // layers in the model (spreads layers over the 8 priority classes)
  double loss_budget = 0;  // fraction of entries that may be missing, 0 = reliable
  std::chrono::milliseconds deadline{30000};
  std::uint16_t contributions = 1;  // values summed into the payload (collectives)
  // Receives that share one loss budget (0: this receive's own budget only). A member settles
  // incomplete only on the group's budget: once all budget_group_size receives posted on this
  // transport with the same nonzero budget_group are posted, every member that holds all its
  // protected packets settles as soon as the group's missing entries together are within the sum
  // of its members' budgets. A late or lossy sender's tail is then left out when the others
  // arrived whole, up to the whole group's budget. Collectives group the contributions to one
  // reduced segment.
  std::uint64_t budget_group = 0;
  std::uint32_t budget_group_size = 0;
  // Floats per packet; 0 = as many as the path's MTU allows (Transport::max_packet_floats).
  // Collectives fix it so that packet blocks line up across hops.
  std::uint16_t packet_floats = 0;
  // Send: how the values travel (receivers read what each packet says). packet_floats counts
  // values, so a 16-bit packet carries about twice as many as a float32 one of the same size.
  WireDtype wire = WireDtype::kFloat32;

  void validate() const;
};

}  // namespace dlcp
