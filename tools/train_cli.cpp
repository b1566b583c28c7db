#include "train_cli.hpp"

#include "commands.hpp"

#include <iostream>
#include <memory>
#include <optional>

#include "background.hpp"
#include "bench_train.hpp"
#include "testbed.hpp"
#include "testbed_cli.hpp"

namespace dlcp::tools {

void add_plan_options(CLI::App* command, workload::PlanOptions& plan) {
  command->add_option("--gradient-scale", plan.gradient_scale, "Gradient size factor")
      ->check(CLI::Range(1e-6, 1.0));
  command->add_option("--compute-ms", plan.compute_ms, "Forward+backward compute per iteration")
      ->check(CLI::Range(0.0, 1e6));
  command->add_option("--bucket-mib", plan.bucket_mib, "Gradient bucket cap (after scaling)")
      ->check(CLI::Range(1e-3, 4096.0));
}

void add_wire_option(CLI::App* command, WireDtype& wire, const std::string& help) {
  command
      ->add_option_function<std::string>(
          "--wire", [&wire](const std::string& name) { wire = parse_wire_dtype(name); }, help)
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}))
      ->default_str("fp32");
}

namespace {

void add_train_options(CLI::App* command, TrainBenchOptions& o) {
  command->add_option("--system", o.system, "Communication system")
      ->check(CLI::IsMember({"dlcp-ps", "dlcp-ring", "dlcp-tar", "gloo", "mpi"}));
  command->add_option("--model", o.model, "Model profile (resnet50, vgg16, bert_base or a .json)");
  command->add_option("--ranks", o.ranks, "Workers")->check(CLI::Range(2, 64));
  command->add_option("--servers", o.servers, "Parameter servers (0 = one per worker)")
      ->check(CLI::Range(0, 64));
  command->add_option("--iters", o.iters, "Timed iterations")->check(CLI::Range(1, 100000));
  command->add_option("--warmup", o.warmup, "Untimed iterations first")->check(CLI::Range(0, 1000));
  add_plan_options(command, o.plan);
  command->add_option("--loss-budget", o.loss_budget, "dlcp's loss budget per bucket")
      ->check(CLI::Range(0.0, 0.5));
  add_wire_option(command, o.wire,
                  "How gradients travel: fp32, bf16 or fp16 for dlcp; gloo fp16 is PyTorch "
                  "DDP's fp16_compress_hook (gradients / ranks in half, summed by Gloo); mpi fp32");
  command->add_flag("--no-spray", o.no_spray, "Ablation: one ECMP-hashed path per peer");
  command->add_flag("--no-priority", o.no_priority, "Ablation: all buckets best effort");
  command->add_flag("--no-loss-tolerance", o.no_loss_tolerance, "Ablation: loss budget 0");
  command->add_option("--drop", o.drop, "Injected receive-path loss (loopback, dlcp)")
      ->check(CLI::Range(0.0, 0.9));
  command->add_option("--concurrent", o.concurrent, "dlcp collectives in flight")
      ->check(CLI::Range(1, 64));
  command->add_option("--deadline-ms", o.deadline_ms, "Per-transfer deadline")
      ->check(CLI::Range(1, 3600000));
  command
      ->add_option("--control-rto-min-us", o.control_rto_min_us,
                   "dlcp control connections' least TCP retransmission timeout (0 = the "
                   "kernel's 200 ms, as where TCP_RTO_MIN_US is missing)")
      ->check(CLI::Range(0, 1000000));
  command
      ->add_option("--parity", o.parity_members,
                   "dlcp: a parity packet per this many protected packets (0 = none)")
      ->check(CLI::Range(0, 255));
  command
      ->add_option("--topology", o.topology,
                   "dlcp: flat or hierarchical collectives (auto: hierarchical when the workers "
                   "span several hosts and a host holds several)")
      ->check(CLI::IsMember({"auto", "flat", "hierarchical"}));
  command->add_option("--timeout-s", o.timeout_s, "Kill the ranks after this long")
      ->check(CLI::Range(1, 86400));
}

}  // namespace

SubcommandRunner add_train_commands(CLI::App& app) {
  struct State {
    TrainBenchOptions train;
    testbed::TestbedOptions network;
    testbed::BackgroundOptions background;
    bool use_testbed = false;
    bool load = false;
    bool json = false;
  };
  auto state = std::make_shared<State>();
  auto* train = app.add_subcommand(
      "train",
      "Emulated training iterations of a model over one communication system, on loopback or "
      "on the testbed (--testbed, needs root)");
  add_train_options(train, state->train);
  train->add_flag("--testbed", state->use_testbed,
                  "Spread the ranks over the emulated network's hosts (--hosts; several per host "
                  "in consecutive blocks when --ranks is larger)");
  add_testbed_options(train, state->network);
  train->add_flag("--background", state->load, "Background TCP/UDP floods (testbed)");
  train->add_flag("--json", state->json, "End with the summary as one JSON line");
  auto* rank = app.add_subcommand("train-rank", "")->group("");
  add_train_options(rank, state->train);

  return [=](ProgramArguments arguments) -> int {
    if (rank->parsed()) {
      return run_train_bench_rank(state->train, arguments.argc, arguments.argv);
    }
    if (!train->parsed()) return -1;
    nlohmann::json summary;
    if (state->use_testbed) {
      testbed::SystemCommands runner;
      state->network.hosts = std::max(state->network.hosts, 2);
      testbed::Testbed network(runner, state->network);
      std::optional<testbed::BackgroundTraffic> load;
      if (state->load) load.emplace(state->network, state->background);
      summary = run_train_bench(state->train, &state->network);
    } else {
      summary = run_train_bench(state->train, nullptr);
    }
    std::cout << (state->json ? summary.dump() : summary.dump(2)) << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
