// Measuring one-way delay between two namespaces of this machine: a paced UDP probe whose packets
// carry their send time, received with kernel receive timestamps (both sides read the same
// clock), and a paced UDP flood to load a path. Used to measure the long link's accuracy.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace dlcp::testbed {

struct UdpProbeOptions {
  std::string from_netns;
  std::string to_netns;
  std::string to_address;
  int port = 7001;
  double packets_per_second = 5000;
  int payload_bytes = 1000;
  double seconds = 4;
  double drain_seconds = 0.5;  // once sending ends, the receiver stops after this long quiet
};

struct UdpProbeResult {
  std::uint64_t sent = 0;
  std::vector<double> one_way_us;  // one per packet received, in arrival order
  double loss() const;
};

// Sends the probe and receives it; blocks for seconds + drain_seconds.
UdpProbeResult run_udp_probe(const UdpProbeOptions& options);

struct DelaySummary {
  std::size_t samples = 0;
  double mean = 0;
  double median = 0;
  double p99 = 0;
  double min = 0;
  double max = 0;
};

// Mean, median, 99th percentile (nearest rank), min and max of `values`.
DelaySummary summarize(std::vector<double> values);

// A UDP flood at a steady rate from a namespace to an address's discard port, until destroyed.
// A sender that falls behind (CPU starvation) skips the slots it missed rather than sending them
// in one burst, so the flood never offers more than its rate over a few milliseconds.
class UdpFlood {
 public:
  UdpFlood(const std::string& from_netns, const std::string& to_address, double mbit,
           int payload_bytes = 8000);
  ~UdpFlood();
  UdpFlood(const UdpFlood&) = delete;
  UdpFlood& operator=(const UdpFlood&) = delete;
  std::uint64_t sent() const { return sent_.load(); }

 private:
  int socket_ = -1;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> sent_{0};
  std::thread thread_;
};

}  // namespace dlcp::testbed
