// The records the local path (local_path.hpp) exchanges through its rings. Both ends run on one
// host and the same dlcp (the handshake checks both), so a record is the struct's bytes; the
// reader checks every length and field before it acts on one. A message:
//   sender -> receiver: Announce   (send_seq, id, shape)            when the send is posted
//   receiver -> sender: Ready      (send_seq, receive_seq)          once the receive is posted too
//   sender -> receiver: Data...    (receive_seq, packets, payloads) as the ring has room
//   receiver -> sender: Settled    (send_seq)                       when every packet is placed
// or Refused (send_seq, error code, reason) when the receiver failed the message. Data flows only
// for posted receives, so the ring never fills with a message nobody reads (no early-arrival
// copy, no head-of-line blocking); the sequence numbers keep a late record of a failed transfer
// out of a later one under the same id.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

namespace dlcp::transport::local {

enum class Kind : std::uint32_t {
  kAnnounce = 1,
  kReady = 2,
  kData = 3,
  kSettled = 4,
  kRefused = 5
};

struct Announce {
  std::uint64_t send_seq = 0;
  std::uint64_t message_id = 0;
  std::uint32_t total_floats = 0;
  std::uint32_t packets = 0;
  std::uint16_t packet_floats = 0;
  std::uint8_t wire = 0;  // WireDtype
  std::uint8_t priority_class = 0;
  std::uint32_t reserved = 0;
};

struct Ready {
  std::uint64_t send_seq = 0;
  std::uint64_t receive_seq = 0;
};

// Followed by `packets` u16 contribution counts (padded to 8 bytes), then each packet's payload
// as a data packet would carry it (wire/values.hpp), back to back.
struct DataChunk {
  std::uint64_t receive_seq = 0;
  std::uint32_t first_packet = 0;
  std::uint32_t packets = 0;
};

struct Settled {
  std::uint64_t send_seq = 0;
};

// Followed by reason_bytes of text.
struct Refused {
  std::uint64_t send_seq = 0;
  std::uint32_t code = 0;  // dlcp::ErrorCode
  std::uint32_t reason_bytes = 0;
};

// Longest reason text a Refused record carries.
inline constexpr std::size_t kMaxReasonBytes = 512;

// Bytes of a chunk's counts, padded so that the payloads start aligned.
constexpr std::size_t counts_bytes(std::uint32_t packets) {
  return (std::size_t{packets} * 2 + 7) & ~std::size_t{7};
}

template <class T>
void put(std::span<std::byte> out, const T& record) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::memcpy(out.data(), &record, sizeof(T));
}

// The record at the start of `in`, when `in` holds at least one (exactly one when `exact`).
template <class T>
std::optional<T> get(std::span<const std::byte> in, bool exact = true) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (in.size() < sizeof(T) || (exact && in.size() != sizeof(T))) return std::nullopt;
  T record;
  std::memcpy(&record, in.data(), sizeof(T));
  return record;
}

}  // namespace dlcp::transport::local
