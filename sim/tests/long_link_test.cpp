// The long link between two sites: its Gilbert-Elliott transitions and delay on fixed inputs, its
// losses on fixed seeds (the asked share, in bursts of the asked mean length), the round trip it
// adds on a real two-site fabric, dlcp delivering across it under bursty loss, and the refusal of
// impossible settings with a message naming the option.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "config.hpp"
#include "dlcp_transport.hpp"
#include "long_link_loss.hpp"
#include "ns3/inet-socket-address.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/socket.h"
#include "ns3/udp-socket-factory.h"
#include "scenario.hpp"
#include "topology.hpp"
#include "transport.hpp"

namespace dlcp::sim {
namespace {

TEST(LongLink, GilbertElliottTransitionsGiveTheLossInBurstsOfTheLength) {
  const GilbertElliott channel = gilbert_elliott(0.01, 4);
  EXPECT_DOUBLE_EQ(channel.leave_bad, 0.25);
  EXPECT_DOUBLE_EQ(channel.enter_bad, 0.25 * 0.01 / 0.99);
  // The bad state's stationary share is the loss.
  EXPECT_DOUBLE_EQ(channel.enter_bad / (channel.enter_bad + channel.leave_bad), 0.01);
  const GilbertElliott none = gilbert_elliott(0, 4);
  EXPECT_EQ(none.enter_bad, 0);
  EXPECT_EQ(none.leave_bad, 1);
  // Bursts of one frame: every frame decides afresh, at the loss itself.
  EXPECT_DOUBLE_EQ(gilbert_elliott(0.2, 1).enter_bad, 0.25);
}

TEST(LongLink, OneWayDelayIsHalfTheRoundTripToTheNanosecond) {
  EXPECT_EQ(one_way_delay_ns(10), 5'000'000);
  EXPECT_EQ(one_way_delay_ns(2.5), 1'250'000);
  EXPECT_EQ(one_way_delay_ns(0.000003), 2);  // 1.5 ns rounds to 2
}

LongLinkLossCounters offer_frames(double random_loss, double burst_loss, double burst_length,
                                  std::uint64_t seed, int frames) {
  auto loss = ns3::CreateObject<LongLinkLoss>();
  loss->configure(random_loss, burst_loss, burst_length, seed);
  const ns3::Ptr<ns3::Packet> frame = ns3::Create<ns3::Packet>(100);
  for (int k = 0; k < frames; ++k) loss->IsCorrupt(frame);
  return loss->counters();
}

TEST(LongLink, BurstLossLosesTheShareInBurstsOfTheMeanLength) {
  for (const std::uint64_t seed : {1u, 2u, 3u}) {
    const LongLinkLossCounters c = offer_frames(0, 0.01, 4, seed, 400000);
    EXPECT_EQ(c.frames, 400000u);
    EXPECT_EQ(c.dropped_random, 0u);
    const double share = static_cast<double>(c.dropped_burst) / static_cast<double>(c.frames);
    EXPECT_NEAR(share, 0.01, 0.001) << "seed " << seed;
    const double mean_burst = static_cast<double>(c.dropped_burst) / static_cast<double>(c.bursts);
    EXPECT_NEAR(mean_burst, 4.0, 0.3) << "seed " << seed;
  }
}

TEST(LongLink, RandomLossLosesTheShareOneFrameAtATime) {
  const LongLinkLossCounters c = offer_frames(0.005, 0, 4, 1, 400000);
  EXPECT_EQ(c.dropped_burst, 0u);
  EXPECT_EQ(c.bursts, 0u);
  EXPECT_NEAR(static_cast<double>(c.dropped_random) / 400000.0, 0.005, 0.0005);
}

TEST(LongLink, TheChannelsDrawApartSoOneLeavesTheOtherAsItWas) {
  const LongLinkLossCounters burst_only = offer_frames(0, 0.01, 4, 5, 100000);
  const LongLinkLossCounters both = offer_frames(0.005, 0.01, 4, 5, 100000);
  EXPECT_EQ(both.dropped_burst, burst_only.dropped_burst);
  EXPECT_EQ(both.bursts, burst_only.bursts);
  EXPECT_GT(both.dropped_random, 0u);
}

// Two sites of one leaf with one host each and `spines` spines, joined by long links of
// `rtt_ms`, with `burst_loss` in bursts of 4.
FabricConfig two_sites(double rtt_ms, int spines, double burst_loss) {
  FabricConfig fabric;
  fabric.sites = 2;
  fabric.leaves = 2;
  fabric.hosts_per_leaf = 1;
  fabric.spines = spines;
  fabric.fabric_link_gbps = 100;
  fabric.long_link.rtt_ms = rtt_ms;
  fabric.long_link.gbps = 100;
  fabric.long_link.burst_loss = burst_loss;
  fabric.long_link.burst_length = 4;
  return fabric;
}

// The round trip of a small UDP datagram from host 0 to host 1 and back, in ms.
double measured_round_trip_ms(double rtt_ms, LongLinkLossCounters* wire) {
  const library::Policy policy;
  const Topology topology = build_topology(two_sites(rtt_ms, 1, 0), policy, PortBehaviour{}, 1);
  const auto udp = ns3::UdpSocketFactory::GetTypeId();
  ns3::Ptr<ns3::Socket> client = ns3::Socket::CreateSocket(topology.hosts.Get(0), udp);
  ns3::Ptr<ns3::Socket> echo = ns3::Socket::CreateSocket(topology.hosts.Get(1), udp);
  client->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), 5000));
  echo->Bind(ns3::InetSocketAddress(ns3::Ipv4Address::GetAny(), 6000));
  echo->SetRecvCallback([](ns3::Ptr<ns3::Socket> socket) {
    ns3::Address from;
    while (ns3::Ptr<ns3::Packet> packet = socket->RecvFrom(from)) socket->SendTo(packet, 0, from);
  });
  double answered_ms = -1;
  client->SetRecvCallback([&answered_ms](ns3::Ptr<ns3::Socket> socket) {
    while (socket->Recv()) answered_ms = ns3::Simulator::Now().GetSeconds() * 1e3;
  });
  const ns3::Time sent = ns3::MilliSeconds(1);
  ns3::Simulator::Schedule(sent, [&] {
    client->SendTo(ns3::Create<ns3::Packet>(64), 0,
                   ns3::InetSocketAddress(topology.host_address[1], 6000));
  });
  ns3::Simulator::Stop(ns3::Seconds(1));
  ns3::Simulator::Run();
  *wire = topology.long_link_loss_counters();
  ns3::Simulator::Destroy();
  return answered_ms - sent.GetSeconds() * 1e3;
}

