#include "protocol/settle_timing.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::protocol {
namespace {

using std::chrono::milliseconds;

const TimePoint kPosted = TimePoint{} + std::chrono::seconds(100);

TEST(SettleTiming, MessageSettledByItsFirstRoundHasNoRecovery) {
  SettleTiming timing(kPosted);
  timing.on_sender_seen(kPosted + milliseconds(5));  // the receive waited 5 ms for the sender
  timing.on_sender_seen(kPosted + milliseconds(6));  // later signs do not move the start
  timing.on_first_round_end(kPosted + milliseconds(25));
  const SettlePhases phases = timing.at_settlement(kPosted + milliseconds(26), 0);
  EXPECT_DOUBLE_EQ(phases.first_round_seconds, 0.021);
  EXPECT_DOUBLE_EQ(phases.recovery_seconds, 0.0);
  EXPECT_FALSE(phases.before_round_end);
}

TEST(SettleTiming, RecoveryRunsFromTheFirstRoundsEndToSettlement) {
  SettleTiming timing(kPosted);
  timing.on_sender_seen(kPosted + milliseconds(2));
  timing.on_first_round_end(kPosted + milliseconds(12));
  timing.on_first_round_end(kPosted + milliseconds(15));  // only the first counts
  const SettlePhases phases = timing.at_settlement(kPosted + milliseconds(19), 2);
  EXPECT_DOUBLE_EQ(phases.first_round_seconds, 0.010);
  EXPECT_DOUBLE_EQ(phases.recovery_seconds, 0.007);
  EXPECT_FALSE(phases.before_round_end);
}

TEST(SettleTiming, SettledBeforeTheRoundEndedHadItsTailCut) {
  SettleTiming timing(kPosted);
  timing.on_sender_seen(kPosted + milliseconds(1));
  const SettlePhases phases = timing.at_settlement(kPosted + milliseconds(9), 0);
  EXPECT_DOUBLE_EQ(phases.first_round_seconds, 0.008);
  EXPECT_TRUE(phases.before_round_end);
}

TEST(SettleTiming, ArrivalsHeldBeforeThePostingStartAtThePosting) {
  SettleTiming timing(kPosted);
  timing.on_sender_seen(kPosted - milliseconds(3));
  const SettlePhases phases = timing.at_settlement(kPosted + milliseconds(4), 0);
  EXPECT_DOUBLE_EQ(phases.first_round_seconds, 0.004);
}

TEST(SettleTiming, NoSignOfTheSenderCountsFromThePosting) {
  const SettleTiming timing(kPosted);
  EXPECT_DOUBLE_EQ(timing.at_settlement(kPosted + milliseconds(7), 0).first_round_seconds, 0.007);
}

}  // namespace
}  // namespace dlcp::protocol
