#include "protocol/timer_queue.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::protocol {
namespace {

const TimePoint kT0 = TimePoint{} + std::chrono::seconds(1);
using std::chrono::milliseconds;

TEST(TimerQueue, PopsDueEntriesEarliestFirst) {
  TimerQueue<int> timers;
  EXPECT_FALSE(timers.next());
  timers.schedule(kT0 + milliseconds(3), 3);
  timers.schedule(kT0 + milliseconds(1), 1);
  timers.schedule(kT0 + milliseconds(2), 2);
  EXPECT_EQ(*timers.next(), kT0 + milliseconds(1));
  int key = 0;
  EXPECT_FALSE(timers.pop_due(kT0, key));
  ASSERT_TRUE(timers.pop_due(kT0 + milliseconds(2), key));
  EXPECT_EQ(key, 1);
  ASSERT_TRUE(timers.pop_due(kT0 + milliseconds(2), key));
  EXPECT_EQ(key, 2);
  EXPECT_FALSE(timers.pop_due(kT0 + milliseconds(2), key));
  EXPECT_EQ(timers.size(), 1u);
}

TEST(TimerQueue, ATickTouchesOnlyWhatIsDue) {
  // 100000 open deadlines far out: a tick pops nothing and looks at the top only.
  TimerQueue<int> timers;
  for (int i = 0; i < 100000; ++i)
    timers.schedule(kT0 + std::chrono::seconds(30) + milliseconds(i), i);
  int key = 0;
  EXPECT_FALSE(timers.pop_due(kT0 + std::chrono::seconds(1), key));
  EXPECT_EQ(timers.size(), 100000u);
}

}  // namespace
}  // namespace dlcp::protocol
