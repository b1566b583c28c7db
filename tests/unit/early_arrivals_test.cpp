#include "protocol/early_arrivals.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::protocol {
namespace {

using std::chrono::milliseconds;

const TimePoint kStart{std::chrono::seconds(100)};

std::vector<std::byte> datagram(std::size_t bytes) {
  return std::vector<std::byte>(bytes);
}

wire::FlowStart flow_with_bitmap(std::size_t bitmap_bytes) {
  wire::FlowStart flow;
  flow.protected_bitmap.assign(bitmap_bytes, 0);
  return flow;
}

TEST(EarlyArrivalBacklog, HoldsWhatFitsAndHandsItOverOnce) {
  EarlyArrivalBacklog backlog({.bytes = 1000, .messages = 4, .ttl = milliseconds(500)});
  const MessageKey key{1, 7};
  ASSERT_FALSE(backlog.refusal(key, 600));
  backlog.hold(key, datagram(600), kStart);
  EXPECT_EQ(backlog.refusal(key, 401), wire::RejectReason::kUnknownMessage);  // 1001 > 1000
  ASSERT_FALSE(backlog.refusal(key, 400));
  backlog.hold(key, datagram(400), kStart + milliseconds(1));
  wire::RoundFinished finished;
  finished.round = 2;
  EXPECT_FALSE(backlog.hold(key, finished, kStart));
  EXPECT_FALSE(backlog.hold(key, flow_with_bitmap(10), kStart));
  EXPECT_EQ(backlog.datagrams(), 2u);
  EXPECT_EQ(backlog.datagram_bytes(), 1000u);
  EXPECT_EQ(backlog.flow_bytes(), sizeof(wire::FlowStart) + 10);

  const auto taken = backlog.take(key);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->datagrams.size(), 2u);
  EXPECT_EQ(taken->bytes, 1000u);
  EXPECT_EQ(taken->first_arrival, kStart);
  ASSERT_TRUE(taken->round_finished);
  EXPECT_EQ(taken->round_finished->round, 2);
  ASSERT_TRUE(taken->flow);
  EXPECT_FALSE(backlog.take(key));
  EXPECT_EQ(backlog.datagrams(), 0u);
  EXPECT_EQ(backlog.datagram_bytes(), 0u);
  EXPECT_EQ(backlog.flow_bytes(), 0u);
  EXPECT_EQ(backlog.messages(), 0u);
}

TEST(EarlyArrivalBacklog, FlowStartsHaveABoundOfTheirOwn) {
  // A flood of datagrams that fills the datagram bound leaves room for a FlowStart.
  EarlyArrivalBacklog backlog({.bytes = 1000, .messages = 4, .ttl = milliseconds(500)});
  backlog.hold({1, 1}, datagram(1000), kStart);
  EXPECT_EQ(backlog.refusal({1, 1}, 1), wire::RejectReason::kUnknownMessage);
  EXPECT_FALSE(backlog.hold({1, 1}, flow_with_bitmap(100), kStart));
  // A FlowStart replaces the one before it; the bound counts the held one only.
  EXPECT_FALSE(backlog.hold({1, 1}, flow_with_bitmap(200), kStart));
  EXPECT_EQ(backlog.flow_bytes(), sizeof(wire::FlowStart) + 200);
  EXPECT_EQ(backlog.hold({1, 2}, flow_with_bitmap(1000), kStart),
            wire::RejectReason::kUnknownMessage);
}

TEST(EarlyArrivalBacklog, BoundsHowManyReceivesItHoldsFor) {
  EarlyArrivalBacklog backlog({.bytes = 1 << 20, .messages = 2, .ttl = milliseconds(500)});
  backlog.hold({0, 1}, datagram(10), kStart);
  EXPECT_FALSE(backlog.hold({0, 2}, wire::RoundFinished{}, kStart));
  // A third receive is refused in every form; the two held may still grow.
  EXPECT_EQ(backlog.refusal({0, 3}, 10), wire::RejectReason::kUnknownMessage);
  EXPECT_EQ(backlog.hold({0, 3}, wire::RoundFinished{}, kStart),
            wire::RejectReason::kUnknownMessage);
  EXPECT_EQ(backlog.hold({0, 3}, flow_with_bitmap(1), kStart), wire::RejectReason::kUnknownMessage);
  EXPECT_FALSE(backlog.refusal({0, 2}, 10));
  EXPECT_EQ(backlog.messages(), 2u);
}

TEST(EarlyArrivalBacklog, ExpiresByAgeAndByLostPeer) {
  EarlyArrivalBacklog backlog({.bytes = 1 << 20, .messages = 8, .ttl = milliseconds(500)});
  backlog.hold({0, 1}, datagram(10), kStart);
  backlog.hold({0, 2}, datagram(20), kStart + milliseconds(300));
  backlog.hold({0, 2}, datagram(20), kStart + milliseconds(900));  // its age runs from the first
  backlog.hold({3, 1}, datagram(30), kStart + milliseconds(300));
  const auto nobody_lost = [](int) { return false; };
  backlog.expire(kStart + milliseconds(500), nobody_lost);  // exactly the ttl: kept
  EXPECT_EQ(backlog.messages(), 3u);
  backlog.expire(kStart + milliseconds(501), nobody_lost);
  EXPECT_FALSE(backlog.take({0, 1}));
  EXPECT_EQ(backlog.messages(), 2u);
  backlog.expire(kStart + milliseconds(600), [](int peer) { return peer == 3; });
  EXPECT_FALSE(backlog.take({3, 1}));
  EXPECT_EQ(backlog.datagram_bytes(), 40u);
  EXPECT_EQ(backlog.datagrams(), 2u);
  backlog.expire(kStart + milliseconds(801), nobody_lost);
  EXPECT_EQ(backlog.messages(), 0u);
  EXPECT_EQ(backlog.datagram_bytes(), 0u);
  EXPECT_EQ(backlog.datagrams(), 0u);
}

}  // namespace
}  // namespace dlcp::protocol
