#include "bench_p2p.hpp"

#include <cmath>
#include <cstring>
#include <iostream>
#include <random>
#include <thread>
#include <vector>

#include "common/time.hpp"
#include "cpu_time.hpp"
#include "dlcp/dlcp.hpp"
#include "settlement_report.hpp"
#include "summary.hpp"
#include "tcp_baseline.hpp"

namespace dlcp::tools {
namespace {

// A float whose bit pattern no sender value has: marks entries the receiver never wrote.
float sentinel() {
  const std::uint32_t bits = 0x7FC0DEADu;  // a quiet NaN with a payload
  float value;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

bool same_bits(float a, float b) {
  return std::memcmp(&a, &b, sizeof(float)) == 0;
}

std::vector<float> random_gradient(std::size_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(count);
  for (auto& value : values) value = normal(rng) * 1e-3f;
  return values;
}

struct DlcpRun {
  std::vector<double> times_ms;
  std::uint64_t completed = 0;
  double max_missing_fraction = 0;
  std::uint64_t protected_missing = 0;
  std::uint64_t data_errors = 0;
  std::uint64_t deadline_errors = 0;
  std::uint64_t other_errors = 0;
  std::uint64_t retransmitted = 0;
  std::uint64_t bound_reached = 0;
  std::uint64_t rounds = 0;
  std::string first_error;
  TransportCounters sender_counters;
  TransportCounters receiver_counters;
  nlohmann::json settlement;  // the receiver's, over the timed iterations
  double sender_cpu = 0;
  double receiver_cpu = 0;
  double seconds = 0;
};

// Checks every entry: those reported missing must still hold the sentinel, all others must equal
// the sender's bits. Returns the number of wrong entries.
std::uint64_t check_entries(const std::vector<float>& sent, const std::vector<float>& got,
                            const std::vector<MissingRange>& missing) {
  std::uint64_t errors = 0;
  std::size_t next = 0;
  std::size_t range = 0;
  const float mark = sentinel();
  while (next < sent.size()) {
    const std::size_t end = range < missing.size() ? missing[range].first : sent.size();
    for (; next < end; ++next) errors += same_bits(sent[next], got[next]) ? 0 : 1;
    if (range < missing.size()) {
      const auto last = static_cast<std::size_t>(missing[range].first + missing[range].count);
      for (; next < last && next < sent.size(); ++next)
        errors += same_bits(got[next], mark) ? 0 : 1;
      ++range;
    }
  }
  return errors;
}

DlcpRun run_dlcp(const P2pBenchOptions& options, std::size_t floats) {
  const std::uint64_t token =
      std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32);
  TransportOptions base;
  base.world_size = 2;
  base.job_token = token;
  base.paths = options.paths;
  base.mtu = options.mtu;
  base.local_path = options.local_path;
  if (options.packet_mac) {
    std::random_device device;
    for (int i = 0; i < 32; ++i) base.job_secret.push_back(static_cast<std::uint8_t>(device()));
    base.packet_mac = true;
  }
  TransportOptions sender_options = base;
  sender_options.rank = 0;
  TransportOptions receiver_options = base;
  receiver_options.rank = 1;
  receiver_options.inject.drop_rate = options.drop;
  receiver_options.inject.mean_burst_length = options.burst;
  receiver_options.inject.seed = 42;

  auto sender = Transport::create(sender_options);
  auto receiver = Transport::create(receiver_options);
  std::thread dial([&] { receiver->connect(0, "127.0.0.1", sender->control_port()); });
  sender->connect(1, "127.0.0.1", receiver->control_port());
  dial.join();

  std::vector<float> sent = random_gradient(floats, 7);
  std::vector<float> got(floats);
  MessageOptions message;
  message.loss_budget = options.loss_bound;
  message.deadline = std::chrono::milliseconds(options.deadline_ms);

  DlcpRun run;
  const double sender_cpu0 = sender->counters().io_thread_cpu_seconds;
  const double receiver_cpu0 = receiver->counters().io_thread_cpu_seconds;
  TransportCounters receiver_before;  // when the timed iterations start
  double main_cpu = 0;
  const auto begin = SteadyClock::now();
  for (int iter = -options.warmup; iter < options.iters; ++iter) {
    const bool timed = iter >= 0;
    if (iter == 0) receiver_before = receiver->counters();
    // Vary the data per iteration so stale packets would show up as data errors.
    for (std::size_t i = 0; i < floats; i += 4093) sent[i] = static_cast<float>(iter) * 1e-3f;
    std::fill(got.begin(), got.end(), sentinel());
    const auto id = static_cast<std::uint64_t>(iter + options.warmup);
    const double cpu0 = thread_cpu_seconds();
    const auto start = SteadyClock::now();
    auto received = receiver->recv(0, id, got, message);
    auto delivered = sender->send(1, id, sent, message);
    main_cpu += thread_cpu_seconds() - cpu0;
    try {
      MessageResult result = received.get();
      const auto end = SteadyClock::now();
      MessageResult sender_view = delivered.get();
      if (!timed) continue;
      run.times_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
      ++run.completed;
      run.max_missing_fraction =
          std::max(run.max_missing_fraction,
                   static_cast<double>(result.stats.entries_missing) / static_cast<double>(floats));
      run.protected_missing += result.stats.protected_missing;
      run.retransmitted += sender_view.stats.packets_retransmitted;
      run.rounds += sender_view.stats.rounds;
      run.bound_reached += result.stats.completion == Completion::kBoundReached ? 1 : 0;
      run.data_errors += check_entries(sent, got, result.missing);
    } catch (const Error& e) {
      if (run.first_error.empty()) run.first_error = e.what();
      (e.code() == ErrorCode::kDeadline ? run.deadline_errors : run.other_errors) += 1;
      try {
        delivered.get();
      } catch (const Error&) {
      }
    }
    if (options.verbose && timed) {
      std::cerr << "\r  dlcp iteration " << iter + 1 << "/" << options.iters << std::flush;
    }
  }
  run.seconds = std::chrono::duration<double>(SteadyClock::now() - begin).count();
  if (options.verbose) std::cerr << "\n";
  run.sender_counters = sender->counters();
  run.receiver_counters = receiver->counters();
  run.sender_cpu = run.sender_counters.io_thread_cpu_seconds - sender_cpu0 + main_cpu;
  run.receiver_cpu = run.receiver_counters.io_thread_cpu_seconds - receiver_cpu0;
  run.settlement = settlement_counters(receiver_before, run.receiver_counters);
  return run;
}

}  // namespace

nlohmann::json run_p2p_bench(const P2pBenchOptions& options) {
  const auto floats = static_cast<std::size_t>(options.mib * 1024 * 1024 / 4);
  if (floats == 0) throw Error(ErrorCode::kInvalidArgument, -1, "--mib must be positive");
  const double bytes = static_cast<double>(floats) * 4.0;
  nlohmann::json out;
  out["bytes"] = static_cast<std::uint64_t>(bytes);
  out["iters"] = options.iters;
  out["drop"] = options.drop;
  out["burst"] = options.burst;
  out["loss_bound"] = options.loss_bound;
  out["paths"] = options.paths;
  out["packet_mac"] = options.packet_mac;
  out["local_path"] = options.local_path;

  if (options.baseline != "only-tcp") {
    const DlcpRun run = run_dlcp(options, floats);
    const double moved_gb = bytes * static_cast<double>(run.completed) / 1e9;
    double timed_seconds = 0;
    for (double t : run.times_ms) timed_seconds += t / 1e3;
    out["transport"] = "dlcp";
    out["goodput_gbps"] = gbps(bytes * static_cast<double>(run.completed), timed_seconds);
    out["p50_ms"] = percentile(run.times_ms, 0.5);
    out["p99_ms"] = percentile(run.times_ms, 0.99);
    out["completed"] = run.completed;
    out["bound_reached"] = run.bound_reached;
    out["max_missing_fraction"] = run.max_missing_fraction;
    out["protected_missing"] = run.protected_missing;
    out["data_errors"] = run.data_errors;
    out["deadline_errors"] = run.deadline_errors;
    out["other_errors"] = run.other_errors;
    if (!run.first_error.empty()) out["first_error"] = run.first_error;
    out["rejected"] = run.receiver_counters.rejected + run.sender_counters.rejected;
    out["retransmitted_packets"] = run.retransmitted;
    out["retransmission_rounds"] = run.rounds;
    out["injected_drops"] = run.receiver_counters.injected_drops;
    out["sender_cpu_s_per_gb"] = moved_gb > 0 ? run.sender_cpu / moved_gb : 0.0;
    out["receiver_cpu_s_per_gb"] = moved_gb > 0 ? run.receiver_cpu / moved_gb : 0.0;
    out["settlement"] = summarize_settlement({run.settlement});
  }
  if (options.baseline == "tcp" || options.baseline == "only-tcp") {
    const TcpRun tcp = run_tcp_baseline(floats, options.warmup, options.iters);
    double timed_seconds = 0;
    for (double t : tcp.times_ms) timed_seconds += t / 1e3;
    const double moved_gb = bytes * static_cast<double>(tcp.times_ms.size()) / 1e9;
    nlohmann::json t;
    t["goodput_gbps"] = gbps(bytes * static_cast<double>(tcp.times_ms.size()), timed_seconds);
    t["p50_ms"] = percentile(tcp.times_ms, 0.5);
    t["p99_ms"] = percentile(tcp.times_ms, 0.99);
    t["completed"] = tcp.times_ms.size();
    t["data_errors"] = tcp.data_errors;
    t["sender_cpu_s_per_gb"] = moved_gb > 0 ? tcp.sender_cpu / moved_gb : 0.0;
    t["receiver_cpu_s_per_gb"] = moved_gb > 0 ? tcp.receiver_cpu / moved_gb : 0.0;
    if (options.baseline == "only-tcp") {
      t["transport"] = "tcp";
      t["bytes"] = out["bytes"];
      t["iters"] = options.iters;
      t["max_missing_fraction"] = 0.0;
      t["protected_missing"] = 0;
      t["deadline_errors"] = 0;
      t["rejected"] = 0;
      return t;
    }
    out["tcp"] = t;
    const double tcp_goodput = t["goodput_gbps"].get<double>();
    out["goodput_ratio_vs_tcp"] =
        tcp_goodput > 0 ? out["goodput_gbps"].get<double>() / tcp_goodput : 0.0;
    const double tcp_p99 = t["p99_ms"].get<double>();
    out["p99_ratio_vs_tcp"] = tcp_p99 > 0 ? out["p99_ms"].get<double>() / tcp_p99 : 0.0;
  }
  return out;
}

}  // namespace dlcp::tools
