#include "demo_report.hpp"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "command.hpp"

namespace dlcp::tools {
namespace {

bool is_baseline(const nlohmann::json& r) {
  const auto system = r["system"].get<std::string>();
  return system == "gloo" || system == "mpi";
}

bool is_full_dlcp(const nlohmann::json& r) {
  const auto system = r["system"].get<std::string>();
  return system.rfind("dlcp-", 0) == 0 && system.find(' ') == std::string::npos;
}

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
  if (dlcp) {
    const std::string full = (*dlcp)["system"];
    nlohmann::json ablation = nlohmann::json::object();
    for (const char* mechanism : {"no-spray", "no-priority", "no-loss-tolerance"}) {
      const auto* off = find_system(results, full + " " + mechanism);
      if (off == nullptr) continue;
      ablation[mechanism] = {{"slowdown_p50", (*off)["iter_p50_ms"].get<double>() /
                                                  (*dlcp)["iter_p50_ms"].get<double>()},
                             {"slowdown_p99", (*off)["iter_p99_ms"].get<double>() /
                                                  (*dlcp)["iter_p99_ms"].get<double>()}};
    }
    if (!ablation.empty()) s["ablation"] = ablation;
  }
  return s;
}

}  // namespace

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

nlohmann::json make_demo_summary(const nlohmann::json& all_congested,
                                 const nlohmann::json& all_clean) {
  nlohmann::json failed = nlohmann::json::array();
  const auto completed = [&](const nlohmann::json& results) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& r : results) (r.contains("failed") ? failed : kept).push_back(r);
    return kept;
  };
  const nlohmann::json congested = completed(all_congested);
  const nlohmann::json clean = completed(all_clean);
  nlohmann::json summary = network_summary(congested);
  if (!failed.empty()) summary["failed"] = failed;
  if (!clean.empty()) {
    summary["clean"] = network_summary(clean);
    summary["clean_speedup_p50"] = summary["clean"].value("speedup_p50", 0.0);
  }
  // Every run's iteration times, for the plot.
  summary["iterations_ms"] = nlohmann::json::object();
  for (const auto& r : congested)
    summary["iterations_ms"][r["system"].get<std::string>()] = r["iteration_ms"];
  return summary;
}

void print_demo_table(std::ostream& out, const nlohmann::json& summary) {
  const auto table = [&](const nlohmann::json& s, const std::string& title) {
    out << "\n" << title << "\n";
    out << std::left << std::setw(32) << "system" << std::right << std::setw(11) << "iter p50"
        << std::setw(11) << "iter p99" << std::setw(9) << "x p50" << std::setw(9) << "x p99"
        << std::setw(11) << "delivered"
        << "  switch drops: urgent / eligible / best effort, gray\n";
    for (const auto& r : s["systems"]) {
      out << std::left << std::setw(32) << r["system"].get<std::string>() << std::right
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
    if (s.contains("ablation")) {
      out << "each mechanism's share (iteration time with it switched off / with everything on):\n";
      for (const auto& [mechanism, a] : s["ablation"].items()) {
        out << "  " << std::left << std::setw(20) << mechanism << std::right << std::fixed
            << std::setprecision(2) << a["slowdown_p50"].get<double>() << "x at p50, "
            << a["slowdown_p99"].get<double>() << "x at p99\n";
      }
    }
  };
  table(summary, summary.value("network", "") == "loopback"
                     ? "Loopback with in-process loss (no switches)"
                     : "Congested network: background load and a gray failure");
  if (summary.contains("clean")) table(summary["clean"], "Clean network");
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
  const auto result =
      runner.run({"/usr/bin/python3", DLCP_SOURCE_DIR "/tools/plot_demo.py", json_path, png_path});
  std::cout << "\nResults: " << json_path;
  if (result.status == 0) {
    std::cout << ", plot: " << png_path << "\n";
  } else {
    std::cout << "\n(no plot: " << result.output << ")\n";
  }
}

}  // namespace dlcp::tools
