// `dlcp bench allreduce`: the launcher. Starts the rank processes (directly, or under mpirun for
// the MPI baseline), waits for them, and turns their reports into one summary.
#include "bench_allreduce.hpp"

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>

#include "baseline_mpi.hpp"
#include "child_processes.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "settlement_report.hpp"
#include "summary.hpp"
#include "system_choice.hpp"

namespace dlcp::tools {
namespace {

bool is_dlcp(const std::string& algo) {
  return algo == "ring" || algo == "tar" || algo == "ps";
}

bool is_mpi(const std::string& algo) {
  return algo == "mpi" || algo == "mpi-shm";
}

bool is_reduce_scatter(const AllreduceBenchOptions& o) {
  return o.collective == "reduce_scatter";
}

void check_options(const AllreduceBenchOptions& o) {
  const auto invalid = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, -1, what);
  };
  if (!is_dlcp(o.algo) && o.algo != "gloo" && !is_mpi(o.algo)) {
    invalid("--algo must be ring, tar, ps, gloo, mpi or mpi-shm, got '" + o.algo + "'");
  }
  if (o.ranks < 1 || o.ranks > 64) invalid("--ranks must be 1..64");
  if (o.collective != "allreduce" && !is_reduce_scatter(o)) {
    invalid("--collective must be allreduce or reduce_scatter, got '" + o.collective + "'");
  }
  if (is_reduce_scatter(o) && o.algo != "ring" && o.algo != "tar") {
    invalid(
        "--collective reduce_scatter is dlcp's, direct between the workers: --algo ring or "
        "tar, not " +
        o.algo);
  }
  if (o.algo == "ps" && o.servers < 1) invalid("--algo ps needs --servers >= 1");
  if (!is_dlcp(o.algo) && (o.topology != "auto" || o.ranks_per_host != 0)) {
    invalid("--topology and --ranks-per-host apply to dlcp only");
  }
  if (!is_dlcp(o.algo) && (o.drop > 0 || o.loss_bound > 0 || o.broadcast_loss_bound > 0)) {
    invalid(
        "--drop and --loss-bound apply to dlcp only: Gloo and MPI run over the kernel's TCP, "
        "which dlcp cannot inject loss into (use the testbed for lossy TCP baselines)");
  }
  if (!is_dlcp(o.algo) && o.op != "sum") invalid("Gloo and MPI baselines measure --op sum only");
  check_wire_supported(o.algo, o.wire);
  const double floats = o.mib * (1 << 20) / 4.0;
  if (floats < 1 || floats > 4.0e9) invalid("--mib must give 1 .. 2^32 floats");
  if (bench_input_floats(o) == 0) invalid("--mib must give at least one float per rank");
}

std::string fmt(double value, int digits = 2) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

// Summary of one implementation (one Gloo variant, or dlcp's algorithm) from every rank's report.
// `replicas`: every rank holds the same result (all-reduce), so their hashes must agree.
nlohmann::json summarize(const std::vector<nlohmann::json>& reports, std::size_t bytes,
                         bool replicas) {
  const std::size_t iters = reports.front()["seconds"].size();
  std::vector<double> times(iters, 0.0);
  bool consistent = true;
  for (std::size_t i = 0; i < iters; ++i) {
    const auto first_hash = reports.front()["hashes"][i].get<std::uint64_t>();
    for (const auto& report : reports) {
      times[i] = std::max(times[i], report["seconds"][i].get<double>());
      consistent = consistent && report["hashes"][i].get<std::uint64_t>() == first_hash;
    }
  }
  double max_rel_error = 0;
  double sum_error = 0;
  double sum_abs_exact = 0;
  double wrong = 0;
  double entries = 0;
  double expected = 0;
  double received = 0;
  double broadcast_missing = 0;
  std::vector<double> allocations;
  std::vector<double> allocation_bytes;
  for (const auto& report : reports) {
    max_rel_error = std::max(max_rel_error, report["max_rel_error"].get<double>());
    sum_error += report["sum_error"].get<double>();
    sum_abs_exact += report["sum_abs_exact"].get<double>();
    wrong += report["wrong_entries"].get<double>();
    entries += report["entries"].get<double>();
    expected += report["contributions_expected"].get<double>();
    received += report["contributions_received"].get<double>();
    broadcast_missing += report["broadcast_entries_missing"].get<double>();
    for (const auto& a : report["allocations"]) allocations.push_back(a.get<double>());
    for (const auto& a : report["allocation_bytes"]) allocation_bytes.push_back(a.get<double>());
  }
  const double p50 = percentile(times, 0.5);
  nlohmann::json summary;
  summary["bytes"] = bytes;
  summary["iters"] = iters;
  summary["algbw_gbps"] = gbps(static_cast<double>(bytes), p50);
  summary["p50_ms"] = p50 * 1e3;
  summary["p99_ms"] = percentile(times, 0.99) * 1e3;
  summary["mean_ms"] = [&] {
    double total = 0;
    for (const double t : times) total += t;
    return total / static_cast<double>(times.size()) * 1e3;
  }();
  summary["max_rel_error"] = max_rel_error;
  summary["mean_error"] = sum_abs_exact > 0 ? sum_error / sum_abs_exact : 0.0;
  summary["wrong_entry_fraction"] = entries > 0 ? wrong / entries : 0.0;
  // A reduce-scatter leaves a different shard on each rank: no replicas to compare.
  if (replicas) summary["consistent"] = consistent;
  summary["delivered_fraction"] = expected > 0 ? received / expected : 1.0;
  summary["broadcast_entries_missing"] = broadcast_missing;
  summary["allocs_per_iter_per_rank"] = percentile(allocations, 0.5);
  summary["alloc_bytes_per_iter_per_rank"] = percentile(allocation_bytes, 0.5);
  return summary;
}

}  // namespace

