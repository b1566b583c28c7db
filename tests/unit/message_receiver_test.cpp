#include "protocol/message_receiver.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::protocol {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const TimePoint kT0 = TimePoint{} + std::chrono::seconds(10);
const Duration kQuiet = microseconds(500);

std::vector<std::uint8_t> none_protected(std::uint32_t packets) {
  return std::vector<std::uint8_t>((packets + 7) / 8, 0);
}

TEST(MessageReceiver, RetransmitMarginIsTwiceTheLossAtMostAHalf) {
  EXPECT_DOUBLE_EQ(retransmit_margin(0.0), 0.0);
  EXPECT_DOUBLE_EQ(retransmit_margin(0.01), 0.02);
  EXPECT_DOUBLE_EQ(retransmit_margin(0.3), 0.5);
  EXPECT_DOUBLE_EQ(retransmit_margin(-1.0), 0.0);
}

TEST(MessageReceiver, ShapeMustMatchThePostedSizeAndStayTheSame) {
  MessageReceiver receiver(100, 0, kT0);
  EXPECT_EQ(receiver.tracker(), nullptr);
  EXPECT_FALSE(receiver.accept_shape(99, 10));
  EXPECT_FALSE(receiver.accept_shape(100, 0));
  EXPECT_TRUE(receiver.accept_shape(100, 10));
  EXPECT_TRUE(receiver.accept_shape(100, 10));
  EXPECT_FALSE(receiver.accept_shape(100, 20));
  EXPECT_EQ(receiver.tracker()->packet_count(), 10u);
}

TEST(MessageReceiver, SettlesCompleteWithoutAFlowStart) {
  MessageReceiver receiver(30, 500000, kT0);
  ASSERT_TRUE(receiver.accept_shape(30, 10));
  EXPECT_EQ(receiver.on_packet(0, kT0), 10u);
  EXPECT_TRUE(receiver.has_packet(0));
  receiver.on_packet(1, kT0);
  // Within any budget, but without the FlowStart nothing is known to be unprotected.
  EXPECT_FALSE(receiver.settles_alone(false));
  receiver.on_packet(2, kT0);
  EXPECT_EQ(receiver.settlement(), Settlement::kComplete);
  EXPECT_TRUE(receiver.settles_alone(true));
}

TEST(MessageReceiver, TheLowerBudgetHoldsAndGroupsSettleOnlyComplete) {
  MessageReceiver receiver(100, 100000, kT0);  // the receiver allows 10%
  ASSERT_TRUE(receiver.accept_shape(100, 10));
  EXPECT_EQ(receiver.on_flow(none_protected(10), 200000, kT0), 10u);
  for (std::uint32_t seq = 0; seq < 9; ++seq) receiver.on_packet(seq, kT0);
  EXPECT_EQ(receiver.settlement(), Settlement::kBoundReached);
  EXPECT_TRUE(receiver.settles_alone(false));
  EXPECT_FALSE(receiver.settles_alone(true));
  EXPECT_TRUE(receiver.may_settle_with_group());
  EXPECT_TRUE(receiver.flow_seen());
}

TEST(MessageReceiver, ReportWaitsForQuietAfterRoundFinished) {
  MessageReceiver receiver(40, 0, kT0);
  ASSERT_TRUE(receiver.accept_shape(40, 10));
  receiver.on_flow(std::vector<std::uint8_t>{0x0F}, 0, kT0);
  receiver.on_packet(0, kT0 + microseconds(100));
  EXPECT_FALSE(receiver.report_due(kQuiet));
  receiver.on_round_finished(0, kT0 + microseconds(200));
  EXPECT_FALSE(receiver.mid_round());
  EXPECT_EQ(*receiver.report_due(kQuiet), kT0 + microseconds(700));
  EXPECT_FALSE(receiver.take_report(kT0 + microseconds(600), kQuiet, 0.0, 0));
  // A late packet pushes the report out.
  receiver.on_packet(1, kT0 + microseconds(650));
  EXPECT_TRUE(receiver.mid_round());
  EXPECT_EQ(*receiver.report_due(kQuiet), kT0 + microseconds(1150));
  const auto report = receiver.take_report(kT0 + microseconds(1150), kQuiet, 0.0, 0);
  ASSERT_TRUE(report);
  EXPECT_EQ(report->round, 0u);
  EXPECT_EQ(report->ranges, (std::vector<wire::SeqRange>{{2, 2}}));
  EXPECT_EQ(receiver.recovery_rounds(), 1u);
  EXPECT_FALSE(receiver.report_due(kQuiet));
}

