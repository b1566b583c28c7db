#include "protocol/receive_tracker.hpp"

#include "wire/data_header.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "policy/policy.hpp"

namespace dlcp::protocol {
namespace {

std::uint32_t count_packets(std::uint32_t total_floats, std::uint16_t stride_floats) {
  if (total_floats == 0) throw std::invalid_argument("ReceiveTracker: total_floats must be > 0");
  if (stride_floats == 0) throw std::invalid_argument("ReceiveTracker: stride_floats must be > 0");
  return static_cast<std::uint32_t>((std::uint64_t{total_floats} + stride_floats - 1) /
                                    stride_floats);
}

// Appends seq to ascending ranges, extending the last one when contiguous.
void append(std::vector<wire::SeqRange>& ranges, std::uint32_t seq) {
  if (!ranges.empty() && ranges.back().first + ranges.back().count == seq) {
    ++ranges.back().count;
  } else {
    ranges.push_back({seq, 1});
  }
}

}  // namespace

ReceiveTracker::ReceiveTracker(std::uint32_t total_floats, std::uint16_t stride_floats)
    : total_floats_(total_floats),
      stride_(stride_floats),
      packet_count_(count_packets(total_floats, stride_floats)),
      received_(packet_count_, std::uint8_t{0}),
      protected_(packet_count_, std::uint8_t{0}) {}

void ReceiveTracker::set_flow(const std::vector<std::uint8_t>& protected_bitmap,
                              std::uint32_t budget_ppm) {
  const std::uint64_t bytes = (std::uint64_t{packet_count_} + 7) / 8;
  if (protected_bitmap.size() != bytes) {
    throw std::invalid_argument("ReceiveTracker: protected bitmap has " +
                                std::to_string(protected_bitmap.size()) + " bytes, expected " +
                                std::to_string(bytes));
  }
  if (packet_count_ % 8 != 0 && (protected_bitmap.back() >> (packet_count_ % 8)) != 0) {
    throw std::invalid_argument("ReceiveTracker: protected bitmap marks packets beyond the count");
  }
  if (budget_ppm > policy::kPpm) {
    throw std::invalid_argument("ReceiveTracker: budget_ppm " + std::to_string(budget_ppm) +
                                " above 1000000");
  }
  protected_count_ = 0;
  protected_received_ = 0;
  for (std::uint32_t seq = 0; seq < packet_count_; ++seq) {
    const bool is_set = ((protected_bitmap[seq / 8] >> (seq % 8)) & 1u) != 0;
    protected_[seq] = is_set ? 1 : 0;
    if (is_set) {
      ++protected_count_;
      if (received_[seq] != 0) ++protected_received_;
    }
  }
  budget_ppm_ = budget_ppm;
  has_flow_ = true;
}

bool ReceiveTracker::mark_received(std::uint32_t seq) {
  if (seq >= packet_count_) {
    throw std::out_of_range("ReceiveTracker: packet " + std::to_string(seq) + " of " +
                            std::to_string(packet_count_));
  }
  if (received_[seq] != 0) return false;
  received_[seq] = 1;
  ++received_count_;
  received_floats_ += floats_in(seq);
  if (protected_[seq] != 0) ++protected_received_;
  return true;
}

bool ReceiveTracker::received(std::uint32_t seq) const {
  return seq < packet_count_ && received_[seq] != 0;
}

bool ReceiveTracker::is_protected(std::uint32_t seq) const {
  return seq < packet_count_ && protected_[seq] != 0;
}

std::uint32_t ReceiveTracker::protected_missing() const {
  return protected_count_ - protected_received_;
}

std::uint64_t ReceiveTracker::allowed_missing_floats() const {
  if (!has_flow_) return 0;
  return policy::allowed_missing_entries(total_floats_, budget_ppm_);
}

std::uint32_t ReceiveTracker::floats_in(std::uint32_t seq) const {
  return wire::packet_floats(total_floats_, stride_, seq);
}

Settlement ReceiveTracker::settlement() const {
  if (received_count_ == packet_count_) return Settlement::kComplete;
  if (has_flow_ && protected_received_ == protected_count_ &&
      missing_floats() <= allowed_missing_floats()) {
    return Settlement::kBoundReached;
  }
  return Settlement::kOpen;
}

// With M = missing_floats(), A = allowed_missing_floats() + extra_allowed, P = floats of the
// missing protected packets and E = M - P (missing drop-eligible floats):
//   deficit = max(0, E - A)                  drop-eligible floats that must still arrive
//   margin  = min(A, ceil(extra * deficit))  `extra` is a fraction of the deficit
//   target  = A - margin
// The request is every missing protected packet plus the missing drop-eligible packets in
// ascending seq order, taken while the drop-eligible floats still missing (E minus those taken)
// exceed target, i.e. the shortest such prefix with E - R <= target (R = floats taken). Once it is
// all delivered, M <= A - margin <= A and no protected packet is missing: the message is settled.
// With extra = 0 it is the least set (lowest seq first) that settles the message; a margin is
// only added when some drop-eligible packets are needed at all.
std::vector<wire::SeqRange> ReceiveTracker::retransmit_request(double extra,
                                                               std::uint64_t extra_allowed) const {
  if (!(extra >= 0.0)) throw std::invalid_argument("ReceiveTracker: extra must be >= 0");
  if (settlement() != Settlement::kOpen) return {};
  if (!has_flow_) return missing_packets();

  std::uint64_t protected_missing_floats = 0;
  for (std::uint32_t seq = 0; seq < packet_count_; ++seq) {
    if (received_[seq] == 0 && protected_[seq] != 0) protected_missing_floats += floats_in(seq);
  }
  std::uint64_t eligible_missing = missing_floats() - protected_missing_floats;
  const std::uint64_t allowed = allowed_missing_floats() + extra_allowed;
  const std::uint64_t deficit = eligible_missing > allowed ? eligible_missing - allowed : 0;
  std::uint64_t margin = 0;
  if (deficit > 0 && extra > 0.0) {
    const double wanted = std::ceil(extra * static_cast<double>(deficit));
    margin = wanted >= static_cast<double>(allowed) ? allowed : static_cast<std::uint64_t>(wanted);
  }
  const std::uint64_t target = allowed - margin;

  std::vector<wire::SeqRange> ranges;
  for (std::uint32_t seq = 0; seq < packet_count_; ++seq) {
    if (received_[seq] != 0) continue;
    if (protected_[seq] != 0) {
      append(ranges, seq);
    } else if (eligible_missing > target) {
      append(ranges, seq);
      eligible_missing -= floats_in(seq);
    }
  }
  return ranges;
}

std::vector<wire::SeqRange> ReceiveTracker::missing_packets() const {
  std::vector<wire::SeqRange> ranges;
  for (std::uint32_t seq = 0; seq < packet_count_; ++seq) {
    if (received_[seq] == 0) append(ranges, seq);
  }
  return ranges;
}

std::vector<EntryRange> ReceiveTracker::missing_entries() const {
  std::vector<EntryRange> entries;
  for (const wire::SeqRange& range : missing_packets()) {
    const std::uint64_t first = std::uint64_t{range.first} * stride_;
    const std::uint64_t end =
        std::min<std::uint64_t>(std::uint64_t{range.first + range.count} * stride_, total_floats_);
    entries.push_back({first, end - first});
  }
  return entries;
}

}  // namespace dlcp::protocol
