// Switch-side packet classification by DSCP, driven by the library's policy table.
//
// ns-3's ToS-to-priority mapping only yields 4 levels, so switch ports classify with this filter
// instead: the DSCP selects one of 8 strict-priority bands (band = the policy's priority class),
// and the drop precedence says whether a packet may be dropped early.
#pragma once

#include <cstdint>

#include "library.hpp"
#include "ns3/ipv4-packet-filter.h"

namespace dlcp::sim {

inline constexpr int kBands = library::kPriorityClasses;
// Traffic the policy does not know (plain TCP, background) goes to the least urgent band, as a
// commodity switch does with DSCP 0 and a DSCP-to-queue map covering only the dlcp codepoints.
inline constexpr int kBestEffortBand = kBands - 1;

// The band of a DSCP: control -> 0, a dlcp data codepoint -> its class, anything else ->
// kBestEffortBand. With share_best_effort off (an experiment, --ablate best-effort-sharing),
// the policy's least urgent class moves up into the band above, so that best effort has
// kBestEffortBand to itself and can never delay a packet of the policy.
int band_of_dscp(const library::Policy& policy, std::uint8_t dscp, bool share_best_effort = true);

// True when the DSCP is a drop-eligible data codepoint of the policy.
bool is_drop_eligible(const library::Policy& policy, std::uint8_t dscp);

class DscpPacketFilter : public ns3::Ipv4PacketFilter {
 public:
  static ns3::TypeId GetTypeId();
  void set_policy(const library::Policy& policy, bool share_best_effort) {
    policy_ = policy;
    share_best_effort_ = share_best_effort;
  }

 private:
  std::int32_t DoClassify(ns3::Ptr<ns3::QueueDiscItem> item) const override;

  library::Policy policy_;
  bool share_best_effort_ = true;
};

}  // namespace dlcp::sim
