#include "transport/loss_injector.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>
#include <string>

#include "dlcp/error.hpp"

namespace dlcp::transport {
namespace {

struct Stats {
  double rate = 0.0;
  double mean_burst = 0.0;
};

// Drops over n packets of one class: long-run rate and mean length of runs of drops.
Stats measure(LossInjector& injector, int priority_class, int n) {
  int drops = 0;
  int bursts = 0;
  bool previous = false;
  for (int i = 0; i < n; ++i) {
    const bool drop = injector.should_drop(priority_class);
    drops += drop ? 1 : 0;
    if (drop && !previous) ++bursts;
    previous = drop;
  }
  Stats s;
  s.rate = static_cast<double>(drops) / n;
  s.mean_burst = bursts > 0 ? static_cast<double>(drops) / bursts : 0.0;
  return s;
}

LossInjectionConfig with(double rate, double burst, std::uint64_t seed = 7) {
  LossInjectionConfig c;
  c.drop_rate = rate;
  c.mean_burst_length = burst;
  c.seed = seed;
  return c;
}

TEST(LossInjector, TransitionProbabilityClosedForms) {
  EXPECT_DOUBLE_EQ(LossInjector::bad_to_good(1.0), 1.0);
  EXPECT_DOUBLE_EQ(LossInjector::bad_to_good(4.0), 0.25);
  EXPECT_DOUBLE_EQ(LossInjector::bad_to_good(10.0), 0.1);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.1, 4.0), 0.1 * 0.25 / 0.9);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.2, 8.0), 0.2 * 0.125 / 0.8);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.5, 2.0), 0.5);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.01, 1.0), 0.01 / 0.99);
  // Stationary share of the bad state is the configured rate.
  const double gb = LossInjector::good_to_bad(0.05, 6.0);
  const double bg = LossInjector::bad_to_good(6.0);
  EXPECT_NEAR(gb / (gb + bg), 0.05, 1e-15);
  // Edges.
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.0, 5.0), 0.0);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(1.0, 5.0), 1.0);
  EXPECT_DOUBLE_EQ(LossInjector::good_to_bad(0.9, 2.0), 1.0);  // clamped probability
}

TEST(LossInjector, RateZeroNeverDrops) {
  LossInjector injector(with(0.0, 1.0));
  for (int c = 0; c < 8; ++c) EXPECT_EQ(measure(injector, c, 10000).rate, 0.0);
  LossInjector bursty(with(0.0, 16.0));
  EXPECT_EQ(measure(bursty, 3, 10000).rate, 0.0);
}

TEST(LossInjector, RateOneAlwaysDrops) {
  LossInjector injector(with(1.0, 1.0));
  for (int c = 0; c < 8; ++c) EXPECT_EQ(measure(injector, c, 10000).rate, 1.0);
  LossInjector bursty(with(1.0, 16.0));
  EXPECT_EQ(measure(bursty, 5, 10000).rate, 1.0);
}

TEST(LossInjector, RandomLongRunRate) {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    LossInjector injector(with(0.1, 1.0, seed));
    const Stats s = measure(injector, 0, 1'000'000);
    EXPECT_NEAR(s.rate, 0.1, 0.003) << seed;  // ~10 standard deviations
    // Independent drops: runs are geometric with mean 1 / (1 - p).
    EXPECT_NEAR(s.mean_burst, 1.0 / 0.9, 0.02) << seed;
  }
  LossInjector half(with(0.5, 1.0, 11));
  const Stats s = measure(half, 4, 1'000'000);
  EXPECT_NEAR(s.rate, 0.5, 0.005);
  EXPECT_NEAR(s.mean_burst, 2.0, 0.05);
}

TEST(LossInjector, BurstyLongRunRateAndBurstLength) {
  struct Case {
    double rate;
    double burst;
  };
  for (const Case k : {Case{0.1, 8.0}, Case{0.02, 4.0}, Case{0.3, 2.5}}) {
    LossInjector injector(with(k.rate, k.burst, 42));
    const Stats s = measure(injector, 2, 2'000'000);
    EXPECT_NEAR(s.rate, k.rate, 0.1 * k.rate) << k.rate << " " << k.burst;
    EXPECT_NEAR(s.mean_burst, k.burst, 0.05 * k.burst) << k.rate << " " << k.burst;
  }
}

