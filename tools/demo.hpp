// `dlcp demo`: the point-to-point demonstration of the transport under injected loss.
#pragma once

#include <nlohmann/json.hpp>

namespace dlcp::tools {

struct DemoOptions {
  double mib = 32;
  int iters = 10;
  double drop = 0.01;
  double budget = 0.05;
};

// Runs every configuration, prints a table on stdout and returns the summary.
nlohmann::json run_demo(const DemoOptions& options);

}  // namespace dlcp::tools
