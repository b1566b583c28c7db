// `dlcp bench p2p`: one sender and one receiver over loopback, dlcp against one TCP connection.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dlcp::tools {

struct P2pBenchOptions {
  double mib = 64;
  int iters = 10;
  int warmup = 1;
  double drop = 0;
  double burst = 1;
  double loss_bound = 0;
  int paths = 4;
  int mtu = 0;
  int deadline_ms = 30000;
  bool packet_mac = false;  // authenticate every data packet (TransportOptions::packet_mac)
  // The two transports share a process, so on one host: off measures the UDP path (the point of
  // this benchmark), on the shared-memory path (TransportOptions::local_path).
  bool local_path = false;
  std::string baseline = "none";  // none | tcp | only-tcp
  bool verbose = true;
};

// Runs dlcp (unless only-tcp) and the TCP baseline (if asked) and returns the summary.
nlohmann::json run_p2p_bench(const P2pBenchOptions& options);

}  // namespace dlcp::tools