TEST(LossInjector, BurstTooShortForRateIsStretchedAndRateKept) {
  // rate 0.8 needs bursts of at least 0.8 / 0.2 = 4 packets.
  LossInjector injector(with(0.8, 2.0, 5));
  const Stats s = measure(injector, 0, 1'000'000);
  EXPECT_NEAR(s.rate, 0.8, 0.01);
  EXPECT_NEAR(s.mean_burst, 4.0, 0.2);
}

TEST(LossInjector, PerClassOverride) {
  LossInjectionConfig c = with(0.0, 1.0, 9);
  c.class_drop_rate[2] = 0.5;
  c.class_drop_rate[6] = 1.0;
  LossInjector injector(c);
  EXPECT_EQ(measure(injector, 0, 10000).rate, 0.0);
  EXPECT_NEAR(measure(injector, 2, 200000).rate, 0.5, 0.01);
  EXPECT_EQ(measure(injector, 6, 10000).rate, 1.0);
  EXPECT_EQ(measure(injector, 7, 10000).rate, 0.0);

  LossInjectionConfig d = with(0.2, 1.0, 9);
  d.class_drop_rate[1] = 0.0;  // this class is exempt
  LossInjector other(d);
  EXPECT_EQ(measure(other, 1, 10000).rate, 0.0);
  EXPECT_NEAR(measure(other, 0, 200000).rate, 0.2, 0.01);
}

TEST(LossInjector, ClassesHaveIndependentChannels) {
  // Interleaving two classes does not break the burst structure of either.
  LossInjector injector(with(0.1, 8.0, 3));
  int drops[2] = {0, 0};
  int bursts[2] = {0, 0};
  bool previous[2] = {false, false};
  for (int i = 0; i < 2'000'000; ++i) {
    const int c = i % 2;
    const bool drop = injector.should_drop(c * 5);
    drops[c] += drop ? 1 : 0;
    if (drop && !previous[c]) ++bursts[c];
    previous[c] = drop;
  }
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(static_cast<double>(drops[c]) / 1'000'000, 0.1, 0.01);
    EXPECT_NEAR(static_cast<double>(drops[c]) / bursts[c], 8.0, 0.4);
  }
}

TEST(LossInjector, ASourcesRateReplacesItsClassRate) {
  LossInjectionConfig c;
  c.drop_rate = 0.5;
  c.source_drop_rate = {-1.0, 1.0, 0.0, 0.2};  // rank 0 not set; 1 always; 2 never; 3 one in five
  EXPECT_TRUE(c.enabled());
  LossInjector injector(c);
  int from0 = 0;
  int from3 = 0;
  for (int i = 0; i < 100000; ++i) {
    EXPECT_TRUE(injector.should_drop(0, 1));
    EXPECT_FALSE(injector.should_drop(0, 2));
    from0 += injector.should_drop(0, 0) ? 1 : 0;
    from3 += injector.should_drop(0, 3) ? 1 : 0;
  }
  EXPECT_NEAR(from0 / 100000.0, 0.5, 0.01);  // the class's (drop_rate)
  EXPECT_NEAR(from3 / 100000.0, 0.2, 0.01);
  // A rank beyond the list, or an unknown source, keeps the class's rate.
  int unknown = 0;
  for (int i = 0; i < 100000; ++i) unknown += injector.should_drop(0, 9) ? 1 : 0;
  EXPECT_NEAR(unknown / 100000.0, 0.5, 0.01);
  LossInjectionConfig only_source;
  only_source.source_drop_rate = {0.0, 0.3};
  EXPECT_TRUE(only_source.enabled());
  LossInjectionConfig bad;
  bad.source_drop_rate = {1.5};
  EXPECT_THROW(bad.validate(), Error);
}

TEST(LossInjector, SameSeedSameSequence) {
  LossInjector a(with(0.3, 3.0, 1234));
  LossInjector b(with(0.3, 3.0, 1234));
  LossInjector c(with(0.3, 3.0, 1235));
  int differences = 0;
  for (int i = 0; i < 10000; ++i) {
    const bool da = a.should_drop(i % 8);
    EXPECT_EQ(da, b.should_drop(i % 8));
    differences += da != c.should_drop(i % 8) ? 1 : 0;
  }
  EXPECT_GT(differences, 0);
}

