// The scenario's results: the JSON document, the comparison against each baseline, and a table.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "config.hpp"
#include "json.hpp"

namespace dlcp::sim {

struct SchemeOutcome {
  std::string scheme;
  std::string result_json;  // run_scheme's object, or an "error" object
  json::Value result;
};

// {"scenario", "description", "config", "results": {scheme: ...}, "versus": {baseline: ...}}.
// "versus" holds, for every baseline that ran beside dlcp: training speed-up (baseline's mean
// iteration time / dlcp's) and how much lower dlcp's gradient FCT is (mean and p99, in percent).
std::string scenario_document(const ScenarioConfig& scenario,
                              const std::vector<SchemeOutcome>& outcomes);

void print_table(std::ostream& out, const ScenarioConfig& scenario,
                 const std::vector<SchemeOutcome>& outcomes);

}  // namespace dlcp::sim
