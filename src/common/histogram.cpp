#include "dlcp/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dlcp {

double DurationHistogram::bucket_upper_seconds(std::size_t bucket) {
  if (bucket == 0) return 1e-6;
  const std::size_t octave = (bucket - 1) / kSubBuckets;
  const std::size_t sub = (bucket - 1) % kSubBuckets;
  const double step = 1.0 + static_cast<double>(sub + 1) / static_cast<double>(kSubBuckets);
  return std::ldexp(step, static_cast<int>(octave)) * 1e-6;
}

std::size_t DurationHistogram::bucket_of(double seconds) {
  const double micros = seconds * 1e6;
  if (!(micros > 1.0)) return 0;  // also NaN and negative
  int exponent = 0;
  const double mantissa = std::frexp(micros, &exponent);  // micros = mantissa * 2^exponent
  const auto octave = static_cast<long>(exponent) - 1;    // micros = 2 * mantissa * 2^octave
  if (octave >= static_cast<long>(kOctaves)) return kBuckets - 1;
  const double fraction = 2.0 * mantissa - 1.0;  // in [0, 1)
  const auto sub = static_cast<long>(std::ceil(fraction * kSubBuckets)) - 1;
  auto bucket = static_cast<std::size_t>(std::clamp<long>(
      1 + octave * static_cast<long>(kSubBuckets) + sub, 0, static_cast<long>(kBuckets) - 1));
  // The formula's rounding may land one off at a bucket edge: the smallest upper bound >= t.
  while (bucket > 0 && bucket_upper_seconds(bucket - 1) >= seconds) --bucket;
  while (bucket + 1 < kBuckets && bucket_upper_seconds(bucket) < seconds) ++bucket;
  return bucket;
}

void DurationHistogram::add(double seconds) {
  ++counts_[bucket_of(seconds)];
  ++count_;
  if (seconds > 0) sum_seconds_ += seconds;
}

void DurationHistogram::merge(const DurationHistogram& other) {
  for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_seconds_ += other.sum_seconds_;
}

DurationHistogram DurationHistogram::since(const DurationHistogram& earlier) const {
  DurationHistogram difference;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (earlier.counts_[i] > counts_[i]) {
      throw std::invalid_argument("DurationHistogram::since: bucket " + std::to_string(i) +
                                  " holds fewer counts than the earlier copy");
    }
    difference.counts_[i] = counts_[i] - earlier.counts_[i];
  }
  difference.count_ = count_ - earlier.count_;
  difference.sum_seconds_ = std::max(0.0, sum_seconds_ - earlier.sum_seconds_);
  return difference;
}

double DurationHistogram::quantile(double q) const {
  if (!(q >= 0.0 && q <= 1.0)) {
    throw std::invalid_argument("DurationHistogram::quantile: q = " + std::to_string(q) +
                                " is outside [0, 1]");
  }
  if (count_ == 0) return 0.0;
  // The smallest bucket whose cumulative count reaches ceil(q * count), at least the first value.
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return i == 0 ? 0.0 : bucket_upper_seconds(i);
  }
  return bucket_upper_seconds(kBuckets - 1);
}

std::vector<std::pair<std::size_t, std::uint64_t>> DurationHistogram::nonzero_buckets() const {
  std::vector<std::pair<std::size_t, std::uint64_t>> buckets;
  for (std::size_t i = 0; i < kBuckets; ++i) {
    if (counts_[i] != 0) buckets.emplace_back(i, counts_[i]);
  }
  return buckets;
}

DurationHistogram DurationHistogram::from_buckets(
    const std::vector<std::pair<std::size_t, std::uint64_t>>& buckets, double sum_seconds) {
  DurationHistogram histogram;
  std::size_t next = 0;
  for (const auto& [index, count] : buckets) {
    if (index >= kBuckets || index < next) {
      throw std::invalid_argument("DurationHistogram::from_buckets: bucket index " +
                                  std::to_string(index) + " out of range or not ascending");
    }
    histogram.counts_[index] = count;
    histogram.count_ += count;
    next = index + 1;
  }
  histogram.sum_seconds_ = std::max(0.0, sum_seconds);
  return histogram;
}

}  // namespace dlcp
