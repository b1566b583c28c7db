// The parts of the dlcp._core module, one file each.
#pragma once

#include <pybind11/pybind11.h>

namespace dlcp::python {

void bind_options(pybind11::module_& module);       // core_options.cpp
void bind_stores(pybind11::module_& module);        // core_stores.cpp
void bind_communicator(pybind11::module_& module);  // core_communicator.cpp

}  // namespace dlcp::python
