// Validation and names for the communicator's options.
#include <string>

#include "common/invalid_option.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp {

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTranspose:
      return "tar";
    case Algorithm::kParameterServer:
      return "ps";
  }
  return "unknown";
}

Algorithm parse_algorithm(const std::string& name) {
  if (name == "ring") return Algorithm::kRing;
  if (name == "tar" || name == "transpose") return Algorithm::kTranspose;
  if (name == "ps" || name == "parameter-server") return Algorithm::kParameterServer;
  throw Error(ErrorCode::kInvalidArgument, -1,
              "unknown algorithm '" + name + "' (expected ring, tar or ps)");
}

const char* to_string(Topology topology) {
  switch (topology) {
    case Topology::kAuto:
      return "auto";
    case Topology::kFlat:
      return "flat";
    case Topology::kHierarchical:
      return "hierarchical";
  }
  return "unknown";
}

Topology parse_topology(const std::string& name) {
  if (name == "auto") return Topology::kAuto;
  if (name == "flat") return Topology::kFlat;
  if (name == "hierarchical" || name == "hier") return Topology::kHierarchical;
  throw Error(ErrorCode::kInvalidArgument, -1,
              "unknown topology '" + name + "' (expected auto, flat or hierarchical)");
}

void CollectiveOptions::validate() const {
  if (num_layers < 1) invalid_option("CollectiveOptions.num_layers", "must be >= 1", num_layers);
  if (layer < 0 || layer >= num_layers) {
    invalid_option("CollectiveOptions.layer", "must be 0.." + std::to_string(num_layers - 1),
                   layer);
  }
  if (!(loss_budget >= 0 && loss_budget <= 1)) {
    invalid_option("CollectiveOptions.loss_budget", "must be within [0, 1]", loss_budget);
  }
  if (!(broadcast_loss_budget >= 0 && broadcast_loss_budget <= 1)) {
    invalid_option("CollectiveOptions.broadcast_loss_budget", "must be within [0, 1]",
                   broadcast_loss_budget);
  }
  if (deadline.count() <= 0) {
    invalid_option("CollectiveOptions.deadline", "must be positive", deadline);
  }
  if (deadline.count() > 0xFFFFFFFFll) {
    invalid_option("CollectiveOptions.deadline", "must be at most 4294967295 ms (2^32 - 1)",
                   deadline);
  }
}

void CommunicatorOptions::validate(int world_size) const {
  if (world_size < 1) {
    invalid_option("CommunicatorOptions.validate(world_size)", "must be >= 1", world_size);
  }
  if (servers < 0 || servers >= world_size) {
    invalid_option("CommunicatorOptions.servers",
                   "must be 0.." + std::to_string(world_size - 1) + " (at least one worker)",
                   servers);
  }
  if (algorithm == Algorithm::kParameterServer && servers == 0) {
    invalid_option("CommunicatorOptions.servers", "must be > 0 for the parameter-server algorithm",
                   servers);
  }
  if (segment_bytes < sizeof(float)) {
    invalid_option("CommunicatorOptions.segment_bytes", "must be at least one float (4)",
                   segment_bytes);
  }
  if (concurrent_collectives < 1 || concurrent_collectives > 64) {
    invalid_option("CommunicatorOptions.concurrent_collectives", "must be 1..64",
                   concurrent_collectives);
  }
  if (store_prefix.empty()) {
    invalid_option("CommunicatorOptions.store_prefix", "must not be empty", store_prefix);
  }
}

bool Work::ready() const {
  return result_.valid() && result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace dlcp
