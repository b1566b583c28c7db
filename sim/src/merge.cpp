#include "merge.hpp"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "scenario.hpp"

namespace dlcp::sim {

namespace {

std::string first_difference(const nlohmann::json& stored, const nlohmann::json& current) {
  for (const auto& [key, value] : current.items()) {
    if (!stored.contains(key)) return key + " (missing in the file)";
    if (stored.at(key) != value)
      return key + " (" + stored.at(key).dump() + " there, " + value.dump() + " now)";
  }
  for (const auto& [key, value] : stored.items()) {
    if (!current.contains(key)) return key + " (unknown now)";
  }
  return "";
}

}  // namespace

std::vector<SchemeOutcome> kept_outcomes(const std::string& path, const ScenarioConfig& scenario,
                                         const std::vector<std::string>& rerun) {
  auto fail = [&](const std::string& why) {
    return std::runtime_error("--merge " + path + ": " + why);
  };
  std::ifstream in(path);
  if (!in) throw fail("cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw fail(std::string("not JSON: ") + e.what());
  }
  if (!document.is_object() || !document.contains("config") || !document.contains("results") ||
      !document["results"].is_object()) {
    throw fail("not a dlcp-sim scenario document (no config or results)");
  }
  if (document.value("scenario", "") != scenario.name) {
    throw fail("holds scenario '" + document.value("scenario", "") + "', not '" + scenario.name +
               "'");
  }
  const std::string difference =
      first_difference(document["config"], nlohmann::json::parse(scenario_json(scenario)));
  if (!difference.empty()) throw fail("made with another configuration: " + difference);

  std::vector<SchemeOutcome> kept;
  for (const auto& [scheme, result] : document["results"].items()) {
    if (std::find(rerun.begin(), rerun.end(), scheme) != rerun.end()) continue;
    if (result.contains("error")) throw fail("scheme " + scheme + " had failed there");
    SchemeOutcome outcome;
    outcome.scheme = scheme;
    outcome.result_json = result.dump();
    outcome.result = json::parse(outcome.result_json);
    kept.push_back(std::move(outcome));
  }
  return kept;
}

}  // namespace dlcp::sim
