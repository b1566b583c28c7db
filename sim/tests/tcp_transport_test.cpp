// The TCP baselines' transport on a real two-leaf fabric: gradient messages on connections of their
// own, or on their pair's kept connection (GradientConnections::kPersistent), which sends one
// message at a time, the most urgent waiting one first, each with its own DSCP level.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "config.hpp"
#include "ns3/config.h"
#include "ns3/nstime.h"
#include "ns3/simulator.h"
#include "ns3/tcp-socket-base.h"
#include "ns3/uinteger.h"
#include "tcp_transport.hpp"
#include "topology.hpp"
#include "transport.hpp"

namespace dlcp::sim {
namespace {

using ns3::MicroSeconds;

constexpr int kLayers = 10;

struct Post {
  int src = 0;
  int dst = 1;
  std::uint64_t bytes = 0;
  int layer = 0;
  ns3::Time at;
};

struct Outcome {
  std::vector<int> delivered;  // indexes into the posts, in delivery order
  FlowLog log;
  TcpLossCounters gradient;
  PortCounters switches;
  library::SwitchBands bands;
};

// Two hosts on two leaves joined by one spine, with the experiment's TCP settings that matter
// here (9000-byte frames, no delayed ACKs, a 200 us minimum RTO).
void run_posts(const std::vector<Post>& posts, TcpPriority priority, GradientConnections mode,
               Outcome* run) {
  ns3::Config::SetDefault("ns3::TcpSocket::SegmentSize", ns3::UintegerValue(8940));
  ns3::Config::SetDefault("ns3::TcpSocket::DelAckCount", ns3::UintegerValue(1));
  ns3::Config::SetDefault("ns3::TcpSocketBase::MinRto", ns3::TimeValue(MicroSeconds(200)));
  ns3::Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", ns3::TimeValue(MicroSeconds(1)));
  FabricConfig fabric;
  fabric.leaves = 2;
  fabric.hosts_per_leaf = 1;
  fabric.spines = 1;
  const library::Policy policy;
  const Topology topology = build_topology(fabric, policy, PortBehaviour{}, 1);
  TcpTransport tcp(topology, policy, priority, RetransmitTimer::kBackoff, EarlyFinClose::kNs3, mode,
                   run->log);
  for (std::size_t k = 0; k < posts.size(); ++k) {
    ns3::Simulator::Schedule(posts[k].at, [&tcp, &posts, run, k] {
      Message message;
      message.src = posts[k].src;
      message.dst = posts[k].dst;
      message.bytes = posts[k].bytes;
      message.layer = posts[k].layer;
      message.num_layers = kLayers;
      message.phase = FlowPhase::kPush;
      tcp.send(message, [run, k] { run->delivered.push_back(static_cast<int>(k)); });
    });
  }
  ns3::Simulator::Stop(ns3::MilliSeconds(20));
  ns3::Simulator::Run();
  run->gradient = tcp.loss_counters(FlowKind::kGradient);
  run->switches = topology.switch_counters();
  run->bands = topology.bands;
  ns3::Simulator::Destroy();
}

// Two large back-layer messages, then a small front-layer one while the first is under way (it
// starts after the handshake's round trip of about 10 us and needs at least 32 us of the link).
std::vector<Post> back_back_front() {
  return {{0, 1, 400000, kLayers - 1, MicroSeconds(0)},
          {0, 1, 400000, kLayers - 1, MicroSeconds(0)},
          {0, 1, 9000, 0, MicroSeconds(20)}};
}

TEST(TcpTransport, KeptConnectionSendsTheMostUrgentWaitingMessageNext) {
  Outcome run;
  run_posts(back_back_front(), TcpPriority::kNone, GradientConnections::kPersistent, &run);
  // The first back-layer message is under way; the front layer overtakes the second.
  EXPECT_EQ(run.delivered, (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(run.gradient.connections, 1u);
  EXPECT_EQ(run.gradient.syns_sent, 1u);
  ASSERT_EQ(run.log.gradient_fct_us.size(), 3u);
  EXPECT_EQ(run.log.gradient_started, 3u);
  // Each completion time counts from its own post: the front layer's is shorter than the second
  // back layer's, which waited for both others.
  EXPECT_LT(run.log.gradient_fct_us[1], run.log.gradient_fct_us[2]);
  // 800 KB at 100 Gbit/s take 64 us; the back layers cannot be done sooner.
  EXPECT_GT(run.log.gradient_fct_us[2], 64.0);
}

TEST(TcpTransport, ConnectionPerMessageOpensOneForEachMessage) {
  Outcome run;
  run_posts(back_back_front(), TcpPriority::kNone, GradientConnections::kPerMessage, &run);
  EXPECT_EQ(run.delivered.size(), 3u);
  EXPECT_EQ(run.gradient.connections, 3u);
  EXPECT_EQ(run.gradient.syns_sent, 3u);
  // On a connection of its own the small message is not held behind the large ones.
  ASSERT_FALSE(run.delivered.empty());
  EXPECT_EQ(run.delivered.front(), 2);
}

TEST(TcpTransport, KeptConnectionsAreOnePerDirectedPair) {
  Outcome run;
  run_posts({{0, 1, 20000, 3, MicroSeconds(0)},
             {1, 0, 20000, 3, MicroSeconds(0)},
             {0, 1, 20000, 3, MicroSeconds(500)},
             {1, 0, 20000, 3, MicroSeconds(500)}},
            TcpPriority::kNone, GradientConnections::kPersistent, &run);
  EXPECT_EQ(run.delivered.size(), 4u);
  EXPECT_EQ(run.gradient.connections, 2u);
  EXPECT_EQ(run.gradient.syns_sent, 2u);
}

// Data packets the switches queued in the band of PIAS's or pFabric's level `level`.
std::uint64_t queued_at_level(const Outcome& run, int level) {
  const library::Policy policy;
  const std::uint8_t dscp = policy.data_tos(level, /*is_protected=*/true) >> 2;
  return run.switches.enqueued_by_band[static_cast<std::size_t>(run.bands.band[dscp])];
}

TEST(TcpTransport, KeptConnectionGivesEachMessageItsOwnLevel) {
  // PIAS demotes a message as it sends: 16 KB at level 0, up to 64 KB at 1, up to 256 KB at 2.
  // Five 100 KB messages in a row make 500 KB on the connection, which would reach level 3 if
  // the connection's bytes were counted instead of each message's.
  std::vector<Post> posts;
  for (int k = 0; k < 5; ++k) posts.push_back({0, 1, 100000, 5, MicroSeconds(0)});
  Outcome run;
  run_posts(posts, TcpPriority::kBytesSent, GradientConnections::kPersistent, &run);
  EXPECT_EQ(run.delivered, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_GT(queued_at_level(run, 2), 0u);
  EXPECT_EQ(queued_at_level(run, 3), 0u);
  EXPECT_EQ(queued_at_level(run, 4), 0u);
}

}  // namespace
}  // namespace dlcp::sim
