// `dlcp bench allreduce-rank`: one rank of the all-reduce benchmark. Every iteration refills the
// buffer, synchronises with a barrier, times one all-reduce (or reduce-scatter), and checks the
// result (or this rank's shard of it) against the exact sum; the report goes to the launcher's
// store.
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>

#include "allocation_counter.hpp"
#include "baseline_gloo.hpp"
#include "baseline_mpi.hpp"
#include "bench_allreduce.hpp"
#include "bench_inputs.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "settlement_report.hpp"

namespace dlcp::tools {
namespace {

struct Hooks {
  // Runs the collective on the refilled input; `result` then holds the outcome to check.
  std::function<CollectiveResult(std::span<float>)> collective;
  std::function<void()> barrier;
  std::span<float> result{};  // empty: the input, reduced in place
  std::size_t result_first_index = 0;
};

int env_int(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                std::string("allreduce-rank is started by `dlcp bench allreduce`: ") + name +
                    " is not set");
  }
  return std::stoi(value);
}

std::pair<std::string, std::uint16_t> store_address() {
  const char* value = std::getenv("DLCP_BENCH_STORE");
  if (value == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "allreduce-rank is started by `dlcp bench allreduce`: DLCP_BENCH_STORE is not set");
  }
  const std::string address = value;
  const auto colon = address.rfind(':');
  return {address.substr(0, colon),
          static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)))};
}

// Runs warm-up and timed iterations and returns this rank's report.
nlohmann::json measure(const AllreduceBenchOptions& o, int rank, int workers,
                       std::span<float> values, const Hooks& hooks) {
  nlohmann::json report;
  report["seconds"] = nlohmann::json::array();
  report["hashes"] = nlohmann::json::array();
  report["allocations"] = nlohmann::json::array();
  report["allocation_bytes"] = nlohmann::json::array();
  double max_rel_error = 0;
  double sum_error = 0;
  double sum_abs_exact = 0;
  std::uint64_t wrong = 0;
  std::uint64_t entries = 0;
  std::uint64_t expected = 0;
  std::uint64_t received = 0;
  std::uint64_t broadcast_missing = 0;
  const bool average = o.op == "average";
  for (int it = 0; it < o.warmup + o.iters; ++it) {
    fill_bench_input(values, rank, it);
    hooks.barrier();
    const AllocationCount before = allocations_so_far();
    const auto start = std::chrono::steady_clock::now();
    const CollectiveResult result = hooks.collective(values);
    const auto stop = std::chrono::steady_clock::now();
    const AllocationCount after = allocations_so_far();
    if (it < o.warmup) continue;
    const std::span<float> outcome = hooks.result.empty() ? values : hooks.result;
    if (average) {
      for (auto& v : outcome) v *= static_cast<float>(workers);
    }
    const ErrorStats error = compare_with_exact_sum(outcome, workers, it, hooks.result_first_index);
    report["seconds"].push_back(std::chrono::duration<double>(stop - start).count());
    report["hashes"].push_back(hash_bytes(outcome));
    report["allocations"].push_back(after.calls - before.calls);
    report["allocation_bytes"].push_back(after.bytes - before.bytes);
    if (error.max_abs_exact > 0) {
      max_rel_error = std::max(max_rel_error, error.max_abs_error / error.max_abs_exact);
    }
    sum_error += error.sum_error;
    sum_abs_exact += error.sum_abs_exact;
    wrong += error.wrong_entries;
    entries += error.count;
    expected += result.contributions_expected;
    received += result.contributions_received;
    broadcast_missing += result.broadcast_entries_missing;
  }
  report["max_rel_error"] = max_rel_error;
  report["sum_error"] = sum_error;
  report["sum_abs_exact"] = sum_abs_exact;
  report["wrong_entries"] = wrong;
  report["entries"] = entries;
  report["contributions_expected"] = expected;
  report["contributions_received"] = received;
  report["broadcast_entries_missing"] = broadcast_missing;
  return report;
}

CommunicatorOptions communicator_options(const AllreduceBenchOptions& o, int rank) {
  CommunicatorOptions options;
  options.topology = parse_topology(o.topology);
  if (o.ranks_per_host > 0) {
    options.host_id = "bench-host-" + std::to_string(rank / o.ranks_per_host);
  }
  options.algorithm = parse_algorithm(o.algo);
  options.servers = o.algo == "ps" ? o.servers : 0;
  options.segment_bytes = static_cast<std::size_t>(o.segment_mib * (1 << 20));
  options.concurrent_collectives = o.concurrent;
  options.transport.paths = o.paths;
  options.transport.mtu = o.mtu;
  options.transport.local_path = o.local_path;
  options.transport.inject.drop_rate = o.drop;
  options.transport.inject.mean_burst_length = o.burst;
  return options;
}

}  // namespace

