// `dlcp bench train`: the launcher. Places the ranks on the testbed's hosts (or all on loopback),
// waits for them, and turns their reports into one summary.
#include "bench_train.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "baseline_mpi.hpp"
#include "child_processes.hpp"
#include "command.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "settlement_report.hpp"
#include "summary.hpp"
#include "topology.hpp"

namespace dlcp::tools {
namespace {

std::string fmt(double value, int digits = 6) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << value;
  return out.str();
}

void check_options(const TrainBenchOptions& o, const testbed::TestbedOptions* network) {
  const auto invalid = [](const std::string& what) {
    throw Error(ErrorCode::kInvalidArgument, -1, what);
  };
  if (!is_dlcp_system(o.system) && o.system != "gloo" && o.system != "mpi") {
    invalid("--system must be dlcp-ps, dlcp-ring, dlcp-tar, gloo or mpi, got '" + o.system + "'");
  }
  if (o.ranks < 2 || o.ranks > 64) invalid("--ranks must be 2..64");
  if (!is_dlcp_system(o.system) &&
      (o.no_spray || o.no_priority || o.no_loss_tolerance || o.drop > 0)) {
    invalid("--no-spray, --no-priority, --no-loss-tolerance and --drop apply to dlcp systems only");
  }
  check_wire_supported(o.system, o.wire);
  if (o.topology != "auto" && o.topology != "flat" && o.topology != "hierarchical") {
    invalid("--topology must be auto, flat or hierarchical, got '" + o.topology + "'");
  }
  if (o.topology != "auto" && !is_dlcp_system(o.system)) {
    invalid("--topology applies to dlcp systems only");
  }
  if (network != nullptr && o.drop > 0) {
    invalid(
        "--drop injects loss inside dlcp on loopback; on the testbed the switches lose packets");
  }
  o.plan.validate();
}

struct Placement {
  std::string ns;  // empty on loopback
  std::string bind_host = "127.0.0.1";
  std::string spine_addresses;
  // What the host's links take in, bytes/s, shared among the peers sending to a rank there
  // (RateControlOptions::receive_rate); 0 on loopback, which has no link to protect.
  double receive_rate = 0;
};

Placement place(const testbed::TestbedOptions* network, int process, int workers) {
  Placement p;
  if (network == nullptr) return p;
  const int host = testbed::host_of_process(process, workers, network->hosts);
  p.ns = testbed::host_namespace(*network, host);
  p.bind_host = testbed::host_address(host);
  for (int s = 0; s < network->spines; ++s) {
    p.spine_addresses += (s ? "," : "") + testbed::spine_address(host, s);
  }
  p.receive_rate = network->spines * network->port.rate_bps / 8.0;
  return p;
}

// The rsh agent mpirun calls as `agent 10.0.0.<i+1> "command"`: it runs the command in host i's
// namespace. Open MPI hands the remote command over as one string, as it would to ssh. The
// namespaces share one /tmp and, unless given their own, one host name, so each host's daemon
// gets a session directory of its own and, in a UTS namespace, the host name of its host, as on a
// real host: in one shared tree, daemons starting together raced to create the same directory and
// failed ("mkdir ... File exists"); and Open MPI takes ranks with one host name for ranks of one
// host, so with several ranks per host it used shared memory between hosts and crashed.
// `agent --as-host I -- PROGRAM ARGS...` runs a program as host i (mpirun itself, in host 0).
std::string write_namespace_agent(const testbed::TestbedOptions& network,
                                  const std::filesystem::path& dir) {
  const auto path = dir / "netns-agent";
  const auto sessions = (dir / "orte-h").string();
  std::ofstream(path) << "#!/bin/sh\n"
                      << "if [ \"$1\" = --as-host ]; then\n"
                      << "  n=\"$2\"; shift 2\n"
                      << "  hostname " << network.prefix << "-h$n || exit 1\n"
                      << "  if [ \"$1\" = -- ]; then shift; exec \"$@\"; fi\n"
                      << "  mkdir -p '" << sessions << "'$n\n"
                      << "  exec env OMPI_MCA_orte_tmpdir_base='" << sessions
                      << "'$n /bin/sh -c \"$*\"\n"
                      << "fi\n"
                      << "host=\"$1\"; shift\n"
                      << "n=$(( ${host##*.} - 1 ))\n"
                      << "exec " << testbed::find_program("ip") << " netns exec " << network.prefix
                      << "-h$n " << testbed::find_program("unshare")
                      << " --uts \"$0\" --as-host $n \"$@\"\n";
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path.string();
}

nlohmann::json summarize(const TrainBenchOptions& o, const std::vector<nlohmann::json>& reports,
                         const std::vector<nlohmann::json>& server_reports) {
  const std::size_t iters = reports.front()["seconds"].size();
  std::vector<double> times(iters, 0.0);
  double delivered = 0;
  double checked = 0;
  double wrong = 0;
  for (const auto& report : reports) {
    for (std::size_t i = 0; i < iters; ++i) {
      times[i] = std::max(times[i], report["seconds"][i].get<double>());
      delivered += report["delivered"][i].get<double>();
    }
    checked += report["checked"].get<double>();
    wrong += report["wrong"].get<double>();
  }
  nlohmann::json s;
  s["system"] = o.label();
  s["wire"] = to_string(o.wire);
  s["model"] = o.model;
  s["ranks"] = o.ranks;
  s["iterations"] = iters;
  s["iter_p50_ms"] = percentile(times, 0.5) * 1e3;
  s["iter_p99_ms"] = percentile(times, 0.99) * 1e3;
  double total = 0;
  for (const double t : times) total += t;
  s["iter_mean_ms"] = total / static_cast<double>(iters) * 1e3;
  s["compute_ms"] = reports.front()["compute_seconds"].get<double>() * 1e3;
  s["gradient_mib"] = reports.front()["floats"].get<double>() * 4 / (1 << 20);
  s["buckets"] = reports.front()["buckets"];
  s["delivered_fraction"] = delivered / static_cast<double>(iters * reports.size());
  s["inexact_fraction"] = checked > 0 ? wrong / checked : 0.0;
  s["loss_budget"] = is_dlcp_system(o.system) && !o.no_loss_tolerance ? o.loss_budget : 0.0;
  s["iteration_ms"] = nlohmann::json::array();
  for (const double t : times) s["iteration_ms"].push_back(t * 1e3);
  if (reports.front().contains("rate_reports")) {
    // The workers' senders, warm-up included: how often a rate report saw congestion loss.
    std::uint64_t rate_reports = 0;
    std::uint64_t congested = 0;
    for (const auto& report : reports) {
      rate_reports += report["rate_reports"].get<std::uint64_t>();
      congested += report["rate_reports_congested"].get<std::uint64_t>();
    }
    s["rate_reports"] = rate_reports;
    s["rate_reports_congested"] = congested;
  }
  if (reports.front().contains("settlement")) {
    // Every receiver's settlements, the servers' included, warm-up included.
    std::vector<nlohmann::json> settlements;
    for (const auto& report : reports) settlements.push_back(report["settlement"]);
    for (const auto& report : server_reports) settlements.push_back(report["settlement"]);
    s["settlement"] = summarize_settlement(settlements);
  }
  return s;
}

}  // namespace

