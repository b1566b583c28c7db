#include "progress.hpp"

#include <cstdio>
#include <utility>

namespace dlcp::sim {

std::string progress_line(const std::string& label, double wall_s, const ProgressSnapshot& now,
                          double since_wall_s, const ProgressSnapshot& since) {
  const double elapsed_s = wall_s - since_wall_s;
  const double ms_per_minute = elapsed_s > 0 ? (now.sim_ms - since.sim_ms) * 60.0 / elapsed_s : 0;
  char line[448];
  std::snprintf(line, sizeof line,
                "dlcp-sim: %s: %.2f ms simulated after %.0f s (%.2f ms per minute lately), "
                "%.1f M events, gradient flows %llu of %llu started done, background flows "
                "%llu done, TCP sockets %llu (%llu in CLOSE_WAIT)",
                label.c_str(), now.sim_ms, wall_s, ms_per_minute,
                static_cast<double>(now.events) / 1e6,
                static_cast<unsigned long long>(now.gradient_finished),
                static_cast<unsigned long long>(now.gradient_started),
                static_cast<unsigned long long>(now.background_finished),
                static_cast<unsigned long long>(now.tcp_sockets),
                static_cast<unsigned long long>(now.tcp_close_wait));
  return line;
}

ProgressReporter::ProgressReporter(std::string label, double interval_s, WallClock clock,
                                   std::ostream& out)
    : label_(std::move(label)),
      interval_s_(interval_s),
      clock_(std::move(clock)),
      out_(out),
      start_s_(clock_()),
      last_s_(start_s_) {}

bool ProgressReporter::due() const {
  return interval_s_ > 0 && clock_() - last_s_ >= interval_s_;
}

void ProgressReporter::report(const ProgressSnapshot& now) {
  const double at_s = clock_();
  out_ << progress_line(label_, at_s - start_s_, now, last_s_ - start_s_, last_) << "\n";
  out_.flush();
  last_s_ = at_s;
  last_ = now;
}

}  // namespace dlcp::sim
