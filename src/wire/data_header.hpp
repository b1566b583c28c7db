// The data packet: a fixed 40-byte header followed by whole values in the packet's wire dtype.
//
// Layout (all header integers big-endian, see docs/protocol.md):
//   0  u8  version (kProtocolVersion)
//   1  u8  flags (data_flags in bits 0-3 and 6; bits 4-5 the wire dtype: 0 fp32, 1 bf16,
//              2 fp16; bit 7 and dtype 3 must be zero)
//   2  u16 payload_bytes
//   4  u64 job_token
//  12  u16 src_rank
//  14  u16 dst_rank
//  16  u64 message_id
//  24  u32 seq               (offset in floats = seq * stride_floats; a parity packet's is
//                             packet_count + its group)
//  28  u32 total_floats      (length of the whole message)
//  32  u16 stride_floats     (floats carried by every packet but possibly the last)
//  34  u16 contributions     (how many ranks' values are summed into this payload)
//  36  u8  priority_class    (0 = most urgent .. 7)
//  37  u8  round             (0 = first transmission, n = n-th retransmission round, saturating)
//  38  u16 pair_seq          (per sender and receiver: counts every data packet, wrapping)
// Payload: expected_floats() values in the wire dtype, laid out as wire/values.hpp says
// (binary32 little-endian for fp32).
// With flag kAuthenticated (jobs that turn on TransportOptions::packet_mac), a 24-byte trailer
// follows the payload: u64 packet counter, then a 16-byte MAC tag (see transport/job_key.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/expected.hpp"
#include "dlcp/options.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::wire {

inline constexpr std::uint8_t kProtocolVersion = 3;
inline constexpr std::size_t kDataHeaderBytes = 40;
inline constexpr std::size_t kFloatBytes = 4;
inline constexpr std::uint8_t kPriorityClasses = 8;
inline constexpr std::size_t kMacTagBytes = 16;
inline constexpr std::size_t kMacTrailerBytes = 8 + kMacTagBytes;  // u64 counter, tag

namespace data_flags {
inline constexpr std::uint8_t kProtected = 1u << 0;
inline constexpr std::uint8_t kRetransmission = 1u << 1;
inline constexpr std::uint8_t kLastOfRound = 1u << 2;
inline constexpr std::uint8_t kAuthenticated = 1u << 3;  // a MAC trailer follows the payload
// The payload is the XOR of a parity group's encoded payloads (protocol/parity_groups.hpp), not
// values of the message; its seq is packet_count + the group.
inline constexpr std::uint8_t kParity = 1u << 6;
inline constexpr std::uint8_t kAllKnown =
    kProtected | kRetransmission | kLastOfRound | kAuthenticated | kParity;
}  // namespace data_flags

struct DataHeader {
  std::uint8_t flags = 0;  // data_flags
  WireDtype wire = WireDtype::kFloat32;
  std::uint16_t payload_bytes = 0;
  std::uint64_t job_token = 0;
  std::uint16_t src_rank = 0;
  std::uint16_t dst_rank = 0;
  std::uint64_t message_id = 0;
  std::uint32_t seq = 0;
  std::uint32_t total_floats = 0;
  std::uint16_t stride_floats = 0;
  std::uint16_t contributions = 1;
  std::uint8_t priority_class = 0;
  std::uint8_t round = 0;
  // The sender's count of data packets to this receiver (first rounds and retransmissions of all
  // messages), modulo 2^16: the receiver's loss estimate (protocol/delivery_meter.hpp).
  std::uint16_t pair_seq = 0;

  bool is_protected() const { return (flags & data_flags::kProtected) != 0; }
  bool is_authenticated() const { return (flags & data_flags::kAuthenticated) != 0; }
  // Bytes after the payload: the MAC trailer, if any.
  std::size_t trailer_bytes() const { return is_authenticated() ? kMacTrailerBytes : 0; }
  bool is_retransmission() const { return (flags & data_flags::kRetransmission) != 0; }
  bool is_parity() const { return (flags & data_flags::kParity) != 0; }
  // Number of packets the message is cut into; stride_floats must be > 0.
  std::uint32_t packet_count() const;
  // Offset of this packet's first value in the message, in floats.
  std::uint64_t offset_floats() const { return std::uint64_t{seq} * stride_floats; }
  // Floats this packet must carry given its position in the message (a parity packet: as many
  // as a full packet, its payload being as long).
  std::uint32_t expected_floats() const;
};

// Number of packets for a message of total_floats cut into stride_floats-sized pieces.
std::uint32_t packet_count(std::uint32_t total_floats, std::uint16_t stride_floats);

// Floats packet `seq` of such a message carries: stride_floats, or the remainder for the last
// packet; 0 when seq is outside the message.
std::uint32_t packet_floats(std::uint32_t total_floats, std::uint16_t stride_floats,
                            std::uint32_t seq);

// Writes the header into out[0, kDataHeaderBytes). out must be at least that long.
void encode_data_header(const DataHeader& header, std::span<std::byte> out);

// What the receiver checks a datagram against before decoding its geometry.
struct DataExpectations {
  std::uint64_t job_token = 0;
  std::uint16_t local_rank = 0;
  std::uint32_t world_size = 0;  // source rank must be < world_size and != local_rank
  bool packet_mac = false;       // the job authenticates packets: the trailer is required
};

// The MAC trailer of an authenticated datagram.
struct MacTrailer {
  std::uint64_t counter = 0;  // per sender and destination, never repeated under one key
  std::array<std::uint8_t, kMacTagBytes> tag{};
};

void encode_mac_trailer(const MacTrailer& trailer, std::span<std::byte> out);
MacTrailer decode_mac_trailer(std::span<const std::byte> in);

// Decodes and validates a whole datagram (header + payload + trailer if authenticated). On
// success the payload is datagram.subspan(kDataHeaderBytes, header.payload_bytes) and the trailer
// follows it. Checks, in order: length >= header, version, flags, job token, MAC
// trailer present exactly when the job uses one, destination, source rank, priority class,
// geometry (stride > 0, total > 0, seq < packet count; a parity packet's seq at least the packet
// count and below twice it), payload length against both the datagram
// size and the packet's position (whole values of its wire dtype only). The MAC itself is verified
// by the transport, which holds the keys.
Expected<DataHeader, RejectReason> decode_data_packet(std::span<const std::byte> datagram,
                                                      const DataExpectations& expect);

// The same checks from the header bytes alone (at least kDataHeaderBytes of them) and the size of
// the whole datagram, for receivers that read the header before placing the payload.
Expected<DataHeader, RejectReason> decode_data_header(std::span<const std::byte> header,
                                                      std::size_t datagram_size,
                                                      const DataExpectations& expect);

// Copies count floats from the wire (little-endian binary32) into dst, and back.
void load_floats(std::span<const std::byte> wire, std::span<float> dst);
void store_floats(std::span<const float> src, std::span<std::byte> wire);

}  // namespace dlcp::wire
