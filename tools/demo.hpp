// `dlcp demo`, the main job: emulated training of a real model's gradients across the testbed's
// commodity-switch network under background load and a gray failure, for the TCP baselines (Gloo
// in float32 and fp16, Open MPI) and for dlcp (parameter server and ring, in float32 and bf16, then
// the fastest with each mechanism switched off), again on a clean network, and in the tail
// scenario (the gray failure in bursts); or, asked for, across two sites joined by a long, lossy
// link. Prints a table, writes JSON and a PNG plot. Without root
// it falls back to loopback with in-process loss injection, and says so.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "background.hpp"
#include "testbed_options.hpp"
#include "workload/iteration_plan.hpp"

namespace dlcp::tools {

struct DemoOptions {
  std::string model = "resnet50";
  int iters = 20;
  int warmup = 3;
  double loss_budget = 0.05;
  workload::PlanOptions plan;
  testbed::TestbedOptions network;
  testbed::BackgroundOptions background;
  bool with_background = true;
  // Systems compared, in the order they run, each "<system>" or "<system>:<wire>"
  // (parse_system_choice): Gloo's fp16 is PyTorch DDP's fp16_compress_hook. The ablations switch
  // one mechanism off ("spray", "priority", "loss-tolerance") in the fastest dlcp system (wire
  // included) of the first repetition.
  std::vector<std::string> systems = {"gloo",      "gloo:fp16",    "mpi",           "dlcp-ps",
                                      "dlcp-ring", "dlcp-ps:bf16", "dlcp-ring:bf16"};
  std::vector<std::string> ablations = {"spray", "priority", "loss-tolerance"};
  // Every run repeated, interleaved (all systems, then all again); the table shows medians.
  int repeat = 1;
  int control_rto_min_us = 5000;  // dlcp's (TrainBenchOptions::control_rto_min_us)
  bool clean = true;              // also compare on a clean network (no gray failure, no load)
  // Also the tail scenario: the gray spine loses its share in bursts of this mean length (half
  // of its packets while a burst lasts), under the same load; Gloo (fp16 when that system is
  // 16-bit) against the fastest dlcp system with and without its loss budget. 0 skips it.
  double tail_burst_ms = 20;
  // dlcp's parity (TransportOptions::parity_members) in every dlcp run: a parity packet per this
  // many protected packets; 0 sends none.
  int parity_members = 0;
  // The long-link scenario instead of the others: two sites of hosts / 2 joined by the testbed's
  // long link (its delay line), one network per round trip listed here and per loss pattern
  // (random, then in bursts; a share of 0 skips that pattern), under the same background load.
  // Every system, then the fastest dlcp system without its loss budget and, with parity on,
  // without parity.
  std::vector<double> long_link_rtts_ms;
  double long_link_random_loss = 0.005;
  double long_link_burst_loss = 0.01;
  double long_link_burst_length = 4;  // frames
  // The long link spares dlcp's control frames its losses (LongLinkOptions::lossless_dscp): what
  // the control connections' own losses cost.
  bool long_link_lossless_control = false;
  // Workers per host (hosts x this many in all, in consecutive blocks); the parameter server
  // keeps one server per host.
  int ranks_per_host = 1;
  bool loopback = false;  // skip the testbed even with root
  std::string out_dir = "demo-results";
};

// Runs everything, prints progress on stderr and the table on stdout; returns the summary.
nlohmann::json run_demo(const DemoOptions& options);

}  // namespace dlcp::tools
