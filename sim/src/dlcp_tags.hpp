// What a simulated dlcp packet carries. The real header (docs/protocol.md) is 40 bytes on the
// wire; the simulator accounts for those bytes in the packet size and carries the fields it needs
// as an ns-3 packet tag, which costs no serialisation time per hop.
#pragma once

#include <cstdint>

#include "ns3/tag.h"

namespace dlcp::sim {

class DlcpDataTag : public ns3::Tag {
 public:
  std::uint32_t message = 0;       // index of the message record
  std::uint32_t seq = 0;           // packet sequence number within the message
  std::uint64_t peer_counter = 0;  // per (sender, receiver) count, for loss estimation

  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  std::uint32_t GetSerializedSize() const override { return 16; }
  void Serialize(ns3::TagBuffer buffer) const override;
  void Deserialize(ns3::TagBuffer buffer) override;
  void Print(std::ostream& os) const override;
};

class DlcpControlTag : public ns3::Tag {
 public:
  std::uint32_t control = 0;  // index of the control message record

  static ns3::TypeId GetTypeId();
  ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
  std::uint32_t GetSerializedSize() const override { return 4; }
  void Serialize(ns3::TagBuffer buffer) const override { buffer.WriteU32(control); }
  void Deserialize(ns3::TagBuffer buffer) override { control = buffer.ReadU32(); }
  void Print(std::ostream& os) const override;
};

}  // namespace dlcp::sim
