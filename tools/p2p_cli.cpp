// `dlcp-bench p2p`: its options and what runs it.
#include <iostream>
#include <memory>

#include "bench_p2p.hpp"
#include "commands.hpp"

namespace dlcp::tools {

SubcommandRunner add_p2p_command(CLI::App& app) {
  struct State {
    P2pBenchOptions p2p;
    bool json = false;
    bool tcp_only = false;
  };
  auto state = std::make_shared<State>();
  auto* p2p_command = app.add_subcommand(
      "p2p", "One sender and one receiver over loopback (dlcp, optionally against TCP)");
  p2p_command->add_option("--mib", state->p2p.mib, "Message size in MiB")
      ->check(CLI::PositiveNumber);
  p2p_command->add_option("--iters", state->p2p.iters, "Timed messages")
      ->check(CLI::Range(1, 1000000));
  p2p_command->add_option("--warmup", state->p2p.warmup, "Untimed messages first")
      ->check(CLI::Range(0, 1000));
  p2p_command->add_option("--drop", state->p2p.drop, "Injected receive-path loss rate (diagnostic)")
      ->check(CLI::Range(0.0, 1.0));
  p2p_command
      ->add_option("--burst", state->p2p.burst, "Mean loss burst length in packets (1 = random)")
      ->check(CLI::Range(1.0, 1e6));
  p2p_command
      ->add_option("--loss-bound", state->p2p.loss_bound, "Loss budget per message (0 = reliable)")
      ->check(CLI::Range(0.0, 1.0));
  p2p_command->add_option("--paths", state->p2p.paths, "UDP paths (sockets) to spray over")
      ->check(CLI::Range(1, 64));
  p2p_command->add_option("--mtu", state->p2p.mtu, "Largest IP packet (0 = route MTU)")
      ->check(CLI::Range(0, 65536));
  p2p_command->add_option("--deadline-ms", state->p2p.deadline_ms, "Per-message deadline")
      ->check(CLI::Range(1, 3600000));
  p2p_command->add_option("--baseline", state->p2p.baseline, "Also run a baseline in the same run")
      ->check(CLI::IsMember({"none", "tcp"}));
  p2p_command->add_flag("--tcp", state->tcp_only,
                        "Run only the TCP baseline, same bytes, same output keys");
  p2p_command->add_flag("--json", state->json, "End with the summary as one JSON line");
  p2p_command->add_flag("--packet-mac", state->p2p.packet_mac,
                        "Authenticate every data packet with a MAC (see docs/security.md)");
  p2p_command->add_flag("--local-path", state->p2p.local_path,
                        "Through shared memory instead of UDP (TransportOptions::local_path)");

  return [=](ProgramArguments) -> int {
    if (!p2p_command->parsed()) return -1;
    if (state->tcp_only) state->p2p.baseline = "only-tcp";
    if (state->tcp_only && state->p2p.drop > 0) {
      std::cerr << "dlcp-bench: --drop injects loss inside dlcp's receive path; it cannot apply "
                   "to the kernel's TCP. Use the testbed for lossy TCP baselines.\n";
      return 2;
    }
    const auto summary = run_p2p_bench(state->p2p);
    std::cout << (state->json ? summary.dump() : summary.dump(2)) << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
