// Command-line options shared by the benchmarks and the demo: the emulated iteration's
// (`dlcp-bench train`, `dlcp demo`) and the wire dtype's (`dlcp-bench train`, `allreduce`).
// train_cli.cpp registers train and its hidden per-rank command: commands.hpp.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "dlcp/options.hpp"
#include "workload/iteration_plan.hpp"

namespace dlcp::tools {

// --gradient-scale, --compute-ms, --bucket-mib: the emulated iteration (train and demo).
void add_plan_options(CLI::App* command, workload::PlanOptions& plan);

// --wire fp32|bf16|fp16 (default fp32) into `wire`, which must outlive the parse.
void add_wire_option(CLI::App* command, WireDtype& wire, const std::string& help);

}  // namespace dlcp::tools