TEST(LossInjector, RejectsBadClass) {
  LossInjector injector(with(0.1, 1.0));
  EXPECT_THROW(injector.should_drop(-1), std::out_of_range);
  EXPECT_THROW(injector.should_drop(8), std::out_of_range);
}

TEST(LossInjector, MarksEachClassAtItsMarkRate) {
  LossInjectionConfig c;
  c.class_mark_rate[7] = 1.0;
  c.class_mark_rate[6] = 0.25;
  LossInjector injector(c);
  int marked = 0;
  for (int i = 0; i < 10000; ++i) {
    EXPECT_FALSE(injector.should_mark(0));
    EXPECT_TRUE(injector.should_mark(7));
    marked += injector.should_mark(6) ? 1 : 0;
    EXPECT_FALSE(injector.should_drop(6));  // marks are not drops
  }
  EXPECT_NEAR(marked / 10000.0, 0.25, 0.02);
  EXPECT_THROW(injector.should_mark(8), std::out_of_range);
}

// A class without marks draws nothing, so the drops stay those of a run without marks.
TEST(LossInjector, MarkRateZeroLeavesTheDropSequenceAlone) {
  LossInjector plain(with(0.3, 1.0, 99));
  LossInjectionConfig c = with(0.3, 1.0, 99);
  c.class_mark_rate[7] = 0.5;
  LossInjector marking(c);
  for (int i = 0; i < 1000; ++i) {
    EXPECT_FALSE(marking.should_mark(2));
    EXPECT_EQ(plain.should_drop(2), marking.should_drop(2)) << i;
  }
}

TEST(LossInjectionOptions, Enabled) {
  LossInjectionConfig c;
  EXPECT_FALSE(c.enabled());
  c.drop_rate = 0.01;
  EXPECT_TRUE(c.enabled());
  c.drop_rate = 0.0;
  c.class_drop_rate[7] = 0.0;
  EXPECT_FALSE(c.enabled());
  c.class_drop_rate[7] = 0.2;
  EXPECT_TRUE(c.enabled());
  c.class_drop_rate[7] = 0.0;
  c.class_mark_rate[7] = 0.2;
  EXPECT_TRUE(c.enabled());
}

TEST(LossInjectionOptions, Validate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NO_THROW(LossInjectionConfig{}.validate());
  EXPECT_NO_THROW(with(1.0, 1.0).validate());
  const auto message = [](const LossInjectionConfig& c) -> std::string {
    try {
      c.validate();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(with(-0.1, 1.0)), "LossInjectionOptions.drop_rate must be in [0, 1], got -0.1");
  EXPECT_NE(message(with(1.1, 1.0)).find("drop_rate"), std::string::npos);
  EXPECT_NE(message(with(nan, 1.0)).find("drop_rate"), std::string::npos);
  EXPECT_NE(message(with(0.1, 0.5)).find("mean_burst_length"), std::string::npos);
  EXPECT_NE(message(with(0.1, nan)).find("mean_burst_length"), std::string::npos);
  LossInjectionConfig c = with(0.1, 1.0);
  c.class_drop_rate[3] = 1.5;
  EXPECT_NE(message(c).find("class_drop_rate[3]"), std::string::npos);
  EXPECT_THROW(LossInjector{c}, Error);
  c.class_drop_rate[3] = nan;
  EXPECT_NE(message(c).find("class_drop_rate[3]"), std::string::npos);
  c.class_drop_rate[3] = -2.0;  // any negative: use drop_rate
  EXPECT_NO_THROW(c.validate());
  for (const double bad : {-0.1, 1.5, nan}) {
    c.class_mark_rate[5] = bad;
    EXPECT_NE(message(c).find("class_mark_rate[5]"), std::string::npos) << bad;
  }
  c.class_mark_rate[5] = 1.0;
  EXPECT_NO_THROW(c.validate());
}

}  // namespace
}  // namespace dlcp::transport
