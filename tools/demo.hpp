// `dlcp demo`, the main job: emulated training of a real model's gradients across the testbed's
// commodity-switch network under background load and a gray failure, for the TCP baselines and for
// dlcp (parameter server and ring, then with each mechanism switched off), and again on a clean
// network. Prints a table, writes JSON and a PNG plot. Without root it falls back to loopback with
// in-process loss injection, and says so.
#pragma once

#include <string>

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
  bool ablations = true;
  bool clean = true;      // also compare on a clean network (no gray failure, no load)
  bool loopback = false;  // skip the testbed even with root
  std::string out_dir = "demo-results";
};

// Runs everything, prints progress on stderr and the table on stdout; returns the summary.
nlohmann::json run_demo(const DemoOptions& options);

}  // namespace dlcp::tools
