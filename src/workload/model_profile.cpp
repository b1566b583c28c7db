#include "workload/model_profile.hpp"

#include "workload/data_files.hpp"

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace dlcp::workload {

std::string models_dir() {
  if (const char* dir = std::getenv("DLCP_MODELS_DIR"); dir != nullptr && *dir != '\0') return dir;
  return (data_dir() / "models").string();
}

ModelProfile parse_model(const std::string& json_text, const std::string& origin) {
  ModelProfile model;
  try {
    const auto doc = nlohmann::json::parse(json_text);
    model.name = doc.value("model", origin);
    for (const auto& layer : doc.at("layers")) {
      Layer l;
      l.name = layer.at("name").get<std::string>();
      l.params = layer.at("params").get<std::uint64_t>();
      l.macs = layer.at("macs").get<double>();
      if (l.params == 0) throw std::runtime_error("layer " + l.name + " has no parameters");
      model.total_params += l.params;
      model.total_macs += l.macs;
      model.layers.push_back(l);
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("model profile " + origin + " is malformed: " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error("model profile " + origin + ": " + e.what());
  }
  if (model.layers.empty()) throw std::runtime_error("model profile " + origin + " has no layers");
  return model;
}

ModelProfile load_model(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0;
  const std::string path = is_path ? name_or_path : models_dir() + "/" + name_or_path + ".json";
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("model profile " + path +
                             " not found (bundled: resnet50, vgg16, bert_base)");
  }
  std::stringstream text;
  text << in.rdbuf();
  ModelProfile model = parse_model(text.str(), path);
  if (!is_path) model.name = name_or_path;
  return model;
}

}  // namespace dlcp::workload
