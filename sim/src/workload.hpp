// Data-parallel training iterations over a transport: parameter server or ring all-reduce, with
// per-layer compute so that communication overlaps computation as in a real framework.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "config.hpp"
#include "model_profile.hpp"
#include "ns3/nstime.h"
#include "transport.hpp"

namespace dlcp::sim {

struct TrainingResult {
  std::vector<double> iteration_ms;  // per worker and iteration: end of forward k+1 - end of k
  int iterations_expected = 0;
  int iterations_finished = 0;  // the slowest worker's
};

// Iteration times of every worker from the instants its forward passes ended (one list per
// worker); the job finished as many iterations as its slowest worker.
TrainingResult training_result(int iterations,
                               const std::vector<const std::vector<ns3::Time>*>& forward_ends);

class TrainingJob {
 public:
  virtual ~TrainingJob() = default;
  virtual void start() = 0;
  virtual TrainingResult result() const = 0;
};

// Per-layer forward compute (backward is backward_factor times it), split by MACs and scaled by
// size_scale like the gradients, so compute and communication keep their real-world ratio.
std::vector<ns3::Time> forward_times(const WorkloadConfig& config, const ModelProfile& model);

// Gradient bytes of a layer after scaling: whole float32 values, at least one.
std::uint64_t scaled_bytes(const WorkloadConfig& config, std::uint64_t params);

std::unique_ptr<TrainingJob> make_parameter_server_job(const WorkloadConfig& config,
                                                       const ModelProfile& model, int hosts,
                                                       MessageTransport& transport,
                                                       std::function<void()> on_done);
std::unique_ptr<TrainingJob> make_ring_allreduce_job(const WorkloadConfig& config,
                                                     const ModelProfile& model, int hosts,
                                                     MessageTransport& transport,
                                                     std::function<void()> on_done);

}  // namespace dlcp::sim
