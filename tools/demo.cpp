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
#include "long_link.hpp"
#include "switch_counters.hpp"
#include "system_choice.hpp"
#include "testbed.hpp"

namespace dlcp::tools {
namespace {

struct Network {
  std::unique_ptr<testbed::Testbed> testbed;
  std::optional<testbed::BackgroundTraffic> load;
};

TrainBenchOptions train_options(const DemoOptions& o, const SystemChoice& system) {
  TrainBenchOptions t;
  t.system = system.system;
  t.wire = system.wire;
  t.model = o.model;
  t.ranks = o.network.hosts * o.ranks_per_host;
  t.servers = o.network.hosts;
  t.iters = o.iters;
  t.warmup = o.warmup;
  t.plan = o.plan;
  t.loss_budget = o.loss_budget;
  t.control_rto_min_us = o.control_rto_min_us;
  t.parity_members = o.parity_members;
  t.verbose = false;
  return t;
}

// Runs one system and attaches the switches' (and long links') counters for its run.
nlohmann::json run_one(const TrainBenchOptions& t, const Network& network, double loopback_drop,
                       int index, int total) {
  std::cerr << "[" << index << "/" << total << "] " << t.label() << " ..." << std::flush;
  using testbed::read_switch_counters;
  const testbed::SwitchCounters before =
      network.testbed ? read_switch_counters(*network.testbed) : testbed::SwitchCounters{};
  const testbed::LongLinkStats link_before =
      network.testbed ? testbed::sum_long_links(network.testbed->long_link_stats())
                      : testbed::LongLinkStats{};
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
    if (network.testbed->options().sites == 2) {
      // Both directions of every link: frames offered, and dropped at random, in bursts and by
      // the link's full queue.
      const testbed::LongLinkStats during = testbed::long_link_difference(
          testbed::sum_long_links(network.testbed->long_link_stats()), link_before);
      testbed::LinkCounters both;
      for (const auto& direction : during.direction) {
        both.frames_offered += direction.link.frames_offered;
        both.dropped_random += direction.link.dropped_random;
        both.dropped_burst += direction.link.dropped_burst;
        both.dropped_queue += direction.link.dropped_queue;
        both.spared += direction.link.spared;
      }
      result["long_link"] = {{"frames", both.frames_offered},
                             {"dropped_random", both.dropped_random},
                             {"dropped_burst", both.dropped_burst},
                             {"dropped_queue", both.dropped_queue},
                             {"spared", both.spared}};
    }
  }
  std::cerr << " iteration p50 " << format_ms(result["iter_p50_ms"].get<double>()) << ", p99 "
            << format_ms(result["iter_p99_ms"].get<double>()) << std::endl;
  return result;
}

// With several workers per host, every dlcp system (each runs hierarchically there) also runs
// flat, right after, to compare the two.
std::vector<TrainBenchOptions> runs_of(const DemoOptions& o, const SystemChoice& system) {
  std::vector<TrainBenchOptions> runs = {train_options(o, system)};
  if (o.ranks_per_host > 1 && is_dlcp_system(system.system)) {
    runs.push_back(runs.front());
    runs.back().topology = "flat";
  }
  return runs;
}

int runs_per_repeat(const DemoOptions& o, const std::vector<SystemChoice>& systems) {
  int runs = 0;
  for (const auto& system : systems) runs += static_cast<int>(runs_of(o, system).size());
  return runs;
}

TrainBenchOptions ablated(const DemoOptions& o, const SystemChoice& system,
                          const std::string& mechanism) {
  TrainBenchOptions run = train_options(o, system);
  run.no_spray = mechanism == "spray";
  run.no_priority = mechanism == "priority";
  run.no_loss_tolerance = mechanism == "loss-tolerance";
  run.no_parity = mechanism == "parity";
  return run;
}

// Checks the options and returns the systems they name, in order.
std::vector<SystemChoice> check_demo_options(const DemoOptions& o) {
  const auto invalid = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, -1, what);
  };
  if (o.systems.empty()) invalid("--systems names no system");
  std::vector<SystemChoice> systems;
  bool any_dlcp = false;
  for (const auto& text : o.systems) {
    try {
      systems.push_back(parse_system_choice(text));
    } catch (const Error& e) {
      invalid(std::string("--systems: ") + e.what());
    }
    for (std::size_t i = 0; i + 1 < systems.size(); ++i) {
      // Runs are told apart by their labels, so one system twice would merge into one row.
      if (systems[i].label() == systems.back().label()) {
        invalid("--systems names '" + systems.back().label() + "' twice");
      }
    }
    any_dlcp = any_dlcp || is_dlcp_system(systems.back().system);
  }
  for (const auto& mechanism : o.ablations) {
    if (mechanism != "spray" && mechanism != "priority" && mechanism != "loss-tolerance" &&
        mechanism != "parity") {
      invalid("--ablations: '" + mechanism + "' is not spray, priority, loss-tolerance or parity");
    }
    if (mechanism == "parity" && o.parity_members == 0) {
      invalid("--ablations parity needs --parity K");
    }
  }
  if (!o.ablations.empty() && !any_dlcp) invalid("--ablations need a dlcp system in --systems");
  if (o.repeat < 1) invalid("--repeat must be at least 1");
  if (o.ranks_per_host < 1 || o.network.hosts * o.ranks_per_host > 64) {
    invalid("--ranks-per-host must be at least 1, with at most 64 ranks in all (hosts x ranks)");
  }
  if (o.parity_members < 0 || o.parity_members > 255) invalid("--parity must be 0 .. 255");
  for (const double rtt : o.long_link_rtts_ms) {
    // Half of it each way; the delay line's own limits (testbed options) apply beyond that.
    if (!(rtt > 0 && rtt <= 2000)) invalid("--long-link-rtt-ms must lie in (0, 2000]");
  }
  if (o.long_link_lossless_control && o.long_link_rtts_ms.empty()) {
    invalid("--long-link-lossless-control needs --long-link-rtt-ms");
  }
  if (!o.long_link_rtts_ms.empty() && !any_dlcp) {
    invalid("--long-link-rtt-ms needs a dlcp system in --systems");
  }
  return systems;
}

