// What a parameter server does with one collective, worked out from every worker's descriptor:
// who pushes each stripe's shard (flat: every worker the one stripe; hierarchical: each host's
// leader of the stripe), checked so that every stripe's pushes count every worker exactly once.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collectives/ps_descriptor.hpp"
#include "common/expected.hpp"

namespace dlcp::collectives {

struct PsStripePlan {
  std::uint32_t shard_floats = 0;
  std::uint32_t segment_floats = 0;
  std::vector<int> pushers;  // worker ranks, ascending; each pushes and pulls the shard
};

struct PsPlan {
  PsDescriptor common;  // worker 0's descriptor: its layer, budgets, op, wire... hold for all
  std::vector<PsStripePlan> stripes;
};

struct PsPlanError {
  int worker = 0;  // the worker whose descriptor does not fit the others (or worker 0's)
  std::string reason;
};

// `descriptors[w]` is worker w's. Refuses workers that disagree on anything but their own push
// (shutdown, layer, budgets, op, aggregation, deadline, wire, stripes), pushers of one stripe
// that disagree on its shard, and stripes whose pushes do not add up to every worker.
Expected<PsPlan, PsPlanError> plan_ps_collective(std::span<const PsDescriptor> descriptors);

}  // namespace dlcp::collectives
