#include "bench_pingpong.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <exception>
#include <iostream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <thread>
#include <vector>

#include "dlcp/communicator.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "summary.hpp"
#include "thread_counter.hpp"

namespace dlcp::tools {
namespace {

constexpr int kInitiator = 0;
constexpr int kEchoer = 1;
constexpr std::uint32_t kTag = 1;

struct InitiatorRun {
  std::vector<double> round_trip_us;
  std::uint64_t wrong_replies = 0;
  int threads_before = 0;
  int threads_after = 0;
  std::uint64_t threads_started = 0;
};

// Rank 0: sends each ping, waits for its echo, and times the round trip.
InitiatorRun initiate(Communicator& comm, std::size_t floats, const PingpongBenchOptions& o,
                      const CollectiveOptions& options) {
  std::vector<float> ping(floats);
  std::iota(ping.begin(), ping.end(), 1.0f);
  std::vector<float> reply(floats);
  InitiatorRun run;
  run.round_trip_us.reserve(static_cast<std::size_t>(o.iters));
  std::uint64_t started_before = 0;
  for (int trip = -o.warmup; trip < o.iters; ++trip) {
    if (trip == 0) {
      run.threads_before = threads_running();
      started_before = threads_started_so_far();
    }
    // Stamp the round trip so that a stale or misrouted reply shows up as a wrong one.
    ping.front() = static_cast<float>(trip);
    const auto start = std::chrono::steady_clock::now();
    // The reply's receive is posted first, so that it is waiting when the echo arrives.
    const Work reply_arrived = comm.recv(reply, kEchoer, kTag, options);
    comm.send(ping, kEchoer, kTag, options).wait();
    reply_arrived.wait();
    const auto stop = std::chrono::steady_clock::now();
    if (trip < 0) continue;
    run.round_trip_us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
    run.wrong_replies += std::equal(ping.begin(), ping.end(), reply.begin()) ? 0 : 1;
  }
  run.threads_after = threads_running();
  run.threads_started = threads_started_so_far() - started_before;
  return run;
}

// Rank 1: sends every message back as it came.
void echo(Communicator& comm, std::size_t floats, int round_trips,
          const CollectiveOptions& options) {
  // Two buffers, so that the next ping's receive is posted before this echo goes out: the ping
  // then never arrives ahead of its receive (an early arrival takes the buffered path).
  std::array<std::vector<float>, 2> buffers{std::vector<float>(floats), std::vector<float>(floats)};
  Work ping_arrived = comm.recv(buffers[0], kInitiator, kTag, options);
  for (int trip = 0; trip < round_trips; ++trip) {
    ping_arrived.wait();
    const std::vector<float>& ping = buffers[trip % 2];
    if (trip + 1 < round_trips) {
      ping_arrived = comm.recv(buffers[(trip + 1) % 2], kInitiator, kTag, options);
    }
    comm.send(ping, kInitiator, kTag, options).wait();
  }
}

}  // namespace

nlohmann::json run_pingpong_bench(const PingpongBenchOptions& o) {
  const auto floats = static_cast<std::size_t>(o.kib * 1024 / sizeof(float));
  if (floats == 0) {
    throw Error(ErrorCode::kInvalidArgument, -1, "--kib must give at least one float (4 bytes)");
  }
  CollectiveOptions options;
  options.deadline = std::chrono::milliseconds(o.deadline_ms);

  HashStore store;
  InitiatorRun run;
  // The first failure is the cause; the other rank then fails too, by a deadline.
  std::mutex failure_mutex;
  std::exception_ptr first_failure;
  const auto run_rank = [&](int rank) {
    try {
      // Joining is collective, hence one thread per rank.
      auto comm = Communicator::create(store, rank, 2, {});
      if (rank == kInitiator) {
        run = initiate(*comm, floats, o, options);
      } else {
        echo(*comm, floats, o.warmup + o.iters, options);
      }
      // Neither communicator goes away while the other's last transfer is in flight.
      comm->barrier();
    } catch (...) {
      std::lock_guard lock(failure_mutex);
      if (!first_failure) first_failure = std::current_exception();
    }
  };
  std::thread echo_rank(run_rank, kEchoer);
  run_rank(kInitiator);
  echo_rank.join();
  if (first_failure) std::rethrow_exception(first_failure);

  const double mean_us = std::accumulate(run.round_trip_us.begin(), run.round_trip_us.end(), 0.0) /
                         static_cast<double>(run.round_trip_us.size());
  nlohmann::json out;
  out["transport"] = "dlcp";
  out["bytes"] = floats * sizeof(float);
  out["iters"] = o.iters;
  out["warmup"] = o.warmup;
  out["round_trips"] = run.round_trip_us.size();
  out["p50_us"] = percentile(run.round_trip_us, 0.5);
  out["p99_us"] = percentile(run.round_trip_us, 0.99);
  out["mean_us"] = mean_us;
  out["wrong_replies"] = run.wrong_replies;
  out["threads_before"] = run.threads_before;
  out["threads_after"] = run.threads_after;
  out["threads_started"] = run.threads_started;
  if (o.verbose) {
    std::ostringstream line;
    line.setf(std::ios::fixed);
    line.precision(1);
    line << "bench pingpong: " << floats * sizeof(float) << " bytes, " << run.round_trip_us.size()
         << " round trips: p50 " << out["p50_us"].get<double>() << " us, p99 "
         << out["p99_us"].get<double>() << " us, mean " << mean_us << " us; threads "
         << run.threads_before << " -> " << run.threads_after << ", " << run.threads_started
         << " started in the timed loop";
    std::cerr << line.str() << std::endl;
  }
  return out;
}

}  // namespace dlcp::tools
