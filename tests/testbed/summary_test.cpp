#include "summary.hpp"

#include <gtest/gtest.h>

namespace dlcp {
namespace {

TEST(Percentile, EmptyIsZero) {
  EXPECT_EQ(percentile({}, 0.5), 0.0);
}

TEST(Percentile, NearestRankOnFixedSamples) {
  const std::vector<double> samples = {5, 1, 4, 2, 3};  // unsorted on purpose
  EXPECT_EQ(percentile(samples, 0.0), 1.0);             // rank clamps to the first sample
  EXPECT_EQ(percentile(samples, 0.2), 1.0);             // ceil(0.2 * 5) = 1
  EXPECT_EQ(percentile(samples, 0.5), 3.0);             // ceil(2.5) = 3
  EXPECT_EQ(percentile(samples, 0.99), 5.0);            // ceil(4.95) = 5
  EXPECT_EQ(percentile(samples, 1.0), 5.0);
}

TEST(Percentile, P99OfHundredIsTheNinetyNinthValue) {
  std::vector<double> samples;
  for (int i = 100; i >= 1; --i) samples.push_back(i);
  EXPECT_EQ(percentile(samples, 0.99), 99.0);
  EXPECT_EQ(percentile(samples, 0.5), 50.0);
}

TEST(Gbps, BitsPerSecondInBillions) {
  EXPECT_DOUBLE_EQ(gbps(1.25e9, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(gbps(64.0 * 1024 * 1024, 0.01), 64.0 * 1024 * 1024 * 8 / 0.01 / 1e9);
  EXPECT_EQ(gbps(1e9, 0.0), 0.0);
  EXPECT_EQ(gbps(1e9, -1.0), 0.0);
}

}  // namespace
}  // namespace dlcp
