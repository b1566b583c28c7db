// dlcp._torch: the `dlcp` torch.distributed backend (ProcessGroupDlcp), built against the torch
// it is compiled with. dlcp/torch/__init__.py registers the backend. The communication hook does
// not use this module (it runs on dlcp._core).
#include <torch/csrc/utils/pybind.h>

#include <memory>
#include <vector>

#include "error_translation.hpp"
#include "process_group.hpp"
#include "transport_counters.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

using ReleaseGil = py::call_guard<py::gil_scoped_release>;

void bind_options(py::module_& module) {
  py::class_<BackendOptions>(module, "BackendOptions")
      .def(py::init<>())
      .def_readwrite("communicator", &BackendOptions::communicator)
      .def_readwrite("loss_budget", &BackendOptions::loss_budget)
      .def_readwrite("lossy_min_entries", &BackendOptions::lossy_min_entries)
      .def_readwrite("aggregation", &BackendOptions::aggregation)
      .def_readwrite("layer", &BackendOptions::layer)
      .def_readwrite("num_layers", &BackendOptions::num_layers)
      .def_readwrite("wire", &BackendOptions::wire)
      .def_readwrite("hadamard_rotation", &BackendOptions::hadamard_rotation)
      .def_property(
          "deadline_ms", [](const BackendOptions& self) { return self.deadline.count(); },
          [](BackendOptions& self, std::int64_t ms) {
            self.deadline = std::chrono::milliseconds(ms);
          })
      .def("validate", &BackendOptions::validate, py::arg("world_size"));

  py::class_<CollectiveTotals>(module, "CollectiveTotals")
      .def_readonly("collectives", &CollectiveTotals::collectives)
      .def_readonly("lossy_collectives", &CollectiveTotals::lossy_collectives)
      .def_readonly("entries", &CollectiveTotals::entries)
      .def_readonly("contributions_expected", &CollectiveTotals::contributions_expected)
      .def_readonly("contributions_received", &CollectiveTotals::contributions_received)
      .def_readonly("broadcast_entries_missing", &CollectiveTotals::broadcast_entries_missing)
      .def_readonly("seconds", &CollectiveTotals::seconds);
}

void bind_process_group(py::module_& module) {
  py::class_<ProcessGroupDlcp, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupDlcp>>(
      module, "ProcessGroupDlcp")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       const BackendOptions& options) {
             return c10::make_intrusive<ProcessGroupDlcp>(store, rank, size, options);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("options"), ReleaseGil())
      .def("totals", &ProcessGroupDlcp::totals)
      .def("reset_totals", &ProcessGroupDlcp::reset_totals)
      .def("counters", [](const ProcessGroupDlcp& self) { return counters_dict(self.counters()); })
      .def_property_readonly("options", &ProcessGroupDlcp::options)
      .def("shutdown", &ProcessGroupDlcp::shutdown, ReleaseGil());
}

}  // namespace
}  // namespace dlcp::python

PYBIND11_MODULE(_torch, module) {
  module.doc() = "dlcp torch.distributed backend (use dlcp.torch, not this module)";
  // Base classes and option types this module's bindings refer to.
  py::module_::import("torch.distributed");
  py::module_::import("dlcp._core");
  dlcp::python::register_error_translation();
  dlcp::python::bind_options(module);
  dlcp::python::bind_process_group(module);
}
