#include "protocol/path_selector.hpp"

#include <gtest/gtest.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace dlcp::protocol {
namespace {

std::vector<int> counts(PathSelector& selector, int picks) {
  std::vector<int> n(selector.paths(), 0);
  for (int i = 0; i < picks; ++i) ++n[selector.next()];
  return n;
}

void report(PathSelector& selector, std::vector<std::uint64_t> sent,
            std::vector<std::uint64_t> received) {
  selector.on_path_report(sent, received);
}

TEST(PathSelector, EqualWeightsRotateStrictly) {
  PathSelector selector(4);
  for (int round = 0; round < 5; ++round) {
    for (std::size_t path = 0; path < 4; ++path) EXPECT_EQ(selector.next(), path);
  }
  PathSelector single(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(single.next(), 0u);
}

TEST(PathSelector, HealthyReportKeepsRotation) {
  PathSelector selector(3);
  report(selector, {1000, 1000, 1000}, {1000, 990, 985});  // within the 2% margin
  for (double w : selector.weights()) EXPECT_DOUBLE_EQ(w, 1.0);
  for (int round = 0; round < 4; ++round) {
    for (std::size_t path = 0; path < 3; ++path) EXPECT_EQ(selector.next(), path);
  }
}

TEST(PathSelector, LossyPathGetsReducedShare) {
  PathSelector selector(4);
  report(selector, {1000, 1000, 1000, 1000}, {1000, 990, 1000, 500});
  const auto w = selector.weights();
  EXPECT_DOUBLE_EQ(w[0], 1.0);
  EXPECT_DOUBLE_EQ(w[1], 1.0);
  EXPECT_DOUBLE_EQ(w[2], 1.0);
  EXPECT_DOUBLE_EQ(w[3], 0.5 / 1.0 * 0.25);
  // Weights 8:8:8:1 (x 1/8): path 3 gets 1 packet in 25.
  const std::vector<int> n = counts(selector, 2500);
  EXPECT_EQ(n[3], 100);
  EXPECT_EQ(n[0], 800);
  EXPECT_EQ(n[1], 800);
  EXPECT_EQ(n[2], 800);
}

TEST(PathSelector, SmoothSpreadOfTheLossyPath) {
  PathSelector selector(2);
  report(selector, {1000, 1000}, {1000, 500});  // weights 1 and 0.125
  // The slow path is never picked twice in a row, and the fast one at most 8 times in a row.
  std::size_t previous = selector.next();
  int run = 1;
  for (int i = 0; i < 900; ++i) {
    const std::size_t path = selector.next();
    run = path == previous ? run + 1 : 1;
    if (path == 1) {
      EXPECT_EQ(run, 1);
    }
    EXPECT_LE(run, 8);
    previous = path;
  }
}

TEST(PathSelector, WeightRelativeToBestPath) {
  PathSelector selector(3);
  report(selector, {1000, 1000, 1000}, {900, 890, 700});  // losses 0.10, 0.11, 0.30
  const auto w = selector.weights();
  EXPECT_DOUBLE_EQ(w[0], 1.0);
  EXPECT_DOUBLE_EQ(w[1], 1.0);  // 0.11 <= 0.10 + 0.02
  EXPECT_DOUBLE_EQ(w[2], 0.7 / 0.9 * 0.25);
}

TEST(PathSelector, RecoveryRestoresEqualShares) {
  PathSelector selector(4);
  report(selector, {1000, 1000, 1000, 1000}, {1000, 1000, 1000, 200});
  EXPECT_LT(selector.weights()[3], 1.0);
  counts(selector, 37);  // leave the round-robin state mid-cycle
  report(selector, {1000, 1000, 1000, 100}, {1000, 1000, 1000, 100});
  for (double w : selector.weights()) EXPECT_DOUBLE_EQ(w, 1.0);
  const std::vector<int> n = counts(selector, 4000);
  for (int c : n) EXPECT_NEAR(c, 1000, 1);
}

TEST(PathSelector, MinWeightNeverStarves) {
  PathSelector selector(2);
  report(selector, {1000, 1000}, {1000, 0});  // total loss on path 1
  EXPECT_DOUBLE_EQ(selector.weights()[1], 0.05);
  const std::vector<int> n = counts(selector, 2100);
  EXPECT_EQ(n[1], 100);  // 1 in 21
  EXPECT_EQ(n[0], 2000);

  PathSelectorConfig config;
  config.min_weight = 0.2;
  PathSelector custom(2, config);
  report(custom, {1000, 1000}, {1000, 100});  // 0.1 * 0.25 = 0.025 < 0.2
  EXPECT_DOUBLE_EQ(custom.weights()[1], 0.2);
}

TEST(PathSelector, PathsWithoutTrafficKeepTheirWeight) {
  PathSelector selector(3);
  report(selector, {1000, 1000, 1000}, {1000, 1000, 400});
  const double lowered = selector.weights()[2];
  EXPECT_DOUBLE_EQ(lowered, 0.4 * 0.25);
  report(selector, {1000, 1000, 0}, {1000, 1000, 0});
  EXPECT_DOUBLE_EQ(selector.weights()[2], lowered);
  // Nothing sent anywhere: no change at all.
  report(selector, {0, 0, 0}, {5, 0, 0});
  EXPECT_DOUBLE_EQ(selector.weights()[0], 1.0);
  EXPECT_DOUBLE_EQ(selector.weights()[2], lowered);
}

TEST(PathSelector, LateArrivalsCountAsNoLoss) {
  PathSelector selector(2);
  report(selector, {100, 100}, {130, 50});  // path 0: more received than sent this interval
  EXPECT_DOUBLE_EQ(selector.weights()[0], 1.0);
  EXPECT_DOUBLE_EQ(selector.weights()[1], 0.5 * 0.25);
}

TEST(PathSelector, AllPathsEquallyBadStayEqual) {
  PathSelector selector(2);
  report(selector, {100, 100}, {0, 0});
  EXPECT_DOUBLE_EQ(selector.weights()[0], 1.0);
  EXPECT_DOUBLE_EQ(selector.weights()[1], 1.0);
}

TEST(PathSelector, RejectsBadArguments) {
  EXPECT_THROW(PathSelector(0), std::invalid_argument);
  PathSelectorConfig bad;
  bad.min_weight = 0.0;
  EXPECT_THROW(PathSelector(2, bad), std::invalid_argument);
  bad = {};
  bad.penalty = 0.0;
  EXPECT_THROW(PathSelector(2, bad), std::invalid_argument);
  bad = {};
  bad.margin = -0.1;
  EXPECT_THROW(PathSelector(2, bad), std::invalid_argument);
  PathSelector selector(3);
  const std::array<std::uint64_t, 2> two{1, 1};
  const std::array<std::uint64_t, 3> three{1, 1, 1};
  EXPECT_THROW(selector.on_path_report(two, three), std::invalid_argument);
  EXPECT_THROW(selector.on_path_report(three, two), std::invalid_argument);
}

}  // namespace
}  // namespace dlcp::protocol
