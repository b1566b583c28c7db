// `dlcp-bench pingpong`: its options and what runs it.
#include <iostream>
#include <memory>

#include "bench_pingpong.hpp"
#include "commands.hpp"

namespace dlcp::tools {

SubcommandRunner add_pingpong_command(CLI::App& app) {
  struct State {
    PingpongBenchOptions pingpong;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  auto* pingpong_command = app.add_subcommand(
      "pingpong",
      "Round-trip latency of Communicator send/recv: two ranks over loopback, rank 1 echoes rank "
      "0's messages");
  pingpong_command->add_option("--kib", state->pingpong.kib, "Message size in KiB")
      ->check(CLI::PositiveNumber);
  pingpong_command->add_option("--iters", state->pingpong.iters, "Timed round trips")
      ->check(CLI::Range(1, 10000000));
  pingpong_command->add_option("--warmup", state->pingpong.warmup, "Untimed round trips first")
      ->check(CLI::Range(0, 1000000));
  pingpong_command
      ->add_option("--deadline-ms", state->pingpong.deadline_ms, "Per-transfer deadline")
      ->check(CLI::Range(1, 3600000));
  pingpong_command->add_flag("--json", state->json, "End with the summary as one JSON line");

  return [=](ProgramArguments) -> int {
    if (!pingpong_command->parsed()) return -1;
    const auto summary = run_pingpong_bench(state->pingpong);
    std::cout << (state->json ? summary.dump() : summary.dump(2)) << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
