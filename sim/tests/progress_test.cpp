// Progress lines on an injected wall clock: when they are due, and the rate they report.
#include "progress.hpp"

#include <gtest/gtest.h>

#include <sstream>

namespace dlcp::sim {
namespace {

ProgressSnapshot at(double sim_ms, std::uint64_t events) {
  ProgressSnapshot s;
  s.sim_ms = sim_ms;
  s.events = events;
  s.gradient_finished = 40;
  s.gradient_started = 50;
  s.background_finished = 7;
  s.tcp_sockets = 160;
  s.tcp_close_wait = 3;
  return s;
}

TEST(ProgressLine, ReportsTheSimulatedRateSinceTheLastLine) {
  // 3 ms simulated over 90 s of wall time: 2 ms per minute.
  const std::string line =
      progress_line("paper-144 pias", 150.0, at(10.5, 2'500'000), 60.0, at(7.5, 1'000'000));
  EXPECT_EQ(line,
            "dlcp-sim: paper-144 pias: 10.50 ms simulated after 150 s (2.00 ms per minute "
            "lately), 2.5 M events, gradient flows 40 of 50 started done, background flows 7 "
            "done, TCP sockets 160 (3 in CLOSE_WAIT)");
}

TEST(ProgressLine, NoWallTimeGivesNoRate) {
  const std::string line = progress_line("s", 5.0, at(1.0, 0), 5.0, at(0.0, 0));
  EXPECT_NE(line.find("(0.00 ms per minute lately)"), std::string::npos) << line;
}

TEST(ProgressReporter, DueOncePerIntervalOfWallTime) {
  double now = 1000.0;
  std::ostringstream out;
  ProgressReporter progress(
      "s", 60.0, [&] { return now; }, out);
  EXPECT_FALSE(progress.due());
  now = 1059.9;
  EXPECT_FALSE(progress.due());
  now = 1060.0;
  ASSERT_TRUE(progress.due());
  progress.report(at(4.0, 10));
  EXPECT_FALSE(progress.due());  // the interval counts from the last line
  now = 1150.0;
  ASSERT_TRUE(progress.due());
  progress.report(at(7.0, 20));
  std::istringstream lines(out.str());
  std::string first;
  std::string second;
  std::getline(lines, first);
  std::getline(lines, second);
  // Wall time counts from the reporter's start; the rate from the previous line (3 ms in 90 s).
  EXPECT_NE(first.find("4.00 ms simulated after 60 s (4.00 ms per minute"), std::string::npos)
      << first;
  EXPECT_NE(second.find("7.00 ms simulated after 150 s (2.00 ms per minute"), std::string::npos)
      << second;
}

TEST(ProgressReporter, ZeroIntervalNeverReports) {
  double now = 0.0;
  std::ostringstream out;
  ProgressReporter progress(
      "s", 0.0, [&] { return now; }, out);
  now = 1e6;
  EXPECT_FALSE(progress.due());
}

}  // namespace
}  // namespace dlcp::sim
