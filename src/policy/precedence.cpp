// Drop precedence by magnitude: which packets of a tensor are protected.
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
  std::size_t seq;
};

// True when a ranks above b: NaN first, then larger mean |g|, then lower sequence number.
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

bool ranks_above(const Rank& a, const Rank& b) {
  if (a.nan != b.nan) return a.nan;
  if (!a.nan && a.mean_abs != b.mean_abs) return a.mean_abs > b.mean_abs;
  return a.seq < b.seq;
}

}  // namespace

std::vector<std::uint8_t> protected_packets(const float* values, std::size_t count,
                                            std::size_t stride, double protected_share) {
  if (stride == 0) throw std::invalid_argument("protected_packets: stride = 0 (must be > 0)");
  if (!(protected_share >= 0.0 && protected_share <= 1.0)) {
    throw std::invalid_argument("protected_packets: protected_share = " +
                                std::to_string(protected_share) + " is outside [0, 1]");
  }
  if (count == 0) return {};

  const std::size_t n = count / stride + (count % stride != 0 ? 1 : 0);
  std::vector<std::uint8_t> flags(n, 0);
  const std::size_t k = protected_count(protected_share, n);
  if (k == 0) return flags;
  if (k == n) {
    std::fill(flags.begin(), flags.end(), std::uint8_t{1});
    return flags;
  }

  std::vector<Rank> ranks(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t begin = i * stride;
    const std::size_t end = std::min(begin + stride, count);
    const double sum = sum_abs(values + begin, end - begin);
    ranks[i] = {sum / static_cast<double>(end - begin), std::isnan(sum), i};
  }
  std::nth_element(ranks.begin(), ranks.begin() + static_cast<std::ptrdiff_t>(k - 1), ranks.end(),
                   ranks_above);
  for (std::size_t i = 0; i < k; ++i) flags[ranks[i].seq] = 1;
  return flags;
}

}  // namespace dlcp::policy
