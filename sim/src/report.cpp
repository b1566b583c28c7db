#include "report.hpp"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "scenario.hpp"

namespace dlcp::sim {

namespace {

// The number at `path` in `result`, NaN when absent (documents from before a field existed).
double path_field(const json::Value& result, std::initializer_list<const char*> path) {
  const json::Value* at = &result;
  for (const char* key : path) {
    const auto found = at->object.find(key);
    if (found == at->object.end()) return std::numeric_limits<double>::quiet_NaN();
    at = &found->second;
  }
  return at->kind == json::Value::Kind::kNumber ? at->number
                                                : std::numeric_limits<double>::quiet_NaN();
}

double field(const json::Value& result, const char* group, const char* name) {
  return path_field(result, {group, name});
}

double number_field(const json::Value& result, const char* name) {
  const auto f = result.object.find(name);
  return f != result.object.end() && f->second.kind == json::Value::Kind::kNumber
             ? f->second.number
             : std::numeric_limits<double>::quiet_NaN();
}

const SchemeOutcome* find(const std::vector<SchemeOutcome>& outcomes, const std::string& name) {
  for (const auto& o : outcomes) {
    if (o.scheme == name) return &o;
  }
  return nullptr;
}

double reduction_percent(double ours, double theirs) {
  return 100.0 * (1.0 - ours / theirs);
}

std::string cell(double v, const char* format) {
  if (!std::isfinite(v)) return "-";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, format, v);
  return buffer;
}

}  // namespace

std::string scenario_document(const ScenarioConfig& scenario,
                              const std::vector<SchemeOutcome>& outcomes) {
  std::ostringstream out;
  out << "{\"scenario\":" << json::quote(scenario.name)
      << ",\"description\":" << json::quote(scenario.description)
      << ",\"config\":" << scenario_json(scenario) << ",\"results\":{";
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    out << (i ? "," : "") << json::quote(outcomes[i].scheme) << ":" << outcomes[i].result_json;
  }
  out << "},\"versus\":{";
  const SchemeOutcome* dlcp = find(outcomes, "dlcp");
  bool first = true;
  for (const auto& o : outcomes) {
    if (!dlcp || o.scheme == "dlcp") continue;
    const double speedup =
        field(o.result, "iteration_ms", "mean") / field(dlcp->result, "iteration_ms", "mean");
    out << (first ? "" : ",") << json::quote(o.scheme)
        << ":{\"training_speedup\":" << json::number(speedup)
        << ",\"gradient_fct_p99_lower_percent\":"
        << json::number(reduction_percent(field(dlcp->result, "gradient_fct_us", "p99"),
                                          field(o.result, "gradient_fct_us", "p99")))
        << ",\"gradient_fct_mean_lower_percent\":"
        << json::number(reduction_percent(field(dlcp->result, "gradient_fct_us", "mean"),
                                          field(o.result, "gradient_fct_us", "mean")))
        << ",\"iteration_p99_lower_percent\":"
        << json::number(reduction_percent(field(dlcp->result, "iteration_ms", "p99"),
                                          field(o.result, "iteration_ms", "p99")))
        << "}";
    first = false;
  }
  out << "}}";
  return out.str();
}

void print_table(std::ostream& out, const ScenarioConfig& scenario,
                 const std::vector<SchemeOutcome>& outcomes) {
  out << "\nscenario " << scenario.name << ": " << scenario.description << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-8s %6s %9s %9s %10s %10s %10s %10s %8s %8s %7s\n", "scheme",
                "iters", "iter mean", "iter p99", "grad FCT", "grad FCT", "bg FCT", "bg FCT",
                "speedup", "p99 FCT", "wall");
  out << line;
  std::snprintf(line, sizeof line, "%-8s %6s %9s %9s %10s %10s %10s %10s %8s %8s %7s\n", "", "done",
                "(ms)", "(ms)", "mean (us)", "p99 (us)", "mean (us)", "p99 (us)", "of dlcp",
                "lower", "(s)");
  out << line;
  const SchemeOutcome* dlcp = find(outcomes, "dlcp");
  for (const auto& o : outcomes) {
    if (o.result.object.count("error")) {
      out << o.scheme << ": failed: " << o.result.at("error").string << "\n";
      continue;
    }
    double speedup = std::numeric_limits<double>::quiet_NaN();
    double lower = std::numeric_limits<double>::quiet_NaN();
    if (dlcp && o.scheme != "dlcp") {
      speedup =
          field(o.result, "iteration_ms", "mean") / field(dlcp->result, "iteration_ms", "mean");
      lower = reduction_percent(field(dlcp->result, "gradient_fct_us", "p99"),
                                field(o.result, "gradient_fct_us", "p99"));
    }
    const std::string iters = cell(number_field(o.result, "iterations_finished"), "%.0f") + "/" +
                              cell(number_field(o.result, "iterations_expected"), "%.0f");
    std::snprintf(line, sizeof line, "%-8s %6s %9s %9s %10s %10s %10s %10s %8s %8s %7s\n",
                  o.scheme.c_str(), iters.c_str(),
                  cell(field(o.result, "iteration_ms", "mean"), "%.3f").c_str(),
                  cell(field(o.result, "iteration_ms", "p99"), "%.3f").c_str(),
                  cell(field(o.result, "gradient_fct_us", "mean"), "%.1f").c_str(),
                  cell(field(o.result, "gradient_fct_us", "p99"), "%.1f").c_str(),
                  cell(field(o.result, "background_fct_us", "mean"), "%.1f").c_str(),
                  cell(field(o.result, "background_fct_us", "p99"), "%.1f").c_str(),
                  cell(speedup, "%.2fx").c_str(), cell(lower, "%.1f%%").c_str(),
                  cell(number_field(o.result, "wall_s"), "%.0f").c_str());
    out << line;
  }
  out << "speedup of dlcp = baseline mean iteration time / dlcp's; p99 FCT lower = how much "
         "lower dlcp's p99 gradient FCT is\n";
  std::string tcp_losses;
  for (const auto& o : outcomes) {
    const auto count = [&](const char* name) {
      return cell(path_field(o.result, {"tcp", "gradient", name}), "%.0f");
    };
    if (!(path_field(o.result, {"tcp", "gradient", "connections"}) > 0)) continue;
    tcp_losses += " " + o.scheme + " " + count("timeouts") + "/" + count("fast_recoveries") + "/" +
                  count("syn_retransmissions") + " of " + count("connections");
  }
  if (!tcp_losses.empty()) {
    out << "TCP gradient flows, timeouts/fast recoveries/SYN retransmissions:" << tcp_losses
        << "\n";
  }
  for (const auto& o : outcomes) {
    const auto dlcp_block = o.result.object.find("dlcp");
    if (dlcp_block == o.result.object.end()) continue;
    const auto failure = dlcp_block->second.object.find("first_failure");
    if (failure == dlcp_block->second.object.end()) continue;
    out << o.scheme << " stopped early: " << failure->second.string << "\n";
  }
  if (scenario.fabric.gray_loss > 0) {
    out << "gray spine (spine 0 drops " << cell(100.0 * scenario.fabric.gray_loss, "%.2f")
        << "% at random), packets dropped of those that crossed it:";
    for (const auto& o : outcomes) {
      out << " " << o.scheme << " " << cell(field(o.result, "switch", "gray_dropped"), "%.0f")
          << "/" << cell(field(o.result, "switch", "gray_seen"), "%.0f");
    }
    out << "\n";
  }
}

}  // namespace dlcp::sim
