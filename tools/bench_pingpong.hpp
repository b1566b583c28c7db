// `dlcp-bench pingpong`: round-trip latency of the Communicator's point-to-point send and recv.
// Two ranks, each a thread of this process with its own Communicator over loopback: rank 0 sends
// a message, rank 1 sends it back, rank 0 times each round trip.
#pragma once

#include <nlohmann/json.hpp>

namespace dlcp::tools {

struct PingpongBenchOptions {
  double kib = 4;
  int iters = 2000;
  int warmup = 200;
  int deadline_ms = 30000;
  bool verbose = true;
};

// Runs both ranks and returns the summary; throws dlcp::Error when a rank fails.
nlohmann::json run_pingpong_bench(const PingpongBenchOptions& options);

}  // namespace dlcp::tools
