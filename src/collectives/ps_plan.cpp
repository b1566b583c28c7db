#include "collectives/ps_plan.hpp"

namespace dlcp::collectives {
namespace {

// The fields every worker of a collective must agree on (not what it pushes itself).
bool same_collective(const PsDescriptor& a, const PsDescriptor& b) {
  return a.shutdown == b.shutdown && a.layer == b.layer && a.num_layers == b.num_layers &&
         a.loss_budget_ppm == b.loss_budget_ppm &&
         a.broadcast_budget_ppm == b.broadcast_budget_ppm && a.op == b.op &&
         a.aggregation == b.aggregation && a.deadline_ms == b.deadline_ms && a.wire == b.wire &&
         a.stripes == b.stripes;
}

std::string what_it_pushes(const PsDescriptor& d) {
  if (d.shutdown) return "shuts down";
  if (d.stripe == kNoStripe) return "pushes nothing, of " + std::to_string(d.stripes) + " stripes";
  return "pushes " + std::to_string(d.shard_floats) + " floats of stripe " +
         std::to_string(d.stripe) + " of " + std::to_string(d.stripes);
}

}  // namespace

Expected<PsPlan, PsPlanError> plan_ps_collective(std::span<const PsDescriptor> descriptors) {
  if (descriptors.empty()) return unexpected(PsPlanError{0, "no workers"});
  PsPlan plan;
  plan.common = descriptors[0];
  for (std::size_t w = 1; w < descriptors.size(); ++w) {
    if (!same_collective(descriptors[w], plan.common)) {
      return unexpected(PsPlanError{
          static_cast<int>(w), "worker " + std::to_string(w) + " " +
                                   what_it_pushes(descriptors[w]) + ", worker 0 " +
                                   what_it_pushes(plan.common) + " (or their options differ)"});
    }
  }
  if (plan.common.shutdown) return plan;

  plan.stripes.resize(plan.common.stripes);
  std::vector<std::uint64_t> counted(plan.common.stripes, 0);
  for (std::size_t w = 0; w < descriptors.size(); ++w) {
    const PsDescriptor& d = descriptors[w];
    if (d.stripe == kNoStripe) continue;
    PsStripePlan& stripe = plan.stripes[d.stripe];
    if (stripe.pushers.empty()) {
      stripe.shard_floats = d.shard_floats;
      stripe.segment_floats = d.segment_floats;
    } else if (d.shard_floats != stripe.shard_floats || d.segment_floats != stripe.segment_floats) {
      const int first = stripe.pushers.front();
      return unexpected(PsPlanError{
          static_cast<int>(w), "worker " + std::to_string(w) + " " + what_it_pushes(d) +
                                   ", worker " + std::to_string(first) + " " +
                                   what_it_pushes(descriptors[static_cast<std::size_t>(first)])});
    }
    stripe.pushers.push_back(static_cast<int>(w));
    counted[d.stripe] += d.contributions;
  }
  for (std::size_t s = 0; s < counted.size(); ++s) {
    if (counted[s] != descriptors.size()) {
      const auto& pushers = plan.stripes[s].pushers;
      return unexpected(PsPlanError{
          pushers.empty() ? 0 : pushers.back(),
          "the pushes of stripe " + std::to_string(s) + " count " + std::to_string(counted[s]) +
              " workers' contributions, not the job's " + std::to_string(descriptors.size()) +
              " (workers disagree on which ranks share a host)"});
    }
  }
  return plan;
}

}  // namespace dlcp::collectives
