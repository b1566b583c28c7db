// The policy: which gradients matter more and sooner, and how much of them may be lost.
//
// One place decides, for the library, the testbed and the simulator alike:
//   layer position -> priority class (0 = most urgent, front layers) -> DSCP,
//   packet mean |g| -> protected or drop-eligible (drop precedence),
//   loss budget per tensor -> how many entries a receiver may go without,
//   and the IP TOS byte (DSCP << 2 | ECN) of every packet.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#if __cplusplus >= 202002L
#include <span>
#endif
#include <string>
#include <vector>

#include "dlcp/options.hpp"

namespace dlcp::policy {

using dlcp::kPriorityClasses;
inline constexpr std::uint32_t kPpm = 1'000'000;

enum class Precedence : std::uint8_t { kProtected, kDropEligible };

// ECN codepoints (low two bits of the TOS byte).
inline constexpr std::uint8_t kEcnMask = 0b11;
inline constexpr std::uint8_t kEcnNotEct = 0b00;
inline constexpr std::uint8_t kEcnEct0 = 0b10;
inline constexpr std::uint8_t kEcnCe = 0b11;  // congestion experienced: set by a switch
constexpr bool is_ce_marked(std::uint8_t tos) {
  return (tos & kEcnMask) == kEcnCe;
}

using DscpTable = dlcp::DscpTable;
using PolicyConfig = dlcp::PolicyOptions;

// Front layers first: layer 0 of num_layers is class 0 and the last layer is class 7, with layers
// spread evenly over the 8 classes. Throws std::invalid_argument when num_layers < 1 or layer is
// outside [0, num_layers).
int priority_class(int layer, int num_layers);

// The TOS byte for a data packet and for control traffic. The only place TOS bytes are computed.
std::uint8_t data_tos(const PolicyConfig& config, int priority_class, Precedence precedence);
std::uint8_t control_tos(const PolicyConfig& config);

// Inverse of data_tos for classifying received packets and for switch configuration; returns -1
// when the DSCP is not a data codepoint of this table.
int class_of_dscp(const DscpTable& table, std::uint8_t dscp);

// Marks packets protected by mean |g|: the ceil(share * n) packets with the largest mean absolute
// value are protected (ties broken by lower sequence number), the rest drop-eligible. Packet i
// covers values [i * stride, min((i + 1) * stride, size)). Returns one flag per packet (1 =
// protected). NaN counts as the largest magnitude so it is never silently dropped. A packet of up
// to kExactMagnitudeFloats values is measured whole; a longer one by an even sample of
// kMagnitudeSampleFloats values in runs of 16 (whole cache lines), so that ranking costs a few
// percent of a pass over the message instead of a whole one.
// The pointer + length form exists for C++17 callers (the ns-3 simulator); the span form forwards
// to it, so both behave identically.
inline constexpr std::size_t kExactMagnitudeFloats = 512;
inline constexpr std::size_t kMagnitudeSampleFloats = 128;
std::vector<std::uint8_t> protected_packets(const float* values, std::size_t count,
                                            std::size_t stride, double protected_share);
#if __cplusplus >= 202002L
inline std::vector<std::uint8_t> protected_packets(std::span<const float> values,
                                                   std::size_t stride, double protected_share) {
  return protected_packets(values.data(), values.size(), stride, protected_share);
}
#endif

// The protected set and the first round's send order: the protected packets, then the
// drop-eligible ones, each by sequence number. Losses of protected packets show before the
// drop-eligible tail is sent, and a receiver whose budget is met settles before the sender's last
// packets, which are drop-eligible. Within the drop-eligible set the order stays blind to
// magnitude: leaving out the smallest first would bias every average over what arrived upward
// (the unbiased aggregation test measured it at 4 standard errors).
struct PacketRanking {
  std::vector<std::uint8_t> protected_flags;  // as protected_packets
  std::vector<std::uint32_t> send_order;      // every sequence number once
};
PacketRanking rank_packets(const float* values, std::size_t count, std::size_t stride,
                           double protected_share);
// The send order above for a protected set chosen elsewhere (the simulator's synthetic ranking).
std::vector<std::uint32_t> first_round_order(const std::vector<std::uint8_t>& protected_flags);

// Loss budget of a tensor as parts per million of its entries. Rounds to the nearest ppm.
// Throws std::invalid_argument unless 0 <= fraction <= 1.
std::uint32_t budget_ppm(double fraction);
// The inverse: ppm / 1e6, so budget_ppm(budget_fraction(ppm)) == ppm. The only place a ppm budget
// (as a descriptor or the wire carries it) turns back into a fraction. Throws
// std::invalid_argument for ppm > 1'000'000.
double budget_fraction(std::uint32_t ppm);

// How many of total_entries a receiver may go without: floor(total * ppm / 1e6), exact integer
// arithmetic. With equal-sized packets, "at least ceil((1 - p) * N) packets" is the same rule.
std::uint64_t allowed_missing_entries(std::uint64_t total_entries, std::uint32_t loss_budget_ppm);

// Loss budget that changes with training phase: full budget after warm-up, none during it, and a
// linear ramp in between (a conservative start is what published loss-tolerance profiles assume).
struct PhaseBudget {
  double budget = 0.0;
  std::uint64_t warmup_rounds = 0;
  std::uint64_t ramp_rounds = 0;
  double at_round(std::uint64_t round) const;
};

}  // namespace dlcp::policy