std::size_t bench_input_floats(const AllreduceBenchOptions& o) {
  const auto floats = static_cast<std::size_t>(o.mib * (1 << 20) / 4.0);
  if (!is_reduce_scatter(o) || o.ranks < 1) return floats;
  const auto ranks = static_cast<std::size_t>(o.ranks);
  return floats / ranks * ranks;
}

std::vector<std::string> allreduce_bench_flags(const AllreduceBenchOptions& o) {
  return {"--algo",
          o.algo,
          "--collective",
          o.collective,
          "--ranks",
          std::to_string(o.ranks),
          "--servers",
          std::to_string(o.servers),
          "--mib",
          fmt(o.mib, 6),
          "--iters",
          std::to_string(o.iters),
          "--warmup",
          std::to_string(o.warmup),
          "--drop",
          fmt(o.drop, 6),
          "--burst",
          fmt(o.burst, 6),
          "--loss-bound",
          fmt(o.loss_bound, 6),
          "--broadcast-loss-bound",
          fmt(o.broadcast_loss_bound, 6),
          "--op",
          o.op,
          "--aggregation",
          o.aggregation,
          "--paths",
          std::to_string(o.paths),
          "--mtu",
          std::to_string(o.mtu),
          o.local_path ? "--local-path" : "--no-local-path",
          "--topology",
          o.topology,
          "--ranks-per-host",
          std::to_string(o.ranks_per_host),
          "--segment-mib",
          fmt(o.segment_mib, 6),
          "--concurrent",
          std::to_string(o.concurrent),
          "--deadline-ms",
          std::to_string(o.deadline_ms),
          "--wire",
          to_string(o.wire)};
}