std::string TrainBenchOptions::label() const {
  std::string text = wire_label(system, wire);
  if (no_spray) text += " no-spray";
  if (no_priority) text += " no-priority";
  if (no_loss_tolerance) text += " no-loss-tolerance";
  if (no_parity) text += " no-parity";
  if (topology != "auto") text += " " + topology;
  return text;
}

std::vector<std::string> train_bench_flags(const TrainBenchOptions& o) {
  std::vector<std::string> flags = {"--system",
                                    o.system,
                                    "--model",
                                    o.model,
                                    "--ranks",
                                    std::to_string(o.ranks),
                                    "--servers",
                                    std::to_string(o.servers),
                                    "--iters",
                                    std::to_string(o.iters),
                                    "--warmup",
                                    std::to_string(o.warmup),
                                    "--gradient-scale",
                                    fmt(o.plan.gradient_scale, 9),
                                    "--compute-ms",
                                    fmt(o.plan.compute_ms),
                                    "--bucket-mib",
                                    fmt(o.plan.bucket_mib),
                                    "--loss-budget",
                                    fmt(o.loss_budget),
                                    "--drop",
                                    fmt(o.drop),
                                    "--concurrent",
                                    std::to_string(o.concurrent),
                                    "--deadline-ms",
                                    std::to_string(o.deadline_ms),
                                    "--control-rto-min-us",
                                    std::to_string(o.control_rto_min_us),
                                    "--parity",
                                    std::to_string(o.no_parity ? 0 : o.parity_members),
                                    "--wire",
                                    to_string(o.wire),
                                    "--topology",
                                    o.topology};
  if (o.no_spray) flags.push_back("--no-spray");
  if (o.no_priority) flags.push_back("--no-priority");
  if (o.no_loss_tolerance) flags.push_back("--no-loss-tolerance");
  return flags;
}

