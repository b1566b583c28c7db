#include "gray_failure.hpp"

#include <gtest/gtest.h>

#include "dlcp/error.hpp"
#include "topology.hpp"

namespace dlcp::testbed {
namespace {

TEST(GrayFailure, RandomRulesetDropsEveryClassAtTheRate) {
  const auto plan = switchconf::make_switch_plan(DscpTable::defaults(), {});
  GrayFailure gray;
  gray.loss_rate = 0.01;
  const std::string rules = gray_failure_ruleset(plan, gray);
  EXPECT_NE(rules.find("table bridge dlcp_gray"), std::string::npos);
  EXPECT_NE(rules.find("numgen random mod 1000000 < 10000 counter drop comment \"drop 7\""),
            std::string::npos);
  EXPECT_NE(rules.find("counter comment \"seen 0\""), std::string::npos);
  // Random mode: the gate always leads to the loss chain.
  EXPECT_NE(rules.find("chain gate {\n    jump loss\n  }"), std::string::npos);
  // Class 7 holds DSCP 0 (best effort) as well as dlcp's class 7 codepoints 2 and 6.
  EXPECT_NE(rules.find("ip dscp { 0, 1, 2, 3, 4, 5, 6, 7 }"), std::string::npos);
}

TEST(GrayFailure, BurstModeStartsClosedAndDropsHalfInBursts) {
  const auto plan = switchconf::make_switch_plan(DscpTable::defaults(), {});
  GrayFailure gray;
  gray.loss_rate = 0.01;
  gray.burst_ms = 20;
  EXPECT_EQ(gray_drop_ppm(gray), 500000u);
  const std::string rules = gray_failure_ruleset(plan, gray);
  EXPECT_NE(rules.find("chain gate {\n  }"), std::string::npos);
}

TEST(GrayFailure, BurstScheduleAveragesToTheLossRate) {
  GrayFailure gray;
  gray.loss_rate = 0.01;
  gray.burst_ms = 10;
  gray.seed = 7;
  BurstSchedule schedule(gray);
  EXPECT_DOUBLE_EQ(schedule.mean_bad_ms(), 10);
  EXPECT_DOUBLE_EQ(schedule.mean_good_ms(), 490);  // 10 * (0.5 / 0.01 - 1)
  double good = 0;
  double bad = 0;
  for (int i = 0; i < 20000; ++i) {
    good += schedule.next_period_ms(false);
    bad += schedule.next_period_ms(true);
  }
  EXPECT_NEAR(good / 20000, 490, 490 * 0.03);
  EXPECT_NEAR(bad / 20000, 10, 10 * 0.03);
  EXPECT_NEAR(0.5 * bad / (good + bad), 0.01, 0.0006);
}

TEST(GrayFailure, ParsesCountersByClass) {
  const std::string json = R"({"nftables": [{"metainfo": {"version": "1.0.6"}},
    {"rule": {"family": "bridge", "table": "dlcp_gray", "chain": "forward", "comment": "seen 3",
      "expr": [{"match": {}}, {"counter": {"packets": 1000, "bytes": 9000000}}]}},
    {"rule": {"family": "bridge", "table": "dlcp_gray", "chain": "loss", "comment": "drop 3",
      "expr": [{"match": {}}, {"counter": {"packets": 11, "bytes": 99000}}, {"drop": null}]}},
    {"rule": {"family": "bridge", "table": "dlcp_gray", "chain": "forward",
      "expr": [{"jump": {"target": "gate"}}]}}]})";
  const ClassLoss loss = parse_gray_counters(json);
  EXPECT_EQ(loss.seen[3], 1000u);
  EXPECT_EQ(loss.dropped[3], 11u);
  EXPECT_EQ(loss.seen[0], 0u);
}

TEST(TestbedOptions, NamesTheFieldAtFault) {
  TestbedOptions options;
  options.hosts = 1;
  EXPECT_THROW(options.validate(), Error);
  options = TestbedOptions{};
  options.gray.spine = 2;
  try {
    options.validate();
    FAIL() << "spine 2 of 2 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()),
              "TestbedOptions.gray.spine must be a spine (0..1) or -1 for none, got 2");
  }
  options = TestbedOptions{};
  options.prefix = "Bad-Name";
  EXPECT_THROW(options.validate(), Error);
  options = TestbedOptions{};
  options.gray.loss_rate = 0.9;
  EXPECT_THROW(options.validate(), Error);
  EXPECT_NO_THROW(TestbedOptions{}.validate());
}

TEST(Topology, NamesAndAddresses) {
  TestbedOptions options;
  options.prefix = "t1";
  options.hosts = 3;
  EXPECT_EQ(host_namespace(options, 2), "t1-h2");
  EXPECT_EQ(spine_namespace(options, 1), "t1-s1");
  EXPECT_EQ(all_namespaces(options),
            (std::vector<std::string>{"t1-h0", "t1-h1", "t1-h2", "t1-s0", "t1-s1"}));
  EXPECT_EQ(host_address(0), "10.0.0.1");
  EXPECT_EQ(spine_address(3, 1), "10.2.0.4");
  EXPECT_EQ(host_interface(1), "eth1");
  EXPECT_EQ(switch_port(5), "h5");
}

}  // namespace
}  // namespace dlcp::testbed
