// The plain-TCP baseline: the same bytes over one loopback TCP connection, one message at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlcp::tools {

struct TcpRun {
  std::vector<double> times_ms;  // timed messages only
  std::uint64_t data_errors = 0;
  double sender_cpu = 0;
  double receiver_cpu = 0;
};

TcpRun run_tcp_baseline(std::size_t floats, int warmup, int iters);

}  // namespace dlcp::tools
