// `dlcp switch-config` and `dlcp testbed up|down|status`: the policy's switch configuration and
// the emulated network, from the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

#include "testbed_options.hpp"

namespace dlcp::tools {

// Flags shared by every command that builds or describes the testbed.
void add_testbed_options(CLI::App* command, testbed::TestbedOptions& options);

// Registers the commands; the returned function runs whichever was parsed and returns its exit
// status, or -1 when none of them was.
std::function<int()> add_testbed_commands(CLI::App& app);

}  // namespace dlcp::tools
