// The emulated iteration's command-line options, shared by `dlcp-bench train` and `dlcp demo`
// (train_cli.cpp registers train and its hidden per-rank command: commands.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include "workload/iteration_plan.hpp"

namespace dlcp::tools {

// --gradient-scale, --compute-ms, --bucket-mib: the emulated iteration (train and demo).
void add_plan_options(CLI::App* command, workload::PlanOptions& plan);

}  // namespace dlcp::tools
