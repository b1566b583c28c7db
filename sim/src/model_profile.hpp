// A model's per-layer gradient profile, read from models/<name>.json (see models/generate.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlcp::sim {

struct Layer {
  std::string name;
  std::uint64_t params = 0;
  double macs = 0.0;  // forward multiply-accumulates per sample
};

struct ModelProfile {
  std::string name;
  std::vector<Layer> layers;  // forward order
  std::uint64_t total_params = 0;
  double total_macs = 0.0;
};

// Looks in $DLCP_SIM_MODELS_DIR, then the repository's models/ directory. Throws
// std::runtime_error when the file is missing or malformed.
ModelProfile load_model(const std::string& name);

}  // namespace dlcp::sim
