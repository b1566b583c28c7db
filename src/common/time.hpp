// Time as the transport sees it. Every time-dependent algorithm takes `now` as an argument, so
// unit tests drive them with fixed instants instead of sleeping.
#pragma once

#include <chrono>

namespace dlcp {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = std::chrono::nanoseconds;

inline double to_seconds(Duration d) {
  return std::chrono::duration<double>(d).count();
}
inline Duration from_seconds(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

}  // namespace dlcp
