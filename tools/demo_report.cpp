#include "demo_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string_view>
#include <vector>

#include "command.hpp"
#include "workload/data_files.hpp"

namespace dlcp::tools {
namespace {

// A row's "system" is TrainBenchOptions::label(): "<system>[ <wire>][ no-<mechanism>...][ flat]",
// e.g. "gloo fp16", "dlcp-ring bf16", "dlcp-ring bf16 no-spray", "dlcp-ring flat".
std::string system_of(const std::string& label) {
  return label.substr(0, label.find(' '));
}

// Where the ablation starts in a label, or npos for a full configuration.
std::size_t ablation_at(const std::string& label) {
  return label.find(" no-");
}

// With several workers per host: the run forced flat beside the hierarchical one.
constexpr std::string_view kFlatSuffix = " flat";

bool is_flat_variant(const std::string& label) {
  return label.ends_with(kFlatSuffix);
}

bool is_baseline(const nlohmann::json& r) {
  const auto system = system_of(r["system"].get<std::string>());
  return system == "gloo" || system == "mpi";
}

// dlcp with every mechanism on and its own choice of topology, in any wire dtype.
bool is_full_dlcp(const nlohmann::json& r) {
  const auto label = r["system"].get<std::string>();
  return label.rfind("dlcp-", 0) == 0 && ablation_at(label) == std::string::npos &&
         !is_flat_variant(label);
}

// Wide enough for the longest label, "dlcp-ring bf16 no-loss-tolerance", and a space.
constexpr int kSystemColumn = 34;

const nlohmann::json* best_by(const nlohmann::json& results, const char* key, bool baseline) {
  const nlohmann::json* best = nullptr;
  for (const auto& r : results) {
    if (baseline ? !is_baseline(r) : !is_full_dlcp(r)) continue;
    if (best == nullptr || r[key].get<double>() < (*best)[key].get<double>()) best = &r;
  }
  return best;
}

const nlohmann::json* find_system(const nlohmann::json& results, const std::string& name) {
  for (const auto& r : results) {
    if (r["system"] == name) return &r;
  }
  return nullptr;
}

nlohmann::json network_summary(const nlohmann::json& results) {
  nlohmann::json s;
  const auto* base50 = best_by(results, "iter_p50_ms", true);
  const auto* base99 = best_by(results, "iter_p99_ms", true);
  const auto* dlcp = best_by(results, "iter_p50_ms", false);
  s["systems"] = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json row = r;
    row.erase("iteration_ms");
    if (base50)
      row["speedup_p50"] = (*base50)["iter_p50_ms"].get<double>() / r["iter_p50_ms"].get<double>();
    if (base99)
      row["speedup_p99"] = (*base99)["iter_p99_ms"].get<double>() / r["iter_p99_ms"].get<double>();
    s["systems"].push_back(row);
  }
  if (base50 && base99 && dlcp) {
    s["best_baseline_p50"] = (*base50)["system"];
    s["best_baseline_p99"] = (*base99)["system"];
    s["best_dlcp"] = (*dlcp)["system"];
    s["speedup_p50"] =
        (*base50)["iter_p50_ms"].get<double>() / (*dlcp)["iter_p50_ms"].get<double>();
    s["speedup_p99"] =
        (*base99)["iter_p99_ms"].get<double>() / (*dlcp)["iter_p99_ms"].get<double>();
  }
  // The ablations were run on one system (the fastest of the first repetition, which the
  // medians may rank otherwise): compare each with its own full configuration.
  const nlohmann::json* ablated = nullptr;
  for (const auto& r : results) {
    const auto label = r["system"].get<std::string>();
    const auto ablation = ablation_at(label);
    if (ablation != std::string::npos) ablated = find_system(results, label.substr(0, ablation));
    if (ablated != nullptr) break;
  }
  if (ablated != nullptr) {
    const std::string full = (*ablated)["system"];
    nlohmann::json ablation = nlohmann::json::object();
    for (const char* mechanism : {"no-spray", "no-priority", "no-loss-tolerance", "no-parity"}) {
      const auto* off = find_system(results, full + " " + mechanism);
      if (off == nullptr) continue;
      ablation[mechanism] = {{"slowdown_p50", (*off)["iter_p50_ms"].get<double>() /
                                                  (*ablated)["iter_p50_ms"].get<double>()},
                             {"slowdown_p99", (*off)["iter_p99_ms"].get<double>() /
                                                  (*ablated)["iter_p99_ms"].get<double>()}};
    }
    if (!ablation.empty()) {
      s["ablation"] = ablation;
      s["ablated_system"] = full;
    }
  }
  // Each system that also ran flat: how much faster it ran by host.
  nlohmann::json hierarchy = nlohmann::json::object();
  for (const auto& flat : results) {
    const auto label = flat["system"].get<std::string>();
    if (!is_flat_variant(label)) continue;
    const auto* by_host = find_system(results, label.substr(0, label.size() - kFlatSuffix.size()));
    if (by_host == nullptr) continue;
    hierarchy[(*by_host)["system"].get<std::string>()] = {
        {"speedup_p50",
         flat["iter_p50_ms"].get<double>() / (*by_host)["iter_p50_ms"].get<double>()},
        {"speedup_p99",
         flat["iter_p99_ms"].get<double>() / (*by_host)["iter_p99_ms"].get<double>()}};
  }
  if (!hierarchy.empty()) s["hierarchy"] = hierarchy;
  return s;
}

double upper_median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

nlohmann::json merge_repeats(const nlohmann::json& runs) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const nlohmann::json*>> by_system;
  nlohmann::json merged = nlohmann::json::array();
  for (const auto& run : runs) {
    if (run.contains("failed")) {
      merged.push_back(run);
      continue;
    }
    const auto system = run["system"].get<std::string>();
    if (!by_system.contains(system)) order.push_back(system);
    by_system[system].push_back(&run);
  }
  for (const auto& system : order) {
    const auto& repeats = by_system[system];
    if (repeats.size() == 1) {
      merged.push_back(*repeats.front());
      continue;
    }
    std::vector<double> p50s;
    std::vector<double> p99s;
    for (const auto* run : repeats) {
      p50s.push_back((*run)["iter_p50_ms"].get<double>());
      p99s.push_back((*run)["iter_p99_ms"].get<double>());
    }
    const double p50 = upper_median(p50s);
    const auto median_run = std::find_if(
        repeats.begin(), repeats.end(),
        [&](const nlohmann::json* run) { return (*run)["iter_p50_ms"].get<double>() == p50; });
    nlohmann::json row = **median_run;
    row["iter_p50_ms"] = p50;
    row["iter_p99_ms"] = upper_median(p99s);
    row["repeats"] = nlohmann::json::array();
    row["iteration_ms"] = nlohmann::json::array();
    for (const auto* run : repeats) {
      row["repeats"].push_back(
          {{"iter_p50_ms", (*run)["iter_p50_ms"]}, {"iter_p99_ms", (*run)["iter_p99_ms"]}});
      for (const auto& t : (*run)["iteration_ms"]) row["iteration_ms"].push_back(t);
    }
    merged.push_back(row);
  }
  return merged;
}

