// Which implementation of the value conversions (conversion_kernels.hpp) runs. The fastest one
// this CPU supports is chosen at start-up, since the library is built for the baseline target;
// tests and benchmarks may choose another to compare them.
#pragma once

#include <span>
#include <string_view>

#include "wire/conversion_kernels.hpp"

namespace dlcp::wire {

enum class ConversionPath { kPortable, kF16c, kAvx2 };

std::string_view to_string(ConversionPath path);

// The paths this CPU can run, slowest first; kPortable always.
std::span<const ConversionPath> supported_conversion_paths();

// The path in use.
ConversionPath conversion_path();

// Switches every later conversion, in every thread, to `path`; false (and nothing changes) when
// this CPU cannot run it.
bool use_conversion_path(ConversionPath path);

// The kernels of the path in use.
const ConversionKernels& conversion_kernels();

}  // namespace dlcp::wire
