#include "demo_report.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "switch_counters.hpp"
#include "testbed.hpp"

namespace dlcp::tools {
namespace {

nlohmann::json run(const std::string& system, double p50, double p99) {
  return {{"system", system},
          {"iter_p50_ms", p50},
          {"iter_p99_ms", p99},
          {"delivered_fraction", 0.99},
          {"iteration_ms", {p50, p99}}};
}

TEST(DemoReport, SpeedupsAgainstTheBestBaselineAtEachPercentile) {
  const nlohmann::json congested = {run("gloo", 800, 2000),
                                    run("mpi", 1000, 1500),
                                    run("dlcp-ps", 250, 600),
                                    run("dlcp-ring", 200, 500),
                                    run("dlcp-ring no-spray", 400, 900),
                                    run("dlcp-ring no-priority", 300, 700),
                                    run("dlcp-ring no-loss-tolerance", 220, 1000)};
  const auto summary = make_demo_summary(congested, nlohmann::json::array());
  EXPECT_EQ(summary["best_baseline_p50"], "gloo");
  EXPECT_EQ(summary["best_baseline_p99"], "mpi");
  EXPECT_EQ(summary["best_dlcp"], "dlcp-ring");
  EXPECT_DOUBLE_EQ(summary["speedup_p50"].get<double>(), 800.0 / 200);
  EXPECT_DOUBLE_EQ(summary["speedup_p99"].get<double>(), 1500.0 / 500);
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-spray"]["slowdown_p50"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-loss-tolerance"]["slowdown_p99"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(summary["systems"][2]["speedup_p50"].get<double>(), 800.0 / 250);
  EXPECT_FALSE(summary.contains("clean"));
  EXPECT_EQ(best_dlcp_system(congested), "dlcp-ring");
}

TEST(DemoReport, CleanNetworkAndTable) {
  const nlohmann::json congested = {run("gloo", 800, 2000), run("dlcp-ps", 250, 600)};
  const nlohmann::json clean = {run("gloo", 200, 300), run("dlcp-ps", 250, 280)};
  const auto summary = make_demo_summary(congested, clean);
  EXPECT_DOUBLE_EQ(summary["clean_speedup_p50"].get<double>(), 0.8);
  std::ostringstream table;
  print_demo_table(table, summary);
  EXPECT_NE(table.str().find("3.20x at p50 (gloo)"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("Clean network"), std::string::npos);
  EXPECT_THROW(best_dlcp_system(nlohmann::json::array({run("gloo", 1, 1)})), std::invalid_argument);
}

TEST(DemoReport, FailedBaselinesAreListedAndLeftOut) {
  const nlohmann::json congested = {run("gloo", 800, 2000),
                                    {{"system", "mpi"}, {"failed", "mpirun exited with status 1"}},
                                    run("dlcp-ps", 400, 500)};
  const auto summary = make_demo_summary(congested, nlohmann::json::array());
  EXPECT_EQ(summary["systems"].size(), 2u);
  EXPECT_EQ(summary["best_baseline_p99"], "gloo");
  EXPECT_DOUBLE_EQ(summary["speedup_p99"].get<double>(), 4.0);
  ASSERT_EQ(summary["failed"].size(), 1u);
  std::ostringstream table;
  print_demo_table(table, summary);
  EXPECT_NE(table.str().find("FAILED, left out of the comparison: mpi: mpirun exited"),
            std::string::npos);
}

TEST(DemoReport, Formatting) {
  EXPECT_EQ(format_ms(12.345), "12.3 ms");
  EXPECT_EQ(format_ms(1234.6), "1235 ms");
  EXPECT_EQ(format_percent(0.01), "1.00%");
  EXPECT_EQ(format_percent(0.5), "50.0%");
}

TEST(SwitchCounters, DropRatesByCategory) {
  testbed::SwitchCounters before;
  testbed::SwitchCounters after;
  after.sent[0] = 90;
  after.dropped[0] = 10;
  after.sent[7] = 300;
  after.dropped[7] = 100;
  after.eligible_sent[3] = 50;
  after.eligible_dropped[3] = 50;
  after.gray_seen[7] = 1000;
  after.gray_dropped[7] = 10;
  before.sent[7] = 100;
  const auto json = testbed::counters_json(after - before);
  EXPECT_DOUBLE_EQ(json["queue_drop_rate"]["protected_classes_0_6"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(json["queue_drop_rate"]["best_effort_class_7"].get<double>(), 1.0 / 3);
  EXPECT_DOUBLE_EQ(json["queue_drop_rate"]["drop_eligible"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(json["gray_drop_rate"].get<double>(), 0.01);
  EXPECT_EQ(json["gray_seen"], 1000u);
  EXPECT_EQ(json["gray_dropped"], 10u);
  EXPECT_EQ(json["by_class"][7]["sent"], 200u);
}

TEST(DemoReport, TableSaysWhenNothingCrossedTheGraySpine) {
  // Per-flow ECMP may route every TCP flow around the gray spine: that is no 0% loss rate.
  testbed::SwitchCounters crossed;
  crossed.gray_seen[7] = 1000;
  crossed.gray_dropped[7] = 10;
  nlohmann::json gloo = run("gloo", 800, 2000);
  gloo["switch"] = testbed::counters_json(testbed::SwitchCounters{});
  nlohmann::json dlcp = run("dlcp-ps", 250, 600);
  dlcp["switch"] = testbed::counters_json(crossed);
  EXPECT_EQ(gloo["switch"]["gray_seen"], 0u);
  std::ostringstream table;
  print_demo_table(table, make_demo_summary({gloo, dlcp}, nlohmann::json::array()));
  const std::string text = table.str();
  const auto line_of = [&](const std::string& system) {
    const auto at = text.find("\n" + system + " ");
    return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line_of("gloo").find(", none crossed"), std::string::npos) << text;
  EXPECT_NE(line_of("dlcp-ps").find(", 1.00%"), std::string::npos) << text;
}

TEST(TcStats, ParsesHtbClassCounters) {
  const std::string text =
      "class htb 1:11 parent 1:1 leaf 11: prio 0 rate 400Kbit ceil 400Mbit burst 50000b\n"
      " Sent 123456 bytes 78 pkt (dropped 9, overlimits 0 requeues 0) \n"
      " backlog 0b 0p requeues 0\n"
      "class htb 1:1 root rate 400Mbit ceil 400Mbit burst 50000b cburst 50000b \n"
      " Sent 999 bytes 3 pkt (dropped 0, overlimits 0 requeues 0) \n";
  const auto stats = testbed::parse_tc_class_stats(text);
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].classid, "1:11");
  EXPECT_EQ(stats[0].bytes, 123456u);
  EXPECT_EQ(stats[0].packets, 78u);
  EXPECT_EQ(stats[0].drops, 9u);
  EXPECT_EQ(stats[1].classid, "1:1");
}

}  // namespace
}  // namespace dlcp::tools
