#include "demo.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "bench_train.hpp"
#include "command.hpp"
#include "demo_report.hpp"
#include "dlcp/error.hpp"
#include "switch_counters.hpp"
#include "testbed.hpp"

namespace dlcp::tools {
namespace {

struct Network {
  std::unique_ptr<testbed::Testbed> testbed;
  std::optional<testbed::BackgroundTraffic> load;
};

TrainBenchOptions train_options(const DemoOptions& o, const std::string& system) {
  TrainBenchOptions t;
  t.system = system;
  t.model = o.model;
  t.ranks = o.network.hosts;
  t.iters = o.iters;
  t.warmup = o.warmup;
  t.plan = o.plan;
  t.loss_budget = o.loss_budget;
  t.verbose = false;
  return t;
}

// Runs one system and attaches the switches' counters for its run.
nlohmann::json run_one(const TrainBenchOptions& t, const Network& network, double loopback_drop,
                       int index, int total) {
  std::cerr << "[" << index << "/" << total << "] " << t.label() << " ..." << std::flush;
  using testbed::read_switch_counters;
  const testbed::SwitchCounters before =
      network.testbed ? read_switch_counters(*network.testbed) : testbed::SwitchCounters{};
  TrainBenchOptions run = t;
  if (!network.testbed && is_dlcp_system(t.system)) run.drop = loopback_drop;
  nlohmann::json result;
  try {
    result = run_train_bench(run, network.testbed ? &network.testbed->options() : nullptr);
  } catch (const Error& e) {
    // A baseline that fails is reported and left out of the comparison; dlcp failing is fatal.
    if (is_dlcp_system(t.system)) throw;
    std::cerr << " failed: " << e.what() << std::endl;
    return {{"system", t.label()}, {"failed", e.what()}};
  }
  if (network.testbed) {
    result["switch"] = testbed::counters_json(read_switch_counters(*network.testbed) - before);
  }
  std::cerr << " iteration p50 " << format_ms(result["iter_p50_ms"].get<double>()) << ", p99 "
            << format_ms(result["iter_p99_ms"].get<double>()) << std::endl;
  return result;
}

std::vector<TrainBenchOptions> congested_runs(const DemoOptions& o) {
  std::vector<TrainBenchOptions> runs;
  runs.push_back(train_options(o, "gloo"));
  runs.push_back(train_options(o, "mpi"));
  runs.push_back(train_options(o, "dlcp-ps"));
  runs.push_back(train_options(o, "dlcp-ring"));
  return runs;
}

}  // namespace

nlohmann::json run_demo(const DemoOptions& o) {
  bool loopback = o.loopback;
  std::string fallback_reason;
  if (!loopback) {
    try {
      testbed::check_testbed_available();
    } catch (const testbed::TestbedUnavailable& e) {
      loopback = true;
      fallback_reason = e.what();
    }
  }
  const double loopback_drop = o.network.gray.loss_rate / o.network.spines;
  if (loopback) {
    std::cerr << "dlcp demo: testbed unavailable"
              << (fallback_reason.empty() ? " (--loopback)" : ": " + fallback_reason)
              << ".\nFalling back to loopback: dlcp's receivers drop "
              << format_percent(loopback_drop)
              << " of packets in-process (the gray failure's share), while the TCP baselines run "
                 "loss-free, which flatters them; there are no switches, so no priority "
                 "queues and no background load.\n";
  } else {
    std::cerr << "dlcp demo: " << o.network.hosts << " hosts, " << o.network.spines
              << " spine switches (Linux bridges with HTB priority queues), "
              << o.network.port.rate_bps / 1e6 << " Mbit/s links, MTU " << o.network.port.mtu
              << "; gray failure: spine " << o.network.gray.spine << " drops "
              << format_percent(o.network.gray.loss_rate) << " of packets"
              << (o.with_background ? "; background TCP and UDP floods" : "") << ".\n";
  }
  std::cerr << "Workload: " << o.model << " gradients x" << o.plan.gradient_scale << ", "
            << o.plan.compute_ms << " ms compute per iteration, " << o.iters
            << " timed iterations per system; dlcp loss budget " << format_percent(o.loss_budget)
            << ".\n";

  std::vector<TrainBenchOptions> runs = congested_runs(o);
  const int total_congested = static_cast<int>(runs.size()) + (o.ablations ? 3 : 0);
  const int total = total_congested + (o.clean && !loopback ? 4 : 0);
  testbed::SystemCommands runner;
  nlohmann::json congested = nlohmann::json::array();
  nlohmann::json clean = nlohmann::json::array();
  int index = 0;
  {
    Network network;
    if (!loopback) {
      network.testbed = std::make_unique<testbed::Testbed>(runner, o.network);
      if (o.with_background) network.load.emplace(o.network, o.background);
    }
    for (const auto& run : runs)
      congested.push_back(run_one(run, network, loopback_drop, ++index, total));
    if (o.ablations) {
      const std::string best = best_dlcp_system(congested);
      for (int mechanism = 0; mechanism < 3; ++mechanism) {
        TrainBenchOptions ablation = train_options(o, best);
        ablation.no_spray = mechanism == 0;
        ablation.no_priority = mechanism == 1;
        ablation.no_loss_tolerance = mechanism == 2;
        congested.push_back(run_one(ablation, network, loopback_drop, ++index, total));
      }
    }
  }
  if (o.clean && !loopback) {
    testbed::TestbedOptions quiet = o.network;
    quiet.gray.spine = -1;
    Network network;
    network.testbed = std::make_unique<testbed::Testbed>(runner, quiet);
    for (const std::string system : {"gloo", "mpi", "dlcp-ps", "dlcp-ring"}) {
      clean.push_back(run_one(train_options(o, system), network, 0, ++index, total));
    }
  }

  nlohmann::json summary = make_demo_summary(congested, clean);
  summary["network"] = loopback ? "loopback" : "testbed";
  if (loopback)
    summary["loopback_reason"] = fallback_reason.empty() ? "--loopback" : fallback_reason;
  summary["config"] = {{"model", o.model},
                       {"hosts", o.network.hosts},
                       {"rate_mbit", o.network.port.rate_bps / 1e6},
                       {"mtu", o.network.port.mtu},
                       {"gray_loss", o.network.gray.loss_rate},
                       {"gray_burst_ms", o.network.gray.burst_ms},
                       {"best_effort_alone", o.network.port.best_effort_alone},
                       {"background", o.with_background && !loopback},
                       {"gradient_scale", o.plan.gradient_scale},
                       {"compute_ms", o.plan.compute_ms},
                       {"loss_budget", o.loss_budget},
                       {"iterations", o.iters}};
  print_demo_table(std::cout, summary);
  write_demo_outputs(summary, o.out_dir);
  return summary;
}

}  // namespace dlcp::tools
