// Drop precedence by magnitude: which packets of a tensor are protected, and the order to send
// them in.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "policy/policy.hpp"

namespace dlcp::policy {

namespace {

// ceil(share * n), robust to the rounding error of share * n: a product that lies within a few
// thousand ulps above an integer (0.3 * 10 = 3.0000000000000004) counts as that integer.
std::size_t protected_count(double share, std::size_t n) {
  const double x = share * static_cast<double>(n);
  const double whole = std::floor(x);
  const double count = (x - whole <= x * 1e-12) ? whole : whole + 1.0;
  return std::min(n, static_cast<std::size_t>(count));
}

struct Rank {
  double mean_abs;  // meaningful only when !nan
  bool nan;
  std::uint32_t seq;
};

// Sum of |v| in 16 independent lanes: no serial dependency between adds, so the compiler can
// vectorize it (a single accumulator made ranking cost ~10 ms per 64 MiB). Precision is ample for
// ranking; a NaN anywhere still makes the sum NaN.
double sum_abs(const float* values, std::size_t count) {
  constexpr std::size_t kLanes = 16;
  float lanes[kLanes] = {};
  std::size_t j = 0;
  for (; j + kLanes <= count; j += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) lanes[l] += std::fabs(values[j + l]);
  }
  double sum = 0.0;
  for (; j < count; ++j) sum += std::fabs(static_cast<double>(values[j]));
  for (float lane : lanes) sum += static_cast<double>(lane);
  return sum;
}

// Mean |v| of one packet's values: all of them up to kExactMagnitudeFloats, else an even sample
// of kMagnitudeSampleFloats in runs of kRun (a cache line each, so the sample reads that many
// lines and no more). NaN when a value read is NaN.
double mean_abs(const float* values, std::size_t count) {
  if (count <= kExactMagnitudeFloats) return sum_abs(values, count) / static_cast<double>(count);
  constexpr std::size_t kRun = 16;
  constexpr std::size_t kRuns = kMagnitudeSampleFloats / kRun;
  double sum = 0.0;
  for (std::size_t r = 0; r < kRuns; ++r) {
    // Runs start at r/kRuns of the way through the packet, aligned down to a run.
    const std::size_t start = (count - kRun) * r / (kRuns - 1) / kRun * kRun;
    sum += sum_abs(values + start, kRun);
  }
  return sum / static_cast<double>(kMagnitudeSampleFloats);
}

// True when a ranks above b: NaN first, then larger mean |g|, then lower sequence number.
bool ranks_above(const Rank& a, const Rank& b) {
  if (a.nan != b.nan) return a.nan;
  if (!a.nan && a.mean_abs != b.mean_abs) return a.mean_abs > b.mean_abs;
  return a.seq < b.seq;
}

void check_arguments(std::size_t stride, double protected_share) {
  if (stride == 0) throw std::invalid_argument("protected_packets: stride = 0 (must be > 0)");
  if (!(protected_share >= 0.0 && protected_share <= 1.0)) {
    throw std::invalid_argument("protected_packets: protected_share = " +
                                std::to_string(protected_share) + " is outside [0, 1]");
  }
}

std::vector<Rank> measure(const float* values, std::size_t count, std::size_t stride) {
  const std::size_t n = count / stride + (count % stride != 0 ? 1 : 0);
  std::vector<Rank> ranks(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t begin = i * stride;
    const double mean = mean_abs(values + begin, std::min(begin + stride, count) - begin);
    ranks[i] = {mean, std::isnan(mean), static_cast<std::uint32_t>(i)};
  }
  return ranks;
}

}  // namespace

PacketRanking rank_packets(const float* values, std::size_t count, std::size_t stride,
                           double protected_share) {
  check_arguments(stride, protected_share);
  PacketRanking ranking;
  if (count == 0) return ranking;
  const std::size_t n = count / stride + (count % stride != 0 ? 1 : 0);
  ranking.protected_flags.assign(n, 0);
  const std::size_t k = protected_count(protected_share, n);
  if (k == n) {
    std::fill(ranking.protected_flags.begin(), ranking.protected_flags.end(), std::uint8_t{1});
    for (std::uint32_t seq = 0; seq < n; ++seq) ranking.send_order.push_back(seq);
    return ranking;
  }
  std::vector<Rank> ranks = measure(values, count, stride);
  const auto top = ranks.begin() + static_cast<std::ptrdiff_t>(k);
  if (k > 0) std::nth_element(ranks.begin(), top - 1, ranks.end(), ranks_above);
  for (auto it = ranks.begin(); it != top; ++it) ranking.protected_flags[it->seq] = 1;
  ranking.send_order = first_round_order(ranking.protected_flags);
  return ranking;
}

std::vector<std::uint32_t> first_round_order(const std::vector<std::uint8_t>& protected_flags) {
  std::vector<std::uint32_t> order;
  order.reserve(protected_flags.size());
  for (const std::uint8_t precedence : {std::uint8_t{1}, std::uint8_t{0}}) {
    for (std::uint32_t seq = 0; seq < protected_flags.size(); ++seq) {
      if ((protected_flags[seq] != 0) == (precedence != 0)) order.push_back(seq);
    }
  }
  return order;
}

std::vector<std::uint8_t> protected_packets(const float* values, std::size_t count,
                                            std::size_t stride, double protected_share) {
  return rank_packets(values, count, stride, protected_share).protected_flags;
}

}  // namespace dlcp::policy
