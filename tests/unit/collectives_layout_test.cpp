// Block-aligned layout of collectives and the arithmetic of unbiased aggregation, on fixed inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/message_id.hpp"
#include "collectives/ps_descriptor.hpp"
#include "collectives/reduction.hpp"

namespace dlcp::collectives {
namespace {

TEST(BlockLayout, PartsCoverTheBufferOnBlockBoundaries) {
  for (const std::size_t total : {1u, 9u, 10u, 11u, 1000u, 100'003u}) {
    for (const std::size_t parts : {1u, 2u, 3u, 4u, 7u}) {
      for (const std::size_t block : {1u, 3u, 358u}) {
        std::size_t next = 0;
        for (std::size_t i = 0; i < parts; ++i) {
          const Range r = aligned_part(total, parts, block, i);
          EXPECT_EQ(r.begin, next);
          if (r.end() < total) {
            EXPECT_EQ(r.end() % block, 0u);
          }
          next = r.end();
        }
        EXPECT_EQ(next, total) << total << "/" << parts << "/" << block;
      }
    }
  }
}

TEST(BlockLayout, EarlierPartsTakeTheExtraBlocks) {
  // 10 floats in blocks of 3 = 4 blocks over 3 parts: 2, 1, 1 blocks -> 6, 3, 1 floats.
  EXPECT_EQ(aligned_part(10, 3, 3, 0), (Range{0, 6}));
  EXPECT_EQ(aligned_part(10, 3, 3, 1), (Range{6, 3}));
  EXPECT_EQ(aligned_part(10, 3, 3, 2), (Range{9, 1}));
  // Fewer blocks than parts: trailing parts are empty.
  EXPECT_EQ(aligned_part(5, 4, 3, 2), (Range{5, 0}));
}

TEST(BlockLayout, SegmentsAreBlockMultiplesWithinTheLimit) {
  EXPECT_EQ(segment_floats(1000, 300, 10'000, 100), 900u);  // rounded down to blocks
  EXPECT_EQ(segment_floats(10, 300, 10'000, 100), 300u);    // at least one block
  // A huge range with few segments allowed: grows to fit.
  EXPECT_EQ(segment_floats(300, 300, 300 * 1000, 10), 300u * 100);
  EXPECT_EQ(segment_count(0, 300), 0u);
  EXPECT_EQ(segment_count(301, 300), 2u);
  EXPECT_EQ(segment_of(Range{100, 301}, 300, 1), (Range{400, 1}));
}

TEST(MessageId, FieldsDoNotOverlap) {
  const auto id = message_id(0xFFFFFFFF, Phase::kBarrier, kMaxSteps - 1, kMaxSegments - 1);
  EXPECT_EQ(id >> 32, 0xFFFFFFFFu);
  EXPECT_EQ((id >> 28) & 0xF, static_cast<unsigned>(Phase::kBarrier));
  EXPECT_NE(message_id(1, Phase::kReduce, 0, 0), message_id(1, Phase::kGather, 0, 0));
  EXPECT_NE(message_id(1, Phase::kReduce, 1, 0), message_id(1, Phase::kReduce, 0, 1));
}

TEST(Reduction, AccumulateSkipsBlocksThatNeverArrived) {
  std::vector<float> acc = {1, 1, 1, 1, 1};
  std::vector<std::uint16_t> acc_counts = {1, 1, 1};
  const std::vector<float> in = {2, 2, 9, 9, 3};
  const std::vector<std::uint16_t> in_counts = {2, 0, 1};  // block 1 lost
  accumulate(acc, acc_counts, in, in_counts, 2);
  EXPECT_EQ(acc, (std::vector<float>{3, 3, 1, 1, 4}));
  EXPECT_EQ(acc_counts, (std::vector<std::uint16_t>{3, 1, 2}));
}

TEST(Reduction, SumInOrderAddsWhatArrivedInTheGivenOrderWithinTheEntries) {
  const std::vector<float> a = {1e8f, 1e8f, 1e8f, 5, 5};
  const std::vector<float> b = {1, 1, 1, 9, 6};
  const std::vector<float> c = {-1e8f, -1e8f, -1e8f, 9, 7};
  const std::vector<std::uint16_t> all = {1, 1, 1};
  const std::vector<std::uint16_t> last_lost = {1, 0, 0};  // blocks of 2: entries 2..4 lost
  std::vector<float> acc(5, 42.0f);
  // Entries 1..3 only, from inside block 0 to inside block 1.
  const std::vector<Contribution> abc = {{a, all}, {b, all}, {c, last_lost}};
  sum_in_order(acc, abc, Range{1, 3}, 2);
  // 1e8 + 1 rounds the 1 away, so (1e8 + 1) + -1e8 is 0; entries 2 and 3 miss c's lost block.
  EXPECT_EQ(acc, (std::vector<float>{42, 0, 1e8f, 14, 42}));
  const std::vector<Contribution> cab = {{c, all}, {a, all}, {b, all}};
  sum_in_order(acc, cab, Range{0, 1}, 2);
  EXPECT_EQ(acc[0], 1.0f);  // (-1e8 + 1e8) + 1: the order decides
  // A first contribution that did not arrive leaves the next one's values exactly (-0 + x = x).
  const std::vector<float> zeros = {-0.0f, 0.0f, 0, 0, 0};
  const std::vector<std::uint16_t> first_lost = {0, 1, 1};
  const std::vector<Contribution> lost_first = {{b, first_lost}, {zeros, all}};
  std::vector<float> out(5, 42.0f);
  sum_in_order(out, lost_first, Range{0, 2}, 2);
  EXPECT_TRUE(std::signbit(out[0]));
  EXPECT_FALSE(std::signbit(out[1]));
  std::vector<std::uint16_t> counts(3);
  sum_counts(counts, abc);
  EXPECT_EQ(counts, (std::vector<std::uint16_t>{3, 2, 2}));
}

TEST(Reduction, UnbiasedAverageDividesByWhatArrived) {
  std::vector<float> sums = {6, 6, 4, 4, 0, 0};
  const std::vector<std::uint16_t> counts = {3, 2, 0};
  const auto stats = finalize(sums, counts, 2, 3, ReduceOp::kAverage, Aggregation::kUnbiased);
  EXPECT_EQ(sums, (std::vector<float>{2, 2, 2, 2, 0, 0}));
  EXPECT_EQ(stats.contributions_expected, 18u);
  EXPECT_EQ(stats.contributions_received, 10u);
}

TEST(Reduction, UnbiasedSumRescalesToTheWorld) {
  std::vector<float> sums = {6, 4, 3};
  const std::vector<std::uint16_t> counts = {4, 2, 3};
  finalize(sums, counts, 1, 4, ReduceOp::kSum, Aggregation::kUnbiased);
  EXPECT_EQ(sums, (std::vector<float>{6, 8, 4}));
}

TEST(Reduction, ZeroFillCountsLostContributionsAsZero) {
  std::vector<float> sums = {6, 4};
  const std::vector<std::uint16_t> counts = {4, 2};
  finalize(sums, counts, 1, 4, ReduceOp::kAverage, Aggregation::kZeroFill);
  EXPECT_EQ(sums, (std::vector<float>{1.5f, 1.0f}));
  std::vector<float> unchanged = {6, 4};
  finalize(unchanged, counts, 1, 4, ReduceOp::kSum, Aggregation::kZeroFill);
  EXPECT_EQ(unchanged, (std::vector<float>{6, 4}));
}

TEST(Reduction, CompleteAverageEqualsPlainDivision) {
  std::vector<float> sums = {1, 2, 10};
  const std::vector<std::uint16_t> counts = {3};
  finalize(sums, counts, 3, 3, ReduceOp::kAverage, Aggregation::kUnbiased);
  EXPECT_EQ(sums, (std::vector<float>{1.0f / 3.0f, 2.0f / 3.0f, 10.0f / 3.0f}));
}

TEST(Reduction, FallBackAndClearTouchOnlyShortBlocks) {
  std::vector<float> values = {7, 7, 7, 7};
  const std::vector<float> local = {1, 2, 3, 4};
  const std::vector<std::uint16_t> counts = {4, 1};
  EXPECT_EQ(fall_back_to_local(values, counts, 4, local, 4.0f, 2), 2u);
  EXPECT_EQ(values, (std::vector<float>{7, 7, 12, 16}));
  clear_missing(values, std::vector<std::uint16_t>{0, 1}, 2);
  EXPECT_EQ(values, (std::vector<float>{0, 0, 12, 16}));
}

// Blocks long enough for the vectorized loops and their tails, entries starting and ending
// inside blocks: the results are the plain per-entry arithmetic's, bit for bit.
TEST(Reduction, LongBlocksGiveThePlainLoopsResults) {
  constexpr std::size_t kBlock = 37;
  constexpr std::size_t kEntries = 250;
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random_values = [&] {
    std::vector<float> v(kEntries);
    for (float& x : v) x = std::ldexp(normal(rng), static_cast<int>(rng() % 40) - 20);
    return v;
  };
  const std::vector<float> a = random_values();
  const std::vector<float> b = random_values();
  const std::vector<std::uint16_t> counts = {1, 0, 1, 1, 1, 0, 1};  // 7 blocks of 37
  const std::vector<std::uint16_t> all(counts.size(), 1);

  std::vector<float> acc = a;
  std::vector<std::uint16_t> acc_counts = all;
  accumulate(acc, acc_counts, b, counts, kBlock);
  for (std::size_t i = 0; i < kEntries; ++i) {
    ASSERT_EQ(acc[i], counts[i / kBlock] != 0 ? a[i] + b[i] : a[i]) << i;
  }

  std::vector<float> sum(kEntries, 42.0f);
  const std::vector<Contribution> ab = {{a, all}, {b, counts}};
  sum_in_order(sum, ab, Range{5, 230}, kBlock);
  for (std::size_t i = 0; i < kEntries; ++i) {
    const float expected = i < 5 || i >= 235 ? 42.0f : counts[i / kBlock] != 0 ? a[i] + b[i] : a[i];
    ASSERT_EQ(sum[i], expected) << i;
  }

  std::vector<float> average = a;
  const std::vector<std::uint16_t> arrived = {3, 0, 2, 3, 1, 3, 2};
  finalize(average, arrived, kBlock, 3, ReduceOp::kAverage, Aggregation::kUnbiased);
  std::vector<float> rescaled = a;
  finalize(rescaled, arrived, kBlock, 3, ReduceOp::kSum, Aggregation::kUnbiased);
  for (std::size_t i = 0; i < kEntries; ++i) {
    const std::uint16_t count = arrived[i / kBlock];
    ASSERT_EQ(average[i], count == 0 ? 0.0f : a[i] / static_cast<float>(count)) << i;
    ASSERT_EQ(rescaled[i], count == 0 ? 0.0f : a[i] * (3.0f / static_cast<float>(count))) << i;
  }
}

TEST(PsDescriptor, RoundTripsAndRejectsEachBadField) {
  PsDescriptor d;
  d.shard_floats = 1'000'000;
  d.segment_floats = 16'000;
  d.layer = 3;
  d.num_layers = 50;
  d.loss_budget_ppm = 50'000;
  d.broadcast_budget_ppm = 0;
  d.op = ReduceOp::kAverage;
  d.aggregation = Aggregation::kZeroFill;
  d.deadline_ms = 30'000;
  d.stripes = 3;
  d.stripe = 2;
  d.contributions = 4;
  const auto wire = encode_descriptor(d);
  const auto back = decode_descriptor(wire);
  ASSERT_TRUE(back.has_value()) << back.error();
  EXPECT_EQ(*back, d);

  PsDescriptor shutdown;
  shutdown.shutdown = true;
  ASSERT_TRUE(decode_descriptor(encode_descriptor(shutdown)).has_value());
  EXPECT_TRUE(decode_descriptor(encode_descriptor(shutdown))->shutdown);

  const auto broken = [&](auto change) {
    PsDescriptor copy = d;
    change(copy);
    return decode_descriptor(encode_descriptor(copy));
  };
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.layer = 50; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.num_layers = 0; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.loss_budget_ppm = 1'000'001; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.segment_floats = 0; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.deadline_ms = 0; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.stripes = 0; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.stripe = 3; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.contributions = 0; }).has_value());
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.contributions = 0x10000; }).has_value());
  // Pushing nothing: no shard and no contributions.
  EXPECT_FALSE(broken([](PsDescriptor& x) { x.stripe = kNoStripe; }).has_value());
  const auto nothing = broken([](PsDescriptor& x) {
    x.stripe = kNoStripe;
    x.shard_floats = 0;
    x.contributions = 0;
  });
  ASSERT_TRUE(nothing.has_value()) << nothing.error();
  EXPECT_EQ(nothing->stripe, kNoStripe);
  auto bad_magic = wire;
  bad_magic[0] = 1.0f;
  EXPECT_FALSE(decode_descriptor(bad_magic).has_value());
  EXPECT_FALSE(decode_descriptor(std::span<const float>(wire).first(5)).has_value());
}

}  // namespace
}  // namespace dlcp::collectives
