// The long link's model on fixed inputs and injected times: serialization, the queue limit, the
// delay and its jitter, and the loss rates and burst lengths over many draws of a fixed seed.
#include "long_link_model.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace dlcp::testbed {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

LongLinkOptions lossless(double one_way_ms, double rate_bps) {
  LongLinkOptions options;
  options.one_way_ms = one_way_ms;
  options.rate_bps = rate_bps;
  return options;
}

TEST(LongLinkModel, SerializationTimeIsBitsOverRate) {
  EXPECT_EQ(serialization_time(1250, 1e6), milliseconds(10));
  EXPECT_EQ(serialization_time(9018, 400e6), Nanos(180'360));
  EXPECT_EQ(serialization_time(1042, 400e6), Nanos(20'840));
  EXPECT_EQ(serialization_time(0, 400e6), Nanos(0));
}

TEST(LongLinkModel, ReleasesAfterSerializationPlusTheOneWayDelay) {
  LongLinkModel model(lossless(5, 8e6), 1);  // 1000 bytes take 1 ms
  const FrameDecision d = model.offer(milliseconds(100), 1000);
  EXPECT_EQ(d.fate, FrameFate::kForwarded);
  EXPECT_EQ(d.release, milliseconds(106));
  EXPECT_EQ(model.counters().forwarded_frames, 1u);
  EXPECT_EQ(model.counters().forwarded_bytes, 1000u);
}

TEST(LongLinkModel, FramesArrivingTogetherLeaveOneSerializationApart) {
  LongLinkModel model(lossless(2, 8e6), 1);
  std::vector<Nanos> releases;
  for (int i = 0; i < 3; ++i) releases.push_back(model.offer(milliseconds(10), 1000).release);
  EXPECT_EQ(releases, (std::vector<Nanos>{milliseconds(13), milliseconds(14), milliseconds(15)}));
  // The link is idle again by 13 ms: a frame then waits for nobody.
  EXPECT_EQ(model.offer(milliseconds(20), 500).release,
            Nanos(milliseconds(22) + microseconds(500)));
}

TEST(LongLinkModel, TailDropsWhatTheQueueCannotHold) {
  LongLinkOptions options = lossless(1, 8e6);
  options.queue_bytes = 3000;
  LongLinkModel model(options, 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(model.offer(Nanos(0), 1000).fate, FrameFate::kForwarded);
  EXPECT_DOUBLE_EQ(model.backlog_bytes(Nanos(0)), 3000);
  EXPECT_EQ(model.offer(Nanos(0), 1000).fate, FrameFate::kQueueOverflow);
  EXPECT_EQ(model.offer(Nanos(0), 1).fate, FrameFate::kQueueOverflow);
  // After 1.5 ms, 1500 bytes have left: 1000 more fit, 1500 more would not.
  EXPECT_DOUBLE_EQ(model.backlog_bytes(microseconds(1500)), 1500);
  EXPECT_EQ(model.offer(microseconds(1500), 1501).fate, FrameFate::kQueueOverflow);
  EXPECT_EQ(model.offer(microseconds(1500), 1000).fate, FrameFate::kForwarded);
  EXPECT_EQ(model.counters().dropped_queue, 3u);
  EXPECT_EQ(model.counters().forwarded_frames, 4u);
  EXPECT_EQ(model.counters().frames_offered, 7u);
}

TEST(LongLinkModel, JitterStaysWithinItsBoundsAndAveragesOut) {
  LongLinkOptions options = lossless(5, 1e9);
  options.jitter_us = 100;
  options.reorder = true;
  LongLinkModel model(options, 7);
  double sum = 0, low = 0, high = 0;
  constexpr int kFrames = 100'000;
  for (int i = 0; i < kFrames; ++i) {
    const Nanos arrival = milliseconds(i);  // far apart: no queueing, no ordering constraint
    const Nanos nominal = arrival + serialization_time(100, 1e9) + milliseconds(5);
    const double offset_us =
        static_cast<double>((model.offer(arrival, 100).release - nominal).count()) / 1e3;
    ASSERT_GE(offset_us, -100);
    ASSERT_LE(offset_us, 100);
    sum += offset_us;
    low = std::min(low, offset_us);
    high = std::max(high, offset_us);
  }
  EXPECT_NEAR(sum / kFrames, 0, 1);  // the uniform draw's standard error is 0.18 us
  EXPECT_LT(low, -99);
  EXPECT_GT(high, 99);
}

TEST(LongLinkModel, JitterReordersOnlyWhenAllowed) {
  for (const bool reorder : {false, true}) {
    LongLinkOptions options = lossless(5, 1e9);
    options.jitter_us = 100;
    options.reorder = reorder;
    LongLinkModel model(options, 3);
    int overtaken = 0;
    Nanos last(0);
    for (int i = 0; i < 10'000; ++i) {
      const Nanos release = model.offer(microseconds(10 * i), 100).release;  // 10 us apart
      if (release < last) ++overtaken;
      last = std::max(last, release);
    }
    if (reorder) {
      EXPECT_GT(overtaken, 1000);
    } else {
      EXPECT_EQ(overtaken, 0);
    }
  }
}

TEST(LongLinkModel, RandomLossHasTheAskedRate) {
  LongLinkOptions options = lossless(1, 1e9);
  options.random_loss = 0.005;
  LongLinkModel model(options, 11);
  constexpr int kFrames = 1'000'000;
  for (int i = 0; i < kFrames; ++i) model.offer(microseconds(10 * i), 100);
  const auto& c = model.counters();
  // Standard error sqrt(0.005 * 0.995 / 1e6) = 7e-5: four of them.
  EXPECT_NEAR(static_cast<double>(c.dropped_random) / kFrames, 0.005, 0.0003);
  EXPECT_EQ(c.dropped_burst, 0u);
  EXPECT_EQ(c.dropped_queue, 0u);
  EXPECT_EQ(c.forwarded_frames + c.dropped_random, static_cast<std::uint64_t>(kFrames));
}

// Lossless frames (LongLinkOptions::lossless_dscp) cross a lossy wire whole, and the draws stay
// the same: the other frames lose exactly what they lose with no lossless frame among them.
TEST(LongLinkModel, LosslessFramesAreSparedWithoutChangingTheOthersDraws) {
  LongLinkOptions options = lossless(1, 1e9);
  options.random_loss = 0.1;
  options.burst_loss = 0.1;
  LongLinkModel spared(options, 5);
  LongLinkModel plain(options, 5);
  std::uint64_t other_drops = 0;
  for (int i = 0; i < 100'000; ++i) {
    const bool is_lossless = i % 3 == 0;
    const FrameDecision a = spared.offer(microseconds(10 * i), 100, is_lossless);
    const FrameDecision b = plain.offer(microseconds(10 * i), 100);
    if (is_lossless) {
      EXPECT_EQ(a.fate, FrameFate::kForwarded);
    } else {
      EXPECT_EQ(a.fate, b.fate) << "frame " << i;
      other_drops += a.fate != FrameFate::kForwarded;
    }
  }
  const auto& c = spared.counters();
  EXPECT_EQ(c.dropped_random + c.dropped_burst, other_drops);
  const auto& p = plain.counters();
  EXPECT_EQ(c.spared, p.dropped_random + p.dropped_burst - other_drops);
  EXPECT_GT(c.spared, 5'000u);  // about a fifth of the third that is lossless
}

TEST(LongLinkModel, Ipv4DscpIsReadFromTheFrame) {
  std::vector<unsigned char> frame(60, 0);
  frame[12] = 0x08;  // IPv4
  frame[14] = 0x45;
  frame[15] = 63 << 2 | 0b01;  // DSCP 63, ECN ECT(1)
  EXPECT_EQ(ipv4_dscp(frame), 63);
  EXPECT_EQ(ipv4_dscp(std::span<const unsigned char>(frame.data(), 15)), -1);  // no TOS byte
  std::vector<unsigned char> tagged(64, 0);
  tagged[12] = 0x81;  // 802.1Q, then IPv4
  tagged[16] = 0x08;
  tagged[18] = 0x45;
  tagged[19] = 10 << 2;
  EXPECT_EQ(ipv4_dscp(tagged), 10);
  frame[12] = 0x86;  // IPv6
  frame[13] = 0xdd;
  EXPECT_EQ(ipv4_dscp(frame), -1);
}

TEST(LongLinkModel, GilbertElliottParametersGiveTheLossAndBurstLength) {
  const GilbertElliott channel = gilbert_elliott(0.01, 4);
  EXPECT_DOUBLE_EQ(channel.leave_bad, 0.25);
  EXPECT_DOUBLE_EQ(channel.enter_bad, 0.25 * 0.01 / 0.99);
  EXPECT_DOUBLE_EQ(channel.enter_bad / (channel.enter_bad + channel.leave_bad), 0.01);
  EXPECT_DOUBLE_EQ(gilbert_elliott(0, 4).enter_bad, 0);
}

TEST(LongLinkModel, BurstLossHasTheAskedRateAndMeanBurstLength) {
  LongLinkOptions options = lossless(1, 1e9);
  options.burst_loss = 0.01;
  options.burst_length = 4;
  LongLinkModel model(options, 5);
  constexpr int kFrames = 2'000'000;
  int runs = 0, run = 0;
  std::uint64_t run_frames = 0;
  for (int i = 0; i < kFrames; ++i) {
    if (model.offer(microseconds(10 * i), 100).fate == FrameFate::kBurstLoss) {
      ++run;
    } else if (run > 0) {
      ++runs;
      run_frames += static_cast<std::uint64_t>(run);
      run = 0;
    }
  }
  const auto& c = model.counters();
  // About 5000 bursts of geometric length (standard deviation 3.5): the mean is within 0.05 *
  // 4 = 4 standard errors, the loss rate within 0.001 (the bursts' count varies by 1.4%).
  EXPECT_NEAR(static_cast<double>(c.dropped_burst) / kFrames, 0.01, 0.001);
  EXPECT_NEAR(static_cast<double>(run_frames) / runs, 4, 0.2);
  EXPECT_NEAR(static_cast<double>(c.dropped_burst) / static_cast<double>(c.bursts), 4, 0.2);
  EXPECT_EQ(c.dropped_random, 0u);
}

TEST(LongLinkModel, TheSameSeedGivesTheSameFates) {
  LongLinkOptions options = lossless(1, 1e9);
  options.random_loss = 0.1;
  options.burst_loss = 0.1;
  LongLinkModel a(options, 42), b(options, 42), c(options, 43);
  int differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto fate = a.offer(microseconds(10 * i), 100).fate;
    EXPECT_EQ(fate, b.offer(microseconds(10 * i), 100).fate);
    if (fate != c.offer(microseconds(10 * i), 100).fate) ++differ;
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace dlcp::testbed
