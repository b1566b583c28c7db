#include "workload.hpp"

#include <algorithm>
#include <cmath>

namespace dlcp::sim {

TrainingResult training_result(int iterations,
                               const std::vector<const std::vector<ns3::Time>*>& forward_ends) {
  TrainingResult r;
  r.iterations_expected = iterations;
  r.iterations_finished = iterations;
  std::vector<double> sums;
  std::vector<int> counts;
  for (const auto* ends : forward_ends) {
    const int done = std::max(0, static_cast<int>(ends->size()) - 1);
    r.iterations_finished = std::min(r.iterations_finished, done);
    for (std::size_t k = 1; k < ends->size(); ++k) {
      const double ms = ((*ends)[k] - (*ends)[k - 1]).GetSeconds() * 1e3;
      r.iteration_ms.push_back(ms);
      if (sums.size() < k) {
        sums.resize(k, 0.0);
        counts.resize(k, 0);
      }
      sums[k - 1] += ms;
      ++counts[k - 1];
    }
  }
  for (std::size_t k = 0; k < sums.size(); ++k)
    r.mean_ms_by_iteration.push_back(sums[k] / counts[k]);
  return r;
}

std::vector<ns3::Time> forward_times(const WorkloadConfig& config, const ModelProfile& model) {
  std::vector<ns3::Time> times;
  const double total_ms = config.forward_ms * config.size_scale;
  for (const Layer& layer : model.layers) {
    const double share = model.total_macs > 0 ? layer.macs / model.total_macs : 0.0;
    times.push_back(ns3::NanoSeconds(static_cast<std::int64_t>(total_ms * share * 1e6)));
  }
  return times;
}

double ComputeSpeed::draw() {
  if (spread_ == 0.0) return 1.0;
  return std::uniform_real_distribution<double>(1.0 - spread_, 1.0 + spread_)(rng_);
}

std::uint64_t scaled_bytes(const WorkloadConfig& config, std::uint64_t params) {
  const double bytes = static_cast<double>(params) * 4.0 * config.size_scale;
  return std::max<std::uint64_t>(4, static_cast<std::uint64_t>(std::llround(bytes / 4.0)) * 4);
}

}  // namespace dlcp::sim
