#include "transport/replay_window.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>

namespace dlcp::transport {
namespace {

TEST(ReplayWindow, AcceptsEachCounterOnce) {
  ReplayWindow window(128);
  for (std::uint64_t c = 0; c < 1000; ++c) {
    ASSERT_TRUE(window.fresh(c)) << c;
    window.record(c);
    EXPECT_FALSE(window.fresh(c)) << c;
  }
}

TEST(ReplayWindow, AcceptsReorderingWithinTheWindow) {
  ReplayWindow window(128);
  window.record(200);
  // Everything from 73 (200 - 127) up is still remembered; below that is too old.
  EXPECT_TRUE(window.fresh(199));
  EXPECT_TRUE(window.fresh(73));
  EXPECT_FALSE(window.fresh(72));
  EXPECT_FALSE(window.fresh(0));
  window.record(150);
  EXPECT_FALSE(window.fresh(150));
  EXPECT_TRUE(window.fresh(151));
  EXPECT_TRUE(window.fresh(201));
}

TEST(ReplayWindow, SlotsOfSkippedCountersAreCleared) {
  ReplayWindow window(64);
  for (std::uint64_t c = 0; c < 64; ++c) window.record(c);
  // 100 reuses the slots of 36..63 for 100..127: those skipped over must read as fresh again.
  window.record(100);
  for (std::uint64_t c = 64; c < 100; ++c) EXPECT_TRUE(window.fresh(c)) << c;
  EXPECT_FALSE(window.fresh(100));
  EXPECT_FALSE(window.fresh(36)) << "older than the window";
  // A jump of more than a whole window forgets everything before it.
  window.record(1000);
  EXPECT_TRUE(window.fresh(999));
  EXPECT_TRUE(window.fresh(937));
  EXPECT_FALSE(window.fresh(936));
  EXPECT_FALSE(window.fresh(1000));
}

TEST(ReplayWindow, HandlesTheLargestCounters) {
  ReplayWindow window(64);
  const std::uint64_t top = ~std::uint64_t{0};
  window.record(top - 1);
  EXPECT_TRUE(window.fresh(top));
  window.record(top);
  EXPECT_FALSE(window.fresh(top));
  EXPECT_FALSE(window.fresh(top - 1));
  EXPECT_TRUE(window.fresh(top - 2));
  EXPECT_FALSE(window.fresh(0));
}

TEST(ReplayWindow, RefusesImpossibleSizes) {
  EXPECT_THROW(ReplayWindow(0), std::invalid_argument);
  EXPECT_THROW(ReplayWindow(100), std::invalid_argument);
}

}  // namespace
}  // namespace dlcp::transport
