// One scheme on one scenario: build the fabric, run training and background traffic to the end
// of the last iteration, and summarise what happened as a JSON object.
#pragma once

#include <string>

#include "config.hpp"

namespace dlcp::sim {

// Runs the simulation in this process (ns-3 keeps global state, so main() forks one process per
// scheme). Returns the scheme's results as a JSON object. With a `flows_path`, every finished
// flow is also written there as CSV (write_flow_csv). With a positive `progress_interval_s`, a
// progress line goes to stderr at most that often (wall time).
std::string run_scheme(const ScenarioConfig& scenario, Scheme scheme,
                       const std::string& flows_path = "", double progress_interval_s = 0);

}  // namespace dlcp::sim
