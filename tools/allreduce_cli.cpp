// `dlcp-bench allreduce` and the hidden `allreduce-rank` it starts: options and runners.
#include <iostream>
#include <memory>

#include "bench_allreduce.hpp"
#include "commands.hpp"
#include "train_cli.hpp"

namespace dlcp::tools {
namespace {

void add_allreduce_options(CLI::App* command, AllreduceBenchOptions& o) {
  command->add_option("--algo", o.algo, "Implementation")
      ->check(CLI::IsMember({"ring", "tar", "ps", "gloo", "mpi", "mpi-shm"}));
  command
      ->add_option("--collective", o.collective,
                   "What to run: allreduce, or dlcp's reduce_scatter (the transpose all-reduce's "
                   "reduce half, --algo ring or tar alike; each rank keeps its shard)")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter"}));
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
  add_wire_option(command, o.wire,
                  "How the values travel: fp32, bf16 or fp16 for dlcp; gloo fp16 is PyTorch "
                  "DDP's fp16_compress_hook (values / ranks in half, summed by Gloo); mpi fp32");
  command->add_option("--aggregation", o.aggregation, "How lost contributions are treated")
      ->check(CLI::IsMember({"unbiased", "zero-fill"}));
  command->add_option("--paths", o.paths, "UDP paths per rank")->check(CLI::Range(1, 64));
  command->add_option("--mtu", o.mtu, "Largest IP packet (0 = route MTU)")
      ->check(CLI::Range(0, 65536));
  command->add_flag("--local-path,!--no-local-path", o.local_path,
                    "dlcp: ranks of this host exchange through shared memory (default on; off: "
                    "over UDP)");
  command
      ->add_option("--topology", o.topology,
                   "dlcp: flat or hierarchical collectives (auto: hierarchical when the ranks "
                   "span several hosts and share one)")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}));
  command
      ->add_option("--ranks-per-host", o.ranks_per_host,
                   "dlcp: treat consecutive groups of this many ranks as one host each (host-id "
                   "override; 0 = the detected host)")
      ->check(CLI::Range(0, 64));
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

SubcommandRunner add_allreduce_commands(CLI::App& app) {
  struct State {
    AllreduceBenchOptions options;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  auto* allreduce = app.add_subcommand(
      "allreduce",
      "All-reduce across local rank processes: dlcp ring / transpose / parameter server, Gloo or "
      "Open MPI over TCP (mpi) or over its shared memory (mpi-shm), on the same buffers");
  add_allreduce_options(allreduce, state->options);
  allreduce->add_flag("--json", state->json, "End with the summary as one JSON line");
  // One rank of `allreduce`; started by it, hidden from --help.
  auto* rank = app.add_subcommand("allreduce-rank", "")->group("");
  add_allreduce_options(rank, state->options);

  return [=](ProgramArguments arguments) -> int {
    if (rank->parsed()) {
      return run_allreduce_bench_rank(state->options, arguments.argc, arguments.argv);
    }
    if (!allreduce->parsed()) return -1;
    const auto summary = run_allreduce_bench(state->options);
    std::cout << (state->json ? summary.dump() : summary.dump(2)) << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
