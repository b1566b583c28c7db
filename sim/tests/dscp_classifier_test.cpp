// The switch ports' band of each DSCP, from the library's switch plan for its default policy
// table (through the bridge): dlcp's classes in their own bands, control first, other codepoints
// by the class-selector map (DSCP 0 in best effort), and the plan's option that leaves best effort
// alone; and the ports' filter classifying by it, ECN bits aside.
#include <gtest/gtest.h>

#include "dscp_classifier.hpp"
#include "ns3/ipv4-header.h"
#include "ns3/ipv4-queue-disc-item.h"
#include "ns3/packet.h"

namespace dlcp::sim {
namespace {

std::uint8_t dscp_of(const library::Policy& policy, int priority_class, bool is_protected) {
  return static_cast<std::uint8_t>(policy.data_tos(priority_class, is_protected) >> 2);
}

int band(const library::SwitchBands& bands, std::uint8_t dscp) {
  return bands.band[dscp];
}

TEST(SwitchBands, EachClassInItsOwnBandWithBestEffortInTheLast) {
  const library::Policy policy;
  const auto bands = policy.switch_bands(/*best_effort_alone=*/false);
  for (int c = 0; c < library::kPriorityClasses; ++c) {
    EXPECT_EQ(band(bands, dscp_of(policy, c, true)), c) << "class " << c;
    EXPECT_EQ(band(bands, dscp_of(policy, c, false)), c) << "class " << c;
  }
  EXPECT_EQ(band(bands, policy.control_dscp()), 0);
  EXPECT_EQ(band(bands, 0), kBestEffortBand);  // plain TCP, the background
  // Codepoints the table does not hold follow a switch's default class-selector map.
  EXPECT_EQ(band(bands, 8), kBestEffortBand - 1);  // CS1
  EXPECT_EQ(band(bands, 46), 2);                   // EF, in class selector 5
}

TEST(SwitchBands, BestEffortAloneMovesTheLeastUrgentClassUp) {
  const library::Policy policy;
  const auto bands = policy.switch_bands(/*best_effort_alone=*/true);
  const int last = library::kPriorityClasses - 1;
  EXPECT_EQ(band(bands, dscp_of(policy, last, true)), kBestEffortBand - 1);
  EXPECT_EQ(band(bands, dscp_of(policy, last, false)), kBestEffortBand - 1);
  for (int c = 0; c < last; ++c) {
    EXPECT_EQ(band(bands, dscp_of(policy, c, true)), c) << "class " << c;
  }
  EXPECT_EQ(band(bands, policy.control_dscp()), 0);
  EXPECT_EQ(band(bands, 0), kBestEffortBand);
}

TEST(SwitchBands, OnlyTheDropEligibleCodepointsOfTheTable) {
  const library::Policy policy;
  for (const bool alone : {false, true}) {
    const auto bands = policy.switch_bands(alone);
    for (int c = 0; c < library::kPriorityClasses; ++c) {
      EXPECT_TRUE(bands.drop_eligible[dscp_of(policy, c, false)]) << "class " << c;
      EXPECT_FALSE(bands.drop_eligible[dscp_of(policy, c, true)]) << "class " << c;
    }
    EXPECT_FALSE(bands.drop_eligible[0]);
    EXPECT_FALSE(bands.drop_eligible[policy.control_dscp()]);
  }
}

std::int32_t classify(const ns3::Ptr<DscpPacketFilter>& filter, std::uint8_t dscp) {
  ns3::Ipv4Header header;
  header.SetTos(static_cast<std::uint8_t>(dscp << 2 | 0b11));  // CE: the ECN bits are ignored
  return filter->Classify(ns3::Create<ns3::Ipv4QueueDiscItem>(ns3::Create<ns3::Packet>(100),
                                                              ns3::Address(), 0x0800, header));
}

TEST(DscpPacketFilter, ClassifiesByTheDscpAloneAndFollowsTheSharingFlag) {
  const library::Policy policy;
  const int last = library::kPriorityClasses - 1;
  auto shared = ns3::CreateObject<DscpPacketFilter>();
  shared->set_policy(policy, /*share_best_effort=*/true);
  auto alone = ns3::CreateObject<DscpPacketFilter>();
  alone->set_policy(policy, /*share_best_effort=*/false);
  for (int c = 0; c < last; ++c) {
    EXPECT_EQ(classify(shared, dscp_of(policy, c, false)), c) << "class " << c;
    EXPECT_EQ(classify(alone, dscp_of(policy, c, true)), c) << "class " << c;
  }
  EXPECT_EQ(classify(shared, dscp_of(policy, last, true)), kBestEffortBand);
  EXPECT_EQ(classify(alone, dscp_of(policy, last, true)), kBestEffortBand - 1);
  EXPECT_EQ(classify(shared, 0), kBestEffortBand);
  EXPECT_EQ(classify(alone, 0), kBestEffortBand);
  EXPECT_EQ(classify(alone, policy.control_dscp()), 0);
}

}  // namespace
}  // namespace dlcp::sim