// The system whose runs carry `label` (best_dlcp_system's answer).
const SystemChoice& labelled(const std::vector<SystemChoice>& systems, const std::string& label) {
  for (const auto& system : systems) {
    if (system.label() == label) return system;
  }
  throw Error(ErrorCode::kInvalidArgument, -1, "no system in --systems is labelled " + label);
}

// One long-link network per round trip and loss pattern: every system, then the fastest dlcp
// system of the first repetition without its loss budget and (with parity on) without parity.
nlohmann::json run_long_link(const DemoOptions& o, const std::vector<SystemChoice>& chosen,
                             testbed::SystemCommands& runner) {
  struct Pattern {
    std::string name;
    double random = 0;
    double burst = 0;
  };
  std::vector<Pattern> patterns;
  if (o.long_link_random_loss > 0) patterns.push_back({"random", o.long_link_random_loss, 0});
  if (o.long_link_burst_loss > 0) patterns.push_back({"bursts", 0, o.long_link_burst_loss});
  if (patterns.empty()) patterns.push_back({"none", 0, 0});
  std::vector<std::string> mechanisms = {"loss-tolerance"};
  if (o.parity_members > 0) mechanisms.push_back("parity");
  const int per_network = runs_per_repeat(o, chosen) + static_cast<int>(mechanisms.size());
  const int total =
      o.repeat * per_network * static_cast<int>(o.long_link_rtts_ms.size() * patterns.size());
  int index = 0;
  nlohmann::json scenarios = nlohmann::json::array();
  for (const double rtt : o.long_link_rtts_ms) {
    for (const Pattern& pattern : patterns) {
      testbed::TestbedOptions network_options = o.network;
      network_options.gray.spine = -1;  // the long link is what loses packets here
      network_options.sites = 2;
      network_options.long_link.one_way_ms = rtt / 2;
      network_options.long_link.random_loss = pattern.random;
      network_options.long_link.burst_loss = pattern.burst;
      network_options.long_link.burst_length = o.long_link_burst_length;
      if (o.long_link_lossless_control) {
        network_options.long_link.lossless_dscp = DscpTable::defaults().control_dscp;
      }
      std::ostringstream what;
      what << "Long link: round trip " << rtt << " ms, ";
      if (pattern.random > 0) {
        what << format_percent(pattern.random) << " lost at random";
      } else if (pattern.burst > 0) {
        what << format_percent(pattern.burst) << " lost in bursts of " << o.long_link_burst_length
             << " frames";
      } else {
        what << "no loss";
      }
      std::cerr << what.str() << ".\n";
      Network network;
      network.testbed = std::make_unique<testbed::Testbed>(runner, network_options);
      if (o.with_background) network.load.emplace(network_options, o.background);
      nlohmann::json runs = nlohmann::json::array();
      std::optional<SystemChoice> ablated_system;
      for (int r = 0; r < o.repeat; ++r) {
        nlohmann::json this_repeat = nlohmann::json::array();
        for (const auto& system : chosen) {
          for (const auto& run : runs_of(o, system)) {
            this_repeat.push_back(run_one(run, network, 0, ++index, total));
          }
        }
        if (!ablated_system) ablated_system = labelled(chosen, best_dlcp_system(this_repeat));
        for (const auto& mechanism : mechanisms) {
          this_repeat.push_back(
              run_one(ablated(o, *ablated_system, mechanism), network, 0, ++index, total));
        }
        for (auto& run : this_repeat) runs.push_back(std::move(run));
      }
      scenarios.push_back({{"rtt_ms", rtt},
                           {"loss", pattern.name},
                           {"loss_rate", pattern.random + pattern.burst},
                           {"runs", merge_repeats(runs)}});
    }
  }
  return scenarios;
}

}  // namespace