TEST(LongLink, AddsTheAskedRoundTrip) {
  for (const double rtt_ms : {2.0, 10.0, 40.0}) {
    LongLinkLossCounters wire;
    const double measured = measured_round_trip_ms(rtt_ms, &wire);
    // The fabric adds 6 links of 1 us and a few serializations: within 1% of the asked round trip.
    EXPECT_GE(measured, rtt_ms) << rtt_ms;
    EXPECT_NEAR(measured, rtt_ms, 0.01 * rtt_ms) << rtt_ms;
    EXPECT_EQ(wire.frames, 2u) << "the datagram and its echo cross the long link once each";
  }
}

TEST(LongLink, OnlyPairsAcrossTheSitesGetTheLongLinksRoundTrip) {
  const library::Policy policy;
  const Topology topology = build_topology(two_sites(10, 1, 0), policy, PortBehaviour{}, 1);
  EXPECT_EQ(topology.added_round_trip(0, 1), ns3::MilliSeconds(10));
  EXPECT_EQ(topology.added_round_trip(1, 0), ns3::MilliSeconds(10));
  EXPECT_EQ(topology.added_round_trip(1, 1), ns3::Time(0));
  ns3::Simulator::Destroy();
}

TEST(LongLink, DlcpDeliversEverythingAcrossBurstyLossOnEverySpinePair) {
  const library::Policy policy;
  const Topology topology = build_topology(two_sites(2, 2, 0.05), policy, PortBehaviour{}, 3);
  ASSERT_EQ(topology.long_link_losses.size(), 4u);  // two links, a model at each receiving end
  FlowLog log;
  int delivered = 0;
  DlcpCounters counters;
  {
    DlcpTransport dlcp(topology, policy, DlcpSimConfig{}, log, 3);
    for (int k = 0; k < 20; ++k) {
      ns3::Simulator::Schedule(ns3::MicroSeconds(10 * k), [&dlcp, &delivered, k] {
        Message message;
        message.src = k % 2;
        message.dst = 1 - k % 2;
        message.bytes = 9000ull * static_cast<std::uint64_t>(5 + k);
        message.layer = k % 4;
        message.num_layers = 4;
        dlcp.send(message, [&delivered] { ++delivered; });
      });
    }
    ns3::Simulator::Stop(ns3::Seconds(5));
    ns3::Simulator::Run();
    counters = dlcp.counters();
  }
  EXPECT_EQ(delivered, 20);
  EXPECT_EQ(counters.messages_failed, 0u) << counters.first_failure;
  EXPECT_GT(topology.long_link_loss_counters().dropped_burst, 0u);
  EXPECT_GT(counters.missing_reports, 0u);
  // The control channel waits a round trip of the long link before resending: far fewer
  // retransmissions than frames (every 300 us, each frame would be resent about 7 times).
  EXPECT_LT(counters.control_retransmissions, counters.control_frames);
  // dlcp sprays over both spines, so both long links carried its packets.
  for (const auto& loss : topology.long_link_losses) EXPECT_GT(loss->counters().frames, 0u);
  ns3::Simulator::Destroy();
}

