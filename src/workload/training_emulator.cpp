#include "workload/training_emulator.hpp"

#include <algorithm>
#include <thread>

namespace dlcp::workload {

namespace {

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

void RealTime::sleep_until(Clock::time_point when) {
  std::this_thread::sleep_until(when);
}

TrainingEmulator::TrainingEmulator(const IterationPlan& plan, GradientSync& sync, TimeSource& time,
                                   EmulatorHooks hooks)
    : plan_(plan),
      sync_(sync),
      time_(time),
      hooks_(std::move(hooks)),
      gradients_(plan.total_floats),
      pending_(plan.buckets.size(), -1) {}

void TrainingEmulator::complete(std::size_t b, int iteration, double* delivered_weighted) {
  const Bucket& bucket = plan_.buckets[b];
  const double delivered = sync_.wait(b);
  *delivered_weighted += delivered * static_cast<double>(bucket.floats);
  if (hooks_.check) {
    hooks_.check(iteration, b, std::span<float>(gradients_).subspan(bucket.offset, bucket.floats));
  }
  pending_[b] = -1;
}

std::vector<IterationRecord> TrainingEmulator::run(int iterations) {
  std::vector<IterationRecord> records(static_cast<std::size_t>(std::max(iterations, 0)));
  std::vector<double> delivered(records.size(), 0.0);
  std::vector<Clock::time_point> starts;
  for (int it = 0; it < iterations; ++it) {
    Clock::time_point t = time_.now();
    starts.push_back(t);
    // Forward: each layer needs its bucket's result from the previous iteration.
    for (const PlannedLayer& layer : plan_.layers) {
      const int waiting_for = pending_[layer.bucket];
      if (waiting_for >= 0) {
        complete(layer.bucket, waiting_for, &delivered[static_cast<std::size_t>(waiting_for)]);
        t = std::max(t, time_.now());
      }
      t += seconds(layer.forward_s);
      time_.sleep_until(t);
    }
    // Backward: last layer first; a bucket leaves once its frontmost layer's gradient exists.
    for (std::size_t l = plan_.layers.size(); l-- > 0;) {
      t += seconds(plan_.layers[l].backward_s);
      time_.sleep_until(t);
      const std::size_t b = plan_.layers[l].bucket;
      const Bucket& bucket = plan_.buckets[b];
      if (l != bucket.first_layer) continue;
      auto values = std::span<float>(gradients_).subspan(bucket.offset, bucket.floats);
      if (hooks_.fill) hooks_.fill(it, b, values);
      sync_.start(b, bucket, values);
      pending_[b] = it;
    }
  }
  // An iteration runs from one forward's start to the next: its forward, including the waits for
  // the previous iteration's buckets, and its backward. The last iteration's buckets are
  // collected after its end, so that every record measures the same thing.
  starts.push_back(time_.now());
  for (std::size_t b = 0; b < pending_.size(); ++b) {
    if (pending_[b] >= 0) {
      const int it = pending_[b];
      complete(b, it, &delivered[static_cast<std::size_t>(it)]);
    }
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    records[i].seconds = std::chrono::duration<double>(starts[i + 1] - starts[i]).count();
    records[i].compute_seconds = plan_.compute_s;
    records[i].delivered_fraction =
        plan_.total_floats > 0 ? delivered[i] / static_cast<double>(plan_.total_floats) : 1.0;
  }
  return records;
}

}  // namespace dlcp::workload
