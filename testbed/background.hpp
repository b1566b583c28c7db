// Background load between testbed hosts from iperf3, a real traffic generator: long TCP floods
// (each host to the host half-way round, so every switch port carries one, paced to a share of
// the link so the fabric is loaded, not saturated) and a paced UDP flood,
// all best effort (DSCP 0), like the tenant traffic a training job shares a fabric with.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "testbed_options.hpp"

namespace dlcp::testbed {

struct BackgroundOptions {
  int tcp_flows_per_host = 1;  // long TCP floods per host (0 = none)
  double tcp_share = 0.5;      // each TCP flood's rate as a share of the link rate (0 = unpaced)
  double udp_share = 0.2;      // one paced UDP flood at this share of the link rate (0 = none)

  void validate() const;  // throws dlcp::Error(kInvalidArgument) naming the field
};

struct BackgroundFlow {
  int from = 0;
  int to = 0;
  bool udp = false;
  double rate_bps = 0;  // 0 = as fast as TCP gets
  int port = 0;
};

// The flows for a testbed: pure function of the options, for tests and for the demo's report.
std::vector<BackgroundFlow> background_flows(const TestbedOptions& testbed,
                                             const BackgroundOptions& options);

class BackgroundTraffic {
 public:
  // Starts an iperf3 server per flow, then the clients; throws std::runtime_error when iperf3 is
  // missing or a client does not start.
  BackgroundTraffic(const TestbedOptions& testbed, const BackgroundOptions& options);
  ~BackgroundTraffic();  // stops every process it started
  BackgroundTraffic(const BackgroundTraffic&) = delete;
  BackgroundTraffic& operator=(const BackgroundTraffic&) = delete;

  const std::vector<BackgroundFlow>& flows() const { return flows_; }
  // Leaves the flows running after this object is gone (`dlcp testbed up --background`):
  // tearing the testbed down kills every process in its namespaces.
  void release() { pids_.clear(); }

 private:
  pid_t spawn(const std::string& ns, const std::vector<std::string>& argv);
  std::vector<BackgroundFlow> flows_;
  std::vector<pid_t> pids_;
};

}  // namespace dlcp::testbed
