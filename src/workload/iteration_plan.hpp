// One training iteration of a model, as the communication layer sees it: per-layer gradient
// sizes and compute times, and the gradient buckets that backward releases (DDP's scheme:
// parameters in reverse order, a new bucket whenever the cap is reached).
#pragma once

#include <cstddef>
#include <vector>

#include "workload/model_profile.hpp"

namespace dlcp::workload {

struct PlanOptions {
  // Gradient sizes are scaled by this factor (the testbed's links are slower than a cluster's,
  // so tensors shrink with them; see docs/testbed.md).
  double gradient_scale = 1.0 / 16;
  // Forward + backward compute time of one iteration, spread over the layers in proportion to
  // their MACs; backward takes twice the forward. 0 = communication only.
  double compute_ms = 60;
  // Bucket cap after scaling (DDP's default is 25 MiB unscaled).
  double bucket_mib = 25.0 / 16;

  void validate() const;  // throws dlcp::Error(kInvalidArgument) naming the field
};

struct PlannedLayer {
  std::size_t floats = 0;
  double forward_s = 0;
  double backward_s = 0;
  std::size_t bucket = 0;
};

struct Bucket {
  std::size_t first_layer = 0;  // frontmost layer (lowest index): decides the priority
  std::size_t last_layer = 0;
  std::size_t offset = 0;  // first float in the flat gradient buffer
  std::size_t floats = 0;
};

struct IterationPlan {
  std::string model;
  std::vector<PlannedLayer> layers;  // forward order
  std::vector<Bucket> buckets;       // in the order backward fills them (last layers first)
  std::size_t total_floats = 0;
  double compute_s = 0;
};

IterationPlan make_iteration_plan(const ModelProfile& model, const PlanOptions& options);

}  // namespace dlcp::workload
