#include "protocol/pacer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <stdexcept>

namespace dlcp::protocol {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const TimePoint kT0 = TimePoint{} + std::chrono::seconds(100);

TEST(Pacer, StartsFull) {
  Pacer pacer(1e6, 3000, kT0);
  EXPECT_EQ(pacer.available(kT0), 3000u);
  EXPECT_DOUBLE_EQ(pacer.rate(), 1e6);
  EXPECT_EQ(pacer.wait_for(3000, kT0), Duration::zero());
}

TEST(Pacer, RefillsAtRateCappedAtBurst) {
  Pacer pacer(1e6, 3000, kT0);  // 1 byte per microsecond
  pacer.consume(3000, kT0);
  EXPECT_EQ(pacer.available(kT0), 0u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(1000)), 1000u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(2500)), 2500u);
  EXPECT_EQ(pacer.available(kT0 + milliseconds(100)), 3000u);  // never above the burst
}

TEST(Pacer, ConsumeMayGoNegativeByAtMostOnePacket) {
  Pacer pacer(1e6, 3000, kT0);
  pacer.consume(2000, kT0);
  EXPECT_EQ(pacer.available(kT0), 1000u);
  pacer.consume(1500, kT0);  // sent with 1000 available: -500
  EXPECT_EQ(pacer.available(kT0), 0u);
  EXPECT_EQ(pacer.wait_for(1, kT0), microseconds(501));
  // Sending again while in debt cannot borrow more than this packet's worth (-1500).
  pacer.consume(1500, kT0);
  EXPECT_EQ(pacer.wait_for(1500, kT0), microseconds(3000));
  EXPECT_EQ(pacer.available(kT0 + microseconds(1500)), 0u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(1501)), 1u);
}

TEST(Pacer, WaitForIsExact) {
  Pacer pacer(1e6, 3000, kT0);
  pacer.consume(3000, kT0);
  EXPECT_EQ(pacer.wait_for(0, kT0), Duration::zero());
  EXPECT_EQ(pacer.wait_for(1500, kT0), microseconds(1500));
  // After some time passes, the wait shrinks accordingly.
  EXPECT_EQ(pacer.wait_for(1500, kT0 + microseconds(400)), microseconds(1100));
}

TEST(Pacer, WaitForReachesTargetAndNoSooner) {
  // Awkward rates: the wait is the smallest nanosecond count after which the tokens suffice.
  const double rates[] = {1.0, 3.0, 7e5, 1.25e9, 12.5e9, 123456.789, 9.99e10};
  const std::uint64_t sizes[] = {1, 7, 1500, 8972, 9000, 65507};
  for (double rate : rates) {
    for (std::uint64_t size : sizes) {
      Pacer pacer(rate, 9000, kT0);
      pacer.consume(9000, kT0);
      const TimePoint t1 = kT0 + nanoseconds(rate < 1e9 ? 123 : 0);
      const Duration wait = pacer.wait_for(size, t1);
      if (wait > Duration::zero()) {
        Pacer early = pacer;
        EXPECT_LT(early.available(t1 + wait - nanoseconds(1)), std::min<std::uint64_t>(size, 9000))
            << rate << " " << size;
      }
      // A request above the burst waits for a full bucket.
      EXPECT_GE(pacer.available(t1 + wait), std::min<std::uint64_t>(size, 9000))
          << rate << " " << size;
    }
  }
}

TEST(Pacer, SetRateKeepsTokensAndAppliesFromNow) {
  Pacer pacer(1e6, 10000, kT0);
  pacer.consume(10000, kT0);
  pacer.set_rate(2e6, kT0 + microseconds(1000));  // 1000 tokens earned at the old rate
  EXPECT_DOUBLE_EQ(pacer.rate(), 2e6);
  EXPECT_EQ(pacer.available(kT0 + microseconds(1000)), 1000u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(2000)), 3000u);
  EXPECT_EQ(pacer.wait_for(5000, kT0 + microseconds(2000)), microseconds(1000));
  pacer.set_rate(5e5, kT0 + microseconds(2000));
  EXPECT_EQ(pacer.wait_for(5000, kT0 + microseconds(2000)), microseconds(4000));
}

