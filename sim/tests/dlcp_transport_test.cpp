// dlcp's simulated transport on a real two-leaf fabric whose only spine loses a share of every
// packet it forwards, data and control alike: the reliable control channel and the endpoint's
// rounds must still deliver every message, and a message that cannot settle in time must end the
// run with a failure instead of leaving its workload waiting.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "config.hpp"
#include "dlcp_transport.hpp"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "topology.hpp"
#include "transport.hpp"

namespace dlcp::sim {
namespace {

struct Outcome {
  std::vector<int> delivered;  // indexes of the messages, in delivery order
  DlcpCounters counters;
  PortCounters gray;
  double stopped_at_ms = 0;
};

// Hosts 0 and 1 exchange `messages` messages of 1 to 40 packets both ways at once, with `budget`
// as every message's loss budget, across one spine that drops `loss` of what it forwards.
Outcome run_exchange(double loss, double budget, int messages, std::int64_t deadline_ms) {
  FabricConfig fabric;
  fabric.leaves = 2;
  fabric.hosts_per_leaf = 1;
  fabric.spines = 1;
  fabric.gray_loss = loss;
  const library::Policy policy;
  const Topology topology = build_topology(fabric, policy, PortBehaviour{}, 7);
  DlcpSimConfig config;
  config.deadline_ms = deadline_ms;
  FlowLog log;
  Outcome run;
  {
    DlcpTransport dlcp(topology, policy, config, log, 7);
    for (int k = 0; k < messages; ++k) {
      ns3::Simulator::Schedule(ns3::MicroSeconds(5 * k), [&dlcp, &run, k, budget] {
        Message message;
        message.src = k % 2;
        message.dst = 1 - k % 2;
        message.bytes = 8000ull * static_cast<std::uint64_t>(1 + (k * 7) % 40);
        message.layer = k % 4;
        message.num_layers = 4;
        message.loss_budget = budget;
        dlcp.send(message, [&run, k] { run.delivered.push_back(k); });
      });
    }
    ns3::Simulator::Stop(ns3::MilliSeconds(2000));
    ns3::Simulator::Run();
    run.stopped_at_ms = ns3::Simulator::Now().GetSeconds() * 1e3;
    run.counters = dlcp.counters();
    run.gray = topology.gray_counters();
  }
  ns3::Simulator::Destroy();
  return run;
}

TEST(DlcpTransport, DeliversEveryMessageWhenAFifthOfAllPacketsIsLost) {
  const Outcome run = run_exchange(0.2, 0.0, 40, 30000);
  EXPECT_EQ(run.delivered.size(), 40u);
  EXPECT_EQ(run.counters.messages_failed, 0u);
  EXPECT_TRUE(run.counters.first_failure.empty()) << run.counters.first_failure;
  EXPECT_EQ(run.counters.messages_settled, 40u);
  EXPECT_EQ(run.counters.entries_missing, 0u);  // no budget: every entry arrives
  // The loss hit both the data and the control channel, and both recovered.
  EXPECT_GT(run.gray.dropped_random, 0u);
  EXPECT_GT(run.counters.retransmitted_packets, 0u);
  EXPECT_GT(run.counters.control_retransmissions, 0u);
  EXPECT_GT(run.counters.missing_reports, 0u);
}

TEST(DlcpTransport, LeavesNoMoreMissingThanTheBudgetUnderLoss) {
  const Outcome run = run_exchange(0.05, 0.1, 40, 30000);
  EXPECT_EQ(run.delivered.size(), 40u);
  EXPECT_EQ(run.counters.messages_failed, 0u);
  EXPECT_LE(run.counters.entries_missing, run.counters.entries_total / 10);
  EXPECT_GT(run.gray.dropped_random, 0u);
}

TEST(DlcpTransport, AFailedMessageStopsTheRunAtOnce) {
  // Almost everything is lost, so messages cannot settle within their 1 ms deadline.
  const Outcome run = run_exchange(0.95, 0.0, 40, 1);
  EXPECT_GT(run.counters.messages_failed, 0u);
  EXPECT_NE(run.counters.first_failure.find("failed"), std::string::npos)
      << run.counters.first_failure;
  EXPECT_LT(run.delivered.size(), 40u);
  // Stopped just after the first deadline (1 ms after a post), long before the 2 s limit.
  EXPECT_LT(run.stopped_at_ms, 5.0);
}

}  // namespace
}  // namespace dlcp::sim
