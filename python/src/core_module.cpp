// dlcp._core: the communicator, its options and the rendezvous stores, for Python. The
// pure-Python package (dlcp/__init__.py) wraps it with keyword-argument constructors.
#include <pybind11/pybind11.h>

#include "core_bindings.hpp"
#include "error_translation.hpp"

PYBIND11_MODULE(_core, module) {
  module.doc() = "dlcp communicator, options and stores (use the dlcp package, not this module)";
  dlcp::python::register_error_translation();
  dlcp::python::bind_options(module);
  dlcp::python::bind_stores(module);
  dlcp::python::bind_communicator(module);
}
