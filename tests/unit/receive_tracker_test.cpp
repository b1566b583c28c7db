#include "protocol/receive_tracker.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

namespace dlcp::protocol {
namespace {

using wire::SeqRange;

std::vector<std::uint8_t> bitmap(std::uint32_t packets, std::initializer_list<std::uint32_t> set) {
  std::vector<std::uint8_t> bits((packets + 7) / 8, 0);
  for (std::uint32_t seq : set)
    bits[seq / 8] = static_cast<std::uint8_t>(bits[seq / 8] | (1u << (seq % 8)));
  return bits;
}

void receive_all_but(ReceiveTracker& tracker, std::initializer_list<std::uint32_t> missing) {
  for (std::uint32_t seq = 0; seq < tracker.packet_count(); ++seq) {
    if (std::find(missing.begin(), missing.end(), seq) == missing.end()) tracker.mark_received(seq);
  }
}

TEST(ReceiveTracker, Geometry) {
  ReceiveTracker even(80, 10);
  EXPECT_EQ(even.packet_count(), 8u);
  EXPECT_EQ(even.floats_in(7), 10u);
  ReceiveTracker tracker(10, 4);
  EXPECT_EQ(tracker.packet_count(), 3u);
  EXPECT_EQ(tracker.total_floats(), 10u);
  EXPECT_EQ(tracker.floats_in(0), 4u);
  EXPECT_EQ(tracker.floats_in(1), 4u);
  EXPECT_EQ(tracker.floats_in(2), 2u);
  EXPECT_EQ(tracker.floats_in(3), 0u);
  EXPECT_EQ(tracker.missing_floats(), 10u);
  EXPECT_FALSE(tracker.has_flow());
  ReceiveTracker one(1, 65535);
  EXPECT_EQ(one.packet_count(), 1u);
  EXPECT_EQ(one.floats_in(0), 1u);
  EXPECT_THROW(ReceiveTracker(0, 4), std::invalid_argument);
  EXPECT_THROW(ReceiveTracker(10, 0), std::invalid_argument);
}

TEST(ReceiveTracker, WithoutFlowOnlyCompleteSettles) {
  ReceiveTracker tracker(100, 10);
  receive_all_but(tracker, {4});
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  EXPECT_EQ(tracker.allowed_missing_floats(), 0u);
  EXPECT_EQ(tracker.protected_missing(), 0u);
  EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{4, 1}}));
  EXPECT_EQ(tracker.retransmit_request(5.0), (std::vector<SeqRange>{{4, 1}}));
  EXPECT_TRUE(tracker.mark_received(4));
  EXPECT_EQ(tracker.settlement(), Settlement::kComplete);
  EXPECT_TRUE(tracker.retransmit_request().empty());
}

TEST(ReceiveTracker, WithoutFlowRequestsEveryMissingPacket) {
  ReceiveTracker tracker(100, 10);
  for (std::uint32_t seq : {1u, 2u, 5u, 9u}) tracker.mark_received(seq);
  const std::vector<SeqRange> all{{0, 1}, {3, 2}, {6, 3}};
  EXPECT_EQ(tracker.retransmit_request(), all);
  EXPECT_EQ(tracker.missing_packets(), all);
}

TEST(ReceiveTracker, BoundReachedVersusComplete) {
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {0, 1}), 100'000);  // 10% = 10 entries
  EXPECT_TRUE(tracker.has_flow());
  EXPECT_EQ(tracker.protected_count(), 2u);
  EXPECT_EQ(tracker.allowed_missing_floats(), 10u);
  receive_all_but(tracker, {8, 9});
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);  // 20 entries missing
  EXPECT_TRUE(tracker.mark_received(8));
  EXPECT_EQ(tracker.settlement(), Settlement::kBoundReached);  // 10 missing, at the bound
  EXPECT_TRUE(tracker.retransmit_request().empty());
  EXPECT_TRUE(tracker.retransmit_request(1.0).empty());
  EXPECT_TRUE(tracker.mark_received(9));
  EXPECT_EQ(tracker.settlement(), Settlement::kComplete);
  EXPECT_EQ(tracker.missing_floats(), 0u);
}

TEST(ReceiveTracker, ZeroBudgetNeedsEverything) {
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {}), 0);
  receive_all_but(tracker, {3});
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{3, 1}}));
}

