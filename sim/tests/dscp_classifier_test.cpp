// The switch ports' band of each DSCP, from the library's switch plan for its default policy
// table: dlcp's classes in their own bands, control first, other codepoints by the class-selector
// map (DSCP 0 in best effort), and the plan's option that leaves best effort alone.
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

TEST(BandOfDscp, EachClassInItsOwnBandWithBestEffortInTheLast) {
  const library::Policy policy;
  for (int c = 0; c < library::kPriorityClasses; ++c) {
    EXPECT_EQ(band_of_dscp(policy, dscp_of(policy, c, true)), c) << "class " << c;
    EXPECT_EQ(band_of_dscp(policy, dscp_of(policy, c, false)), c) << "class " << c;
  }
  EXPECT_EQ(band_of_dscp(policy, policy.control_dscp()), 0);
  EXPECT_EQ(band_of_dscp(policy, 0), kBestEffortBand);  // plain TCP, the background
  // Codepoints the table does not hold follow a switch's default class-selector map.
  EXPECT_EQ(band_of_dscp(policy, 8), kBestEffortBand - 1);  // CS1
  EXPECT_EQ(band_of_dscp(policy, 46), 2);                   // EF, in class selector 5
}

TEST(DscpPacketFilter, ClassifiesAsBandOfDscp) {
  const library::Policy policy;
  for (const bool share : {true, false}) {
    auto filter = ns3::CreateObject<DscpPacketFilter>();
    filter->set_policy(policy, share);
    for (int dscp = 0; dscp < library::kDscpCount; ++dscp) {
      ns3::Ipv4Header header;
      header.SetTos(static_cast<std::uint8_t>(dscp << 2 | 0b11));  // ECN bits set: ignored
      auto item = ns3::Create<ns3::Ipv4QueueDiscItem>(ns3::Create<ns3::Packet>(100), ns3::Address(),
                                                      0x0800, header);
      EXPECT_EQ(filter->Classify(item),
                band_of_dscp(policy, static_cast<std::uint8_t>(dscp), share))
          << "DSCP " << dscp << (share ? ", shared" : ", alone");
    }
  }
}

TEST(BandOfDscp, WithoutSharingTheLeastUrgentClassMovesUpAndBestEffortIsAlone) {
  const library::Policy policy;
  const int last = library::kPriorityClasses - 1;
  EXPECT_EQ(band_of_dscp(policy, dscp_of(policy, last, true), false), kBestEffortBand - 1);
  EXPECT_EQ(band_of_dscp(policy, dscp_of(policy, last, false), false), kBestEffortBand - 1);
  for (int c = 0; c < last; ++c) {
    EXPECT_EQ(band_of_dscp(policy, dscp_of(policy, c, true), false), c) << "class " << c;
  }
  EXPECT_EQ(band_of_dscp(policy, policy.control_dscp(), false), 0);
  EXPECT_EQ(band_of_dscp(policy, 0, false), kBestEffortBand);
}

TEST(IsDropEligible, OnlyTheDropEligibleCodepointsOfTheTable) {
  const library::Policy policy;
  for (int c = 0; c < library::kPriorityClasses; ++c) {
    EXPECT_TRUE(is_drop_eligible(policy, dscp_of(policy, c, false))) << "class " << c;
    EXPECT_FALSE(is_drop_eligible(policy, dscp_of(policy, c, true))) << "class " << c;
  }
  EXPECT_FALSE(is_drop_eligible(policy, 0));
  EXPECT_FALSE(is_drop_eligible(policy, policy.control_dscp()));
}

}  // namespace
}  // namespace dlcp::sim
