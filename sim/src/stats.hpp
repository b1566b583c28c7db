// Mean and percentiles of samples.
#pragma once

#include <vector>

namespace dlcp::sim {

double mean_of(const std::vector<double>& samples);  // NaN when empty
// Nearest-rank percentile, p in (0, 100]; NaN when empty.
double percentile_of(std::vector<double> samples, double p);

}  // namespace dlcp::sim
