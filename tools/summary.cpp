#include "summary.hpp"

#include <algorithm>
#include <cmath>

namespace dlcp {

double percentile(std::vector<double> samples, double q) {
  if (samples.empty()) return 0.0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::ceil(q * static_cast<double>(samples.size()));
  const auto index =
      static_cast<std::size_t>(std::clamp(rank, 1.0, static_cast<double>(samples.size()))) - 1;
  return samples[index];
}

double gbps(double bytes, double seconds) {
  return seconds > 0 ? bytes * 8.0 / seconds / 1e9 : 0.0;
}

}  // namespace dlcp
