// The switch ports' band of each DSCP, from the library's default policy table: dlcp's classes
// in their own bands, control first, unknown codepoints in best effort, and the experiment that
// leaves best effort alone.
#include <gtest/gtest.h>

#include "dscp_classifier.hpp"

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
  EXPECT_EQ(band_of_dscp(policy, 8), kBestEffortBand);  // CS1: not one of dlcp's codepoints
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
