// Background traffic: Poisson flow arrivals between random host pairs with sizes drawn from a
// published data-centre distribution, at a given share of the hosts' link capacity.
#pragma once

#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "config.hpp"
#include "transport.hpp"

namespace dlcp::sim {

// Flow-size CDF as (bytes, cumulative probability) points, interpolated linearly.
using FlowSizeCdf = std::vector<std::pair<double, double>>;

// Web search (DCTCP, SIGCOMM 2010) and data mining (VL2, SIGCOMM 2009), in the byte form the
// pFabric/PIAS/Homa evaluations use; sizes above `max_bytes` are clipped to it.
FlowSizeCdf flow_size_cdf(FlowSizes sizes, std::uint64_t max_bytes);
double mean_flow_bytes(const FlowSizeCdf& cdf);

class BackgroundTraffic {
 public:
  BackgroundTraffic(const BackgroundConfig& config, int hosts, double host_rate_bps,
                    MessageTransport& transport, std::uint64_t seed);
  void start();
  void stop() { running_ = false; }
  std::uint64_t flows_started() const { return flows_started_; }

 private:
  void next_flow();
  double draw_size();

  BackgroundConfig config_;
  int hosts_;
  MessageTransport& transport_;
  std::mt19937_64 rng_;
  FlowSizeCdf cdf_;
  double mean_interval_s_ = 0.0;
  bool running_ = false;
  std::uint64_t flows_started_ = 0;
};

}  // namespace dlcp::sim
