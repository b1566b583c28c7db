#include "dlcp_tags.hpp"

#include <ostream>
#include "ns3/object-base.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(DlcpDataTag);
NS_OBJECT_ENSURE_REGISTERED(DlcpControlTag);

ns3::TypeId DlcpDataTag::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DlcpDataTag")
                               .SetParent<ns3::Tag>()
                               .SetGroupName("DlcpSim")
                               .AddConstructor<DlcpDataTag>();
  return tid;
}

void DlcpDataTag::Serialize(ns3::TagBuffer buffer) const {
  buffer.WriteU32(message);
  buffer.WriteU32(seq);
  buffer.WriteU64(peer_counter);
}

void DlcpDataTag::Deserialize(ns3::TagBuffer buffer) {
  message = buffer.ReadU32();
  seq = buffer.ReadU32();
  peer_counter = buffer.ReadU64();
}

void DlcpDataTag::Print(std::ostream& os) const {
  os << "message=" << message << " seq=" << seq << " counter=" << peer_counter;
}

ns3::TypeId DlcpControlTag::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::DlcpControlTag")
                               .SetParent<ns3::Tag>()
                               .SetGroupName("DlcpSim")
                               .AddConstructor<DlcpControlTag>();
  return tid;
}

void DlcpControlTag::Print(std::ostream& os) const {
  os << "control=" << control;
}

}  // namespace dlcp::sim
