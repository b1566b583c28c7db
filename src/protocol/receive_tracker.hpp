// Receiver-side bookkeeping of one message: which packets arrived, whether the completion rule
// holds, and which packets to ask for again.
//
// Completion rule (DESIGN.md): the message is settled once every protected packet has arrived
// and the entries still missing are within the loss budget, floor(budget_ppm * total / 1e6)
// entries. Counting entries rather than packets means a short last packet cannot tip the bound;
// with equal-sized packets it is exactly "at least ceil((1 - p) N) packets". Until the sender's
// FlowStart has told us which packets are protected, only a complete message is settled.
#pragma once

#include <cstdint>
#include <vector>

#include "wire/control.hpp"

namespace dlcp::protocol {

// A half-open range of entries [first, first + count) in floats.
struct EntryRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
  bool operator==(const EntryRange&) const = default;
};

enum class Settlement : std::uint8_t { kOpen, kComplete, kBoundReached };

class ReceiveTracker {
 public:
  // stride_floats > 0, total_floats > 0 (throws std::invalid_argument otherwise).
  ReceiveTracker(std::uint32_t total_floats, std::uint16_t stride_floats);

  // Applies the sender's FlowStart: the protected set and the effective budget. The bitmap must
  // have ceil(packet_count / 8) bytes (throws std::invalid_argument otherwise).
  void set_flow(const std::vector<std::uint8_t>& protected_bitmap, std::uint32_t budget_ppm);
  bool has_flow() const { return has_flow_; }

  // Records the arrival of packet seq (< packet_count). Returns false for a duplicate.
  bool mark_received(std::uint32_t seq);
  bool received(std::uint32_t seq) const;
  bool is_protected(std::uint32_t seq) const;
  // One flag per packet, as the FlowStart set them (all zero before).
  const std::vector<std::uint8_t>& protected_flags() const { return protected_; }

  std::uint32_t packet_count() const { return packet_count_; }
  std::uint32_t received_count() const { return received_count_; }
  std::uint32_t protected_count() const { return protected_count_; }
  std::uint32_t protected_missing() const;
  std::uint64_t total_floats() const { return total_floats_; }
  std::uint64_t missing_floats() const { return total_floats_ - received_floats_; }
  std::uint64_t allowed_missing_floats() const;
  // Floats packet seq carries (stride, or the remainder for the last packet).
  std::uint32_t floats_in(std::uint32_t seq) const;

  Settlement settlement() const;

  // What to ask the sender for after a round: every missing protected packet plus enough missing
  // drop-eligible packets (lowest sequence first) to bring the missing entries within budget,
  // plus a margin of `extra` (>= 0, a fraction of the drop-eligible deficit, capped at the budget)
  // against loss of the retransmission itself. `extra_allowed` entries may be missing beyond the
  // budget (the slack a budget group's other members leave). Ranges are ascending, merged and
  // non-overlapping. Empty when settled.
  std::vector<wire::SeqRange> retransmit_request(double extra = 0.0,
                                                 std::uint64_t extra_allowed = 0) const;

  // Every missing packet, ascending and merged.
  std::vector<wire::SeqRange> missing_packets() const;
  // Every missing entry range, ascending and merged (what the user is told is absent).
  std::vector<EntryRange> missing_entries() const;

 private:
  std::uint32_t total_floats_;
  std::uint16_t stride_;
  std::uint32_t packet_count_;
  std::vector<std::uint8_t> received_;
  std::vector<std::uint8_t> protected_;
  std::uint32_t received_count_ = 0;
  std::uint32_t protected_count_ = 0;
  std::uint32_t protected_received_ = 0;
  std::uint64_t received_floats_ = 0;
  std::uint32_t budget_ppm_ = 0;
  bool has_flow_ = false;
};

}  // namespace dlcp::protocol