TEST(ReceiveTracker, ProtectedNeverAllowedMissing) {
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {3, 7}), 1'000'000);  // everything else may go
  EXPECT_EQ(tracker.allowed_missing_floats(), 100u);
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{3, 1}, {7, 1}}));
  EXPECT_EQ(tracker.retransmit_request(10.0), (std::vector<SeqRange>{{3, 1}, {7, 1}}));
  tracker.mark_received(7);
  EXPECT_EQ(tracker.protected_missing(), 1u);
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  tracker.mark_received(3);
  EXPECT_EQ(tracker.protected_missing(), 0u);
  EXPECT_EQ(tracker.settlement(), Settlement::kBoundReached);
  EXPECT_EQ(tracker.received_count(), 2u);
}

TEST(ReceiveTracker, FlowAfterArrivals) {
  ReceiveTracker tracker(100, 10);
  receive_all_but(tracker, {9});
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  tracker.set_flow(bitmap(10, {0, 9}), 100'000);
  EXPECT_EQ(tracker.protected_count(), 2u);
  EXPECT_EQ(tracker.protected_missing(), 1u);
  EXPECT_TRUE(tracker.is_protected(9));
  EXPECT_FALSE(tracker.is_protected(1));
  EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  tracker.set_flow(bitmap(10, {0}), 100'000);  // replaced, not accumulated
  EXPECT_EQ(tracker.protected_count(), 1u);
  EXPECT_EQ(tracker.protected_missing(), 0u);
  EXPECT_EQ(tracker.settlement(), Settlement::kBoundReached);
}

TEST(ReceiveTracker, Duplicates) {
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {2}), 0);
  EXPECT_TRUE(tracker.mark_received(2));
  EXPECT_FALSE(tracker.mark_received(2));
  EXPECT_TRUE(tracker.mark_received(9));
  EXPECT_FALSE(tracker.mark_received(9));
  EXPECT_EQ(tracker.received_count(), 2u);
  EXPECT_EQ(tracker.missing_floats(), 80u);
  EXPECT_EQ(tracker.protected_missing(), 0u);
  EXPECT_TRUE(tracker.received(2));
  EXPECT_FALSE(tracker.received(3));
  EXPECT_FALSE(tracker.received(10));
  EXPECT_THROW(tracker.mark_received(10), std::out_of_range);
}

TEST(ReceiveTracker, LastShortPacketCountsItsEntries) {
  // 10 entries in packets of 4, 4, 2; a budget of 20% allows 2 missing entries.
  {
    ReceiveTracker tracker(10, 4);
    tracker.set_flow(bitmap(3, {}), 200'000);
    EXPECT_EQ(tracker.allowed_missing_floats(), 2u);
    receive_all_but(tracker, {2});
    EXPECT_EQ(tracker.missing_floats(), 2u);
    EXPECT_EQ(tracker.settlement(), Settlement::kBoundReached);
  }
  {
    ReceiveTracker tracker(10, 4);
    tracker.set_flow(bitmap(3, {}), 200'000);
    receive_all_but(tracker, {0});
    EXPECT_EQ(tracker.missing_floats(), 4u);
    EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
    EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{0, 1}}));
  }
  {
    ReceiveTracker tracker(10, 4);
    tracker.set_flow(bitmap(3, {}), 199'999);  // 1.99999 -> 1 entry
    EXPECT_EQ(tracker.allowed_missing_floats(), 1u);
    receive_all_but(tracker, {2});
    EXPECT_EQ(tracker.settlement(), Settlement::kOpen);
  }
}

