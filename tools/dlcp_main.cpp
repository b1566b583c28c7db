// The `dlcp` command: the product's subcommands (commands.hpp). `dlcp bench ...` runs the
// benchmark command, dlcp-bench, with the same arguments.
#include <unistd.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "child_processes.hpp"
#include "commands.hpp"
#include "dlcp/store.hpp"

namespace dlcp::tools {

SubcommandRunner add_store_server_command(CLI::App& app) {
  struct State {
    std::string host = "0.0.0.0";
    std::uint16_t port = 29500;
  };
  auto state = std::make_shared<State>();
  auto* command =
      app.add_subcommand("store-server", "Serve a rendezvous store (TcpStore) until interrupted");
  command->add_option("--host", state->host, "Address to bind");
  command->add_option("--port", state->port, "Port to bind (0 = ephemeral)");
  return [=](ProgramArguments) -> int {
    if (!command->parsed()) return -1;
    return run_store_server(state->host, state->port);
  };
}

}  // namespace dlcp::tools

namespace {

// Replaces this process with `dlcp-bench <arguments after "bench">`.
int hand_over_to_bench(int argc, char** argv) {
  std::string bench;
  try {
    bench = dlcp::tools::bench_executable();
  } catch (const std::exception& e) {
    std::cerr << "dlcp: " << e.what() << "\n";
    return 1;
  }
  std::vector<char*> arguments{bench.data()};
  for (int i = 2; i < argc; ++i) arguments.push_back(argv[i]);
  arguments.push_back(nullptr);
  execv(bench.c_str(), arguments.data());
  std::cerr << "dlcp: cannot run " << bench << ": " << std::strerror(errno) << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "bench") == 0) return hand_over_to_bench(argc, argv);

  CLI::App app{"dlcp: bounded-loss, priority-aware gradient communication"};
  app.require_subcommand(1);
  std::vector<dlcp::tools::SubcommandRunner> runners{dlcp::tools::add_demo_command(app),
                                                     dlcp::tools::add_testbed_commands(app),
                                                     dlcp::tools::add_store_server_command(app)};
  // Listed for --help only: main() hands `bench` over before parsing.
  app.add_subcommand("bench",
                     "Benchmarks and their TCP baselines: p2p, allreduce, train (runs dlcp-bench; "
                     "`dlcp bench --help` lists them)")
      ->group("Benchmarks");
  return dlcp::tools::run_program(app, runners, argc, argv);
}
