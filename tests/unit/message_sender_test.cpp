#include "protocol/message_sender.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace dlcp::protocol {
namespace {

using Effect = MessageSender::ReportEffect;

std::vector<std::uint32_t> drain(MessageSender& sender) {
  std::vector<std::uint32_t> sent;
  while (sender.has_next()) sent.push_back(sender.take_next());
  return sent;
}

policy::PacketRanking ranking(std::vector<std::uint8_t> flags) {
  policy::PacketRanking result;
  result.send_order = policy::first_round_order(flags);
  result.protected_flags = std::move(flags);
  return result;
}

TEST(MessageSender, ReliableProtectsEveryPacketInOrder) {
  MessageSender sender(10, 4, {});
  EXPECT_EQ(sender.packet_count(), 3u);
  EXPECT_EQ(sender.protected_count(), 3u);
  EXPECT_EQ(sender.floats_in(2), 2u);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{0, 1, 2}));
  EXPECT_EQ(sender.round_size(), 3u);
}

TEST(MessageSender, FirstRoundSendsProtectedFirst) {
  MessageSender sender(40, 10, ranking({0, 1, 0, 1}));
  EXPECT_EQ(sender.protected_count(), 2u);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{1, 3, 0, 2}));
  EXPECT_TRUE(sender.sends_protected(1));
  EXPECT_FALSE(sender.sends_protected(0));
}

TEST(MessageSender, ParityPacketsFollowTheProtectedOnesInTheFirstRoundOnly) {
  // Protected 1, 3, 4, 6, 7 in groups of at least 2: floor(5 / 2) = 2 groups, seqs 8 and 9.
  MessageSender sender(80, 10, ranking({0, 1, 0, 1, 1, 0, 1, 1}), 2);
  ASSERT_NE(sender.parity(), nullptr);
  EXPECT_EQ(sender.parity()->group_count(), 2u);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{1, 3, 4, 6, 7, 8, 9, 0, 2, 5}));
  EXPECT_TRUE(sender.is_parity(8));
  EXPECT_TRUE(sender.sends_protected(9));
  EXPECT_EQ(sender.floats_in(9), 10u);
  EXPECT_EQ(sender.flow_start(7, 3, 5000).parity_members, 2);
  // A recovery round resends what was asked for, no parity.
  ASSERT_EQ(sender.on_missing_ranges(0, {{3, 2}}), Effect::kNewRound);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{3, 4}));
}

TEST(MessageSender, NoParityWithFewerProtectedPacketsThanAGroup) {
  // Parity for 3 protected packets in groups of 4 would cost a third, not a quarter.
  for (const auto& flags :
       {std::vector<std::uint8_t>{0, 0, 0, 0}, std::vector<std::uint8_t>{1, 1, 0, 1}}) {
    MessageSender sender(40, 10, ranking(flags), 4);
    EXPECT_EQ(sender.parity(), nullptr);
    EXPECT_EQ(sender.flow_start(7, 3, 5000).parity_members, 0);
    EXPECT_EQ(drain(sender).size(), 4u);
  }
}

TEST(ParityGroups, InterleaveTheProtectedPackets) {
  // Protected: 0, 2, 3, 5, 6, 8, 9 (7 of them); groups of at least 3: floor(7 / 3) = 2 groups.
  const ParityGroups groups({1, 0, 1, 1, 0, 1, 1, 0, 1, 1}, 3);
  EXPECT_EQ(groups.group_count(), 2u);
  EXPECT_EQ(groups.members(0), (std::vector<std::uint32_t>{0, 3, 6, 9}));
  EXPECT_EQ(groups.members(1), (std::vector<std::uint32_t>{2, 5, 8}));
  EXPECT_EQ(groups.group_of(5), 1u);
  EXPECT_FALSE(groups.group_of(1).has_value());   // unprotected
  EXPECT_FALSE(groups.group_of(10).has_value());  // beyond the message
  EXPECT_THROW(ParityGroups({1}, 0), std::invalid_argument);
  // Fewer protected packets than a group: no group, and no packet in one.
  const ParityGroups none({1, 1, 0}, 3);
  EXPECT_EQ(none.group_count(), 0u);
  EXPECT_FALSE(none.group_of(0).has_value());
}

TEST(MessageSender, FlowStartCarriesTheProtectedBitmap) {
  MessageSender sender(90, 10, ranking({1, 0, 0, 0, 0, 0, 0, 0, 1}));
  const wire::FlowStart flow = sender.flow_start(7, 3, 5000);
  EXPECT_EQ(flow.message_id, 7u);
  EXPECT_EQ(flow.total_floats, 90u);
  EXPECT_EQ(flow.stride_floats, 10u);
  EXPECT_EQ(flow.priority_class, 3u);
  EXPECT_EQ(flow.loss_budget_ppm, 5000u);
  EXPECT_EQ(flow.packet_count, 9u);
  EXPECT_EQ(flow.protected_count, 2u);
  EXPECT_EQ(flow.protected_bitmap, (std::vector<std::uint8_t>{0x01, 0x01}));
}

TEST(MessageSender, ReportStartsARoundWithProtectedFirstAndEverythingProtected) {
  MessageSender sender(40, 10, ranking({0, 0, 1, 0}));
  drain(sender);
  EXPECT_EQ(sender.on_missing_ranges(0, {{0, 3}}), Effect::kNewRound);
  EXPECT_EQ(sender.round(), 1u);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{2, 0, 1}));
  // A retransmission goes out protected whatever its first-round precedence.
  EXPECT_TRUE(sender.sends_protected(0));
}

TEST(MessageSender, IgnoresStaleAndEarlyReports) {
  MessageSender sender(40, 10, ranking({0, 0, 1, 0}));
  sender.take_next();
  EXPECT_EQ(sender.on_missing_ranges(0, {{0, 1}}), Effect::kIgnored);  // round still going out
  drain(sender);
  EXPECT_EQ(sender.on_missing_ranges(1, {{0, 1}}), Effect::kIgnored);  // another round's
  EXPECT_EQ(sender.on_missing_ranges(0, {}), Effect::kIgnored);
  EXPECT_EQ(sender.round(), 0u);
  EXPECT_EQ(sender.on_missing_ranges(0, {{3, 1}}), Effect::kNewRound);
  drain(sender);
  EXPECT_EQ(sender.on_missing_ranges(0, {{3, 1}}), Effect::kIgnored);  // a repeat
}

TEST(MessageSender, RefusesRangesBeyondTheMessage) {
  MessageSender sender(40, 10, {});
  drain(sender);
  EXPECT_EQ(sender.on_missing_ranges(0, {{3, 2}}), Effect::kInvalid);
  EXPECT_EQ(sender.on_missing_ranges(0, {{0xFFFFFFFFu, 2}}), Effect::kInvalid);
  EXPECT_EQ(sender.round(), 0u);
}

TEST(MessageSender, GivenBackPacketsGoAgainThisRound) {
  MessageSender sender(30, 10, {});
  const std::uint32_t first = sender.take_next();
  sender.give_back(first);
  EXPECT_EQ(drain(sender), (std::vector<std::uint32_t>{1, 2, 0}));
  EXPECT_EQ(sender.round_size(), 4u);
}

TEST(MessageSender, RefusesARankingOfAnotherSize) {
  EXPECT_THROW(MessageSender(40, 10, ranking({1, 0})), std::invalid_argument);
  EXPECT_THROW(MessageSender(0, 10, {}), std::invalid_argument);
}

}  // namespace
}  // namespace dlcp::protocol
