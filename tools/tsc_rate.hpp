// The time-stamp counter's rate, so that the benchmarks can state costs in cycles per value.
#pragma once

namespace dlcp::tools {

// Ticks per nanosecond of the invariant TSC, measured against the steady clock; 0 where there is
// no TSC or it is not invariant (its rate could then change under the measurement). These are
// reference cycles: a core running above or below its base clock does more or fewer real cycles.
double invariant_tsc_ghz();

}  // namespace dlcp::tools
