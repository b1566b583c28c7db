#include "dscp_classifier.hpp"

#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/object-base.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(DscpPacketFilter);

int band_of_dscp(const library::Policy& policy, std::uint8_t dscp, bool share_best_effort) {
  if (dscp == policy.control_dscp()) return 0;
  const int priority_class = policy.class_of_dscp(dscp);
  if (priority_class < 0) return kBestEffortBand;
  if (!share_best_effort && priority_class == kBestEffortBand) return kBestEffortBand - 1;
  return priority_class;
}

bool is_drop_eligible(const library::Policy& policy, std::uint8_t dscp) {
  const int priority_class = policy.class_of_dscp(dscp);
  if (priority_class < 0) return false;
  // Ask the policy for the drop-eligible TOS byte of this class instead of reading the table.
  const std::uint8_t tos = policy.data_tos(priority_class, /*is_protected=*/false);
  return (tos >> 2) == dscp;
}

ns3::TypeId DscpPacketFilter::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DscpPacketFilter")
                               .SetParent<ns3::Ipv4PacketFilter>()
                               .SetGroupName("DlcpSim")
                               .AddConstructor<DscpPacketFilter>();
  return tid;
}

std::int32_t DscpPacketFilter::DoClassify(ns3::Ptr<ns3::QueueDiscItem> item) const {
  const auto ipv4_item = ns3::DynamicCast<ns3::Ipv4QueueDiscItem>(item);
  if (!ipv4_item) return PF_NO_MATCH;
  const std::uint8_t dscp = static_cast<std::uint8_t>(ipv4_item->GetHeader().GetTos() >> 2);
  return band_of_dscp(policy_, dscp, share_best_effort_);
}

}  // namespace dlcp::sim
