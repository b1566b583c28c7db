// The transport's counters as a Python dict (shared by both extension modules).
#pragma once

#include <pybind11/pybind11.h>

#include "dlcp/transport.hpp"

namespace dlcp::python {

pybind11::dict counters_dict(const TransportCounters& counters);

}  // namespace dlcp::python