TEST(LongLink, ScenariosGiveTheLinksHalfASitesHostCapacity) {
  ScenarioConfig small_sites;
  ASSERT_TRUE(named_scenario("long-link-16", &small_sites));
  EXPECT_EQ(small_sites.fabric.sites, 2);
  EXPECT_DOUBLE_EQ(small_sites.fabric.long_link.gbps, 200.0);  // 8 x 100 / 2 over 2 links
  ScenarioConfig large_sites;
  ASSERT_TRUE(named_scenario("long-link-144", &large_sites));
  EXPECT_EQ(large_sites.fabric.hosts(), 144);
  EXPECT_DOUBLE_EQ(large_sites.fabric.long_link.gbps, 900.0);  // 72 x 100 / 2 over 4 links
  EXPECT_EQ(invalid_setting(large_sites), "");
}

TEST(LongLink, ImpossibleSettingsAreRefusedNamingTheOption) {
  struct Case {
    const char* option;
    void (*set)(LongLinkConfig&);
  };
  const std::vector<Case> cases = {
      {"--long-link-rtt-ms", [](LongLinkConfig& l) { l.rtt_ms = 0; }},
      {"--long-link-rtt-ms", [](LongLinkConfig& l) { l.rtt_ms = 2001; }},
      {"--long-link-random-loss", [](LongLinkConfig& l) { l.random_loss = -0.1; }},
      {"--long-link-random-loss", [](LongLinkConfig& l) { l.random_loss = 0.6; }},
      {"--long-link-burst-loss", [](LongLinkConfig& l) { l.burst_loss = 1; }},
      {"--long-link-burst-length", [](LongLinkConfig& l) { l.burst_length = 0.5; }},
      {"--long-link-gbps", [](LongLinkConfig& l) { l.gbps = 0; }},
  };
  for (const Case& c : cases) {
    ScenarioConfig scenario;
    ASSERT_TRUE(named_scenario("long-link-16", &scenario));
    c.set(scenario.fabric.long_link);
    const std::string problem = invalid_setting(scenario);
    EXPECT_NE(problem.find(c.option), std::string::npos) << c.option << ": " << problem;
  }
}

}  // namespace
}  // namespace dlcp::sim
