#include "wire/reject_reason.hpp"

namespace dlcp::wire {

std::string_view to_string(RejectReason reason) {
  switch (reason) {
    case RejectReason::kTooShort:
      return "too_short";
    case RejectReason::kBadVersion:
      return "bad_version";
    case RejectReason::kBadFlags:
      return "bad_flags";
    case RejectReason::kWrongJob:
      return "wrong_job";
    case RejectReason::kWrongDestination:
      return "wrong_destination";
    case RejectReason::kBadSourceRank:
      return "bad_source_rank";
    case RejectReason::kBadPriority:
      return "bad_priority";
    case RejectReason::kBadGeometry:
      return "bad_geometry";
    case RejectReason::kBadPayloadLength:
      return "bad_payload_length";
    case RejectReason::kBadContributions:
      return "bad_contributions";
    case RejectReason::kUnknownMessage:
      return "unknown_message";
    case RejectReason::kMismatchedMessage:
      return "mismatched_message";
    case RejectReason::kDuplicate:
      return "duplicate";
    case RejectReason::kStaleMessage:
      return "stale_message";
    case RejectReason::kBadControlType:
      return "bad_control_type";
    case RejectReason::kBadControlLength:
      return "bad_control_length";
    case RejectReason::kBadControlField:
      return "bad_control_field";
    case RejectReason::kBadAuth:
      return "bad_auth";
    case RejectReason::kHandshakeLimit:
      return "handshake_limit";
    case RejectReason::kMissingMac:
      return "missing_mac";
    case RejectReason::kBadMac:
      return "bad_mac";
    case RejectReason::kReplayed:
      return "replayed";
    case RejectReason::kCount:
      break;
  }
  return "unknown";
}

std::uint64_t RejectCounters::total() const {
  std::uint64_t sum = 0;
  for (const std::uint64_t count : by_reason) sum += count;
  return sum;
}

RejectCounters& RejectCounters::operator+=(const RejectCounters& other) {
  for (std::size_t i = 0; i < by_reason.size(); ++i) by_reason[i] += other.by_reason[i];
  return *this;
}

}  // namespace dlcp::wire