nlohmann::json run_allreduce_bench(const AllreduceBenchOptions& o) {
  check_options(o);
  const std::size_t bytes = bench_input_floats(o) * sizeof(float);
  const int world = o.ranks + (o.algo == "ps" ? o.servers : 0);
  const bool reduce_scatter = is_reduce_scatter(o);
  // A reduce-scatter is one algorithm whatever --algo says: the transpose's reduce half.
  const std::string algo = reduce_scatter ? "tar" : o.algo;
  const std::string label = wire_label(reduce_scatter ? o.collective : o.algo, o.wire);
  TcpStoreServer store_server("127.0.0.1", 0);
  const std::string store_address = store_server.address();
  if (o.verbose) {
    std::cerr << "bench allreduce: " << label << ", " << o.ranks << " ranks"
              << (o.algo == "ps" ? " + " + std::to_string(o.servers) + " servers" : "") << ", "
              << fmt(o.mib) << " MiB, " << o.iters << " iterations";
    if (o.drop > 0) std::cerr << ", injected loss " << fmt(o.drop * 100) << "%";
    if (o.loss_bound > 0) std::cerr << ", loss bound " << fmt(o.loss_bound * 100) << "%";
    if (is_dlcp(o.algo) && o.topology != "auto") std::cerr << ", " << o.topology;
    if (is_dlcp(o.algo) && o.ranks_per_host > 0) {
      std::cerr << ", " << o.ranks_per_host << " ranks per host";
    }
    std::cerr << std::endl;
  }

  ChildProcesses children;
  const std::string exe = bench_executable();
  std::vector<std::string> rank_argv = {exe, "allreduce-rank"};
  for (auto& flag : allreduce_bench_flags(o)) rank_argv.push_back(flag);
  if (is_mpi(o.algo)) {
    auto argv = mpirun_command(o.ranks, {"DLCP_BENCH_STORE"}, nullptr,
                               o.algo == "mpi-shm" ? MpiFabric::kSharedMemory : MpiFabric::kTcp);
    argv.insert(argv.end(), rank_argv.begin(), rank_argv.end());
    children.start(argv, {{"DLCP_BENCH_STORE", store_address}}, "mpirun");
  } else {
    for (int rank = 0; rank < world; ++rank) {
      children.start(
          rank_argv,
          {{"DLCP_BENCH_STORE", store_address}, {"DLCP_BENCH_RANK", std::to_string(rank)}},
          (rank < o.ranks ? "rank " : "server rank ") + std::to_string(rank));
    }
  }
  const std::string failure = children.wait_all(std::chrono::seconds(o.timeout_s));
  if (!failure.empty()) {
    throw Error(ErrorCode::kAborted, -1, "bench allreduce (" + label + "): " + failure);
  }

  TcpStore results("127.0.0.1", store_server.port(), std::chrono::seconds(10));
  const auto variants = nlohmann::json::parse(results.get("bench/variants"));
  nlohmann::json by_variant = nlohmann::json::object();
  std::string best;
  for (const auto& variant_json : variants) {
    const auto variant = variant_json.get<std::string>();
    std::vector<nlohmann::json> reports;
    for (int rank = 0; rank < o.ranks; ++rank) {
      reports.push_back(nlohmann::json::parse(
          results.get("bench/result/" + variant + "/" + std::to_string(rank))));
    }
    by_variant[variant] = summarize(reports, bytes, !reduce_scatter);
    if (reports.front().contains("settlement")) {
      std::vector<nlohmann::json> settlements;
      for (const auto& report : reports) settlements.push_back(report["settlement"]);
      for (int rank = o.ranks; rank < world; ++rank) {
        settlements.push_back(nlohmann::json::parse(
            results.get("bench/server/" + variant + "/" + std::to_string(rank)))["settlement"]);
      }
      by_variant[variant]["settlement"] = summarize_settlement(settlements);
    }
    if (best.empty() ||
        by_variant[variant]["p50_ms"].get<double>() < by_variant[best]["p50_ms"].get<double>()) {
      best = variant;
    }
  }
  nlohmann::json summary = by_variant[best];
  summary["algo"] = algo;
  summary["collective"] = o.collective;
  summary["wire"] = to_string(o.wire);
  if (o.algo != "gloo" && o.algo != "mpi") summary["local_path"] = o.local_path;
  if (is_dlcp(o.algo)) {
    summary["topology"] = o.topology;
    summary["ranks_per_host"] = o.ranks_per_host;
  }
  summary["label"] = label;  // algo, and the wire dtype unless fp32: "gloo fp16"
  summary["variant"] = best;
  summary["ranks"] = o.ranks;
  summary["servers"] = o.algo == "ps" ? o.servers : 0;
  summary["drop"] = o.drop;
  summary["loss_bound"] = o.loss_bound;
  summary["op"] = o.op;
  if (by_variant.size() > 1) summary["variants"] = by_variant;
  if (o.verbose) {
    for (const auto& [variant, s] : by_variant.items()) {
      std::cerr << "  " << (reduce_scatter ? o.collective : o.algo)
                << (variant == o.algo ? "" : "/" + variant)
                << (o.wire == WireDtype::kFloat32 ? "" : std::string(" ") + to_string(o.wire))
                << ": p50 " << fmt(s["p50_ms"].get<double>()) << " ms, p99 "
                << fmt(s["p99_ms"].get<double>()) << " ms, " << fmt(s["algbw_gbps"].get<double>())
                << " Gbit/s, delivered " << fmt(s["delivered_fraction"].get<double>() * 100, 3)
                << "%, max rel error " << s["max_rel_error"].get<double>()
                << (!s.contains("consistent")     ? ", one shard per rank"
                    : s["consistent"].get<bool>() ? ", consistent"
                                                  : ", REPLICAS DIFFER")
                << std::endl;
      if (s.contains("settlement")) {
        std::cerr << "    " << describe_settlement(s["settlement"]) << std::endl;
      }
    }
  }
  return summary;
}

}  // namespace dlcp::tools
