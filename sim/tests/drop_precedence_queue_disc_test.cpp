// A switch port's drop precedence: drop-eligible packets refused above the lower threshold, on the
// whole port's occupancy or (as the library's switch plan has it) on their own band's only.
#include <gtest/gtest.h>

#include "drop_precedence_queue_disc.hpp"
#include "ns3/boolean.h"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/object-factory.h"
#include "ns3/packet.h"
#include "ns3/uinteger.h"

namespace dlcp::sim {
namespace {

constexpr std::uint32_t kBuffer = 100000;
constexpr std::uint32_t kEligible = 50000;
constexpr std::uint32_t kPayload = 8980;  // 9000 bytes with the 20-byte IPv4 header

ns3::Ptr<DropPrecedenceQueueDisc> make_port(const library::Policy& policy, bool per_band) {
  auto port = ns3::CreateObjectWithAttributes<DropPrecedenceQueueDisc>(
      "BufferBytes", ns3::UintegerValue(kBuffer), "DropEligibleBytes",
      ns3::UintegerValue(kEligible), "DropEligiblePerBand", ns3::BooleanValue(per_band));
  auto filter = ns3::CreateObject<DscpPacketFilter>();
  filter->set_policy(policy, /*share_best_effort=*/true);
  port->AddPacketFilter(filter);
  port->set_policy(policy);
  port->Initialize();
  return port;
}

bool enqueue(const ns3::Ptr<DropPrecedenceQueueDisc>& port, std::uint8_t tos) {
  ns3::Ipv4Header header;
  header.SetTos(tos);
  header.SetPayloadSize(kPayload);
  return port->Enqueue(ns3::Create<ns3::Ipv4QueueDiscItem>(ns3::Create<ns3::Packet>(kPayload),
                                                           ns3::Address(), 0x0800, header));
}

// Six 9000-byte background packets: 54,000 bytes, past the 50,000-byte drop-eligible threshold
// and well short of the 100,000-byte buffer.
void fill_best_effort(const ns3::Ptr<DropPrecedenceQueueDisc>& port) {
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(enqueue(port, 0));
}

TEST(DropPrecedence, OnThePortTheBackgroundsBacklogRefusesUrgentDropEligiblePackets) {
  const library::Policy policy;
  const auto port = make_port(policy, /*per_band=*/false);
  fill_best_effort(port);
  EXPECT_FALSE(enqueue(port, policy.data_tos(1, /*is_protected=*/false)));
  EXPECT_EQ(port->counters().dropped_drop_eligible, 1u);
  EXPECT_TRUE(enqueue(port, policy.data_tos(1, /*is_protected=*/true)));
  EXPECT_EQ(port->counters().dropped_full, 0u);
}

TEST(DropPrecedence, PerBandOnlyThePacketsOwnBandCounts) {
  const library::Policy policy;
  const auto port = make_port(policy, /*per_band=*/true);
  fill_best_effort(port);
  const std::uint8_t eligible = policy.data_tos(1, /*is_protected=*/false);
  // Class 1's band is empty: five fit (45,000 bytes), the sixth would take it past 50,000.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(enqueue(port, eligible)) << "packet " << i;
  EXPECT_EQ(port->counters().dropped_drop_eligible, 0u);
  EXPECT_FALSE(enqueue(port, eligible));
  EXPECT_EQ(port->counters().dropped_drop_eligible, 1u);
  // The port now holds 99,000 bytes: a protected packet is refused only because it is full.
  EXPECT_FALSE(enqueue(port, policy.data_tos(1, /*is_protected=*/true)));
  EXPECT_EQ(port->counters().dropped_full, 1u);
}

}  // namespace
}  // namespace dlcp::sim
