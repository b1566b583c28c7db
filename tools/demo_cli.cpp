// `dlcp demo`: its options and what runs it.
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "demo.hpp"
#include "testbed_cli.hpp"
#include "train_cli.hpp"

namespace dlcp::tools {

SubcommandRunner add_demo_command(CLI::App& app) {
  struct State {
    DemoOptions demo;
    bool json = false;
    bool no_background = false;
    bool no_ablations = false;
    bool no_clean = false;
  };
  auto state = std::make_shared<State>();
  auto* demo_command = app.add_subcommand(
      "demo",
      "The main job: emulated training over the testbed's switch network under load and a 1% gray "
      "failure, TCP baselines (Gloo in float32 and fp16, Open MPI) beside dlcp (float32 and bf16) "
      "and its ablations (loopback without root)");
  demo_command->add_option("--model", state->demo.model,
                           "Model profile (resnet50, vgg16, bert_base)");
  demo_command->add_option("--iters", state->demo.iters, "Timed iterations per system")
      ->check(CLI::Range(2, 100000));
  demo_command->add_option("--warmup", state->demo.warmup, "Untimed iterations first")
      ->check(CLI::Range(0, 1000));
  demo_command
      ->add_option("--loss-budget", state->demo.loss_budget, "dlcp's loss budget per bucket")
      ->check(CLI::Range(0.0, 0.5));
  add_plan_options(demo_command, state->demo.plan);
  add_testbed_options(demo_command, state->demo.network);
  demo_command
      ->add_option("--tcp-load", state->demo.background.tcp_share,
                   "Each background TCP flood's share of the link rate")
      ->check(CLI::Range(0.0, 1.0));
  demo_command
      ->add_option("--udp-load", state->demo.background.udp_share,
                   "Background UDP flood's share of the link rate")
      ->check(CLI::Range(0.0, 1.0));
  demo_command->add_flag("--no-background", state->no_background, "No background traffic");
  demo_command->add_flag("--no-ablations", state->no_ablations, "Skip the mechanism ablations");
  demo_command
      ->add_option("--systems", state->demo.systems,
                   "Systems to compare, comma-separated (gloo, mpi, dlcp-ps, dlcp-ring, dlcp-tar), "
                   "each optionally with how its gradients travel after a colon: fp32, bf16 or "
                   "fp16 for dlcp (dlcp-ring:bf16), fp16 for gloo (gloo:fp16, PyTorch DDP's "
                   "fp16_compress_hook)")
      ->delimiter(',')
      ->capture_default_str();
  demo_command
      ->add_option("--ablations", state->demo.ablations,
                   "Mechanisms to switch off in turn in the fastest dlcp system (wire dtype "
                   "included), comma-separated "
                   "(spray, priority, loss-tolerance, parity)")
      ->delimiter(',');
  demo_command
      ->add_option("--parity", state->demo.parity_members,
                   "dlcp: a parity packet per this many protected packets, rebuilding one lost "
                   "packet of each group without a recovery round (0 = none)")
      ->check(CLI::Range(0, 255));
  demo_command
      ->add_option("--long-link-rtt-ms", state->demo.long_link_rtts_ms,
                   "Instead of the other scenarios: two sites of hosts/2 joined by the testbed's "
                   "long link, one network per round trip listed (comma-separated, e.g. 2,10,40) "
                   "and per loss pattern")
      ->delimiter(',');
  demo_command
      ->add_option("--long-link-random-loss", state->demo.long_link_random_loss,
                   "Long link: share of frames lost at random (0 skips this pattern)")
      ->check(CLI::Range(0.0, 0.5));
  demo_command
      ->add_option("--long-link-burst-loss", state->demo.long_link_burst_loss,
                   "Long link: share of frames lost in bursts (0 skips this pattern)")
      ->check(CLI::Range(0.0, 0.5));
  demo_command
      ->add_option("--long-link-burst-length", state->demo.long_link_burst_length,
                   "Long link: mean length of a loss burst, in frames")
      ->check(CLI::Range(1.0, 1000.0));
  demo_command->add_flag(
      "--long-link-lossless-control", state->demo.long_link_lossless_control,
      "Long link: never lose dlcp's control frames (their DSCP), to measure what the control "
      "connections' own losses cost");
  demo_command
      ->add_option("--control-rto-min-us", state->demo.control_rto_min_us,
                   "dlcp control connections' least TCP retransmission timeout (0 = the "
                   "kernel's 200 ms, as where TCP_RTO_MIN_US is missing)")
      ->check(CLI::Range(0, 1000000));
  demo_command
      ->add_option("--repeat", state->demo.repeat,
                   "Run everything this many times, interleaved; the table shows medians")
      ->check(CLI::Range(1, 100));
  demo_command->add_flag("--no-clean", state->no_clean, "Skip the clean-network comparison");
  demo_command
      ->add_option(
          "--tail-burst-ms", state->demo.tail_burst_ms,
          "Tail scenario: the gray spine's loss in bursts of this mean length (0 skips it)")
      ->check(CLI::Range(0.0, 10000.0));
  demo_command
      ->add_option("--ranks-per-host", state->demo.ranks_per_host,
                   "Workers per host (hosts x this many ranks in all); the parameter server keeps "
                   "one server per host")
      ->check(CLI::Range(1, 32));
  demo_command->add_flag("--loopback", state->demo.loopback,
                         "Loopback even when the testbed is possible");
  demo_command->add_option("--out", state->demo.out_dir, "Directory for demo.json and demo.png");
  demo_command->add_flag("--json", state->json, "End with the summary as one JSON line");

  return [=](ProgramArguments) -> int {
    if (!demo_command->parsed()) return -1;
    state->demo.with_background = !state->no_background;
    if (state->no_ablations) state->demo.ablations.clear();
    state->demo.clean = !state->no_clean;
    const auto summary = run_demo(state->demo);
    if (state->json) std::cout << summary.dump() << std::endl;
    return 0;
  };
}

}  // namespace dlcp::tools
