// Control messages, carried on the reliable per-peer channel (TCP, highest DSCP).
//
// Framing: u32 body_length (big-endian, counts everything after itself), u8 version, u8 type,
// then the type's fields, big-endian. A frame longer than kMaxControlFrameBytes is refused before
// it is buffered. Field layouts are listed in docs/protocol.md and next to each struct below.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "common/expected.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::wire {

inline constexpr std::size_t kControlLengthPrefixBytes = 4;
inline constexpr std::size_t kMaxControlFrameBytes = 16u << 20;
inline constexpr std::size_t kMaxDataPorts = 64;

enum class ControlType : std::uint8_t {
  kHello = 1,
  kFlowStart = 2,
  kRoundFinished = 3,
  kMissingRanges = 4,
  kStop = 5,
  kRateFeedback = 6,
  kAbort = 7,
  kGoodbye = 8,
  kAuthenticate = 9,
};

// Fresh random bytes per connection and side (Hello::nonce), and the size of a handshake proof.
inline constexpr std::size_t kNonceBytes = 32;
inline constexpr std::size_t kProofBytes = 32;

// First frame on every control connection, both directions. Binds the connection to a job and
// a rank, tells the peer where to send data packets, and carries the sender's challenge: the
// peer's Authenticate proof covers both sides' nonces.
//   u64 job_token, u16 rank, u16 world_size, u8 socket_count (1..kMaxDataPorts),
//   socket_count x (u32 ipv4, u16 port)   -- one entry per data socket (path) of the sender
//   kNonceBytes nonce, u8 features (hello_features; unknown bits must be 0)
//   with hello_features::kLocalPath only: kHostIdentityBytes host identity, u8 name length
//   (1..kMaxLocalSocketName), the name of the sender's local-path socket
struct DataAddress {
  std::uint32_t ipv4 = 0;  // host byte order value
  std::uint16_t port = 0;
  bool operator==(const DataAddress&) const = default;
};

inline constexpr std::size_t kHostIdentityBytes = 24;
inline constexpr std::size_t kMaxLocalSocketName = 100;

struct Hello {
  std::uint64_t job_token = 0;
  std::uint16_t rank = 0;
  std::uint16_t world_size = 0;
  std::vector<DataAddress> data_sockets;
  std::array<std::uint8_t, kNonceBytes> nonce{};
  std::uint8_t features = 0;
  // With kLocalPath: which host and network namespace the sender runs in, and the abstract Unix
  // socket where it hands over its local-path segments (transport/local_handoff.hpp).
  std::array<std::uint8_t, kHostIdentityBytes> host_identity{};
  std::string local_socket;
};

// Settings both ends of a connection must share; a mismatch fails the handshake by name.
namespace hello_features {
inline constexpr std::uint8_t kPacketMac = 1u << 0;  // data packets carry a MAC trailer
// Data packets of format version 2 (DataHeader::pair_seq). Every dlcp that sends them says so; a
// peer that does not would send version 1, which the receiver refuses packet by packet, so the
// handshake names the mismatch instead (and an older dlcp refuses this unknown bit).
inline constexpr std::uint8_t kPairSeq = 1u << 1;
// RateFeedback carries ce_marked_shared_band. Every dlcp that sends it says so, and the handshake
// names an older peer instead of failing on its first rate report's length.
inline constexpr std::uint8_t kSharedBandMarks = 1u << 2;
// Data packets of format version 3 (the wire dtype in the flags byte, 16-bit payloads): a peer
// without it would refuse every packet for its version, so the handshake names it.
inline constexpr std::uint8_t kWireDtypes = 1u << 3;
// FlowStart's parity_members and parity data packets: a peer without it would refuse both.
inline constexpr std::uint8_t kParity = 1u << 4;
// The sender offers the local path (TransportOptions::local_path): its Hello carries its host
// identity and local socket. Optional: two ranks use the path only when both offer it on one
// host. An older dlcp refuses the bit, so a mixed-version job turns local_path off.
inline constexpr std::uint8_t kLocalPath = 1u << 5;
inline constexpr std::uint8_t kAllKnown =
    kPacketMac | kPairSeq | kSharedBandMarks | kWireDtypes | kParity | kLocalPath;
}  // namespace hello_features

// Sender -> receiver before the first data packet of a message.
//   u64 message_id, u32 total_floats, u16 stride_floats, u8 priority_class, u8 parity_members,
//   u32 loss_budget_ppm (0..1'000'000), u32 packet_count, u32 protected_count,
//   ceil(packet_count / 8) bytes protected bitmap (bit i of byte i/8, LSB first)
// The decoder checks packet_count against total/stride, the bitmap length, that no bit beyond
// packet_count is set, and that the bitmap's population count equals protected_count.
struct FlowStart {
  std::uint64_t message_id = 0;
  std::uint32_t total_floats = 0;
  std::uint16_t stride_floats = 0;
  std::uint8_t priority_class = 0;
  // Protected packets per parity packet (protocol/parity_groups.hpp); 0: no parity.
  std::uint8_t parity_members = 0;
  std::uint32_t loss_budget_ppm = 0;
  std::uint32_t packet_count = 0;
  std::uint32_t protected_count = 0;
  std::vector<std::uint8_t> protected_bitmap;
};

