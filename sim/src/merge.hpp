// Results of schemes kept from earlier runs of the same scenario: a scheme can be re-run alone
// (the 144-host baselines take hours) and still be compared against the others, and schemes run
// side by side in separate processes can be gathered into one document.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "report.hpp"

namespace dlcp::sim {

// The outcomes stored in the scenario documents at `paths` for every scheme not in `rerun`, each
// scheme once, taken from the first document that holds it. Throws std::runtime_error, naming
// the file and the reason, when one cannot be read or parsed, when it is another scenario or was
// made with another configuration or simulator model revision (the first differing key is
// named), when a kept scheme had failed, or when two documents hold different results for one
// scheme (its run time aside: the simulator is deterministic).
std::vector<SchemeOutcome> kept_outcomes(const std::vector<std::string>& paths,
                                         const ScenarioConfig& scenario,
                                         const std::vector<std::string>& rerun);

}  // namespace dlcp::sim
