// The `dlcp` command.
#include <CLI/CLI.hpp>
#include <iostream>

#include "bench_allreduce.hpp"
#include "bench_p2p.hpp"
#include "demo.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "testbed_cli.hpp"
#include "train_cli.hpp"

namespace {

void add_allreduce_options(CLI::App* command, dlcp::tools::AllreduceBenchOptions& o) {
  command->add_option("--algo", o.algo, "Implementation")
      ->check(CLI::IsMember({"ring", "tar", "ps", "gloo", "mpi"}));
  command->add_option("--ranks", o.ranks, "Worker ranks (local processes)")
      ->check(CLI::Range(1, 64));
  command->add_option("--servers", o.servers, "Parameter servers (--algo ps)")
      ->check(CLI::Range(1, 64));
  command->add_option("--mib", o.mib, "Buffer size in MiB")->check(CLI::PositiveNumber);
  command->add_option("--iters", o.iters, "Timed iterations")->check(CLI::Range(1, 100000));
  command->add_option("--warmup", o.warmup, "Untimed iterations first")->check(CLI::Range(0, 1000));
  command->add_option("--drop", o.drop, "Injected receive-path loss rate (dlcp only)")
      ->check(CLI::Range(0.0, 0.99));
  command->add_option("--burst", o.burst, "Mean loss burst length in packets")
      ->check(CLI::Range(1.0, 1e6));
  command->add_option("--loss-bound", o.loss_bound, "Reduce-side loss budget per transfer")
      ->check(CLI::Range(0.0, 1.0));
  command
      ->add_option("--broadcast-loss-bound", o.broadcast_loss_bound,
                   "Broadcast-side loss budget (replicas may then differ)")
      ->check(CLI::Range(0.0, 1.0));
  command->add_option("--op", o.op, "Reduction")->check(CLI::IsMember({"sum", "average"}));
  command->add_option("--aggregation", o.aggregation, "How lost contributions are treated")
      ->check(CLI::IsMember({"unbiased", "zero-fill"}));
  command->add_option("--paths", o.paths, "UDP paths per rank")->check(CLI::Range(1, 64));
  command->add_option("--mtu", o.mtu, "Largest IP packet (0 = route MTU)")
      ->check(CLI::Range(0, 65536));
  command->add_option("--segment-mib", o.segment_mib, "Pipelining segment size")
      ->check(CLI::PositiveNumber);
  command->add_option("--concurrent", o.concurrent, "Collectives in flight per communicator")
      ->check(CLI::Range(1, 64));
  command->add_option("--deadline-ms", o.deadline_ms, "Per-transfer deadline")
      ->check(CLI::Range(1, 3600000));
  command->add_option("--timeout-s", o.timeout_s, "Kill the ranks after this long")
      ->check(CLI::Range(1, 86400));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dlcp: bounded-loss, priority-aware gradient communication"};
  app.require_subcommand(1);

  auto* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);

  dlcp::tools::P2pBenchOptions p2p;
  bool json = false;
  bool tcp_only = false;
  auto* p2p_command = bench->add_subcommand(
      "p2p", "One sender and one receiver over loopback (dlcp, optionally against TCP)");
  p2p_command->add_option("--mib", p2p.mib, "Message size in MiB")->check(CLI::PositiveNumber);
  p2p_command->add_option("--iters", p2p.iters, "Timed messages")->check(CLI::Range(1, 1000000));
  p2p_command->add_option("--warmup", p2p.warmup, "Untimed messages first")
      ->check(CLI::Range(0, 1000));
  p2p_command->add_option("--drop", p2p.drop, "Injected receive-path loss rate (diagnostic)")
      ->check(CLI::Range(0.0, 1.0));
  p2p_command->add_option("--burst", p2p.burst, "Mean loss burst length in packets (1 = random)")
      ->check(CLI::Range(1.0, 1e6));
  p2p_command->add_option("--loss-bound", p2p.loss_bound, "Loss budget per message (0 = reliable)")
      ->check(CLI::Range(0.0, 1.0));
  p2p_command->add_option("--paths", p2p.paths, "UDP paths (sockets) to spray over")
      ->check(CLI::Range(1, 64));
  p2p_command->add_option("--mtu", p2p.mtu, "Largest IP packet (0 = route MTU)")
      ->check(CLI::Range(0, 65536));
  p2p_command->add_option("--deadline-ms", p2p.deadline_ms, "Per-message deadline")
      ->check(CLI::Range(1, 3600000));
  p2p_command->add_option("--baseline", p2p.baseline, "Also run a baseline in the same run")
      ->check(CLI::IsMember({"none", "tcp"}));
  p2p_command->add_flag("--tcp", tcp_only,
                        "Run only the TCP baseline, same bytes, same output keys");
  p2p_command->add_flag("--json", json, "End with the summary as one JSON line");
  p2p_command->add_flag("--packet-mac", p2p.packet_mac,
                        "Authenticate every data packet with a MAC (see docs/security.md)");

