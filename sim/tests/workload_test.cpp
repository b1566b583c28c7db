// The workload's time arithmetic on fixed inputs: iteration times per worker and per iteration,
// per-layer compute, and the compute-speed draw.
#include <gtest/gtest.h>

#include <algorithm>

#include "workload.hpp"

namespace dlcp::sim {
namespace {

using ns3::MilliSeconds;

TEST(TrainingResult, IterationTimesPerWorkerAndPerIteration) {
  const std::vector<ns3::Time> first{MilliSeconds(1), MilliSeconds(3), MilliSeconds(6)};
  const std::vector<ns3::Time> second{MilliSeconds(1), MilliSeconds(5), MilliSeconds(7)};
  const TrainingResult r = training_result(2, {&first, &second});
  EXPECT_EQ(r.iterations_expected, 2);
  EXPECT_EQ(r.iterations_finished, 2);
  EXPECT_EQ(r.iteration_ms, (std::vector<double>{2.0, 3.0, 4.0, 2.0}));
  EXPECT_EQ(r.mean_ms_by_iteration, (std::vector<double>{3.0, 2.5}));
}

TEST(TrainingResult, SlowestWorkerSetsTheIterationsFinished) {
  const std::vector<ns3::Time> done{MilliSeconds(0), MilliSeconds(2), MilliSeconds(6)};
  const std::vector<ns3::Time> behind{MilliSeconds(0), MilliSeconds(5)};
  const std::vector<ns3::Time> stuck{MilliSeconds(0)};
  const TrainingResult r = training_result(2, {&done, &behind, &stuck});
  EXPECT_EQ(r.iterations_finished, 0);
  // Each iteration's mean covers the workers that finished it.
  EXPECT_EQ(r.mean_ms_by_iteration, (std::vector<double>{3.5, 4.0}));
}

TEST(ForwardTimes, SplitByMacsAndScaled) {
  WorkloadConfig config;
  config.forward_ms = 30.0;
  config.size_scale = 0.02;
  ModelProfile model;
  model.layers = {{"a", 10, 1.0}, {"b", 10, 3.0}, {"c", 10, 0.0}};
  model.total_macs = 4.0;
  const std::vector<ns3::Time> times = forward_times(config, model);
  ASSERT_EQ(times.size(), 3u);
  // 30 ms x 0.02 x 1/4 and 3/4, truncated to the nanosecond.
  EXPECT_NEAR(static_cast<double>(times[0].GetNanoSeconds()), 150000.0, 1.0);
  EXPECT_NEAR(static_cast<double>(times[1].GetNanoSeconds()), 450000.0, 1.0);
  EXPECT_EQ(times[2], ns3::Time(0));
}

TEST(ComputeSpeed, NoSpreadIsExactlyLockstep) {
  ComputeSpeed speed(0.0, 7);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(speed.draw(), 1.0);
}

TEST(ComputeSpeed, DrawsCoverTheRangeAndNoMore) {
  ComputeSpeed speed(0.1, 7);
  double least = 2.0;
  double most = 0.0;
  for (int i = 0; i < 10000; ++i) {
    const double factor = speed.draw();
    least = std::min(least, factor);
    most = std::max(most, factor);
  }
  EXPECT_GE(least, 0.9);
  EXPECT_LE(most, 1.1);
  EXPECT_LT(least, 0.901);
  EXPECT_GT(most, 1.099);
}

TEST(ComputeSpeed, SeedDecidesTheSequence) {
  ComputeSpeed a(0.05, 11);
  ComputeSpeed b(0.05, 11);
  ComputeSpeed c(0.05, 12);
  bool differs = false;
  for (int i = 0; i < 10; ++i) {
    const double x = a.draw();
    EXPECT_EQ(x, b.draw());
    differs = differs || x != c.draw();
  }
  EXPECT_TRUE(differs);
}

}  // namespace
}  // namespace dlcp::sim
