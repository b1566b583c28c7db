// Why an incoming datagram or control frame was refused. Every refusal is counted by reason.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dlcp::wire {

enum class RejectReason : std::uint8_t {
  kTooShort,           // shorter than the fixed header
  kBadVersion,         // unknown protocol version
  kBadFlags,           // reserved flag bits set
  kWrongJob,           // job token does not match this job (other job or stale run)
  kWrongDestination,   // addressed to another rank
  kBadSourceRank,      // source rank outside the world or equal to our own rank
  kBadPriority,        // priority class outside 0..7
  kBadGeometry,        // stride / total / sequence inconsistent (seq >= packet count, ...)
  kBadPayloadLength,   // payload length disagrees with datagram size or packet geometry
  kBadContributions,   // contribution count 0 or larger than the world
  kUnknownMessage,     // no posted receive and the early-arrival backlog is full
  kMismatchedMessage,  // packet geometry disagrees with the posted receive
  kDuplicate,          // packet already received
  kStaleMessage,       // packet for a message this receiver already settled
  kBadControlType,     // unknown control message type
  kBadControlLength,   // control frame length inconsistent with its type
  kBadControlField,    // control field out of range (ranges unsorted, bitmap count wrong, ...)
  kBadAuth,            // control handshake: proof missing or wrong (no or another job secret)
  kHandshakeLimit,     // control handshake: too slow, or too many connections handshaking
  kMissingMac,         // data packet without the MAC trailer the job requires
  kBadMac,             // data packet whose MAC does not verify (forged or corrupted)
  kReplayed,           // data packet whose MAC counter was seen before or is too old
  kCount
};

inline constexpr std::size_t kRejectReasonCount = static_cast<std::size_t>(RejectReason::kCount);

std::string_view to_string(RejectReason reason);

// Plain counters, one per reason. Owned by one thread; snapshots are copied out.
struct RejectCounters {
  std::array<std::uint64_t, kRejectReasonCount> by_reason{};

  void add(RejectReason reason) { ++by_reason[static_cast<std::size_t>(reason)]; }
  std::uint64_t get(RejectReason reason) const {
    return by_reason[static_cast<std::size_t>(reason)];
  }
  std::uint64_t total() const;
  RejectCounters& operator+=(const RejectCounters& other);
};

}  // namespace dlcp::wire
