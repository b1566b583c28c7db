#include "workload/iteration_plan.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/invalid_option.hpp"

namespace dlcp::workload {

void PlanOptions::validate() const {
  if (!(gradient_scale > 0 && gradient_scale <= 1)) {
    invalid_option("PlanOptions.gradient_scale", "must be within (0, 1]", gradient_scale);
  }
  if (!(compute_ms >= 0 && compute_ms <= 1e6)) {
    invalid_option("PlanOptions.compute_ms", "must be within [0, 1e6]", compute_ms);
  }
  if (!(bucket_mib > 0 && bucket_mib <= 4096)) {
    invalid_option("PlanOptions.bucket_mib", "must be within (0, 4096]", bucket_mib);
  }
}

IterationPlan make_iteration_plan(const ModelProfile& model, const PlanOptions& options) {
  options.validate();
  IterationPlan plan;
  plan.model = model.name;
  const double forward_share_s = options.compute_ms / 1e3 / 3;  // backward = 2 x forward
  for (const Layer& layer : model.layers) {
    PlannedLayer planned;
    planned.floats = std::max<std::size_t>(
        1, static_cast<std::size_t>(
               std::llround(static_cast<double>(layer.params) * options.gradient_scale)));
    const double share = model.total_macs > 0 ? layer.macs / model.total_macs
                                              : 1.0 / static_cast<double>(model.layers.size());
    planned.forward_s = forward_share_s * share;
    planned.backward_s = 2 * planned.forward_s;
    plan.compute_s += planned.forward_s + planned.backward_s;
    plan.total_floats += planned.floats;
    plan.layers.push_back(planned);
  }
  // Buckets in backward order; the flat buffer is laid out in forward order.
  const auto cap = static_cast<std::size_t>(options.bucket_mib * (1 << 20) / sizeof(float));
  std::vector<std::size_t> offsets(plan.layers.size());
  std::size_t offset = 0;
  for (std::size_t l = 0; l < plan.layers.size(); ++l) {
    offsets[l] = offset;
    offset += plan.layers[l].floats;
  }
  for (std::size_t i = plan.layers.size(); i-- > 0;) {
    const bool open = !plan.buckets.empty() && plan.buckets.back().floats < cap;
    if (!open) {
      Bucket bucket;
      bucket.last_layer = i;
      plan.buckets.push_back(bucket);
    }
    Bucket& bucket = plan.buckets.back();
    bucket.first_layer = i;
    bucket.offset = offsets[i];
    bucket.floats += plan.layers[i].floats;
    plan.layers[i].bucket = plan.buckets.size() - 1;
  }
  return plan;
}

}  // namespace dlcp::workload
