#include "settlement_report.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dlcp::tools {
namespace {

TEST(SettlementReport, RoundsQuantileCountsMessagesByRounds) {
  const std::array<std::uint64_t, 8> none{};
  EXPECT_EQ(rounds_quantile(none, 0.99), 0u);
  // 90 messages without a round, 9 with one, 1 with seven or more.
  const std::array<std::uint64_t, 8> by_rounds{90, 9, 0, 0, 0, 0, 0, 1};
  EXPECT_EQ(rounds_quantile(by_rounds, 0.5), 0u);
  EXPECT_EQ(rounds_quantile(by_rounds, 0.9), 0u);   // the 90th message
  EXPECT_EQ(rounds_quantile(by_rounds, 0.91), 1u);  // the 91st
  EXPECT_EQ(rounds_quantile(by_rounds, 0.99), 1u);
  EXPECT_EQ(rounds_quantile(by_rounds, 1.0), 7u);
  EXPECT_THROW(rounds_quantile(by_rounds, 1.1), std::invalid_argument);
}

TEST(SettlementReport, RanksAddUpAndPhasesAreWhatTheyAdded) {
  TransportCounters before;
  before.settled_complete = 5;
  before.settled_by_rounds[0] = 5;
  before.first_round_time.add(0.001);
  before.recovery_time.add(0.0);
  TransportCounters after = before;
  after.settled_complete += 3;
  after.settled_within_budget = 1;
  after.settled_before_round_end = 1;
  after.settled_by_group = 1;
  after.receive_deadlines = 1;
  after.settled_by_rounds[0] += 2;
  after.settled_by_rounds[1] += 2;
  for (double s : {0.002, 0.002, 0.004, 0.010}) after.first_round_time.add(s);
  for (double s : {0.0, 0.0, 0.003, 0.005}) after.recovery_time.add(s);
  before.datagrams_retransmitted = 10;
  after.datagrams_retransmitted = 17;
  before.rejected_by_reason = {{"duplicate", 2}};
  after.rejected_by_reason = {{"stale_message", 9}, {"duplicate", 6}};
  after.packets_rebuilt = 3;
  before.control_retransmits = 1;
  after.control_retransmits = 4;
  after.control_rto_max_us = 45'000;

  const nlohmann::json rank = settlement_counters(before, after);
  EXPECT_EQ(rank["settled_complete"], 3);
  EXPECT_EQ(rank["settled_by_rounds"][0], 2);
  nlohmann::json other = rank;
  other["control_rto_max_us"] = 60'000;
  const nlohmann::json s = summarize_settlement({rank, other});
  EXPECT_EQ(s["messages"], 10);  // (3 complete + 1 within budget + 1 deadline) x 2 ranks
  EXPECT_EQ(s["settled_within_budget"], 2);
  EXPECT_EQ(s["settled_by_group"], 2);
  EXPECT_EQ(s["datagrams_retransmitted"], 14);
  EXPECT_EQ(s["duplicates"], 8);
  EXPECT_EQ(s["packets_rebuilt"], 6);
  EXPECT_EQ(s["control_retransmits"], 6);  // 3 per rank
  EXPECT_DOUBLE_EQ(s["control_rto_max_ms"].get<double>(), 60.0);
  EXPECT_DOUBLE_EQ(s["no_recovery_fraction"].get<double>(), 0.5);  // 4 of 8 settled
  EXPECT_EQ(s["rounds_p50"], 0);
  EXPECT_EQ(s["rounds_p99"], 1);
  // Upper bounds of 1/16-of-an-octave buckets: within 6.25% above the values.
  EXPECT_GE(s["first_round_p50_ms"].get<double>(), 2.0);
  EXPECT_LE(s["first_round_p50_ms"].get<double>(), 2.0 * 17 / 16);
  EXPECT_EQ(s["recovery_p50_ms"], 0.0);
  EXPECT_GE(s["recovery_p99_ms"].get<double>(), 5.0);
  EXPECT_LE(s["recovery_p99_ms"].get<double>(), 5.0 * 17 / 16);
  EXPECT_NEAR(s["recovery_mean_ms"].get<double>(), 2.0, 1e-9);  // 8 ms over 4 messages
  const std::string line = describe_settlement(s);
  EXPECT_EQ(line.rfind("messages 10: 50.0% without a recovery round, rounds p50/p99 0/1, recovery "
                       "p50/p99 0.00/5.",
                       0),
            0u)
      << line;
}

}  // namespace
}  // namespace dlcp::tools
