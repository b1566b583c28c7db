// Emulates the iterations of data-parallel training against a real communication backend:
// backward releases gradient buckets from the last layer to the first, their all-reduces overlap
// with the rest of backward, and the next forward waits, layer by layer, for the result of the
// bucket holding that layer. Compute is a timed pause (the accelerator's share of the time), so
// the CPU stays free for the network and the iteration time is what a real job would see.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <vector>

#include "workload/iteration_plan.hpp"

namespace dlcp::workload {

using Clock = std::chrono::steady_clock;

// Where time comes from; tests inject a virtual clock.
class TimeSource {
 public:
  virtual ~TimeSource() = default;
  virtual Clock::time_point now() = 0;
  virtual void sleep_until(Clock::time_point when) = 0;
};

class RealTime final : public TimeSource {
 public:
  Clock::time_point now() override { return Clock::now(); }
  void sleep_until(Clock::time_point when) override;
};

// The communication backend: an asynchronous all-reduce per bucket.
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  virtual void start(std::size_t bucket_index, const Bucket& bucket, std::span<float> values) = 0;
  // Blocks until the bucket is reduced; returns the fraction of its entries' contributions that
  // arrived (1 for a reliable backend).
  virtual double wait(std::size_t bucket_index) = 0;
};

struct IterationRecord {
  double seconds = 0;  // from this forward's start (after the last backward) to the next one's
  double compute_seconds = 0;     // the plan's compute time
  double delivered_fraction = 1;  // over this iteration's buckets, weighted by size
};

struct EmulatorHooks {
  // Writes this iteration's gradients of a bucket just before it is sent.
  std::function<void(int iteration, std::size_t bucket, std::span<float> values)> fill;
  // Sees a bucket's result after it is reduced.
  std::function<void(int iteration, std::size_t bucket, std::span<float> values)> check;
};

class TrainingEmulator {
 public:
  TrainingEmulator(const IterationPlan& plan, GradientSync& sync, TimeSource& time,
                   EmulatorHooks hooks = {});
  // Runs `iterations` iterations and returns one record per iteration.
  std::vector<IterationRecord> run(int iterations);

 private:
  void complete(std::size_t bucket, int iteration, double* delivered_weighted);

  const IterationPlan& plan_;
  GradientSync& sync_;
  TimeSource& time_;
  EmulatorHooks hooks_;
  std::vector<float> gradients_;
  std::vector<int> pending_;                // iteration whose result the bucket awaits, -1 = none
  std::vector<double> delivered_weighted_;  // per iteration, sum of fraction x floats
};

}  // namespace dlcp::workload