TEST(ReceiveTracker, AllowedMissingIsExactFloor) {
  struct Case {
    std::uint32_t total;
    std::uint16_t stride;
    std::uint32_t ppm;
    std::uint64_t allowed;
  };
  const Case cases[] = {
      {10, 4, 0, 0},
      {10, 4, 1'000'000, 10},
      {10, 4, 300'000, 3},
      {3, 1, 333'333, 0},
      {3'000'000, 1000, 333'333, 999'999},
      {999'999, 1000, 1, 0},
      {1'000'000, 1000, 1, 1},
      {1'000'001, 1000, 999'999, 999'999},  // (1e12 - 1) / 1e6
      {4'294'967'295u, 65535, 999'999, 4'294'963'000u},
      {4'294'967'295u, 65535, 1, 4294},
      {4'294'967'295u, 65535, 1'000'000, 4'294'967'295u},
      {100, 10, 49'999, 4},
  };
  for (const Case& k : cases) {
    ReceiveTracker tracker(k.total, k.stride);
    tracker.set_flow(std::vector<std::uint8_t>((tracker.packet_count() + 7) / 8, 0), k.ppm);
    EXPECT_EQ(tracker.allowed_missing_floats(), k.allowed) << k.total << " " << k.ppm;
  }
}

TEST(ReceiveTracker, SetFlowRejectsBadInput) {
  ReceiveTracker tracker(100, 10);  // 10 packets: 2 bitmap bytes
  EXPECT_THROW(tracker.set_flow({0}, 0), std::invalid_argument);
  EXPECT_THROW(tracker.set_flow({0, 0, 0}, 0), std::invalid_argument);
  EXPECT_THROW(tracker.set_flow({0, 0x04}, 0), std::invalid_argument);  // bit 10 set
  EXPECT_THROW(tracker.set_flow({0, 0}, 1'000'001), std::invalid_argument);
  EXPECT_FALSE(tracker.has_flow());
  EXPECT_NO_THROW(tracker.set_flow({0xff, 0x03}, 0));
  EXPECT_EQ(tracker.protected_count(), 10u);
}

TEST(ReceiveTracker, RetransmitRequestOnFixedPattern) {
  // 10 packets of 10 entries, budget 20% (20 entries), protected 0 and 5.
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {0, 5}), 200'000);
  for (std::uint32_t seq : {1u, 2u, 6u}) tracker.mark_received(seq);
  // Missing 0 3 4 5 7 8 9: protected 0, 5; drop-eligible 50 entries, 30 over the budget.
  EXPECT_EQ(tracker.retransmit_request(),
            (std::vector<SeqRange>{{0, 1}, {3, 3}, {7, 1}}));  // 3, 4 and 7 (lowest first)
  // extra 0.25: margin ceil(0.25 * 30) = 8, target 12 -> also 8.
  EXPECT_EQ(tracker.retransmit_request(0.25), (std::vector<SeqRange>{{0, 1}, {3, 3}, {7, 2}}));
  // extra 0.5: margin 15, target 5 -> everything.
  EXPECT_EQ(tracker.retransmit_request(0.5), (std::vector<SeqRange>{{0, 1}, {3, 3}, {7, 3}}));
  // The margin is capped at the budget: target 0 -> everything missing.
  EXPECT_EQ(tracker.retransmit_request(std::numeric_limits<double>::infinity()),
            tracker.missing_packets());
  // A budget group's slack of 20 entries: target 40, so 3 (lowest first) is the only one asked.
  EXPECT_EQ(tracker.retransmit_request(0.0, 20), (std::vector<SeqRange>{{0, 1}, {3, 1}, {5, 1}}));
  // Slack for every drop-eligible entry missing: only the protected packets.
  EXPECT_EQ(tracker.retransmit_request(0.0, 30), (std::vector<SeqRange>{{0, 1}, {5, 1}}));
  EXPECT_THROW(tracker.retransmit_request(-0.1), std::invalid_argument);
  EXPECT_THROW(tracker.retransmit_request(std::numeric_limits<double>::quiet_NaN()),
               std::invalid_argument);
}

TEST(ReceiveTracker, RetransmitRequestProtectedOnlyWhenWithinBudget) {
  ReceiveTracker tracker(100, 10);
  tracker.set_flow(bitmap(10, {4}), 200'000);
  receive_all_but(tracker, {4, 8, 9});  // 20 drop-eligible entries missing: within budget
  EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{4, 1}}));
  EXPECT_EQ(tracker.retransmit_request(1.0), (std::vector<SeqRange>{{4, 1}}));  // no deficit
}

TEST(ReceiveTracker, RetransmitRequestWithShortLastPacket) {
  // 95 entries: nine packets of 10 and one of 5. Budget 10% -> floor(9.5) = 9 entries.
  ReceiveTracker tracker(95, 10);
  tracker.set_flow(bitmap(10, {}), 100'000);
  EXPECT_EQ(tracker.allowed_missing_floats(), 9u);
  receive_all_but(tracker, {8, 9});  // 15 missing, deficit 6: packet 8 suffices
  EXPECT_EQ(tracker.retransmit_request(), (std::vector<SeqRange>{{8, 1}}));
  // extra 1.0: margin 6, target 3: packet 8 leaves 5 > 3, so 9 too.
  EXPECT_EQ(tracker.retransmit_request(1.0), (std::vector<SeqRange>{{8, 2}}));
  tracker.mark_received(8);
  EXPECT_EQ(tracker.settlement(), Settlement::kBoundReached);
}

TEST(ReceiveTracker, MissingPacketsAndEntries) {
  ReceiveTracker tracker(95, 10);
  EXPECT_EQ(tracker.missing_packets(), (std::vector<SeqRange>{{0, 10}}));
  EXPECT_EQ(tracker.missing_entries(), (std::vector<EntryRange>{{0, 95}}));
  for (std::uint32_t seq : {0u, 3u, 4u, 7u}) tracker.mark_received(seq);
  EXPECT_EQ(tracker.missing_packets(), (std::vector<SeqRange>{{1, 2}, {5, 2}, {8, 2}}));
  EXPECT_EQ(tracker.missing_entries(),
            (std::vector<EntryRange>{{10, 20}, {50, 20}, {80, 15}}));  // last packet is short
  tracker.mark_received(9);
  EXPECT_EQ(tracker.missing_entries(), (std::vector<EntryRange>{{10, 20}, {50, 20}, {80, 10}}));
  for (std::uint32_t seq : {1u, 2u, 5u, 6u, 8u}) tracker.mark_received(seq);
  EXPECT_TRUE(tracker.missing_packets().empty());
  EXPECT_TRUE(tracker.missing_entries().empty());
}

// Checks the shape of a range list and returns the packets it names.
std::vector<std::uint32_t> expand(const std::vector<SeqRange>& ranges, std::uint32_t packets) {
  std::vector<std::uint32_t> seqs;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_GT(ranges[i].count, 0u);
    EXPECT_LE(std::uint64_t{ranges[i].first} + ranges[i].count, packets);
    // Ascending, non-overlapping and merged: a gap separates neighbours.
    if (i > 0) {
      EXPECT_GT(ranges[i].first, ranges[i - 1].first + ranges[i - 1].count);
    }
    for (std::uint32_t k = 0; k < ranges[i].count; ++k) seqs.push_back(ranges[i].first + k);
  }
  return seqs;
}

void check_invariants(const ReceiveTracker& t) {
  switch (t.settlement()) {
    case Settlement::kComplete:
      ASSERT_EQ(t.received_count(), t.packet_count());
      ASSERT_EQ(t.missing_floats(), 0u);
      break;
    case Settlement::kBoundReached:
      ASSERT_TRUE(t.has_flow());
      ASSERT_LE(t.missing_floats(), t.allowed_missing_floats());
      ASSERT_EQ(t.protected_missing(), 0u);
      ASSERT_LT(t.received_count(), t.packet_count());
      break;
    case Settlement::kOpen:
      ASSERT_TRUE(t.protected_missing() > 0 || t.missing_floats() > t.allowed_missing_floats() ||
                  (!t.has_flow() && t.received_count() < t.packet_count()));
      break;
  }
  // The entry view and the packet view agree.
  std::uint64_t entries = 0;
  for (const EntryRange& r : t.missing_entries()) entries += r.count;
  ASSERT_EQ(entries, t.missing_floats());
}

TEST(ReceiveTracker, PropertyRandomDropPatterns) {
  for (std::uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    const auto below = [&](std::uint64_t n) { return rng() % n; };
    const auto chance = [&](double p) { return static_cast<double>(rng() >> 11) * 0x1.0p-53 < p; };
    const auto total = static_cast<std::uint32_t>(1 + below(4000));
    const auto stride = static_cast<std::uint16_t>(1 + below(200));
    ReceiveTracker tracker(total, stride);
    const std::uint32_t n = tracker.packet_count();
    std::vector<std::uint8_t> bits((n + 7) / 8, 0);
    const double protected_share = static_cast<double>(below(101)) / 100.0;
    for (std::uint32_t seq = 0; seq < n; ++seq) {
      if (chance(protected_share))
        bits[seq / 8] = static_cast<std::uint8_t>(bits[seq / 8] | (1u << (seq % 8)));
    }
    const auto ppm = static_cast<std::uint32_t>(below(400'001));
    const double loss = static_cast<double>(below(60)) / 100.0;
    const bool flow_first = chance(0.8);
    if (flow_first) tracker.set_flow(bits, ppm);

    // First round: every packet once, in a shuffled order, some lost, some duplicated.
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::shuffle(order.begin(), order.end(), rng);
    for (std::uint32_t seq : order) {
      if (chance(loss)) continue;
      ASSERT_TRUE(tracker.mark_received(seq));
      if (chance(0.05)) {
        ASSERT_FALSE(tracker.mark_received(seq));
      }
      ASSERT_NO_FATAL_FAILURE(check_invariants(tracker));
    }
    if (!flow_first) {
      ASSERT_NO_FATAL_FAILURE(check_invariants(tracker));
      tracker.set_flow(bits, ppm);
    }
    ASSERT_NO_FATAL_FAILURE(check_invariants(tracker));

    // retransmit_request(0): protected missing first, then the shortest lowest-seq prefix of the
    // missing drop-eligible packets that brings the missing entries within budget.
    const std::vector<SeqRange> request = tracker.retransmit_request();
    const std::vector<std::uint32_t> asked = expand(request, n);
    if (tracker.settlement() != Settlement::kOpen) {
      ASSERT_TRUE(request.empty());
    } else {
      ASSERT_FALSE(request.empty());
      std::uint64_t eligible_missing = 0;
      std::uint32_t last_eligible_missing = 0;
      for (std::uint32_t seq = 0; seq < n; ++seq) {
        if (tracker.received(seq)) continue;
        if (tracker.is_protected(seq)) {
          ASSERT_TRUE(std::binary_search(asked.begin(), asked.end(), seq)) << seq;
        } else {
          eligible_missing += tracker.floats_in(seq);
          last_eligible_missing = seq;
        }
      }
      std::uint64_t eligible_asked = 0;
      std::uint32_t last_eligible_asked = 0;
      bool any_eligible = false;
      for (std::uint32_t seq : asked) {
        ASSERT_FALSE(tracker.received(seq)) << seq;
        if (!tracker.is_protected(seq)) {
          eligible_asked += tracker.floats_in(seq);
          last_eligible_asked = seq;
          any_eligible = true;
        }
      }
      const std::uint64_t allowed = tracker.allowed_missing_floats();
      ASSERT_LE(eligible_missing - eligible_asked, allowed);
      if (any_eligible) {
        // Minimal: without the last drop-eligible packet asked for, the budget is exceeded.
        ASSERT_GT(eligible_missing - eligible_asked + tracker.floats_in(last_eligible_asked),
                  allowed);
        // A prefix: every missing drop-eligible packet below the last one asked is asked too.
        for (std::uint32_t seq = 0; seq < last_eligible_asked; ++seq) {
          if (!tracker.received(seq)) {
            ASSERT_TRUE(std::binary_search(asked.begin(), asked.end(), seq)) << seq;
          }
        }
      }
      (void)last_eligible_missing;
    }

    // Satisfying retransmit_request(0) fully settles the message.
    ReceiveTracker satisfied = tracker;
    for (std::uint32_t seq : asked) ASSERT_TRUE(satisfied.mark_received(seq));
    ASSERT_NE(satisfied.settlement(), Settlement::kOpen);
    ASSERT_TRUE(satisfied.retransmit_request().empty());
    ASSERT_NO_FATAL_FAILURE(check_invariants(satisfied));

    // Rounds of retransmission with a margin, themselves lossy, also end settled.
    const double extra = static_cast<double>(below(5)) / 4.0;
    ReceiveTracker lossy = tracker;
    for (int round = 0; round < 1000 && lossy.settlement() == Settlement::kOpen; ++round) {
      const std::vector<SeqRange> again = lossy.retransmit_request(extra);
      ASSERT_FALSE(again.empty());
      for (std::uint32_t seq : expand(again, n)) {
        if (!chance(loss)) {
          ASSERT_TRUE(lossy.mark_received(seq));
        }
        ASSERT_NO_FATAL_FAILURE(check_invariants(lossy));
      }
    }
    ASSERT_NE(lossy.settlement(), Settlement::kOpen);
    // With a margin, delivering the whole request keeps the missing entries within
    // allowed - margin; in particular it settles as well.
    ReceiveTracker with_margin = tracker;
    for (std::uint32_t seq : expand(tracker.retransmit_request(extra), n)) {
      with_margin.mark_received(seq);
    }
    ASSERT_NE(with_margin.settlement(), Settlement::kOpen);
  }
}

}  // namespace
}  // namespace dlcp::protocol