TEST(MessageReceiver, ARepeatedRoundFinishedDoesNotPushTheReportOut) {
  MessageReceiver receiver(40, 0, kT0);
  ASSERT_TRUE(receiver.accept_shape(40, 10));
  receiver.on_round_finished(0, kT0);
  receiver.on_round_finished(0, kT0 + microseconds(400));
  EXPECT_EQ(*receiver.report_due(kQuiet), kT0 + kQuiet);
  receiver.on_round_finished(1, kT0 + microseconds(400));
  EXPECT_EQ(*receiver.report_due(kQuiet), kT0 + microseconds(400) + kQuiet);
}

TEST(MessageReceiver, ReportMarginFollowsPathLossAndGroupSlack) {
  // 100 packets of 1 float, none protected, 10% budget; 70 arrived: deficit 20.
  const auto make = [] {
    MessageReceiver receiver(100, 100000, kT0);
    receiver.accept_shape(100, 1);
    receiver.on_flow(none_protected(100), 100000, kT0);
    for (std::uint32_t seq = 0; seq < 70; ++seq) receiver.on_packet(seq, kT0);
    receiver.on_round_finished(0, kT0);
    return receiver;
  };
  const auto count = [](const std::optional<RetransmitRequest>& request) {
    std::uint32_t packets = 0;
    for (const auto& range : request->ranges) packets += range.count;
    return packets;
  };
  auto plain = make();
  EXPECT_EQ(count(plain.take_report(kT0 + kQuiet, kQuiet, 0.0, 0)), 20u);
  auto lossy = make();  // 10% loss: a margin of ceil(0.2 * 20) = 4
  EXPECT_EQ(count(lossy.take_report(kT0 + kQuiet, kQuiet, 0.1, 0)), 24u);
  auto grouped = make();  // 5 entries the group's other members leave unspent
  EXPECT_EQ(count(grouped.take_report(kT0 + kQuiet, kQuiet, 0.0, 5)), 15u);
}

TEST(MessageReceiver, NoReportWhenNothingIsMissingOrNoShape) {
  MessageReceiver shapeless(10, 0, kT0);
  shapeless.on_round_finished(0, kT0);
  EXPECT_FALSE(shapeless.take_report(kT0 + kQuiet, kQuiet, 0.0, 0));
  EXPECT_FALSE(shapeless.report_due(kQuiet));  // taken, though empty
  EXPECT_EQ(shapeless.recovery_rounds(), 0u);
}

TEST(MessageReceiver, PhasesSplitFirstRoundAndRecovery) {
  MessageReceiver receiver(20, 0, kT0);
  receiver.accept_shape(20, 10);
  receiver.on_packet(0, kT0 + milliseconds(1));
  receiver.on_round_finished(0, kT0 + milliseconds(3));
  ASSERT_TRUE(receiver.take_report(kT0 + milliseconds(4), kQuiet, 0.0, 0));
  receiver.on_packet(1, kT0 + milliseconds(6));
  const SettlePhases phases = receiver.phases_at(kT0 + milliseconds(6));
  EXPECT_NEAR(phases.first_round_seconds, 0.002, 1e-9);
  EXPECT_NEAR(phases.recovery_seconds, 0.003, 1e-9);
  EXPECT_FALSE(phases.before_round_end);
}

}  // namespace
}  // namespace dlcp::protocol
