// The emulated commodity-switch network, built from real Linux parts: network namespaces for hosts
// and spine switches, veth links, Linux bridges, HTB/bfifo queues with u32 DSCP classification at
// every switch egress port (exactly `dlcp switch-config --format linux-tc`), layer-4 ECMP routes
// for TCP, an nftables gray failure on one spine, and optionally two sites whose spines are joined
// by long links (a user-space delay line in this process).
//
// Ownership: every part lives inside namespaces the testbed creates and records in a state file
// (/run/dlcp-testbed/<prefix>.json) before creating them. It refuses to touch a namespace it did
// not record, removes the leftovers of a run that died (its owner process is gone), and tears
// everything down in its destructor. A guard process tears down after a crash or SIGKILL too.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "gray_failure.hpp"
#include "long_link.hpp"
#include "switch/switch_plan.hpp"
#include "testbed_options.hpp"

namespace dlcp::testbed {

// Why the testbed cannot be built here (no root, missing tools); callers fall back to loopback.
class TestbedUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct QueueStats {
  std::string classid;
  int traffic_class = 0;
  bool drop_eligible = false;
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t drops = 0;
};

// Parses `tc -s class show` output into per-class counters (classid, packets, bytes, drops).
std::vector<QueueStats> parse_tc_class_stats(const std::string& text);

// Throws TestbedUnavailable unless this process may build the testbed (root, ip/tc/nft present).
void check_testbed_available();

// The network namespaces that exist now and are this prefix's ("<prefix>-..."), sorted.
std::vector<std::string> prefixed_namespaces(CommandRunner& runner, const std::string& prefix);

// The state file of a prefix.
std::string state_file(const std::string& prefix);

// Removes what a dead run with this prefix left behind; returns the namespaces removed. Refuses
// (std::runtime_error) while the recorded owner still runs.
std::vector<std::string> remove_leftovers(CommandRunner& runner, const std::string& prefix);

enum class Persistence {
  kUntilDestroyed,  // torn down by the destructor, or by the guard process if this process dies
  kUntilRemoved,    // stays up after this process exits, until remove_leftovers (`testbed down`)
};

class Testbed {
 public:
  // Builds the network; on failure removes whatever it built and rethrows.
  Testbed(CommandRunner& runner, const TestbedOptions& options,
          Persistence persistence = Persistence::kUntilDestroyed);
  ~Testbed();
  Testbed(const Testbed&) = delete;
  Testbed& operator=(const Testbed&) = delete;

  const TestbedOptions& options() const { return options_; }
  const switchconf::SwitchPlan& plan() const { return plan_; }

  // Per-queue counters of switch `spine`'s egress port towards `host`.
  std::vector<QueueStats> port_stats(int spine, int host) const;
  // The same for spine `spine` of `site`'s port onto the long link (two sites, priority_port),
  // or none.
  std::vector<QueueStats> long_link_port_stats(int spine, int site) const;
  // Per-class counters of the gray spine (zeros when there is none).
  ClassLoss gray_loss() const;
  // The long link of each spine (two sites), or none.
  std::vector<LongLinkStats> long_link_stats() const;

  // Removes everything; idempotent.
  void tear_down();

 private:
  void build();
  void build_host(int host);
  void build_spine(const std::string& ns);
  void configure_switch_ports(int spine, int site);
  void build_long_link(int spine);
  std::vector<QueueStats> queue_stats(const std::string& ns, const std::string& port,
                                      const switchconf::SwitchPlan& plan) const;
  void add_routes(int host);
  void run(const std::vector<std::string>& argv, const std::string& input = "") const;

  CommandRunner& runner_;
  TestbedOptions options_;
  switchconf::SwitchPlan plan_;
  switchconf::SwitchPlan long_link_plan_;  // the long link's priority ports
  Persistence persistence_;
  bool up_ = false;
  int guard_fd_ = -1;
  std::unique_ptr<BurstDriver> bursts_;
  std::vector<std::unique_ptr<LongLink>> long_links_;  // one per spine with two sites
  int guard_pid_ = -1;
};

}  // namespace dlcp::testbed
