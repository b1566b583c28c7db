// CPU time of the calling thread, for CPU-cost-per-GB figures.
#pragma once

#include <ctime>

namespace dlcp::tools {

inline double thread_cpu_seconds() {
  timespec cpu{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
  return static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
}

}  // namespace dlcp::tools
