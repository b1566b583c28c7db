// Validation and names for the communicator's options.
#include <string>

#include "dlcp/communicator.hpp"

namespace dlcp {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, -1, what);
}

}  // namespace

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
  invalid("unknown algorithm '" + name + "' (expected ring, tar or ps)");
}

void CollectiveOptions::validate() const {
  if (num_layers < 1) invalid("CollectiveOptions.num_layers must be >= 1");
  if (layer < 0 || layer >= num_layers) {
    invalid("CollectiveOptions.layer must be 0.." + std::to_string(num_layers - 1) + ", got " +
            std::to_string(layer));
  }
  if (!(loss_budget >= 0 && loss_budget <= 1)) {
    invalid("CollectiveOptions.loss_budget must be within [0, 1], got " +
            std::to_string(loss_budget));
  }
  if (!(broadcast_loss_budget >= 0 && broadcast_loss_budget <= 1)) {
    invalid("CollectiveOptions.broadcast_loss_budget must be within [0, 1], got " +
            std::to_string(broadcast_loss_budget));
  }
  if (deadline.count() <= 0) invalid("CollectiveOptions.deadline must be positive");
  if (deadline.count() > 0xFFFFFFFFll) invalid("CollectiveOptions.deadline is too long");
}

void CommunicatorOptions::validate(int world_size) const {
  if (world_size < 1) invalid("world size must be >= 1, got " + std::to_string(world_size));
  if (servers < 0 || servers >= world_size) {
    invalid("CommunicatorOptions.servers must be 0.." + std::to_string(world_size - 1) +
            " (at least one worker), got " + std::to_string(servers));
  }
  if (algorithm == Algorithm::kParameterServer && servers == 0) {
    invalid("the parameter-server algorithm needs CommunicatorOptions.servers > 0");
  }
  if (segment_bytes < sizeof(float)) invalid("CommunicatorOptions.segment_bytes is too small");
  if (concurrent_collectives < 1 || concurrent_collectives > 64) {
    invalid("CommunicatorOptions.concurrent_collectives must be 1..64, got " +
            std::to_string(concurrent_collectives));
  }
  if (store_prefix.empty()) invalid("CommunicatorOptions.store_prefix must not be empty");
}

bool Work::ready() const {
  return result_.valid() && result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

}  // namespace dlcp
