// `dlcp bench train` (and its hidden per-rank command) on the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "workload/iteration_plan.hpp"

namespace dlcp::tools {

// --gradient-scale, --compute-ms, --bucket-mib: the emulated iteration (train and demo).
void add_plan_options(CLI::App* command, workload::PlanOptions& plan);

// Registers the commands under `bench`; the returned function runs whichever was parsed and
// returns its exit status, or -1 when neither was.
std::function<int(int* argc, char*** argv)> add_train_commands(CLI::App* bench);

}  // namespace dlcp::tools