std::string format_ms(double ms) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(ms < 100 ? 1 : 0) << ms << " ms";
  return out.str();
}

std::string format_percent(double fraction) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(fraction < 0.1 ? 2 : 1) << fraction * 100 << "%";
  return out.str();
}

std::string best_dlcp_system(const nlohmann::json& results) {
  const auto* best = best_by(results, "iter_p50_ms", false);
  if (best == nullptr) throw std::invalid_argument("no dlcp system among the results");
  return (*best)["system"].get<std::string>();
}

namespace {

// The completed runs of `results`; the failed ones are added to `failed`.
nlohmann::json completed_runs(const nlohmann::json& results, nlohmann::json& failed) {
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& r : results) (r.contains("failed") ? failed : kept).push_back(r);
  return kept;
}

}  // namespace

nlohmann::json make_long_link_summary(const nlohmann::json& scenarios) {
  nlohmann::json summary;
  nlohmann::json failed = nlohmann::json::array();
  summary["long_link"] = nlohmann::json::array();
  for (const auto& scenario : scenarios) {
    nlohmann::json s = network_summary(completed_runs(scenario["runs"], failed));
    s["rtt_ms"] = scenario["rtt_ms"];
    s["loss"] = scenario["loss"];
    s["loss_rate"] = scenario["loss_rate"];
    summary["long_link"].push_back(std::move(s));
  }
  if (!failed.empty()) summary["failed"] = failed;
  return summary;
}