nlohmann::json run_train_bench(const TrainBenchOptions& o, const testbed::TestbedOptions* network) {
  check_options(o, network);
  const auto store_dir =
      std::filesystem::temp_directory_path() /
      ("dlcp-train-" + std::to_string(::getpid()) + "-" + o.system + "-" + to_string(o.wire));
  std::filesystem::remove_all(store_dir);
  std::filesystem::create_directories(store_dir);
  const int servers = o.system == "dlcp-ps" ? (o.servers > 0 ? o.servers : o.ranks) : 0;
  if (o.verbose) {
    std::cerr << "bench train: " << o.label() << ", " << o.model << ", " << o.ranks << " workers"
              << (servers ? " + " + std::to_string(servers) + " servers" : "") << " on "
              << (network ? std::to_string(network->hosts) + " testbed hosts" : "loopback")
              << std::endl;
  }
  // mpirun's daemons sometimes fail to start across namespaces (an ORTE start-up error before
  // any rank runs); one retry keeps that out of the measurements.
  const int attempts = o.system == "mpi" && network != nullptr ? 2 : 1;
  for (int attempt = 1;; ++attempt) {
    ChildProcesses children;
    std::vector<std::string> rank_argv = {bench_executable(), "train-rank"};
    for (auto& flag : train_bench_flags(o)) rank_argv.push_back(flag);
    if (o.system == "mpi" && network != nullptr) {
      // mpirun runs in host 0; an rsh agent starts each host's daemon inside its namespace.
      MpiHosts hosts;
      hosts.rsh_agent = write_namespace_agent(*network, store_dir);
      hosts.interfaces = "10.0.0.0/24";  // the host addresses: TCP through the fabric's ECMP
      for (int rank = 0; rank < o.ranks; ++rank) {
        hosts.addresses.push_back(
            testbed::host_address(testbed::host_of_process(rank, o.ranks, network->hosts)));
      }
      // Several ranks on a host talk through shared memory, as Open MPI does by default.
      auto argv = mpirun_command(
          o.ranks, {"DLCP_TRAIN_STORE"}, &hosts,
          o.ranks > network->hosts ? MpiFabric::kTcpAndSharedMemory : MpiFabric::kTcp);
      argv.insert(
          argv.begin(),
          {testbed::find_program("ip"), "netns", "exec", testbed::host_namespace(*network, 0),
           testbed::find_program("unshare"), "--uts", hosts.rsh_agent, "--as-host", "0", "--"});
      argv.insert(argv.end(), rank_argv.begin(), rank_argv.end());
      children.start(argv, {{"DLCP_TRAIN_STORE", store_dir.string()}}, "mpirun");
    } else if (o.system == "mpi") {
      auto argv = mpirun_command(o.ranks, {"DLCP_TRAIN_STORE"});
      argv.insert(argv.end(), rank_argv.begin(), rank_argv.end());
      children.start(argv, {{"DLCP_TRAIN_STORE", store_dir.string()}}, "mpirun");
    } else {
      for (int process = 0; process < o.ranks + servers; ++process) {
        const Placement p = place(network, process, o.ranks);
        std::vector<std::string> argv = rank_argv;
        if (!p.ns.empty()) {
          argv.insert(argv.begin(), {testbed::find_program("ip"), "netns", "exec", p.ns});
        }
        children.start(argv,
                       {{"DLCP_TRAIN_STORE", store_dir.string()},
                        {"DLCP_TRAIN_RANK", std::to_string(process)},
                        {"DLCP_TRAIN_BIND_HOST", p.bind_host},
                        {"DLCP_TRAIN_SPINE_ADDRESSES", p.spine_addresses},
                        {"DLCP_TRAIN_RECEIVE_RATE", fmt(p.receive_rate)}},
                       (process < o.ranks ? "rank " : "server rank ") + std::to_string(process));
      }
    }
    const std::string failure = children.wait_all(std::chrono::seconds(o.timeout_s));
    if (failure.empty()) break;
    if (attempt < attempts) {
      if (o.verbose) std::cerr << "  " << o.label() << ": " << failure << ", retrying" << std::endl;
      continue;
    }
    std::filesystem::remove_all(store_dir);
    throw Error(ErrorCode::kAborted, -1, "bench train (" + o.label() + "): " + failure);
  }
  std::vector<nlohmann::json> reports;
  std::vector<nlohmann::json> server_reports;
  {
    FileStore results(store_dir.string());
    for (int rank = 0; rank < o.ranks; ++rank) {
      reports.push_back(nlohmann::json::parse(results.get("train/result/" + std::to_string(rank))));
    }
    for (int rank = o.ranks; rank < o.ranks + servers; ++rank) {
      server_reports.push_back(
          nlohmann::json::parse(results.get("train/server/" + std::to_string(rank))));
    }
  }
  std::filesystem::remove_all(store_dir);
  auto summary = summarize(o, reports, server_reports);
  if (o.verbose) {
    std::cerr << "  " << o.label() << ": iteration p50 "
              << fmt(summary["iter_p50_ms"].get<double>(), 1) << " ms, p99 "
              << fmt(summary["iter_p99_ms"].get<double>(), 1) << " ms (compute "
              << fmt(summary["compute_ms"].get<double>(), 1) << " ms), delivered "
              << fmt(summary["delivered_fraction"].get<double>() * 100, 3) << "%" << std::endl;
    if (summary.contains("settlement")) {
      std::cerr << "  " << describe_settlement(summary["settlement"]) << std::endl;
    }
  }
  return summary;
}

}  // namespace dlcp::tools