nlohmann::json run_demo(const DemoOptions& o) {
  const std::vector<SystemChoice> chosen = check_demo_options(o);
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
  if (!o.long_link_rtts_ms.empty()) {
    if (loopback) {
      throw Error(
          ErrorCode::kInvalidArgument, -1,
          "the long-link scenario needs the testbed (root, network namespaces, TUN): " +
              (fallback_reason.empty() ? std::string("--loopback was given") : fallback_reason));
    }
    testbed::SystemCommands runner;
    nlohmann::json summary = make_long_link_summary(run_long_link(o, chosen, runner));
    summary["network"] = "testbed";
    summary["config"] = {{"model", o.model},
                         {"hosts", o.network.hosts},
                         {"ranks_per_host", o.ranks_per_host},
                         {"sites", 2},
                         {"rate_mbit", o.network.port.rate_bps / 1e6},
                         {"background", o.with_background},
                         {"gradient_scale", o.plan.gradient_scale},
                         {"compute_ms", o.plan.compute_ms},
                         {"loss_budget", o.loss_budget},
                         {"parity_members", o.parity_members},
                         {"long_link_burst_length", o.long_link_burst_length},
                         {"long_link_lossless_control", o.long_link_lossless_control},
                         {"iterations", o.iters},
                         {"repeat", o.repeat}};
    print_demo_table(std::cout, summary);
    write_demo_outputs(summary, o.out_dir);
    return summary;
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
    std::cerr << "dlcp demo: " << o.network.hosts << " hosts"
              << (o.ranks_per_host > 1 ? " x " + std::to_string(o.ranks_per_host) + " ranks" : "")
              << ", " << o.network.spines
              << " spine switches (Linux bridges with HTB priority queues), "
              << o.network.port.rate_bps / 1e6 << " Mbit/s links, MTU " << o.network.port.mtu
              << "; gray failure: spine " << o.network.gray.spine << " drops "
              << format_percent(o.network.gray.loss_rate) << " of packets"
              << (o.with_background ? "; background TCP and UDP floods" : "") << ".\n";
  }
  std::cerr << "Workload: " << o.model << " gradients x" << o.plan.gradient_scale << ", "
            << o.plan.compute_ms << " ms compute per iteration, " << o.iters
            << " timed iterations per system"
            << (o.repeat > 1 ? ", every run " + std::to_string(o.repeat) + " times, interleaved"
                             : "")
            << "; dlcp loss budget " << format_percent(o.loss_budget) << ".\n";

  const int systems = runs_per_repeat(o, chosen);
  const int per_repeat = systems + static_cast<int>(o.ablations.size());
  const bool tail = o.tail_burst_ms > 0 && !loopback;
  const int total = o.repeat * (per_repeat + (o.clean && !loopback ? systems : 0) + (tail ? 3 : 0));
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
    std::optional<SystemChoice> ablated_system;
    for (int r = 0; r < o.repeat; ++r) {
      nlohmann::json this_repeat = nlohmann::json::array();
      for (const auto& system : chosen) {
        for (const auto& run : runs_of(o, system)) {
          this_repeat.push_back(run_one(run, network, loopback_drop, ++index, total));
        }
      }
      if (!o.ablations.empty() && !ablated_system) {
        ablated_system = labelled(chosen, best_dlcp_system(this_repeat));
      }
      for (const auto& mechanism : o.ablations) {
        this_repeat.push_back(run_one(ablated(o, *ablated_system, mechanism), network,
                                      loopback_drop, ++index, total));
      }
      for (auto& run : this_repeat) congested.push_back(std::move(run));
    }
  }
  if (o.clean && !loopback) {
    testbed::TestbedOptions quiet = o.network;
    quiet.gray.spine = -1;
    Network network;
    network.testbed = std::make_unique<testbed::Testbed>(runner, quiet);
    for (int r = 0; r < o.repeat; ++r) {
      for (const auto& system : chosen) {
        for (const auto& run : runs_of(o, system)) {
          clean.push_back(run_one(run, network, 0, ++index, total));
        }
      }
    }
  }

  nlohmann::json tail_runs = nlohmann::json::array();
  if (tail) {
    // The budget's case: a round lost in a burst is lost again, so every round avoided counts.
    const SystemChoice best = labelled(chosen, best_dlcp_system(merge_repeats(congested)));
    testbed::TestbedOptions bursty = o.network;
    bursty.gray.burst_ms = o.tail_burst_ms;
    Network network;
    network.testbed = std::make_unique<testbed::Testbed>(runner, bursty);
    if (o.with_background) network.load.emplace(bursty, o.background);
    for (int r = 0; r < o.repeat; ++r) {
      tail_runs.push_back(
          run_one(train_options(o, gloo_of_the_same_width(best.wire)), network, 0, ++index, total));
      tail_runs.push_back(run_one(train_options(o, best), network, 0, ++index, total));
      tail_runs.push_back(run_one(ablated(o, best, "loss-tolerance"), network, 0, ++index, total));
    }
  }

  nlohmann::json summary =
      make_demo_summary(merge_repeats(congested), merge_repeats(clean), merge_repeats(tail_runs));
  summary["network"] = loopback ? "loopback" : "testbed";
  if (loopback)
    summary["loopback_reason"] = fallback_reason.empty() ? "--loopback" : fallback_reason;
  summary["config"] = {{"model", o.model},
                       {"hosts", o.network.hosts},
                       {"ranks_per_host", o.ranks_per_host},
                       {"rate_mbit", o.network.port.rate_bps / 1e6},
                       {"mtu", o.network.port.mtu},
                       {"gray_loss", o.network.gray.spine >= 0 ? o.network.gray.loss_rate : 0.0},
                       {"gray_burst_ms", o.network.gray.burst_ms},
                       {"tail_burst_ms", tail ? o.tail_burst_ms : 0.0},
                       {"best_effort_alone", o.network.port.best_effort_alone},
                       {"background", o.with_background && !loopback},
                       {"gradient_scale", o.plan.gradient_scale},
                       {"compute_ms", o.plan.compute_ms},
                       {"loss_budget", o.loss_budget},
                       {"iterations", o.iters},
                       {"repeat", o.repeat}};
  print_demo_table(std::cout, summary);
  write_demo_outputs(summary, o.out_dir);
  return summary;
}

}  // namespace dlcp::tools
