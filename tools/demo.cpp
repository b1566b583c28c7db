#include "demo.hpp"

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "bench_p2p.hpp"

namespace dlcp::tools {
namespace {

struct Config {
  std::string name;
  std::string baseline;  // "only-tcp" or "none"
  double drop;
  double burst;
  double budget;
};

}  // namespace

nlohmann::json run_demo(const DemoOptions& options) {
  const std::vector<Config> configs = {
      {"tcp (one connection)", "only-tcp", 0.0, 1, 0.0},
      {"dlcp reliable", "none", 0.0, 1, 0.0},
      {"dlcp reliable", "none", options.drop, 1, 0.0},
      {"dlcp bounded-loss", "none", options.drop, 1, options.budget},
      {"dlcp bounded-loss", "none", options.drop, 8, options.budget},
  };
  std::cout
      << "dlcp demo: " << options.mib << " MiB messages, " << options.iters
      << " timed per configuration, sender and receiver on loopback.\n"
      << "Loss is injected in dlcp's receive path (a diagnostic); the kernel's TCP cannot be\n"
      << "given the same loss outside the emulated switch testbed, so TCP runs loss-free.\n\n";
  nlohmann::json results = nlohmann::json::array();
  for (const auto& config : configs) {
    P2pBenchOptions bench;
    bench.mib = options.mib;
    bench.iters = options.iters;
    bench.drop = config.drop;
    bench.burst = config.burst;
    bench.loss_bound = config.budget;
    bench.baseline = config.baseline;
    bench.verbose = false;
    std::cerr << "running " << config.name << ", loss " << config.drop * 100 << "%"
              << (config.burst > 1 ? " bursty" : "") << ", budget " << config.budget * 100
              << "% ..." << std::endl;
    nlohmann::json result = run_p2p_bench(bench);
    result["name"] = config.name;
    results.push_back(result);
  }
  std::printf("\n%-22s %7s %7s %9s %9s %9s %10s %9s %8s\n", "system", "loss", "budget", "Gbit/s",
              "p50 ms", "p99 ms", "delivered", "prot.miss", "errors");
  for (const auto& r : results) {
    const double drop = r.value("drop", 0.0);
    const double burst = r.value("burst", 1.0);
    const std::string loss =
        std::to_string(static_cast<int>(drop * 1000 + 0.5) / 10.0).substr(0, 3) + "%" +
        (burst > 1 ? "b" : "");
    const double delivered = 100.0 * (1.0 - r.value("max_missing_fraction", 0.0));
    const auto errors = r.value("data_errors", 0ull) + r.value("deadline_errors", 0ull) +
                        r.value("other_errors", 0ull);
    std::printf("%-22s %7s %6.1f%% %9.2f %9.1f %9.1f %9.2f%% %9llu %8llu\n",
                r["name"].get<std::string>().c_str(), loss.c_str(),
                r.value("loss_bound", 0.0) * 100, r.value("goodput_gbps", 0.0),
                r.value("p50_ms", 0.0), r.value("p99_ms", 0.0), delivered,
                static_cast<unsigned long long>(r.value("protected_missing", 0ull)),
                static_cast<unsigned long long>(errors));
  }
  std::printf(
      "\n'b' = bursty loss (mean burst 8 packets). 'delivered' is the worst message's share of\n"
      "entries; missing entries are always drop-eligible, never protected, and within budget.\n");
  nlohmann::json summary;
  summary["results"] = results;
  return summary;
}

}  // namespace dlcp::tools