TEST(Pacer, SetRateCapsAtBurst) {
  Pacer pacer(1e6, 3000, kT0);
  pacer.set_rate(1e3, kT0 + milliseconds(50));
  EXPECT_EQ(pacer.available(kT0 + milliseconds(50)), 3000u);
}

TEST(Pacer, SetBurstDropsTokensAboveTheNewBurst) {
  Pacer pacer(1e6, 10000, kT0);
  pacer.set_burst(4000, kT0);
  EXPECT_EQ(pacer.burst(), 4000u);
  EXPECT_EQ(pacer.available(kT0), 4000u);
  pacer.consume(4000, kT0);
  pacer.set_burst(20000, kT0 + microseconds(1000));  // 1000 tokens earned, none dropped
  EXPECT_EQ(pacer.available(kT0 + microseconds(1000)), 1000u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(30000)), 20000u);
  EXPECT_THROW(pacer.set_burst(0, kT0), std::invalid_argument);
}

TEST(Pacer, BurstIsAnEighthOfAFeedbackIntervalOfDataWithinFloorAndCeiling) {
  const Duration library_default = milliseconds(2);
  // 1.6 Gbit/s = 200 MB/s: an eighth of 2 ms is 50,000 bytes, above the floor of 2 jumbo datagrams.
  EXPECT_EQ(burst_for_rate(2e8, 9000, library_default), 50000u);
  // 400 Mbit/s: 12,500 bytes in 250 us, below the floor of 2 x 9000.
  EXPECT_EQ(burst_for_rate(5e7, 9000, library_default), 18000u);
  // The same rate at MTU 1500: 12,500 bytes, above the floor of 2 x 1500.
  EXPECT_EQ(burst_for_rate(5e7, 1500, library_default), 12500u);
  // 10 Gbit/s: 312,500 bytes in 250 us, capped at 256 KiB (16 x 1500 is less).
  EXPECT_EQ(burst_for_rate(1.25e9, 1500, library_default), 256u * 1024u);
  // With 64 KiB datagrams the ceiling is 16 datagrams: 100 Gbit/s gives 3.125 MB in 250 us.
  EXPECT_EQ(burst_for_rate(12.5e9, 65536, library_default), 16u * 65536u);
  // A data-centre interval of 20 us at 100 Gbit/s: 31,250 bytes in 2.5 us, below the ceiling.
  EXPECT_EQ(burst_for_rate(12.5e9, 9000, microseconds(20)), 31250u);
  // The same interval after a cut to 10 Gbit/s: 3,125 bytes, so the floor of 2 datagrams.
  EXPECT_EQ(burst_for_rate(1.25e9, 9000, microseconds(20)), 18000u);
  EXPECT_THROW(burst_for_rate(0.0, 1500, library_default), std::invalid_argument);
  EXPECT_THROW(burst_for_rate(1e6, 1500, Duration::zero()), std::invalid_argument);
  EXPECT_THROW(burst_for_rate(1e6, 1500, -microseconds(1)), std::invalid_argument);
}

TEST(Pacer, DrainDropsSavedTokensButKeepsADebt) {
  Pacer pacer(1e6, 10000, kT0);  // full: 10,000 bytes
  pacer.drain(kT0);
  EXPECT_EQ(pacer.available(kT0), 0u);
  EXPECT_EQ(pacer.wait_for(1000, kT0), microseconds(1000));  // accrues again at the rate
  EXPECT_EQ(pacer.available(kT0 + microseconds(2500)), 2500u);

  Pacer indebted(1e6, 10000, kT0);
  indebted.consume(10000, kT0);
  indebted.consume(1500, kT0);  // -1500
  indebted.drain(kT0);          // a debt is not forgiven
  EXPECT_EQ(indebted.wait_for(1, kT0), microseconds(1501));
}

