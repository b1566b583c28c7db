#include "model_profile.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "json.hpp"

namespace dlcp::sim {

ModelProfile load_model(const std::string& name) {
  const char* from_env = std::getenv("DLCP_SIM_MODELS_DIR");
  const std::string dir = from_env ? from_env : DLCP_SIM_MODELS_DIR;
  const std::string path = dir + "/" + name + ".json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("model profile " + path + " not found");
  std::stringstream text;
  text << in.rdbuf();
  const json::Value doc = json::parse(text.str());

  ModelProfile model;
  model.name = name;
  for (const json::Value& layer : doc.at("layers").as_array()) {
    Layer l;
    l.name = layer.at("name").as_string();
    l.params = static_cast<std::uint64_t>(layer.at("params").as_number());
    l.macs = layer.at("macs").as_number();
    model.total_params += l.params;
    model.total_macs += l.macs;
    model.layers.push_back(l);
  }
  if (model.layers.empty()) throw std::runtime_error("model profile " + path + " has no layers");
  return model;
}

}  // namespace dlcp::sim
