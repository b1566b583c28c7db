// `dlcp bench train-rank`: one worker (or parameter server) of `dlcp bench train`. It emulates
// training iterations over the chosen system, checks a sample of every reduced bucket against the
// exact sum, and leaves its report in the launcher's file store.
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "baseline_gloo.hpp"
#include "baseline_mpi.hpp"
#include "bench_train.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "settlement_report.hpp"
#include "train_sync.hpp"
#include "workload/model_profile.hpp"

namespace dlcp::tools {
namespace {

constexpr std::size_t kCheckStride = 97;  // entries checked: every 97th

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}

std::string require_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) {
    throw Error(
        ErrorCode::kInvalidArgument, -1,
        std::string("train-rank is started by `dlcp bench train`: ") + name + " is not set");
  }
  return value;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  std::string part;
  while (std::getline(stream, part, ',')) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// Integer-valued gradients (exact in any summation order); two variants alternate by iteration
// so that a stale result cannot pass the check.
float gradient_value(std::size_t index, int rank, int variant) {
  const auto mixed = static_cast<std::uint32_t>(index) * 2654435761u +
                     static_cast<std::uint32_t>(rank) * 40503u +
                     static_cast<std::uint32_t>(variant) * 977u;
  return static_cast<float>(static_cast<int>((mixed >> 7) % 17) - 8);
}

struct Patterns {
  std::vector<float> own[2];
  std::vector<float> sum[2];  // only at checked entries
};

Patterns make_patterns(std::size_t floats, int rank, int workers) {
  Patterns p;
  for (int v = 0; v < 2; ++v) {
    p.own[v].resize(floats);
    p.sum[v].assign(floats / kCheckStride + 1, 0.0f);
    for (std::size_t i = 0; i < floats; ++i) p.own[v][i] = gradient_value(i, rank, v);
    for (std::size_t i = 0; i < floats; i += kCheckStride) {
      for (int r = 0; r < workers; ++r) p.sum[v][i / kCheckStride] += gradient_value(i, r, v);
    }
  }
  return p;
}

}  // namespace

