// Counts heap allocations of the whole process (the `dlcp` binary replaces the global operator
// new), so benchmarks can show whether a steady-state collective allocates.
#pragma once

#include <cstdint>

namespace dlcp::tools {

struct AllocationCount {
  std::uint64_t calls = 0;
  std::uint64_t bytes = 0;
};

AllocationCount allocations_so_far();

}  // namespace dlcp::tools
