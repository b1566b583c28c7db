#include "demo_report.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "dlcp/error.hpp"
#include "switch_counters.hpp"
#include "system_choice.hpp"
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

TEST(DemoReport, AblationsCompareWithTheSystemTheyAblated) {
  // The ablated system was the fastest of the first repetition; the medians rank dlcp-ps first.
  const nlohmann::json congested = {run("gloo", 800, 2000), run("dlcp-ps", 200, 600),
                                    run("dlcp-ring", 210, 500),
                                    run("dlcp-ring no-loss-tolerance", 231, 600)};
  const auto summary = make_demo_summary(congested, nlohmann::json::array());
  EXPECT_EQ(summary["best_dlcp"], "dlcp-ps");
  EXPECT_EQ(summary["ablated_system"], "dlcp-ring");
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-loss-tolerance"]["slowdown_p50"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-loss-tolerance"]["slowdown_p99"].get<double>(), 1.2);
  std::ostringstream table;
  print_demo_table(table, summary);
  EXPECT_NE(table.str().find("each mechanism's share in dlcp-ring"), std::string::npos)
      << table.str();
}

TEST(DemoReport, ByHostAgainstFlatPerSystemAndNeverTheBestOrAnAblation) {
  // Several workers per host: each hierarchical dlcp system also ran flat.
  const nlohmann::json congested = {
      run("gloo fp16", 600, 1200),         run("dlcp-ps", 300, 500),
      run("dlcp-ps flat", 330, 450),       run("dlcp-ring", 240, 400),
      run("dlcp-ring flat", 180, 360),     run("dlcp-ring bf16", 100, 150),
      run("dlcp-ring bf16 flat", 150, 300)};
  const auto summary = make_demo_summary(congested, nlohmann::json::array());
  // The fastest full configuration is chosen by the system itself, not forced flat.
  EXPECT_EQ(summary["best_dlcp"], "dlcp-ring bf16");
  EXPECT_EQ(best_dlcp_system(nlohmann::json::array(
                {run("dlcp-ring", 240, 400), run("dlcp-ring flat", 180, 360)})),
            "dlcp-ring");
  EXPECT_FALSE(summary.contains("ablation"));
  EXPECT_DOUBLE_EQ(summary["hierarchy"]["dlcp-ring bf16"]["speedup_p50"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(summary["hierarchy"]["dlcp-ring bf16"]["speedup_p99"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(summary["hierarchy"]["dlcp-ring"]["speedup_p50"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(summary["hierarchy"]["dlcp-ps"]["speedup_p50"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(summary["hierarchy"]["dlcp-ps"]["speedup_p99"].get<double>(), 0.9);
  // Only the systems that also ran flat are compared.
  EXPECT_FALSE(summary["hierarchy"].contains("gloo fp16"));
  std::ostringstream table;
  print_demo_table(table, summary);
  EXPECT_NE(table.str().find("by host against flat"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("1.50x at p50, 2.00x at p99"), std::string::npos) << table.str();
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

TEST(DemoReport, LongLinkScenariosEachWithTheBudgetsAndParitysShare) {
  const nlohmann::json scenarios = {
      {{"rtt_ms", 10.0},
       {"loss", "random"},
       {"loss_rate", 0.005},
       {"runs",
        {run("gloo fp16", 900, 1800),
         run("dlcp-ring bf16", 300, 400),
         run("dlcp-ring bf16 no-loss-tolerance", 330, 600),
         run("dlcp-ring bf16 no-parity", 360, 800),
         {{"system", "mpi"}, {"failed", "mpirun exited with status 1"}}}}},
      {{"rtt_ms", 40.0},
       {"loss", "bursts"},
       {"loss_rate", 0.01},
       {"runs", {run("gloo fp16", 2000, 4000), run("dlcp-ring bf16", 500, 1000)}}}};
  const auto summary = make_long_link_summary(scenarios);
  ASSERT_EQ(summary["long_link"].size(), 2u);
  const auto& ten = summary["long_link"][0];
  EXPECT_DOUBLE_EQ(ten["rtt_ms"].get<double>(), 10.0);
  EXPECT_DOUBLE_EQ(ten["speedup_p50"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(ten["speedup_p99"].get<double>(), 4.5);
  EXPECT_DOUBLE_EQ(ten["ablation"]["no-loss-tolerance"]["slowdown_p50"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(ten["ablation"]["no-parity"]["slowdown_p99"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(summary["long_link"][1]["speedup_p99"].get<double>(), 4.0);
  EXPECT_EQ(summary["failed"].size(), 1u);
  EXPECT_FALSE(summary.contains("systems"));
  std::ostringstream table;
  print_demo_table(table, summary);
  EXPECT_NE(table.str().find("round trip 40 ms, background load, 1.00% of its frames lost in "
                             "bursts of 4 frames"),
            std::string::npos)
      << table.str();
  EXPECT_NE(table.str().find("no-parity"), std::string::npos) << table.str();
  EXPECT_NE(table.str().find("FAILED, left out of the comparison: mpi"), std::string::npos);
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

TEST(DemoReport, RepeatedRunsBecomeOneRowOfMedians) {
  nlohmann::json first = run("dlcp-ring", 200, 900);
  first["settlement"] = {{"messages", 10}};
  const nlohmann::json runs = {first,
                               run("gloo", 800, 2000),
                               run("dlcp-ring", 180, 500),
                               {{"system", "mpi"}, {"failed", "mpirun exited with status 1"}},
                               run("dlcp-ring", 210, 400),
                               run("gloo", 700, 1000)};
  const auto merged = merge_repeats(runs);
  ASSERT_EQ(merged.size(), 3u);
  EXPECT_EQ(merged[0]["system"], "mpi");  // failed runs are kept apart, unchanged
  const auto& ring = merged[1];
  EXPECT_EQ(ring["system"], "dlcp-ring");
  EXPECT_DOUBLE_EQ(ring["iter_p50_ms"].get<double>(), 200.0);  // median of 200, 180, 210
  EXPECT_DOUBLE_EQ(ring["iter_p99_ms"].get<double>(), 500.0);  // median of 900, 500, 400
  EXPECT_EQ(ring["settlement"]["messages"], 10);               // the median run's own fields
  EXPECT_EQ(ring["repeats"].size(), 3u);
  EXPECT_EQ(ring["iteration_ms"].size(), 6u);
  // Two runs: the upper median.
  EXPECT_DOUBLE_EQ(merged[2]["iter_p50_ms"].get<double>(), 800.0);
  EXPECT_DOUBLE_EQ(merged[2]["iter_p99_ms"].get<double>(), 2000.0);
  // A single run stays as it was.
  EXPECT_EQ(merge_repeats(nlohmann::json::array({run("gloo", 1, 2)}))[0], run("gloo", 1, 2));
}

TEST(DemoReport, TailScenarioAndSettlementTables) {
  auto ring = run("dlcp-ring", 200, 300);
  ring["settlement"] = {{"messages", 200},
                        {"no_recovery_fraction", 0.9},
                        {"settled_within_budget", 50},
                        {"settled_before_round_end", 20},
                        {"rounds_p99", 2},
                        {"recovery_p50_ms", 0.0},
                        {"recovery_p99_ms", 12.5},
                        {"first_round_p50_ms", 4.0},
                        {"first_round_p99_ms", 40.0}};
  const nlohmann::json tail = {run("gloo", 900, 1800), ring,
                               run("dlcp-ring no-loss-tolerance", 220, 450)};
  auto summary = make_demo_summary(nlohmann::json::array({run("gloo", 800, 2000), ring}),
                                   nlohmann::json::array(), tail);
  summary["config"] = {{"background", true}, {"gray_loss", 0.01}, {"tail_burst_ms", 20.0}};
  ASSERT_TRUE(summary.contains("tail"));
  EXPECT_DOUBLE_EQ(summary["tail"]["speedup_p99"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(summary["tail"]["ablation"]["no-loss-tolerance"]["slowdown_p99"].get<double>(),
                   1.5);
  std::ostringstream table;
  print_demo_table(table, summary);
  const std::string text = table.str();
  EXPECT_NE(text.find("Tail scenario: background load, the spine losing 1.00% of its packets in "
                      "bursts of 20 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("where dlcp's messages spend their time"), std::string::npos) << text;
  EXPECT_NE(text.find("0.0 / 12.5 ms"), std::string::npos) << text;  // recovery p50 / p99
  EXPECT_NE(text.find("25.0%"), std::string::npos) << text;          // 50 of 200 within budget
}

TEST(DemoReport, WireDtypesAreTheirOwnRowsAndBaselinesStayBaselines) {
  // Gloo in fp16 is a baseline and dlcp in bf16 a full dlcp system; the ablations ran on the
  // fastest, bf16 ring, and compare with it, not with float32 ring.
  const nlohmann::json congested = {run("gloo", 800, 2000),
                                    run("gloo fp16", 500, 1800),
                                    run("mpi", 1000, 1500),
                                    run("dlcp-ring", 300, 600),
                                    run("dlcp-ring bf16", 200, 500),
                                    run("dlcp-ps bf16", 250, 450),
                                    run("dlcp-ring bf16 no-spray", 400, 900),
                                    run("dlcp-ring bf16 no-loss-tolerance", 220, 1000)};
  const auto summary = make_demo_summary(congested, nlohmann::json::array());
  EXPECT_EQ(summary["best_baseline_p50"], "gloo fp16");
  EXPECT_EQ(summary["best_baseline_p99"], "mpi");
  EXPECT_EQ(summary["best_dlcp"], "dlcp-ring bf16");
  EXPECT_EQ(best_dlcp_system(congested), "dlcp-ring bf16");
  EXPECT_DOUBLE_EQ(summary["speedup_p50"].get<double>(), 500.0 / 200);
  EXPECT_DOUBLE_EQ(summary["systems"][3]["speedup_p50"].get<double>(), 500.0 / 300);
  EXPECT_EQ(summary["ablated_system"], "dlcp-ring bf16");
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-spray"]["slowdown_p50"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(summary["ablation"]["no-loss-tolerance"]["slowdown_p99"].get<double>(), 2.0);
  EXPECT_FALSE(summary["ablation"].contains("no-priority"));
  // A faster baseline in a 16-bit dtype is still a baseline, never the best dlcp.
  const nlohmann::json fast_gloo = {run("gloo fp16", 100, 200), run("dlcp-ps", 300, 400)};
  EXPECT_EQ(best_dlcp_system(fast_gloo), "dlcp-ps");
  EXPECT_EQ(make_demo_summary(fast_gloo, nlohmann::json::array())["best_baseline_p50"],
            "gloo fp16");

  std::ostringstream table;
  print_demo_table(table, summary);
  const std::string text = table.str();
  EXPECT_NE(text.find("best dlcp (dlcp-ring bf16) vs best baseline: 2.50x at p50 (gloo fp16)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("each mechanism's share in dlcp-ring bf16"), std::string::npos) << text;
  // The longest label keeps a space before its times.
  EXPECT_NE(text.find("\ndlcp-ring bf16 no-loss-tolerance  "), std::string::npos) << text;
  EXPECT_NE(text.find("\ngloo fp16  "), std::string::npos) << text;
}

TEST(SystemChoice, ParsesASystemWithItsWireDtype) {
  const auto plain = parse_system_choice("dlcp-ps");
  EXPECT_EQ(plain.system, "dlcp-ps");
  EXPECT_EQ(plain.wire, WireDtype::kFloat32);
  EXPECT_EQ(plain.label(), "dlcp-ps");
  const auto ring = parse_system_choice("dlcp-ring:bf16");
  EXPECT_EQ(ring.system, "dlcp-ring");
  EXPECT_EQ(ring.wire, WireDtype::kBfloat16);
  EXPECT_EQ(ring.label(), "dlcp-ring bf16");
  const auto gloo = parse_system_choice("gloo:fp16");
  EXPECT_EQ(gloo.system, "gloo");
  EXPECT_EQ(gloo.wire, WireDtype::kFloat16);
  EXPECT_EQ(gloo.label(), "gloo fp16");
  EXPECT_EQ(parse_system_choice("dlcp-tar:fp16").label(), "dlcp-tar fp16");
  // fp32 spelled out is the plain system.
  EXPECT_EQ(parse_system_choice("mpi:fp32").label(), "mpi");
  EXPECT_EQ(parse_system_choice("gloo:fp32").wire, WireDtype::kFloat32);
  EXPECT_EQ(wire_label("ring", WireDtype::kBfloat16), "ring bf16");
}

TEST(SystemChoice, TheBaselineSendsAsManyBitsAsDlcp) {
  EXPECT_EQ(gloo_of_the_same_width(WireDtype::kFloat32).label(), "gloo");
  EXPECT_EQ(gloo_of_the_same_width(WireDtype::kBfloat16).label(), "gloo fp16");
  EXPECT_EQ(gloo_of_the_same_width(WireDtype::kFloat16).label(), "gloo fp16");
}

// The error for `text`, which must be kInvalidArgument.
std::string refusal(const std::string& text) {
  try {
    parse_system_choice(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << text;
    return e.what();
  }
  ADD_FAILURE() << text << " was accepted";
  return "";
}

TEST(SystemChoice, RefusesWhatNoSystemCanSend) {
  // Each refusal names the system as given and says why.
  const auto unknown_dtype = refusal("dlcp-ring:fp8");
  EXPECT_NE(unknown_dtype.find("'dlcp-ring:fp8'"), std::string::npos) << unknown_dtype;
  EXPECT_NE(unknown_dtype.find("unknown wire dtype 'fp8'"), std::string::npos) << unknown_dtype;
  const auto gloo_bf16 = refusal("gloo:bf16");
  EXPECT_NE(gloo_bf16.find("'gloo:bf16'"), std::string::npos) << gloo_bf16;
  EXPECT_NE(gloo_bf16.find("no bfloat16"), std::string::npos) << gloo_bf16;
  for (const char* mpi : {"mpi:fp16", "mpi:bf16"}) {
    const auto refused = refusal(mpi);
    EXPECT_NE(refused.find(std::string("'") + mpi + "'"), std::string::npos) << refused;
    EXPECT_NE(refused.find("float32 only"), std::string::npos) << refused;
  }
  const auto unknown_system = refusal("nccl:fp16");
  EXPECT_NE(unknown_system.find("'nccl' is not gloo, mpi"), std::string::npos) << unknown_system;
  EXPECT_NE(refusal("dlcp-ring:").find("unknown wire dtype ''"), std::string::npos);
  // The benchmarks' own check, by the names they use.
  EXPECT_THROW(check_wire_supported("gloo", WireDtype::kBfloat16), Error);
  EXPECT_THROW(check_wire_supported("mpi", WireDtype::kFloat16), Error);
  EXPECT_NO_THROW(check_wire_supported("gloo", WireDtype::kFloat16));
  EXPECT_NO_THROW(check_wire_supported("ring", WireDtype::kBfloat16));
  EXPECT_NO_THROW(check_wire_supported("ps", WireDtype::kFloat16));
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