  dlcp::tools::DemoOptions demo;
  bool demo_json = false;
  auto* demo_command = app.add_subcommand(
      "demo",
      "The main job: emulated training over the testbed's switch network under load and a 1% gray "
      "failure, TCP baselines beside dlcp and its ablations (loopback without root)");
  demo_command->add_option("--model", demo.model, "Model profile (resnet50, vgg16, bert_base)");
  demo_command->add_option("--iters", demo.iters, "Timed iterations per system")
      ->check(CLI::Range(2, 100000));
  demo_command->add_option("--warmup", demo.warmup, "Untimed iterations first")
      ->check(CLI::Range(0, 1000));
  demo_command->add_option("--loss-budget", demo.loss_budget, "dlcp's loss budget per bucket")
      ->check(CLI::Range(0.0, 0.5));
  dlcp::tools::add_plan_options(demo_command, demo.plan);
  dlcp::tools::add_testbed_options(demo_command, demo.network);
  demo_command
      ->add_option("--tcp-load", demo.background.tcp_share,
                   "Each background TCP flood's share of the link rate")
      ->check(CLI::Range(0.0, 1.0));
  demo_command
      ->add_option("--udp-load", demo.background.udp_share,
                   "Background UDP flood's share of the link rate")
      ->check(CLI::Range(0.0, 1.0));
  bool no_background = false;
  bool no_ablations = false;
  bool no_clean = false;
  demo_command->add_flag("--no-background", no_background, "No background traffic");
  demo_command->add_flag("--no-ablations", no_ablations, "Skip the mechanism ablations");
  demo_command
      ->add_option("--systems", demo.systems,
                   "Systems to compare, comma-separated (gloo, mpi, dlcp-ps, dlcp-ring, dlcp-tar)")
      ->delimiter(',');
  demo_command
      ->add_option("--ablations", demo.ablations,
                   "Mechanisms to switch off in turn in the fastest dlcp system, comma-separated "
                   "(spray, priority, loss-tolerance)")
      ->delimiter(',');
  demo_command
      ->add_option("--control-rto-min-us", demo.control_rto_min_us,
                   "dlcp control connections' least TCP retransmission timeout (0 = the "
                   "kernel's 200 ms, as where TCP_RTO_MIN_US is missing)")
      ->check(CLI::Range(0, 1000000));
  demo_command
      ->add_option("--repeat", demo.repeat,
                   "Run everything this many times, interleaved; the table shows medians")
      ->check(CLI::Range(1, 100));
  demo_command->add_flag("--no-clean", no_clean, "Skip the clean-network comparison");
  demo_command
      ->add_option(
          "--tail-burst-ms", demo.tail_burst_ms,
          "Tail scenario: the gray spine's loss in bursts of this mean length (0 skips it)")
      ->check(CLI::Range(0.0, 10000.0));
  demo_command->add_flag("--loopback", demo.loopback, "Loopback even when the testbed is possible");
  demo_command->add_option("--out", demo.out_dir, "Directory for demo.json and demo.png");
  demo_command->add_flag("--json", demo_json, "End with the summary as one JSON line");

  dlcp::tools::AllreduceBenchOptions allreduce;
  bool allreduce_json = false;
  auto* allreduce_command = bench->add_subcommand(
      "allreduce",
      "All-reduce across local rank processes: dlcp ring / transpose / parameter server, Gloo or "
      "Open MPI over TCP, on the same buffers");
  add_allreduce_options(allreduce_command, allreduce);
  allreduce_command->add_flag("--json", allreduce_json, "End with the summary as one JSON line");
  // One rank of `bench allreduce`; started by it, hidden from --help.
  auto* allreduce_rank_command = bench->add_subcommand("allreduce-rank", "")->group("");
  add_allreduce_options(allreduce_rank_command, allreduce);

  std::string store_host = "0.0.0.0";
  std::uint16_t store_port = 29500;
  auto* store_command =
      app.add_subcommand("store-server", "Serve a rendezvous store (TcpStore) until interrupted");
  store_command->add_option("--host", store_host, "Address to bind");
  store_command->add_option("--port", store_port, "Port to bind (0 = ephemeral)");

  const auto run_testbed_command = dlcp::tools::add_testbed_commands(app);
  const auto run_train_command = dlcp::tools::add_train_commands(bench);

  CLI11_PARSE(app, argc, argv);

  try {
    if (const int status = run_testbed_command(); status >= 0) return status;
    if (const int status = run_train_command(&argc, &argv); status >= 0) return status;
    if (store_command->parsed()) return dlcp::run_store_server(store_host, store_port);
    if (allreduce_rank_command->parsed()) {
      return dlcp::tools::run_allreduce_bench_rank(allreduce, &argc, &argv);
    }
    if (allreduce_command->parsed()) {
      const auto summary = dlcp::tools::run_allreduce_bench(allreduce);
      std::cout << (allreduce_json ? summary.dump() : summary.dump(2)) << std::endl;
    }
    if (demo_command->parsed()) {
      demo.with_background = !no_background;
      if (no_ablations) demo.ablations.clear();
      demo.clean = !no_clean;
      const auto summary = dlcp::tools::run_demo(demo);
      if (demo_json) std::cout << summary.dump() << std::endl;
    }
    if (p2p_command->parsed()) {
      if (tcp_only) p2p.baseline = "only-tcp";
      if (tcp_only && p2p.drop > 0) {
        std::cerr << "dlcp: --drop injects loss inside dlcp's receive path; it cannot apply to the "
                     "kernel's TCP. Use the testbed for lossy TCP baselines.\n";
        return 2;
      }
      const auto summary = dlcp::tools::run_p2p_bench(p2p);
      std::cout << (json ? summary.dump() : summary.dump(2)) << std::endl;
    }
  } catch (const dlcp::Error& e) {
    std::cerr << "dlcp: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dlcp: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
