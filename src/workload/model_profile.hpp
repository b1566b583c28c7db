// A model's per-layer gradient profile, read from models/<name>.json (written by
// models/generate.py from the model definitions in Debian's torch/torchvision). Shared by the
// testbed's training emulator and the ns-3 simulator, so C++17.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlcp::workload {

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

// The directory of the bundled profiles: $DLCP_MODELS_DIR, else data_dir()/models.
std::string models_dir();

// Loads `name` (resnet50, vgg16, bert_base) from models_dir(), or a path ending in .json. Throws
// std::runtime_error naming the file when it is missing or malformed.
ModelProfile load_model(const std::string& name_or_path);

// Parses a profile from JSON text; `origin` names it in errors.
ModelProfile parse_model(const std::string& json_text, const std::string& origin);

}  // namespace dlcp::workload
