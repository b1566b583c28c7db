// Two sites' names and options, the ping summary and the delay summary, on fixed inputs.
#include <gtest/gtest.h>

#include "command.hpp"
#include "dlcp/error.hpp"
#include "long_link_accuracy.hpp"
#include "topology.hpp"
#include "udp_probe.hpp"

namespace dlcp::testbed {
namespace {

std::string refusal(const TestbedOptions& options) {
  try {
    options.validate();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "accepted";
}

// A long-link flag without two sites would be ignored: `testbed up` refuses it before building
// anything (so this needs no root).
TEST(LongLinkOptions, TestbedUpRefusesLinkFlagsWithoutTwoSites) {
  SystemCommands runner;
  const auto result =
      runner.run({DLCP_CLI_PATH, "testbed", "up", "--prefix", "dlcptnone", "--burst-loss", "0.01"});
  EXPECT_EQ(result.status, 1) << result.output;
  EXPECT_NE(result.output.find("--burst-loss describes the long link: add --sites 2"),
            std::string::npos)
      << result.output;
  EXPECT_TRUE(prefixed_namespaces(runner, "dlcptnone").empty());
}

TEST(LongLinkOptions, NamesTheFieldAtFault) {
  TestbedOptions options;
  options.sites = 3;
  EXPECT_EQ(refusal(options), "TestbedOptions.sites must be 1 or 2, got 3");
  options = TestbedOptions{};
  options.long_link.one_way_ms = 1;
  options.long_link.jitter_us = 1500;
  EXPECT_EQ(refusal(options),
            "LongLinkOptions.jitter_us must be within [0, one_way_ms * 1000 = 1000], got 1500");
  options = TestbedOptions{};
  options.long_link.queue_bytes = 9000;
  EXPECT_EQ(refusal(options),
            "LongLinkOptions.queue_bytes must hold one largest frame (9018 bytes) and be at most "
            "1 GiB, got 9000");
  options = TestbedOptions{};
  options.long_link.burst_length = 0.5;
  EXPECT_EQ(refusal(options),
            "LongLinkOptions.burst_length must be within [1, 1e6] frames, got 0.5");
  options = TestbedOptions{};
  options.long_link.random_loss = 0.6;
  EXPECT_EQ(refusal(options), "LongLinkOptions.random_loss must be within [0, 0.5], got 0.6");
  options = TestbedOptions{};
  options.long_link.lossless_dscp = 64;
  EXPECT_EQ(refusal(options),
            "LongLinkOptions.lossless_dscp must be -1 (none) or a DSCP 0..63, got 64");
  options = TestbedOptions{};
  options.long_link.one_way_ms = -1;
  EXPECT_EQ(refusal(options), "LongLinkOptions.one_way_ms must be within [0, 1000], got -1");
  options = TestbedOptions{};
  options.sites = 2;
  EXPECT_EQ(refusal(options), "accepted");
}

TEST(LongLinkTopology, SplitsHostsBetweenSitesAndNamesEachSitesSpines) {
  TestbedOptions options;
  options.prefix = "t2";
  options.hosts = 4;
  options.spines = 1;
  options.sites = 2;
  EXPECT_EQ(site_of_host(options, 0), 0);
  EXPECT_EQ(site_of_host(options, 1), 0);
  EXPECT_EQ(site_of_host(options, 2), 1);
  EXPECT_EQ(site_of_host(options, 3), 1);
  EXPECT_EQ(spine_namespace(options, 0, 1), "t2-s0-site1");
  EXPECT_EQ(all_namespaces(options),
            (std::vector<std::string>{"t2-h0", "t2-h1", "t2-h2", "t2-h3", "t2-s0", "t2-s0-site1"}));
  options.sites = 1;
  EXPECT_EQ(site_of_host(options, 3), 0);
}

TEST(LongLinkAccuracy, ParsesThePingSummary) {
  const PingSummary summary = parse_ping_summary(
      "PING 10.0.0.3 (10.0.0.3) 56(84) bytes of data.\n\n--- 10.0.0.3 ping statistics ---\n"
      "200 packets transmitted, 199 received, 0.5% packet loss, time 2345ms\n"
      "rtt min/avg/max/mdev = 10.012/10.105/10.871/0.101 ms\n");
  EXPECT_EQ(summary.transmitted, 200);
  EXPECT_EQ(summary.received, 199);
  EXPECT_DOUBLE_EQ(summary.min_ms, 10.012);
  EXPECT_DOUBLE_EQ(summary.avg_ms, 10.105);
  EXPECT_DOUBLE_EQ(summary.max_ms, 10.871);
  EXPECT_EQ(parse_ping_summary("").transmitted, 0);
}

TEST(LongLinkAccuracy, SummarizesDelays) {
  std::vector<double> values;
  for (int i = 100; i >= 1; --i) values.push_back(i);
  const DelaySummary s = summarize(values);
  EXPECT_EQ(s.samples, 100u);
  EXPECT_DOUBLE_EQ(s.mean, 50.5);
  EXPECT_DOUBLE_EQ(s.median, 50.5);
  EXPECT_DOUBLE_EQ(s.p99, 99);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(summarize({3, 1, 2}).median, 2);
  EXPECT_EQ(summarize({}).samples, 0u);
}

}  // namespace
}  // namespace dlcp::testbed
