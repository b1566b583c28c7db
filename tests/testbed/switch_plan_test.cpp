#include "switch/switch_config.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "dlcp/error.hpp"

namespace dlcp::switchconf {
namespace {

SwitchPlan default_plan() {
  return make_switch_plan(DscpTable::defaults(), PortOptions{});
}

TEST(SwitchPlan, EveryDscpHasExactlyOneQueue) {
  const SwitchPlan plan = default_plan();
  std::vector<int> seen(64, 0);
  for (const Queue& queue : plan.queues) {
    for (const std::uint8_t dscp : queue.dscps) ++seen[dscp];
  }
  for (int dscp = 0; dscp < 64; ++dscp) EXPECT_EQ(seen[dscp], 1) << "DSCP " << dscp;
  EXPECT_EQ(plan.queues.size(), 16u);
}

TEST(SwitchPlan, PolicyCodepointsLandInTheirClassAndPrecedence) {
  const SwitchPlan plan = default_plan();
  const DscpTable table = DscpTable::defaults();
  for (int c = 0; c < kTrafficClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const Queue& normal = queue_of_dscp(plan, table.protected_dscp[i]);
    EXPECT_EQ(normal.traffic_class, c);
    EXPECT_FALSE(normal.drop_eligible);
    const Queue& eligible = queue_of_dscp(plan, table.drop_eligible_dscp[i]);
    EXPECT_EQ(eligible.traffic_class, c);
    EXPECT_TRUE(eligible.drop_eligible);
    EXPECT_LT(eligible.buffer_bytes, normal.buffer_bytes);
  }
  EXPECT_EQ(queue_of_dscp(plan, table.control_dscp).traffic_class, 0);
  // Best effort (TCP, background) shares the least urgent class.
  EXPECT_EQ(queue_of_dscp(plan, 0).traffic_class, 7);
  EXPECT_EQ(plan.queues[plan.default_queue].traffic_class, 7);
  EXPECT_FALSE(plan.queues[plan.default_queue].drop_eligible);
}

TEST(SwitchPlan, BestEffortAloneMovesTheLastClassUpAndLeavesClassSevenToBestEffort) {
  PortOptions port;
  port.best_effort_alone = true;
  const SwitchPlan plan = make_switch_plan(DscpTable::defaults(), port);
  const DscpTable table = DscpTable::defaults();
  const int last = kTrafficClasses - 1;
  for (int c = 0; c < kTrafficClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const int expected = c == last ? last - 1 : c;
    EXPECT_EQ(queue_of_dscp(plan, table.protected_dscp[i]).traffic_class, expected) << c;
    EXPECT_FALSE(queue_of_dscp(plan, table.protected_dscp[i]).drop_eligible) << c;
    EXPECT_EQ(queue_of_dscp(plan, table.drop_eligible_dscp[i]).traffic_class, expected) << c;
    EXPECT_TRUE(queue_of_dscp(plan, table.drop_eligible_dscp[i]).drop_eligible) << c;
  }
  // Class 7 holds best effort and nothing of the table.
  EXPECT_EQ(queue_of_dscp(plan, 0).traffic_class, last);
  EXPECT_EQ(plan.queues[plan.default_queue].traffic_class, last);
  for (const Queue& queue : plan.queues) {
    if (queue.traffic_class != last) continue;
    for (const std::uint8_t dscp : queue.dscps) {
      for (int c = 0; c < kTrafficClasses; ++c) {
        const auto i = static_cast<std::size_t>(c);
        EXPECT_NE(dscp, table.protected_dscp[i]) << "class " << c;
        EXPECT_NE(dscp, table.drop_eligible_dscp[i]) << "class " << c;
      }
    }
  }
  EXPECT_EQ(queue_of_dscp(plan, table.control_dscp).traffic_class, 0);
}

TEST(SwitchPlan, SharesBestEffortClassHoldsTheLastClassUnlessBestEffortIsAlone) {
  const DscpTable table = DscpTable::defaults();
  const int last = kTrafficClasses - 1;
  const auto shared = shares_best_effort_class(default_plan());
  EXPECT_TRUE(shared[0]);
  EXPECT_FALSE(shared[table.control_dscp]);
  for (int c = 0; c < kTrafficClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    EXPECT_EQ(shared[table.protected_dscp[i]], c == last) << c;
    EXPECT_EQ(shared[table.drop_eligible_dscp[i]], c == last) << c;
  }
  PortOptions port;
  port.best_effort_alone = true;
  const auto alone = shares_best_effort_class(make_switch_plan(table, port));
  EXPECT_TRUE(alone[0]);
  for (int c = 0; c < kTrafficClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    EXPECT_FALSE(alone[table.protected_dscp[i]]) << c;
    EXPECT_FALSE(alone[table.drop_eligible_dscp[i]]) << c;
  }
}

TEST(SwitchPlan, RejectsImpossiblePorts) {
  PortOptions port;
  port.drop_eligible_bytes = port.buffer_bytes * 2;
  EXPECT_THROW(
      {
        try {
          make_switch_plan(DscpTable::defaults(), port);
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
          EXPECT_NE(std::string(e.what()).find("PortOptions.drop_eligible_bytes"),
                    std::string::npos);
          throw;
        }
      },
      Error);
  port = PortOptions{};
  port.buffer_bytes = 100;
  EXPECT_THROW(make_switch_plan(DscpTable::defaults(), port), Error);
  port = PortOptions{};
  port.rate_bps = 0;
  EXPECT_THROW(make_switch_plan(DscpTable::defaults(), port), Error);
}

TEST(LinuxTc, HtbLeavesFiltersAndDefaultClass) {
  const SwitchPlan plan = default_plan();
  const auto commands = linux_tc_commands(plan, "h3");
  // root + parent + 16 x (class + bfifo) + 8 exact (drop-eligible) + 8 class selectors.
  EXPECT_EQ(commands.size(), 2u + 32u + 8u + 8u);
  EXPECT_EQ(commands.front(), "qdisc replace dev h3 root handle 1: htb default 80");
  auto contains = [&](const std::string& text) {
    return std::any_of(commands.begin(), commands.end(),
                       [&](const std::string& c) { return c == text; });
  };
  // Class 3 drop-eligible is DSCP (4 << 3) | 0b110 = 38, TOS 0x98; its queue is 1:41.
  EXPECT_TRUE(contains(
      "filter add dev h3 parent 1: protocol ip prio 1 u32 match ip dsfield 0x98 0xfc flowid 1:41"));
  EXPECT_TRUE(contains("qdisc add dev h3 parent 1:41 handle 41: bfifo limit 49152"));
  EXPECT_TRUE(contains("qdisc add dev h3 parent 1:40 handle 40: bfifo limit 262144"));
  // Class selector 7 (control, class 0 protected) goes to class 0's normal queue.
  EXPECT_TRUE(contains(
      "filter add dev h3 parent 1: protocol ip prio 2 u32 match ip dsfield 0xe0 0xe0 flowid 1:10"));
  EXPECT_TRUE(std::any_of(commands.begin(), commands.end(), [](const std::string& c) {
    return c.find("classid 1:10 htb") != std::string::npos &&
           c.find("ceil 400000000bit") != std::string::npos &&
           c.find("prio 0 quantum 180000") != std::string::npos;
  }));
  // The drop-eligible leaf of the same class yields to it: a 20 times smaller quantum.
  EXPECT_TRUE(std::any_of(commands.begin(), commands.end(), [](const std::string& c) {
    return c.find("classid 1:11 htb") != std::string::npos &&
           c.find("prio 0 quantum 9000") != std::string::npos;
  }));
}

TEST(LinuxTc, BestEffortAloneFiltersTheLastClassIntoClassSix) {
  PortOptions port;
  port.best_effort_alone = true;
  const auto commands = linux_tc_commands(make_switch_plan(DscpTable::defaults(), port), "h3");
  auto contains = [&](const std::string& text) {
    return std::any_of(commands.begin(), commands.end(),
                       [&](const std::string& c) { return c == text; });
  };
  // Class 7 is DSCP 2 (protected, TOS 0x08) and 6 (drop-eligible, TOS 0x18): class 6's queues.
  EXPECT_TRUE(contains(
      "filter add dev h3 parent 1: protocol ip prio 1 u32 match ip dsfield 0x08 0xfc flowid 1:70"));
  EXPECT_TRUE(contains(
      "filter add dev h3 parent 1: protocol ip prio 1 u32 match ip dsfield 0x18 0xfc flowid 1:71"));
  // Best effort (class selector 0) keeps class 7's normal queue, the default.
  EXPECT_TRUE(contains(
      "filter add dev h3 parent 1: protocol ip prio 2 u32 match ip dsfield 0x00 0xe0 flowid 1:80"));
  EXPECT_EQ(commands.front(), "qdisc replace dev h3 root handle 1: htb default 80");
}

TEST(LinuxTc, ClassIds) {
  EXPECT_EQ(linux_tc_classid(0), "1:10");
  EXPECT_EQ(linux_tc_classid(1), "1:11");
  EXPECT_EQ(linux_tc_classid(14), "1:80");
  EXPECT_EQ(linux_tc_classid(15), "1:81");
}

TEST(SonicQos, MapsClassesToStrictQueuesAndPrecedenceToEcn) {
  const SwitchPlan plan = default_plan();
  const auto config = nlohmann::json::parse(
      sonic_qos_json(plan, DscpTable::defaults(), {"Ethernet0", "Ethernet4"}));
  const auto& map = config["DSCP_TO_TC_MAP"]["DLCP"];
  EXPECT_EQ(map.size(), 64u);
  EXPECT_EQ(map["58"], "7");  // class 0 protected -> highest strict queue
  EXPECT_EQ(map["62"], "7");  // class 0 drop-eligible -> same queue, ECN decides
  EXPECT_EQ(map["0"], "0");   // best effort -> lowest
  EXPECT_EQ(config["SCHEDULER"]["DLCP_STRICT"]["type"], "STRICT");
  EXPECT_EQ(config["WRED_PROFILE"]["DLCP_PRECEDENCE"]["ecn"], "ecn_all");
  EXPECT_EQ(config["WRED_PROFILE"]["DLCP_PRECEDENCE"]["green_min_threshold"], "49152");
  EXPECT_TRUE(config["QUEUE"].contains("Ethernet4|0-7"));
  EXPECT_EQ(config["PORT_QOS_MAP"]["Ethernet0"]["dscp_to_tc_map"], "[DSCP_TO_TC_MAP|DLCP]");
}

TEST(SonicQos, BestEffortAloneHasTheLowestQueue) {
  PortOptions port;
  port.best_effort_alone = true;
  const auto config = nlohmann::json::parse(sonic_qos_json(
      make_switch_plan(DscpTable::defaults(), port), DscpTable::defaults(), {"Ethernet0"}));
  const auto& map = config["DSCP_TO_TC_MAP"]["DLCP"];
  EXPECT_EQ(map["2"], "1");   // class 7 protected -> with class 6
  EXPECT_EQ(map["6"], "1");   // class 7 drop-eligible
  EXPECT_EQ(map["10"], "1");  // class 6 protected
  EXPECT_EQ(map["0"], "0");   // best effort, alone
}

}  // namespace
}  // namespace dlcp::switchconf