// Sender -> receiver: every packet of this round has been handed to the kernel.
//   u64 message_id, u16 round, u32 packets_sent
struct RoundFinished {
  std::uint64_t message_id = 0;
  std::uint16_t round = 0;
  std::uint32_t packets_sent = 0;
};

// A half-open range of packet sequence numbers [first, first + count).
struct SeqRange {
  std::uint32_t first = 0;
  std::uint32_t count = 0;
  bool operator==(const SeqRange&) const = default;
};

// Receiver -> sender: please resend these packets (the sender resends protected ones first).
//   u64 message_id, u16 round, u32 range_count, range_count x (u32 first, u32 count)
// Decoder checks: count > 0 per range, first + count does not overflow u32, ranges within one
// list are strictly ascending and non-overlapping, and range_count matches the frame length.
struct MissingRanges {
  std::uint64_t message_id = 0;
  std::uint16_t round = 0;
  std::vector<SeqRange> ranges;
};

enum class StopReason : std::uint8_t {
  kComplete = 0,      // every packet arrived
  kBoundReached = 1,  // all protected packets and enough of the rest arrived
  kDeadline = 2,      // the receiver gave up at its deadline
  kAborted = 3,       // the receiver cancelled or hit an error
};

// Receiver -> sender: the message is settled; drop anything still queued for it.
//   u64 message_id, u8 reason, u32 packets_received, u32 packets_missing
struct Stop {
  std::uint64_t message_id = 0;
  StopReason reason = StopReason::kComplete;
  std::uint32_t packets_received = 0;
  std::uint32_t packets_missing = 0;
};

// Receiver -> sender, periodic: what arrived from this sender over the last interval, and the
// receiver's fair share for each of its current senders (bytes/s, 0 = no cap).
// path_received[i] counts packets that arrived on the receiver's i-th data socket.
//   u32 interval_us, u64 received_bytes, u32 received_packets, u32 lost_packets_estimate,
//   u32 ce_marked_packets, u32 ce_marked_shared_band (<= ce_marked_packets), u64 offered_rate,
//   u8 path_count (<= kMaxDataPorts),
//   path_count x u32 path_received
struct RateFeedback {
  std::uint32_t interval_us = 0;
  std::uint64_t received_bytes = 0;
  std::uint32_t received_packets = 0;
  std::uint32_t lost_packets_estimate = 0;
  std::uint32_t ce_marked_packets = 0;
  // Of ce_marked_packets, those in the switch class best effort shares (see
  // RateControlOptions::shared_band_pacing); never more than ce_marked_packets.
  std::uint32_t ce_marked_shared_band = 0;
  std::uint64_t offered_rate = 0;
  std::vector<std::uint32_t> path_received;
};

// Either direction: the sender gave up on the whole job (a collective failed, a rank died) and
// is closing; every message with it fails at once with the reason, instead of at its deadline.
//   u16 reason_length (<= kMaxAbortReasonBytes), reason bytes (printable ASCII)
inline constexpr std::size_t kMaxAbortReasonBytes = 1024;
struct Abort {
  std::string reason;
};

// Either direction, last frame of an orderly shutdown: the connection closing next is not a
// failure of the job, only of transfers that were still waiting for this peer. No fields.
struct Goodbye {};

// Second frame of the handshake, both directions: proves knowledge of the job secret by a keyed
// MAC over both Hello frames (see transport/job_key.hpp). No connection is used before the
// peer's proof is verified.
//   kProofBytes proof
struct Authenticate {
  std::array<std::uint8_t, kProofBytes> proof{};
};

using ControlMessage = std::variant<Hello, FlowStart, RoundFinished, MissingRanges, Stop,
                                    RateFeedback, Abort, Goodbye, Authenticate>;

// Encodes one whole frame, length prefix included, appending to out.
void encode_control(const ControlMessage& message, std::vector<std::byte>& out);

// Reads the length prefix of a frame whose first kControlLengthPrefixBytes are available.
// Returns the body length or a rejection (kBadControlLength when zero or above the maximum).
Expected<std::uint32_t, RejectReason> decode_control_length(std::span<const std::byte> prefix);

// Decodes one frame body (everything after the length prefix) and validates every field.
Expected<ControlMessage, RejectReason> decode_control_body(std::span<const std::byte> body);

}  // namespace dlcp::wire
