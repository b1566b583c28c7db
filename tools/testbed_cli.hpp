// The testbed's command-line options, shared by `dlcp testbed`, `dlcp switch-config`, `dlcp demo`
// and `dlcp-bench train` (testbed_cli.cpp registers the first two: commands.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include "testbed_options.hpp"

namespace dlcp::tools {

// Flags shared by every command that builds or describes the testbed.
void add_testbed_options(CLI::App* command, testbed::TestbedOptions& options);

}  // namespace dlcp::tools
