// The demo's results: speed-ups, the mechanism ablation, the table, the JSON file and the plot.
// Pure functions of the per-system summaries of `dlcp bench train`, so they are unit-tested.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

namespace dlcp::tools {

std::string format_ms(double ms);
std::string format_percent(double fraction);

// Rows are named by TrainBenchOptions::label(): the system, its wire dtype unless fp32, then
// any ablation ("gloo fp16", "dlcp-ring bf16", "dlcp-ring bf16 no-spray"). Gloo and Open MPI in
// any dtype are baselines; dlcp in any dtype with no ablation is a full dlcp configuration.

// The fastest (lowest iteration p50) of the full dlcp configurations in `results`: its label.
std::string best_dlcp_system(const nlohmann::json& results);

// Runs of the same system repeated (`dlcp demo --repeat`) become one row: the run with the median
// iteration p50 stands for the system (its switch counters, settlements and delivery), with
// iter_p50_ms and iter_p99_ms replaced by the medians over the runs (the upper median of an even
// count) and every run's pair kept under "repeats"; iteration_ms holds every run's iterations.
// Rows keep the order in which their systems first appear; a failed run is kept apart unchanged.
nlohmann::json merge_repeats(const nlohmann::json& runs);

// Builds the summary from the congested-network results (baselines, dlcp, ablations) and the
// clean-network results (may be empty):
//   systems: per system iter_p50_ms, iter_p99_ms, delivered_fraction, speedup_p50/p99 (the best
//            baseline's time divided by the system's)
//   best_baseline_p50/p99 (names), best_dlcp, speedup_p50, speedup_p99 (best dlcp over the best
//   baseline at each percentile), ablation: per mechanism, the slowdown when it is switched off
//   (p50 and p99 of the ablated run divided by the full run's), clean: the same for the clean
//   network with clean_speedup_p50, failed: the runs that failed ({system, failed: why}), left
//   out of every comparison.
// `tail` (may be empty): the same for the tail scenario, under "tail".
nlohmann::json make_demo_summary(const nlohmann::json& congested, const nlohmann::json& clean,
                                 const nlohmann::json& tail = nlohmann::json::array());

// The long-link scenario's summary: `scenarios` holds {rtt_ms, loss ("random", "bursts" or
// "none"), loss_rate, runs (merged repeats)} per network; the summary's "long_link" holds, per
// network, the same as make_demo_summary's congested network (speed-ups; the ablation holds the
// budget's share as no-loss-tolerance and parity's as no-parity) with rtt_ms, loss and loss_rate,
// and "failed" the runs that failed.
nlohmann::json make_long_link_summary(const nlohmann::json& scenarios);

void print_demo_table(std::ostream& out, const nlohmann::json& summary);

// Writes <dir>/demo.json and <dir>/demo.png (through the plot script; a missing matplotlib is
// reported, not fatal).
void write_demo_outputs(const nlohmann::json& summary, const std::string& dir);

}  // namespace dlcp::tools