int run_allreduce_bench_rank(const AllreduceBenchOptions& o, int* argc, char*** argv) {
  std::vector<float> values(bench_input_floats(o));
  const auto [store_host, store_port] = store_address();

  if (o.algo == "mpi" || o.algo == "mpi-shm") {
    MpiSession mpi(argc, argv);
    TcpStore store(store_host, store_port);
    const Hooks hooks{[&](std::span<float> v) {
                        mpi.allreduce(v);
                        return CollectiveResult{};
                      },
                      [&] { mpi.barrier(); }};
    const auto report = measure(o, mpi.rank(), mpi.size(), values, hooks);
    store.set("bench/result/" + o.algo + "/" + std::to_string(mpi.rank()), report.dump());
    if (mpi.rank() == 0) store.set("bench/variants", nlohmann::json::array({o.algo}).dump());
    mpi.barrier();
    return 0;
  }

  const int rank = env_int("DLCP_BENCH_RANK");
  TcpStore store(store_host, store_port);
  if (o.algo == "gloo") {
    GlooAllreduce gloo(store, rank, o.ranks, "127.0.0.1");
    const auto variants = GlooAllreduce::algorithms();
    const bool fp16 = o.wire == WireDtype::kFloat16;
    for (const auto& variant : variants) {
      const Hooks hooks{[&](std::span<float> v) {
                          if (!fp16) {
                            gloo.allreduce(v, variant);
                            return CollectiveResult{};
                          }
                          // fp16_compress_hook leaves the average; this benchmark's float32
                          // paths leave the sum, so multiply back (timed, as the division
                          // the float32 path skips would be).
                          gloo.allreduce_fp16_average(v, variant);
                          const auto ranks = static_cast<float>(o.ranks);
                          for (auto& value : v) value *= ranks;
                          return CollectiveResult{};
                        },
                        [&] { gloo.barrier(); }};
      const auto report = measure(o, rank, o.ranks, values, hooks);
      store.set("bench/result/" + variant + "/" + std::to_string(rank), report.dump());
    }
    if (rank == 0) store.set("bench/variants", nlohmann::json(variants).dump());
    gloo.barrier();
    return 0;
  }

  const int world = o.ranks + (o.algo == "ps" ? o.servers : 0);
  auto comm = Communicator::create(store, rank, world, communicator_options(o, rank));
  if (comm->is_server()) {
    comm->serve();
    // The servers receive the pushes: their settlements count as much as the workers'.
    store.set("bench/server/" + o.algo + "/" + std::to_string(rank),
              nlohmann::json{{"settlement", settlement_counters({}, comm->counters())}}.dump());
    return 0;
  }
  CollectiveOptions collective;
  collective.loss_budget = o.loss_bound;
  collective.broadcast_loss_budget = o.broadcast_loss_bound;
  collective.op = o.op == "average" ? ReduceOp::kAverage : ReduceOp::kSum;
  collective.aggregation =
      o.aggregation == "zero-fill" ? Aggregation::kZeroFill : Aggregation::kUnbiased;
  collective.deadline = std::chrono::milliseconds(o.deadline_ms);
  collective.wire = o.wire;
  Hooks hooks{[&](std::span<float> v) { return comm->allreduce(v, collective).wait(); },
              [&] { comm->barrier(); }};
  std::vector<float> shard;
  if (o.collective == "reduce_scatter") {
    shard.resize(values.size() / static_cast<std::size_t>(o.ranks));
    hooks.collective = [&](std::span<float> v) {
      return comm->reduce_scatter(v, shard, collective).wait();
    };
    hooks.result = shard;
    hooks.result_first_index = static_cast<std::size_t>(rank) * shard.size();
  }
  auto report = measure(o, rank, o.ranks, values, hooks);
  report["settlement"] = settlement_counters({}, comm->counters());  // warm-up included
  store.set("bench/result/" + o.algo + "/" + std::to_string(rank), report.dump());
  if (rank == 0) store.set("bench/variants", nlohmann::json::array({o.algo}).dump());
  comm->barrier();
  return 0;
}

}  // namespace dlcp::tools
