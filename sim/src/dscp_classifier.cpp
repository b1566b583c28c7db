#include "dscp_classifier.hpp"

#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/object-base.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(DscpPacketFilter);

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
  const auto dscp = static_cast<std::size_t>(ipv4_item->GetHeader().GetTos() >> 2);
  return bands_.band[dscp];
}

}  // namespace dlcp::sim
