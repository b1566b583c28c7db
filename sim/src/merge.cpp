#include "merge.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "scenario.hpp"

namespace dlcp::sim {

namespace {

std::runtime_error merge_error(const std::string& path, const std::string& why) {
  return std::runtime_error("--merge " + path + ": " + why);
}

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

// The results of the document at `path`, once it is known to hold `scenario` run with the same
// configuration and model revision.
nlohmann::json stored_results(const std::string& path, const ScenarioConfig& scenario) {
  std::ifstream in(path);
  if (!in) throw merge_error(path, "cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw merge_error(path, std::string("not JSON: ") + e.what());
  }
  if (!document.is_object() || !document.contains("config") || !document.contains("results") ||
      !document["results"].is_object()) {
    throw merge_error(path, "not a dlcp-sim scenario document (no config or results)");
  }
  if (document.value("scenario", "") != scenario.name) {
    throw merge_error(path, "holds scenario '" + document.value("scenario", "") + "', not '" +
                                scenario.name + "'");
  }
  const std::string difference =
      first_difference(document["config"], nlohmann::json::parse(scenario_json(scenario)));
  if (!difference.empty())
    throw merge_error(path, "made with another configuration: " + difference);
  return document["results"];
}

// A result as the model determines it: the wall time differs from run to run.
nlohmann::json without_run_time(nlohmann::json result) {
  result.erase("wall_s");
  return result;
}

}  // namespace

std::vector<SchemeOutcome> kept_outcomes(const std::vector<std::string>& paths,
                                         const ScenarioConfig& scenario,
                                         const std::vector<std::string>& rerun) {
  std::vector<SchemeOutcome> kept;
  std::map<std::string, std::pair<std::string, nlohmann::json>> kept_from;  // scheme: file, result
  for (const std::string& path : paths) {
    const nlohmann::json results = stored_results(path, scenario);
    for (const auto& [scheme, result] : results.items()) {
      if (std::find(rerun.begin(), rerun.end(), scheme) != rerun.end()) continue;
      if (result.contains("error"))
        throw merge_error(path, "scheme " + scheme + " had failed there");
      if (const auto earlier = kept_from.find(scheme); earlier != kept_from.end()) {
        const auto& [earlier_path, earlier_result] = earlier->second;
        if (without_run_time(earlier_result) != without_run_time(result)) {
          throw merge_error(path, "holds another result for " + scheme + " than " + earlier_path);
        }
        continue;
      }
      kept_from.emplace(scheme, std::make_pair(path, result));
      SchemeOutcome outcome;
      outcome.scheme = scheme;
      outcome.result_json = result.dump();
      outcome.result = json::parse(outcome.result_json);
      kept.push_back(std::move(outcome));
    }
  }
  return kept;
}

}  // namespace dlcp::sim
