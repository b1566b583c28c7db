#include "tsc_rate.hpp"

#include <algorithm>
#include <array>
#include <chrono>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace dlcp::tools {

double invariant_tsc_ghz() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  constexpr unsigned kInvariantTscBit = 1u << 8;  // CPUID 0x80000007, EDX
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0 || (edx & kInvariantTscBit) == 0) {
    return 0;
  }
  // The median of a few short windows, so that one preemption does not skew it.
  std::array<double, 5> rates{};
  for (double& rate : rates) {
    const auto start = std::chrono::steady_clock::now();
    const unsigned long long start_ticks = __rdtsc();
    auto now = start;
    while (now - start < std::chrono::milliseconds(10)) now = std::chrono::steady_clock::now();
    const unsigned long long ticks = __rdtsc() - start_ticks;
    const auto ns = std::chrono::duration<double, std::nano>(now - start).count();
    rate = static_cast<double>(ticks) / ns;
  }
  std::ranges::sort(rates);
  return rates[rates.size() / 2];
#else
  return 0;
#endif
}

}  // namespace dlcp::tools
