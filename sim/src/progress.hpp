// Progress lines while one scheme's simulation runs. A 144-host ring run takes an hour and used
// to print nothing until it ended. The lines are written when a flow finishes, not from events of
// their own, so a run's results and event count are the same with them as without.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

namespace dlcp::sim {

struct ProgressSnapshot {
  double sim_ms = 0;
  std::uint64_t events = 0;
  std::uint64_t gradient_finished = 0;
  std::uint64_t gradient_started = 0;
  std::uint64_t background_finished = 0;
  std::uint64_t tcp_sockets = 0;     // open on the hosts, listeners included
  std::uint64_t tcp_close_wait = 0;  // of them, in CLOSE_WAIT (see tcp_socket.hpp)
};

// One line: where the simulation stands, how fast it went since the last line (simulated ms per
// wall-clock minute), how many flows are done, and how many TCP sockets are open.
std::string progress_line(const std::string& label, double wall_s, const ProgressSnapshot& now,
                          double since_wall_s, const ProgressSnapshot& since);

class ProgressReporter {
 public:
  using WallClock = std::function<double()>;  // seconds, monotonic

  // Writes a line at most every `interval_s` of wall time (0 or less: never).
  ProgressReporter(std::string label, double interval_s, WallClock clock, std::ostream& out);

  // True when a line is due; cheap enough to ask on every finished flow.
  bool due() const;
  void report(const ProgressSnapshot& now);

 private:
  std::string label_;
  double interval_s_;
  WallClock clock_;
  std::ostream& out_;
  double start_s_;
  double last_s_;
  ProgressSnapshot last_;
};

}  // namespace dlcp::sim
