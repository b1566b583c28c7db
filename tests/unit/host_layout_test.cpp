// Host grouping, stripe leaders and stripes of hierarchical collectives, and the fallback scale of
// a group whose inputs are host sums, on fixed inputs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/host_layout.hpp"
#include "collectives/reduction.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp::collectives {
namespace {

TEST(HostLayout, GroupsRanksByIdInOrderOfTheirLowestRank) {
  // Ranks 0 and 2 on "b", 1, 3 and 4 on "a": host 0 is "b" (lowest rank 0), host 1 is "a".
  const std::vector<std::string> ids{"b", "a", "b", "a", "a"};
  const HostLayout layout(ids);
  ASSERT_EQ(layout.hosts(), 2);
  EXPECT_EQ(layout.workers(), 5);
  EXPECT_EQ(std::vector<int>(layout.host_members(0).begin(), layout.host_members(0).end()),
            (std::vector<int>{0, 2}));
  EXPECT_EQ(std::vector<int>(layout.host_members(1).begin(), layout.host_members(1).end()),
            (std::vector<int>{1, 3, 4}));
  EXPECT_EQ(layout.host_of(3), 1);
  EXPECT_EQ(layout.local_index(0), 0);
  EXPECT_EQ(layout.local_index(2), 1);
  EXPECT_EQ(layout.local_index(4), 2);
}

TEST(HostLayout, StripesAreTheSmallestHostsWorkers) {
  const std::vector<std::string> ids{"b", "a", "b", "a", "a"};
  const HostLayout layout(ids);
  EXPECT_EQ(layout.stripes(), 2);
  EXPECT_EQ(layout.stripe_led_by(0), 0);
  EXPECT_EQ(layout.stripe_led_by(2), 1);
  EXPECT_EQ(layout.stripe_led_by(1), 0);
  EXPECT_EQ(layout.stripe_led_by(3), 1);
  EXPECT_EQ(layout.stripe_led_by(4), -1);  // the larger host's third worker leads none
  EXPECT_EQ(layout.stripe_group(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(layout.stripe_group(1), (std::vector<int>{2, 3}));
  EXPECT_EQ(layout.stripe_leader(1, 1), 3);
}

TEST(HostLayout, OneWorkerHostMakesOneStripe) {
  // World 3: two ranks on one host and one alone: one stripe, led by each host's first worker.
  const std::vector<std::string> ids{"x", "x", "y"};
  const HostLayout layout(ids);
  EXPECT_EQ(layout.stripes(), 1);
  EXPECT_EQ(layout.stripe_group(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(layout.stripe_led_by(1), -1);
  EXPECT_TRUE(layout.hierarchy_pays());
}

TEST(HostLayout, AutoChoosesHierarchyOnlyWithSharedHostsAndSeveralHosts) {
  EXPECT_FALSE(HostLayout(std::vector<std::string>{"a", "a", "a", "a"}).hierarchy_pays());
  EXPECT_FALSE(HostLayout(std::vector<std::string>{"a", "b", "c"}).hierarchy_pays());
  EXPECT_TRUE(HostLayout(std::vector<std::string>{"a", "a", "b", "b"}).hierarchy_pays());
  EXPECT_FALSE(HostLayout::flat(4).hierarchy_pays());
  EXPECT_EQ(HostLayout::flat(4).hosts(), 4);
  EXPECT_EQ(HostLayout::flat(4).stripes(), 1);
}

TEST(HostLayout, StripesCoverTheBufferOnBlockBoundaries) {
  const HostLayout layout(std::vector<std::string>{"a", "b", "a", "b", "a", "b"});
  ASSERT_EQ(layout.stripes(), 3);
  // 10 values in blocks of 3: 4 blocks over 3 stripes -> 6, 3, 1 values.
  EXPECT_EQ(layout.stripe_range(10, 3, 0), (Range{0, 6}));
  EXPECT_EQ(layout.stripe_range(10, 3, 1), (Range{6, 3}));
  EXPECT_EQ(layout.stripe_range(10, 3, 2), (Range{9, 1}));
  // Fewer blocks than stripes: the trailing stripes are empty.
  EXPECT_EQ(layout.stripe_range(4, 3, 2), (Range{4, 0}));
}

TEST(FallbackScale, IsTheInputsShareOfTheResult) {
  // Flat, 4 workers: a lost block of a sum falls back to the rank's input x 4, of an average to
  // the input itself.
  EXPECT_EQ(fallback_scale(ReduceOp::kSum, 4, 1), 4.0f);
  EXPECT_EQ(fallback_scale(ReduceOp::kAverage, 4, 1), 1.0f);
  // Hierarchical, 6 workers, the input a host sum of 2: sum x 6 / 2, average / 2.
  EXPECT_EQ(fallback_scale(ReduceOp::kSum, 6, 2), 3.0f);
  EXPECT_EQ(fallback_scale(ReduceOp::kAverage, 6, 2), 0.5f);
  // A host of 3 among 4 workers: 4 / 3 and 1 / 3 in float.
  EXPECT_EQ(fallback_scale(ReduceOp::kSum, 4, 3), 4.0f / 3.0f);
  EXPECT_EQ(fallback_scale(ReduceOp::kAverage, 4, 3), 1.0f / 3.0f);
}

}  // namespace
}  // namespace dlcp::collectives
