// Results of schemes kept from an earlier run of the same scenario: a scheme can be re-run alone
// (the 144-host baselines take hours) and still be compared against the others.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "report.hpp"

namespace dlcp::sim {

// The outcomes stored in the scenario document at `path` for every scheme not in `rerun`. Throws
// std::runtime_error, naming the file and the reason, when it cannot be read or parsed, when it
// is another scenario or was made with another configuration or simulator model revision (the
// first differing key is named), or when a kept scheme had failed.
std::vector<SchemeOutcome> kept_outcomes(const std::string& path, const ScenarioConfig& scenario,
                                         const std::vector<std::string>& rerun);

}  // namespace dlcp::sim
