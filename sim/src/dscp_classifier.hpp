// Switch-side packet classification by DSCP, as the library's switch plan classifies it.
//
// ns-3's ToS-to-priority mapping only yields 4 levels, so switch ports classify with this filter
// instead: the DSCP selects one of 8 strict-priority bands (band = the plan's traffic class), and
// the plan says whether a packet may be dropped early.
#pragma once

#include <cstdint>

#include "library.hpp"
#include "ns3/ipv4-packet-filter.h"

namespace dlcp::sim {

inline constexpr int kBands = library::kPriorityClasses;
// The least urgent band: the plan's class-selector map puts DSCP 0 (plain TCP, the background)
// there, as a commodity switch's default map does.
inline constexpr int kBestEffortBand = kBands - 1;

// A port's classifier. The band of a DSCP is the plan's: control -> 0, a dlcp data codepoint ->
// its class, any other codepoint -> 7 - (DSCP >> 3), so best effort shares kBestEffortBand with
// the policy's least urgent class. With share_best_effort off (the plan's best_effort_alone;
// --ablate best-effort-sharing), that class moves up into the band above, so that best effort
// has kBestEffortBand to itself and can never delay a packet of the policy.
class DscpPacketFilter : public ns3::Ipv4PacketFilter {
 public:
  static ns3::TypeId GetTypeId();
  // The bands are computed here once, from the plan; classifying a packet is a table lookup.
  void set_policy(const library::Policy& policy, bool share_best_effort) {
    bands_ = policy.switch_bands(/*best_effort_alone=*/!share_best_effort);
  }

 private:
  std::int32_t DoClassify(ns3::Ptr<ns3::QueueDiscItem> item) const override;

  library::SwitchBands bands_ = library::Policy().switch_bands(false);
};

}  // namespace dlcp::sim