TEST(Pacer, ApplyRateCutTakesEffectAtOnce) {
  const Duration interval = milliseconds(2);
  Pacer pacer(4e7, burst_for_rate(4e7, 1500, interval), kT0);  // 40 MB/s: 10,000-byte burst
  ASSERT_EQ(pacer.available(kT0), 10000u);
  apply_rate(pacer, 1e7, 1500, interval, kT0 + microseconds(100));
  EXPECT_DOUBLE_EQ(pacer.rate(), 1e7);
  EXPECT_EQ(pacer.burst(), 3000u);  // 2 x 1500 floor; 10 MB/s x 250 us is 2,500
  // The saved burst is gone: the next datagram waits for tokens at the new rate (10 B/us).
  EXPECT_EQ(pacer.available(kT0 + microseconds(100)), 0u);
  const Duration wait = pacer.wait_for(1500, kT0 + microseconds(100));
  EXPECT_GE(wait, microseconds(150));
  EXPECT_LE(wait, microseconds(150) + nanoseconds(1));  // rounding of 1500 / 1e7 s
}

TEST(Pacer, ApplyRateIncreaseKeepsSavedTokens) {
  const Duration interval = milliseconds(2);
  Pacer pacer(2.4e7, burst_for_rate(2.4e7, 1500, interval), kT0);  // 6,000-byte burst
  pacer.consume(2000, kT0);                                        // 4,000 left
  apply_rate(pacer, 4e7, 1500, interval, kT0);
  EXPECT_DOUBLE_EQ(pacer.rate(), 4e7);
  EXPECT_EQ(pacer.burst(), 10000u);
  EXPECT_EQ(pacer.available(kT0), 4000u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(100)), 8000u);  // 40 B/us from now on
  // An unchanged rate drains nothing either.
  apply_rate(pacer, 4e7, 1500, interval, kT0 + microseconds(100));
  EXPECT_EQ(pacer.available(kT0 + microseconds(100)), 8000u);
}

TEST(Pacer, EarlierTimeIsIgnored) {
  Pacer pacer(1e6, 3000, kT0);
  pacer.consume(3000, kT0 + microseconds(1000));
  // Going back in time neither adds nor removes tokens.
  EXPECT_EQ(pacer.available(kT0), 0u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(1000)), 0u);
  EXPECT_EQ(pacer.available(kT0 + microseconds(1100)), 100u);
  // Waiting from an earlier instant counts from the latest instant seen.
  EXPECT_EQ(pacer.wait_for(200, kT0 + microseconds(1000)), microseconds(200));
}

TEST(Pacer, LongRunRateMatches) {
  // A sender that sends 1500-byte packets whenever allowed achieves the configured rate.
  Pacer pacer(1.25e8, 15000, kT0);
  TimePoint now = kT0;
  std::uint64_t sent = 0;
  while (now < kT0 + milliseconds(100)) {
    if (pacer.available(now) >= 1500) {
      pacer.consume(1500, now);
      sent += 1500;
    } else {
      now += pacer.wait_for(1500, now);
    }
  }
  // 100 ms at 125 MB/s plus the initial burst.
  EXPECT_NEAR(static_cast<double>(sent), 1.25e7 + 15000, 1500);
}

TEST(Pacer, RejectsBadArguments) {
  EXPECT_THROW(Pacer(0.0, 1000, kT0), std::invalid_argument);
  EXPECT_THROW(Pacer(-1.0, 1000, kT0), std::invalid_argument);
  EXPECT_THROW(Pacer(std::numeric_limits<double>::quiet_NaN(), 1000, kT0), std::invalid_argument);
  EXPECT_THROW(Pacer(std::numeric_limits<double>::infinity(), 1000, kT0), std::invalid_argument);
  EXPECT_THROW(Pacer(1e6, 0, kT0), std::invalid_argument);
  Pacer pacer(1e6, 1000, kT0);
  EXPECT_THROW(pacer.set_rate(0.0, kT0), std::invalid_argument);
  EXPECT_THROW(pacer.set_rate(-5.0, kT0), std::invalid_argument);
  EXPECT_DOUBLE_EQ(pacer.rate(), 1e6);
}

}  // namespace
}  // namespace dlcp::protocol