nlohmann::json make_demo_summary(const nlohmann::json& all_congested,
                                 const nlohmann::json& all_clean, const nlohmann::json& all_tail) {
  nlohmann::json failed = nlohmann::json::array();
  const auto completed = [&](const nlohmann::json& results) {
    return completed_runs(results, failed);
  };
  const nlohmann::json congested = completed(all_congested);
  const nlohmann::json clean = completed(all_clean);
  const nlohmann::json tail = completed(all_tail);
  nlohmann::json summary = network_summary(congested);
  if (!failed.empty()) summary["failed"] = failed;
  if (!clean.empty()) {
    summary["clean"] = network_summary(clean);
    summary["clean_speedup_p50"] = summary["clean"].value("speedup_p50", 0.0);
  }
  if (!tail.empty()) summary["tail"] = network_summary(tail);
  // Every run's iteration times, for the plot.
  summary["iterations_ms"] = nlohmann::json::object();
  for (const auto& r : congested)
    summary["iterations_ms"][r["system"].get<std::string>()] = r["iteration_ms"];
  return summary;
}

void print_demo_table(std::ostream& out, const nlohmann::json& summary) {
  const auto table = [&](const nlohmann::json& s, const std::string& title) {
    out << "\n" << title << "\n";
    out << std::left << std::setw(kSystemColumn) << "system" << std::right << std::setw(11)
        << "iter p50" << std::setw(11) << "iter p99" << std::setw(9) << "x p50" << std::setw(9)
        << "x p99" << std::setw(11) << "delivered"
        << "  switch drops: urgent / eligible / best effort, gray\n";
    for (const auto& r : s["systems"]) {
      out << std::left << std::setw(kSystemColumn) << r["system"].get<std::string>() << std::right
          << std::setw(11) << format_ms(r["iter_p50_ms"].get<double>()) << std::setw(11)
          << format_ms(r["iter_p99_ms"].get<double>());
      std::ostringstream x50;
      std::ostringstream x99;
      x50 << std::fixed << std::setprecision(2) << r.value("speedup_p50", 0.0) << "x";
      x99 << std::fixed << std::setprecision(2) << r.value("speedup_p99", 0.0) << "x";
      out << std::setw(9) << x50.str() << std::setw(9) << x99.str() << std::setw(11)
          << format_percent(r["delivered_fraction"].get<double>());
      if (r.contains("switch")) {
        const auto& q = r["switch"]["queue_drop_rate"];
        out << "  " << format_percent(q["protected_classes_0_6"].get<double>()) << " / "
            << format_percent(q["drop_eligible"].get<double>()) << " / "
            << format_percent(q["best_effort_class_7"].get<double>()) << ", "
            << (r["switch"].value("gray_seen", 0) > 0
                    ? format_percent(r["switch"]["gray_drop_rate"].get<double>())
                    : std::string("none crossed"));
      }
      out << "\n";
    }
    if (s.contains("speedup_p50")) {
      out << "best dlcp (" << s["best_dlcp"].get<std::string>()
          << ") vs best baseline: " << std::fixed << std::setprecision(2)
          << s["speedup_p50"].get<double>() << "x at p50 ("
          << s["best_baseline_p50"].get<std::string>() << "), " << s["speedup_p99"].get<double>()
          << "x at p99 (" << s["best_baseline_p99"].get<std::string>() << ")\n";
    }
    if (s.contains("hierarchy")) {
      out << "by host against flat (flat's iteration time / by host's):\n";
      for (const auto& [system, h] : s["hierarchy"].items()) {
        out << "  " << std::left << std::setw(20) << system << std::right << std::fixed
            << std::setprecision(2) << h["speedup_p50"].get<double>() << "x at p50, "
            << h["speedup_p99"].get<double>() << "x at p99\n";
      }
    }
    if (s.contains("ablation")) {
      out << "each mechanism's share in " << s.value("ablated_system", std::string("dlcp"))
          << " (iteration time with it switched off / with everything on):\n";
      for (const auto& [mechanism, a] : s["ablation"].items()) {
        out << "  " << std::left << std::setw(20) << mechanism << std::right << std::fixed
            << std::setprecision(2) << a["slowdown_p50"].get<double>() << "x at p50, "
            << a["slowdown_p99"].get<double>() << "x at p99\n";
      }
    }
  };
  const auto settlements = [&](const nlohmann::json& s) {
    bool any = false;
    for (const auto& r : s["systems"]) any = any || r.contains("settlement");
    if (!any) return;
    out << "where dlcp's messages spend their time (every message received, warm-up included):\n";
    out << std::left << std::setw(kSystemColumn) << "  system" << std::right << std::setw(10)
        << "messages" << std::setw(10) << "no round" << std::setw(10) << "in budget"
        << std::setw(10) << "tail cut" << std::setw(12) << "rounds p99" << std::setw(20)
        << "recovery p50/p99" << std::setw(22) << "first round p50/p99\n";
    for (const auto& r : s["systems"]) {
      if (!r.contains("settlement")) continue;
      const auto& m = r["settlement"];
      const double messages = std::max(1.0, m["messages"].get<double>());
      std::ostringstream recovery;
      recovery << std::fixed << std::setprecision(1) << m["recovery_p50_ms"].get<double>() << " / "
               << m["recovery_p99_ms"].get<double>() << " ms";
      std::ostringstream first;
      first << std::fixed << std::setprecision(1) << m["first_round_p50_ms"].get<double>() << " / "
            << m["first_round_p99_ms"].get<double>() << " ms";
      out << "  " << std::left << std::setw(kSystemColumn - 2) << r["system"].get<std::string>()
          << std::right << std::setw(10) << m["messages"].get<std::uint64_t>() << std::setw(10)
          << format_percent(m["no_recovery_fraction"].get<double>()) << std::setw(10)
          << format_percent(m["settled_within_budget"].get<double>() / messages) << std::setw(10)
          << format_percent(m["settled_before_round_end"].get<double>() / messages) << std::setw(12)
          << m["rounds_p99"].get<std::uint32_t>() << std::setw(20) << recovery.str()
          << std::setw(21) << first.str() << "\n";
    }
  };
  const auto table_and_settlements = [&](const nlohmann::json& s, const std::string& title) {
    table(s, title);
    settlements(s);
  };
  const nlohmann::json config = summary.value("config", nlohmann::json::object());
  const std::string load = config.value("background", true) ? "background load, " : "";
  for (const auto& s : summary.value("long_link", nlohmann::json::array())) {
    std::ostringstream title;
    title << "Two sites, long link: round trip " << s["rtt_ms"].get<double>() << " ms, " << load
          << format_percent(s["loss_rate"].get<double>()) << " of its frames lost "
          << (s["loss"] == "bursts" ? "in bursts of " +
                                          std::to_string(static_cast<int>(
                                              config.value("long_link_burst_length", 4.0))) +
                                          " frames"
                                    : std::string("at random"));
    table_and_settlements(s, title.str());
  }
  const double gray = config.value("gray_loss", 0.01);
  const double burst = config.value("gray_burst_ms", 0.0);
  std::ostringstream congested;
  congested << "Congested network: " << load;
  if (gray > 0) {
    congested << "a spine losing " << format_percent(gray) << " of its packets";
    if (burst > 0) congested << " in bursts of " << burst << " ms";
  } else {
    congested << "no gray failure";
  }
  if (summary.contains("systems")) {
    table_and_settlements(summary, summary.value("network", "") == "loopback"
                                       ? "Loopback with in-process loss (no switches)"
                                       : congested.str());
  }
  if (summary.contains("clean")) table_and_settlements(summary["clean"], "Clean network");
  if (summary.contains("tail")) {
    std::ostringstream tail;
    tail << "Tail scenario: " << load << "the spine losing " << format_percent(gray)
         << " of its packets in bursts of " << config.value("tail_burst_ms", 0.0)
         << " ms (half of them while a burst lasts)";
    table_and_settlements(summary["tail"], tail.str());
  }
  for (const auto& f : summary.value("failed", nlohmann::json::array())) {
    out << "FAILED, left out of the comparison: " << f["system"].get<std::string>() << ": "
        << f["failed"].get<std::string>() << "\n";
  }
}

void write_demo_outputs(const nlohmann::json& summary, const std::string& dir) {
  std::filesystem::create_directories(dir);
  const std::string json_path = dir + "/demo.json";
  std::ofstream(json_path) << summary.dump(2) << "\n";
  const std::string png_path = dir + "/demo.png";
  testbed::SystemCommands runner;
  testbed::CommandResult result;
  try {
    const auto script = (workload::data_dir() / "plot_demo.py").string();
    result = runner.run({"/usr/bin/python3", script, json_path, png_path});
  } catch (const std::runtime_error& e) {
    result = {1, e.what()};
  }
  std::cout << "\nResults: " << json_path;
  if (result.status == 0) {
    std::cout << ", plot: " << png_path << "\n";
  } else {
    std::cout << "\n(no plot: " << result.output << ")\n";
  }
}

}  // namespace dlcp::tools
