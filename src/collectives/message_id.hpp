// Message ids of collective transfers. A transport id names one transfer between one ordered pair
// of ranks, so an id only has to be unique among a pair's transfers in flight:
//   bits 63..32 collective sequence number, 31..28 phase, 27..16 step, 15..0 segment.
#pragma once

#include <cstdint>

namespace dlcp::collectives {

enum class Phase : std::uint8_t {
  kReduce = 1,      // contributions on their way to be reduced (ring, transpose, reduce-scatter)
  kGather = 2,      // reduced blocks on their way to every rank (ring all-gather, transpose)
  kDescriptor = 3,  // parameter server: what the next push looks like
  kPush = 4,
  kPull = 5,
  kBroadcast = 6,
  kAllgather = 7,
  kBarrier = 8,
  kPointToPoint = 9,  // send/recv: bits 63..32 the pair's sequence per tag, 27..16 the tag
  // Hierarchical collectives, between the workers of one host: contributions on their way to
  // the stripe's leader, and results (or inputs) on their way from it.
  kLocalReduce = 10,
  kLocalGather = 11,
};

inline constexpr std::uint32_t kMaxSteps = 1u << 12;
inline constexpr std::uint32_t kMaxSegments = 1u << 16;

constexpr std::uint64_t message_id(std::uint32_t seq, Phase phase, std::uint32_t step,
                                   std::uint32_t segment) {
  return (std::uint64_t{seq} << 32) | (std::uint64_t{static_cast<std::uint8_t>(phase)} << 28) |
         (std::uint64_t{step & (kMaxSteps - 1)} << 16) | (segment & (kMaxSegments - 1));
}

}  // namespace dlcp::collectives
