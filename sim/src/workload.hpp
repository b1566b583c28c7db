// Data-parallel training iterations over a transport: parameter server or ring all-reduce, with
// per-layer compute so that communication overlaps computation as in a real framework.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <vector>

#include "config.hpp"
#include "model_profile.hpp"
#include "ns3/nstime.h"
#include "transport.hpp"

namespace dlcp::sim {

struct TrainingResult {
  std::vector<double> iteration_ms;  // per worker and iteration: end of forward k+1 - end of k
  // Iteration k's mean over the workers that finished it. The first starts with every worker in
  // lockstep (unless compute is jittered), so it can differ from the steady state that follows.
  std::vector<double> mean_ms_by_iteration;
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

// A worker's compute speed for one iteration: a factor on every layer's forward and backward time,
// uniform in [1 - spread, 1 + spread]. With spread 0 it draws nothing and is exactly 1, so runs
// without jitter repeat the lockstep results.
class ComputeSpeed {
 public:
  ComputeSpeed(double spread, std::uint64_t seed) : spread_(spread), rng_(seed) {}
  double draw();

 private:
  double spread_;
  std::mt19937_64 rng_;
};

// Gradient bytes of a layer after scaling: whole float32 values, at least one.
std::uint64_t scaled_bytes(const WorkloadConfig& config, std::uint64_t params);

// `seed` drives the compute jitter only (WorkloadConfig::compute_jitter). `packet_floats` (one dlcp
// packet's floats at full size) is the block of Slicing::kSharded.
std::unique_ptr<TrainingJob> make_parameter_server_job(
    const WorkloadConfig& config, const ModelProfile& model, int hosts, std::uint32_t packet_floats,
    MessageTransport& transport, std::uint64_t seed, std::function<void()> on_done);
std::unique_ptr<TrainingJob> make_ring_allreduce_job(const WorkloadConfig& config,
                                                     const ModelProfile& model, int hosts,
                                                     MessageTransport& transport,
                                                     std::uint64_t seed,
                                                     std::function<void()> on_done);

}  // namespace dlcp::sim
