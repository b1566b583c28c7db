// The `dlcp-bench` command (also `dlcp bench`): the benchmarks and their baselines
// (commands.hpp). It alone links allocation_counter.cpp, which replaces the global operator new
// to count the heap allocations of a steady-state collective.
#include <vector>

#include "commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"dlcp-bench: dlcp's benchmarks, beside Gloo, Open MPI and TCP on the same work"};
  app.require_subcommand(1);
  std::vector<dlcp::tools::SubcommandRunner> runners{
      dlcp::tools::add_p2p_command(app), dlcp::tools::add_pingpong_command(app),
      dlcp::tools::add_convert_command(app), dlcp::tools::add_allreduce_commands(app),
      dlcp::tools::add_train_commands(app)};
  return dlcp::tools::run_program(app, runners, argc, argv);
}