int run_train_bench_rank(const TrainBenchOptions& o, int* argc, char*** argv) {
  const auto plan = workload::make_iteration_plan(workload::load_model(o.model), o.plan);
  const std::string bind_host = env_or("DLCP_TRAIN_BIND_HOST", "127.0.0.1");
  const auto spine_addresses = split(env_or("DLCP_TRAIN_SPINE_ADDRESSES", ""));
  FileStore store(require_env("DLCP_TRAIN_STORE"));

  std::unique_ptr<MpiSession> mpi;
  std::unique_ptr<GlooAllreduce> gloo;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<workload::GradientSync> sync;
  std::function<void()> barrier;
  int rank = 0;
  if (o.system == "mpi") {
    mpi = std::make_unique<MpiSession>(argc, argv);
    rank = mpi->rank();
    sync = std::make_unique<QueuedSync>([&](std::span<float> v) { mpi->allreduce(v); });
    barrier = [&] { mpi->barrier(); };
  } else if (o.system == "gloo") {
    rank = std::stoi(require_env("DLCP_TRAIN_RANK"));
    gloo = std::make_unique<GlooAllreduce>(store, rank, o.ranks, bind_host);
    // gloo::allreduce's ring: what PyTorch's gloo process group runs for CPU tensors.
    if (o.wire == WireDtype::kFloat16) {
      sync = std::make_unique<QueuedSync>([&](std::span<float> v) {
        // fp16_compress_hook leaves the average; the check and the other systems expect the
        // sum, so multiply back (in place of the division by the world size that DDP's float32
        // path would make).
        gloo->allreduce_fp16_average(v, "new_ring");
        const auto ranks = static_cast<float>(o.ranks);
        for (auto& value : v) value *= ranks;
      });
    } else {
      sync =
          std::make_unique<QueuedSync>([&](std::span<float> v) { gloo->allreduce(v, "new_ring"); });
    }
    barrier = [&] { gloo->barrier(); };
  } else {
    rank = std::stoi(require_env("DLCP_TRAIN_RANK"));
    CommunicatorOptions options;
    options.algorithm = o.system == "dlcp-ps"     ? Algorithm::kParameterServer
                        : o.system == "dlcp-ring" ? Algorithm::kRing
                                                  : Algorithm::kTranspose;
    const int servers = o.system == "dlcp-ps" ? (o.servers > 0 ? o.servers : o.ranks) : 0;
    options.servers = servers;
    options.concurrent_collectives = o.concurrent;
    options.topology = parse_topology(o.topology);
    options.transport.bind_host = bind_host;
    options.transport.inject.drop_rate = o.drop;
    options.transport.rate.receive_rate = std::stod(env_or("DLCP_TRAIN_RECEIVE_RATE", "0"));
    options.transport.control_rto_min = std::chrono::microseconds(o.control_rto_min_us);
    options.transport.parity_members = o.parity_members;
    if (o.no_spray) {
      options.transport.paths = 1;  // bound to the host address: ECMP picks one spine per peer
    } else if (!spine_addresses.empty()) {
      options.transport.local_addresses = spine_addresses;
      options.transport.paths = 2 * static_cast<int>(spine_addresses.size());
    }
    comm = Communicator::create(store, rank, o.ranks + servers, options);
    if (comm->is_server()) {
      comm->serve();
      // The servers receive the pushes: their settlements count as much as the workers'.
      store.set("train/server/" + std::to_string(rank),
                nlohmann::json{{"settlement", settlement_counters({}, comm->counters())}}.dump());
      return 0;
    }
    DlcpSyncOptions sync_options;
    sync_options.num_layers = static_cast<int>(plan.layers.size());
    sync_options.loss_budget = o.no_loss_tolerance ? 0.0 : o.loss_budget;
    sync_options.priority = !o.no_priority;
    sync_options.deadline = std::chrono::milliseconds(o.deadline_ms);
    sync_options.wire = o.wire;
    sync = std::make_unique<DlcpSync>(*comm, sync_options);
    barrier = [&] { comm->barrier(); };
  }

  const Patterns patterns = make_patterns(plan.total_floats, rank, o.ranks);
  std::uint64_t checked = 0;
  std::uint64_t wrong = 0;
  workload::EmulatorHooks hooks;
  hooks.fill = [&](int it, std::size_t b, std::span<float> values) {
    const auto& own = patterns.own[it % 2];
    std::memcpy(values.data(), own.data() + plan.buckets[b].offset, values.size_bytes());
  };
  hooks.check = [&](int it, std::size_t b, std::span<float> values) {
    const std::size_t offset = plan.buckets[b].offset;
    const std::size_t first = (offset + kCheckStride - 1) / kCheckStride * kCheckStride;
    for (std::size_t i = first; i < offset + values.size(); i += kCheckStride) {
      ++checked;
      if (values[i - offset] != patterns.sum[it % 2][i / kCheckStride]) ++wrong;
    }
  };
  workload::RealTime time;
  workload::TrainingEmulator emulator(plan, *sync, time, hooks);
  barrier();
  const auto records = emulator.run(o.warmup + o.iters);

  nlohmann::json report;
  report["seconds"] = nlohmann::json::array();
  report["delivered"] = nlohmann::json::array();
  for (std::size_t i = static_cast<std::size_t>(o.warmup); i < records.size(); ++i) {
    report["seconds"].push_back(records[i].seconds);
    report["delivered"].push_back(records[i].delivered_fraction);
  }
  report["compute_seconds"] = plan.compute_s;
  report["floats"] = plan.total_floats;
  report["buckets"] = plan.buckets.size();
  report["checked"] = checked;
  report["wrong"] = wrong;
  if (comm) {
    const TransportCounters counters = comm->counters();
    report["datagrams_sent"] = counters.datagrams_sent;
    report["datagrams_received"] = counters.datagrams_received;
    report["rate_reports"] = counters.rate_reports;
    report["rate_reports_congested"] = counters.rate_reports_congested;
    report["settlement"] = settlement_counters({}, counters);  // warm-up included
  }
  store.set("train/result/" + std::to_string(rank), report.dump());
  barrier();
  sync.reset();
  return 0;
}

}  // namespace dlcp::tools
