#include "error_translation.hpp"

#include <pybind11/pybind11.h>

#include "dlcp/error.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

void raise_as_python(const Error& error) {
  try {
    const py::object classes = py::module_::import("dlcp.errors").attr("BY_CODE");
    const py::object kind = classes[py::int_(static_cast<int>(error.code()))];
    const py::object instance = kind(error.what(), error.peer());
    PyErr_SetObject(kind.ptr(), instance.ptr());
  } catch (const py::error_already_set&) {
    // dlcp.errors is not importable (a broken installation): keep the message at least.
    PyErr_SetString(PyExc_RuntimeError, error.what());
  }
}

}  // namespace

void register_error_translation() {
  py::register_exception_translator([](std::exception_ptr pointer) {
    if (!pointer) return;
    try {
      std::rethrow_exception(pointer);
    } catch (const Error& error) {
      raise_as_python(error);
    }
  });
}

}  // namespace dlcp::python
