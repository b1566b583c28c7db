// Latency and throughput summaries for the benchmarks (not part of the library).
#pragma once

#include <vector>

namespace dlcp {

// Nearest-rank percentile (q in [0, 1]) of the samples; 0 for no samples.
double percentile(std::vector<double> samples, double q);

// Gigabits per second for `bytes` moved in `seconds` (0 when seconds <= 0).
double gbps(double bytes, double seconds);

}  // namespace dlcp
