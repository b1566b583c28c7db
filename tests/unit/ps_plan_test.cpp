// How a parameter server reads one collective from every worker's descriptor (ps_plan.hpp), on
// fixed descriptors: flat, by host with hosts of unequal size, and the disagreements it refuses.
#include <gtest/gtest.h>

#include <vector>

#include "collectives/ps_plan.hpp"

namespace dlcp::collectives {
namespace {

PsDescriptor pushing(std::uint32_t stripe, std::uint32_t stripes, std::uint32_t floats,
                     std::uint32_t contributions) {
  PsDescriptor d;
  d.shard_floats = floats;
  d.segment_floats = 1024;
  d.deadline_ms = 1000;
  d.stripes = stripes;
  d.stripe = stripe;
  d.contributions = contributions;
  return d;
}

PsDescriptor silent(std::uint32_t stripes) {
  return pushing(kNoStripe, stripes, 0, 0);
}

TEST(PsPlan, FlatEveryWorkerPushesTheOneStripe) {
  const std::vector<PsDescriptor> d(3, pushing(0, 1, 500, 1));
  const auto plan = plan_ps_collective(d);
  ASSERT_TRUE(plan.has_value()) << plan.error().reason;
  ASSERT_EQ(plan->stripes.size(), 1u);
  EXPECT_EQ(plan->stripes[0].shard_floats, 500u);
  EXPECT_EQ(plan->stripes[0].pushers, (std::vector<int>{0, 1, 2}));
}

TEST(PsPlan, ByHostEachStripesLeadersPushForTheirHosts) {
  // Hosts "aaabb": two stripes; stripe 0 led by ranks 0 (3 workers) and 3 (2 workers), stripe 1
  // by ranks 1 and 4; rank 2 leads nothing. Stripe 1 is one block shorter.
  const std::vector<PsDescriptor> d{pushing(0, 2, 600, 3), pushing(1, 2, 400, 3), silent(2),
                                    pushing(0, 2, 600, 2), pushing(1, 2, 400, 2)};
  const auto plan = plan_ps_collective(d);
  ASSERT_TRUE(plan.has_value()) << plan.error().reason;
  ASSERT_EQ(plan->stripes.size(), 2u);
  EXPECT_EQ(plan->stripes[0].pushers, (std::vector<int>{0, 3}));
  EXPECT_EQ(plan->stripes[0].shard_floats, 600u);
  EXPECT_EQ(plan->stripes[1].pushers, (std::vector<int>{1, 4}));
  EXPECT_EQ(plan->stripes[1].shard_floats, 400u);
}

TEST(PsPlan, EmptyStripesAndShutdownPass) {
  const std::vector<PsDescriptor> empty{pushing(0, 2, 0, 2), pushing(1, 2, 0, 2),
                                        pushing(0, 2, 0, 2), pushing(1, 2, 0, 2)};
  const auto plan = plan_ps_collective(empty);
  ASSERT_TRUE(plan.has_value()) << plan.error().reason;
  EXPECT_EQ(plan->stripes[1].shard_floats, 0u);
  PsDescriptor shutdown;
  shutdown.shutdown = true;
  const std::vector<PsDescriptor> done(2, shutdown);
  ASSERT_TRUE(plan_ps_collective(done).has_value());
  EXPECT_TRUE(plan_ps_collective(done)->common.shutdown);
}

TEST(PsPlan, RefusesDisagreementNamingTheWorker) {
  PsDescriptor other_op = pushing(0, 1, 500, 1);
  other_op.op = ReduceOp::kAverage;
  const std::vector<PsDescriptor> ops{pushing(0, 1, 500, 1), pushing(0, 1, 500, 1), other_op};
  EXPECT_EQ(plan_ps_collective(ops).error().worker, 2);

  PsDescriptor shutdown;
  shutdown.shutdown = true;
  const std::vector<PsDescriptor> mixed{pushing(0, 1, 500, 1), shutdown};
  const auto refused = plan_ps_collective(mixed);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().worker, 1);
  EXPECT_NE(refused.error().reason.find("shuts down"), std::string::npos) << refused.error().reason;

  const std::vector<PsDescriptor> sizes{pushing(0, 1, 500, 1), pushing(0, 1, 501, 1)};
  EXPECT_EQ(plan_ps_collective(sizes).error().worker, 1);

  const std::vector<PsDescriptor> stripes{pushing(0, 2, 500, 2), silent(1)};
  EXPECT_EQ(plan_ps_collective(stripes).error().worker, 1);
}

TEST(PsPlan, RefusesStripesThatDoNotCountEveryWorker) {
  // Ranks 0 and 2 think they lead stripe 0 of a host of 2, rank 1 that it leads nothing, rank 3
  // that it leads stripe 1 alone: stripe 0 counts 4 of 4 workers, stripe 1 only 2.
  const std::vector<PsDescriptor> d{pushing(0, 2, 100, 2), silent(2), pushing(0, 2, 100, 2),
                                    pushing(1, 2, 100, 2)};
  const auto plan = plan_ps_collective(d);
  ASSERT_FALSE(plan.has_value());
  EXPECT_EQ(plan.error().worker, 3);
  EXPECT_NE(plan.error().reason.find("stripe 1 count 2"), std::string::npos) << plan.error().reason;
}

}  // namespace
}  // namespace dlcp::collectives
