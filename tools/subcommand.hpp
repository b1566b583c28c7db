// How every subcommand of `dlcp` and `dlcp-bench` is registered: an add_*_command(s) function
// declares its options on the parent and returns a runner, which returns -1 unless its command
// was the one parsed. commands.hpp lists them all.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace dlcp::tools {

struct ProgramArguments {
  int* argc;
  char*** argv;  // the rank commands hand them to MPI_Init
};

using SubcommandRunner = std::function<int(ProgramArguments)>;

// Parses the command line, runs the parsed subcommand, and turns an exception into one line on
// stderr ("<program>: message") and exit status 1.
int run_program(CLI::App& app, const std::vector<SubcommandRunner>& runners, int argc, char** argv);

}  // namespace dlcp::tools
