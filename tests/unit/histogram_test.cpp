#include "dlcp/histogram.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace dlcp {
namespace {

TEST(DurationHistogram, BucketEdgesAreSixteenPerPowerOfTwoFromOneMicrosecond) {
  EXPECT_DOUBLE_EQ(DurationHistogram::bucket_upper_seconds(0), 1e-6);
  EXPECT_DOUBLE_EQ(DurationHistogram::bucket_upper_seconds(1), 1.0625e-6);
  EXPECT_DOUBLE_EQ(DurationHistogram::bucket_upper_seconds(16), 2e-6);
  EXPECT_DOUBLE_EQ(DurationHistogram::bucket_upper_seconds(17), 2.125e-6);
  EXPECT_DOUBLE_EQ(DurationHistogram::bucket_upper_seconds(DurationHistogram::kBuckets - 1),
                   std::ldexp(1.0, 32) * 1e-6);
}

TEST(DurationHistogram, AValueGoesToTheSmallestBucketWhoseUpperBoundHoldsIt) {
  EXPECT_EQ(DurationHistogram::bucket_of(0.0), 0u);
  EXPECT_EQ(DurationHistogram::bucket_of(-1.0), 0u);
  EXPECT_EQ(DurationHistogram::bucket_of(std::numeric_limits<double>::quiet_NaN()), 0u);
  EXPECT_EQ(DurationHistogram::bucket_of(1e-6), 0u);
  EXPECT_EQ(DurationHistogram::bucket_of(1.01e-6), 1u);
  EXPECT_EQ(DurationHistogram::bucket_of(2e-6), 16u);  // an edge belongs below it
  EXPECT_EQ(DurationHistogram::bucket_of(2.0001e-6), 17u);
  EXPECT_EQ(DurationHistogram::bucket_of(1e9), DurationHistogram::kBuckets - 1);
  // Every bucket's own upper bound maps to it, and a hair above to the next.
  for (std::size_t i = 0; i + 1 < DurationHistogram::kBuckets; ++i) {
    const double upper = DurationHistogram::bucket_upper_seconds(i);
    ASSERT_EQ(DurationHistogram::bucket_of(upper), i) << i;
    ASSERT_EQ(DurationHistogram::bucket_of(upper * (1 + 1e-9)), i + 1) << i;
  }
}

TEST(DurationHistogram, QuantilesAreUpperBoundsWithinOneSixteenth) {
  DurationHistogram h;
  EXPECT_EQ(h.quantile(0.5), 0.0);  // empty
  for (int ms = 1; ms <= 100; ++ms) h.add(ms * 1e-3);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_NEAR(h.sum_seconds(), 5.05, 1e-9);
  // The 50th value is 50 ms; the 99th 99 ms; the 100th 100 ms.
  EXPECT_GE(h.quantile(0.5), 0.050);
  EXPECT_LE(h.quantile(0.5), 0.050 * (1 + 1.0 / 16));
  EXPECT_GE(h.quantile(0.99), 0.099);
  EXPECT_LE(h.quantile(0.99), 0.099 * (1 + 1.0 / 16));
  EXPECT_GE(h.quantile(1.0), 0.100);
  EXPECT_GE(h.quantile(0.0), 0.001);  // the smallest value's bucket
  EXPECT_LE(h.quantile(0.0), 0.001 * (1 + 1.0 / 16));
  EXPECT_THROW(h.quantile(1.5), std::invalid_argument);
  EXPECT_THROW(h.quantile(-0.1), std::invalid_argument);
}

TEST(DurationHistogram, ZerosReadAsZero) {
  DurationHistogram h;
  for (int i = 0; i < 99; ++i) h.add(0.0);
  h.add(0.2);
  EXPECT_EQ(h.quantile(0.5), 0.0);
  EXPECT_EQ(h.quantile(0.99), 0.0);
  EXPECT_GE(h.quantile(1.0), 0.2);
}

TEST(DurationHistogram, MergeAndSinceAreExact) {
  DurationHistogram a;
  DurationHistogram b;
  a.add(0.001);
  a.add(0.004);
  b.add(0.002);
  DurationHistogram merged = a;
  merged.merge(b);
  EXPECT_EQ(merged.count(), 3u);
  EXPECT_NEAR(merged.sum_seconds(), 0.007, 1e-12);
  const DurationHistogram difference = merged.since(a);
  EXPECT_EQ(difference.count(), 1u);
  EXPECT_EQ(difference.nonzero_buckets(), b.nonzero_buckets());
  EXPECT_THROW(a.since(merged), std::invalid_argument);  // not an earlier copy
}

TEST(DurationHistogram, RoundTripsThroughItsNonzeroBuckets) {
  DurationHistogram h;
  h.add(0.0);
  h.add(3e-5);
  h.add(3e-5);
  h.add(7.5);
  const auto buckets = h.nonzero_buckets();
  ASSERT_EQ(buckets.size(), 3u);
  EXPECT_EQ(buckets[0].first, 0u);
  EXPECT_EQ(buckets[1].second, 2u);
  EXPECT_EQ(DurationHistogram::from_buckets(buckets, h.sum_seconds()), h);
  EXPECT_THROW(DurationHistogram::from_buckets({{5, 1}, {5, 1}}, 0), std::invalid_argument);
  EXPECT_THROW(DurationHistogram::from_buckets({{DurationHistogram::kBuckets, 1}}, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace dlcp
