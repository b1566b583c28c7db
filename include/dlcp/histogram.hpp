// A distribution of durations in fixed log-linear buckets: 16 per power of two from 1 us up to
// 2^32 us (about 71 minutes), plus one bucket for everything under 1 us. A quantile is read as
// the upper bound of its bucket, so it is never below the true value and at most 1/16 (6.25%)
// above it. Adding, merging and subtracting are exact, so ranks' histograms can be summed and a
// benchmark can take what one phase added.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlcp {

class DurationHistogram {
 public:
  static constexpr std::size_t kSubBuckets = 16;
  static constexpr std::size_t kOctaves = 32;
  static constexpr std::size_t kBuckets = 1 + kOctaves * kSubBuckets;

  // Counts one duration; negative and NaN count as 0, beyond the range as the last bucket.
  void add(double seconds);
  void merge(const DurationHistogram& other);
  // What was added since `earlier`, an earlier copy of this histogram (throws
  // std::invalid_argument when `earlier` holds a count this one does not).
  DurationHistogram since(const DurationHistogram& earlier) const;

  std::uint64_t count() const { return count_; }
  double sum_seconds() const { return sum_seconds_; }
  // The q-quantile (q in [0, 1]) as the upper bound of the bucket that holds it; 0 when empty or
  // when it falls in the first bucket (up to 1 us, where a zero duration lands). Throws
  // std::invalid_argument for q outside [0, 1].
  double quantile(double q) const;

  // Bucket i holds durations in (upper(i - 1), upper(i)]; bucket 0 those up to 1 us.
  static std::size_t bucket_of(double seconds);
  static double bucket_upper_seconds(std::size_t bucket);

  // The non-empty buckets as (index, count), ascending; and back (throws std::invalid_argument
  // for an index out of range or not ascending). For reports that cross processes.
  std::vector<std::pair<std::size_t, std::uint64_t>> nonzero_buckets() const;
  static DurationHistogram from_buckets(
      const std::vector<std::pair<std::size_t, std::uint64_t>>& buckets, double sum_seconds);

  bool operator==(const DurationHistogram&) const = default;

 private:
  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  double sum_seconds_ = 0;
};

}  // namespace dlcp
