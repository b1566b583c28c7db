// `dlcp bench allreduce`: N local rank processes (plus servers for ps) run one all-reduce
// implementation (or dlcp's reduce-scatter) on the same buffers; the launcher gathers every rank's
// timings, errors and result hashes through a TCP store and prints one summary (JSON on the last
// line with --json).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dlcp/options.hpp"

namespace dlcp::tools {

struct AllreduceBenchOptions {
  std::string algo = "ring";  // ring | tar | ps | gloo | mpi
  // allreduce | reduce_scatter (dlcp's, the transpose's reduce half: --algo ring or tar alike;
  // each rank keeps its 1/ranks shard of the same-size buffer).
  std::string collective = "allreduce";
  int ranks = 2;
  int servers = 1;  // ps only
  double mib = 64;
  int iters = 20;
  int warmup = 3;
  double drop = 0;        // injected receive-path loss (dlcp only)
  double burst = 1;       // mean loss burst length
  double loss_bound = 0;  // reduce-side budget (dlcp only)
  double broadcast_loss_bound = 0;
  std::string op = "sum";  // sum | average (dlcp); Gloo and MPI always sum
  // How the values travel: any dtype for dlcp (CollectiveOptions::wire); fp16 for Gloo runs
  // PyTorch's fp16_compress_hook (GlooAllreduce::allreduce_fp16_average); MPI float32 only.
  WireDtype wire = WireDtype::kFloat32;
  std::string aggregation = "unbiased";  // unbiased | zero-fill
  int paths = 4;
  int mtu = 0;
  // dlcp's ranks exchange through shared memory (TransportOptions::local_path); off: over UDP.
  bool local_path = true;
  // dlcp: flat or hierarchical collectives (CommunicatorOptions::topology): auto | flat |
  // hierarchical.
  std::string topology = "auto";
  // dlcp: give consecutive groups of this many ranks one host id (CommunicatorOptions::host_id),
  // as if they ran on separate hosts; 0 = the host every rank detects (this one).
  int ranks_per_host = 0;
  double segment_mib = 4;
  int concurrent = 2;
  int deadline_ms = 30000;
  int timeout_s = 600;
  bool verbose = true;
};

// Floats in each rank's input buffer: --mib of them, for a reduce-scatter rounded down to a
// multiple of --ranks.
std::size_t bench_input_floats(const AllreduceBenchOptions& options);

// Launches the ranks and returns the summary; throws dlcp::Error when a rank fails.
nlohmann::json run_allreduce_bench(const AllreduceBenchOptions& options);

// The hidden per-rank entry point (`dlcp bench allreduce-rank ...`); returns the exit status.
int run_allreduce_bench_rank(const AllreduceBenchOptions& options, int* argc, char*** argv);

// The command-line flags that reproduce `options` for a rank process.
std::vector<std::string> allreduce_bench_flags(const AllreduceBenchOptions& options);

}  // namespace dlcp::tools
