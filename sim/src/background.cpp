#include "background.hpp"

#include <algorithm>

#include "ns3/simulator.h"

namespace dlcp::sim {

FlowSizeCdf flow_size_cdf(FlowSizes sizes, std::uint64_t max_bytes) {
  FlowSizeCdf cdf;
  if (sizes == FlowSizes::kWebSearch) {
    cdf = {{0, 0},       {10e3, 0.15}, {20e3, 0.2}, {30e3, 0.3}, {50e3, 0.4},  {80e3, 0.53},
           {200e3, 0.6}, {1e6, 0.7},   {2e6, 0.8},  {5e6, 0.9},  {10e6, 0.97}, {30e6, 1.0}};
  } else {
    cdf = {{0, 0},         {180, 0.1},    {216, 0.2},  {560, 0.3},  {900, 0.4},
           {1100, 0.5},    {1870, 0.6},   {3160, 0.7}, {10e3, 0.8}, {400e3, 0.9},
           {3.16e6, 0.95}, {100e6, 0.98}, {1e9, 1.0}};
  }
  const double cap = static_cast<double>(max_bytes);
  for (auto& point : cdf) point.first = std::min(point.first, cap);
  return cdf;
}

double mean_flow_bytes(const FlowSizeCdf& cdf) {
  double mean = 0.0;
  for (std::size_t i = 1; i < cdf.size(); ++i) {
    mean += (cdf[i].second - cdf[i - 1].second) * (cdf[i].first + cdf[i - 1].first) / 2.0;
  }
  return mean;
}

BackgroundTraffic::BackgroundTraffic(const BackgroundConfig& config, int hosts,
                                     double host_rate_bps, MessageTransport& transport,
                                     std::uint64_t seed)
    : config_(config),
      hosts_(hosts),
      transport_(transport),
      rng_(seed),
      cdf_(flow_size_cdf(config.sizes, config.max_flow_bytes)) {
  // load * capacity of all hosts = arrival rate * mean flow size.
  const double bytes_per_s = config.load * host_rate_bps / 8.0 * hosts;
  if (bytes_per_s > 0) mean_interval_s_ = mean_flow_bytes(cdf_) / bytes_per_s;
}

void BackgroundTraffic::start() {
  if (mean_interval_s_ <= 0 || hosts_ < 2) return;
  running_ = true;
  next_flow();
}

double BackgroundTraffic::draw_size() {
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  for (std::size_t i = 1; i < cdf_.size(); ++i) {
    if (u <= cdf_[i].second) {
      const double span = cdf_[i].second - cdf_[i - 1].second;
      const double t = span > 0 ? (u - cdf_[i - 1].second) / span : 1.0;
      return cdf_[i - 1].first + t * (cdf_[i].first - cdf_[i - 1].first);
    }
  }
  return cdf_.back().first;
}

void BackgroundTraffic::next_flow() {
  if (!running_) return;
  std::uniform_int_distribution<int> pick(0, hosts_ - 1);
  Message flow;
  flow.src = pick(rng_);
  do {
    flow.dst = pick(rng_);
  } while (flow.dst == flow.src);
  flow.bytes = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(draw_size()));
  flow.kind = FlowKind::kBackground;
  ++flows_started_;
  transport_.send(flow, nullptr);
  const double wait = std::exponential_distribution<double>(1.0 / mean_interval_s_)(rng_);
  ns3::Simulator::Schedule(ns3::Seconds(wait), &BackgroundTraffic::next_flow, this);
}

}  // namespace dlcp::sim
