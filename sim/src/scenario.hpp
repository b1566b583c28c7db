// Named scenarios: `small` for CI, `scale-16`/`scale-48`/`paper-144` for the scale table.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"

namespace dlcp::sim {

std::vector<std::string> scenario_names();
// Returns false for an unknown name.
bool named_scenario(const std::string& name, ScenarioConfig* scenario);
// The scenario's settings as a JSON object (what was simulated, for the results file).
std::string scenario_json(const ScenarioConfig& scenario);

}  // namespace dlcp::sim
