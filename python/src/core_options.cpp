// Options structs as mutable Python objects. Durations appear as integer milliseconds or
// microseconds (the suffix says which); validate() raises InvalidArgumentError naming the field.
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>

#include "core_bindings.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/options.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

template <class Owner, class Duration>
void def_duration(py::class_<Owner>& cls, const char* name, Duration Owner::*member) {
  cls.def_property(
      name, [member](const Owner& self) { return (self.*member).count(); },
      [member](Owner& self, std::int64_t value) { self.*member = Duration(value); });
}

void bind_enums(py::module_& module) {
  py::enum_<Algorithm>(module, "Algorithm")
      .value("ring", Algorithm::kRing)
      .value("tar", Algorithm::kTranspose)
      .value("ps", Algorithm::kParameterServer);
  module.def("parse_algorithm", &parse_algorithm, py::arg("name"));
  py::enum_<Topology>(module, "Topology")
      .value("auto", Topology::kAuto)
      .value("flat", Topology::kFlat)
      .value("hierarchical", Topology::kHierarchical);
  module.def("parse_topology", &parse_topology, py::arg("name"));
  py::enum_<ReduceOp>(module, "ReduceOp")
      .value("sum", ReduceOp::kSum)
      .value("average", ReduceOp::kAverage);
  py::enum_<Aggregation>(module, "Aggregation")
      .value("unbiased", Aggregation::kUnbiased)
      .value("zero_fill", Aggregation::kZeroFill);
  py::enum_<WireDtype>(module, "WireDtype")
      .value("fp32", WireDtype::kFloat32)
      .value("bf16", WireDtype::kBfloat16)
      .value("fp16", WireDtype::kFloat16);
  module.def("parse_wire_dtype", &parse_wire_dtype, py::arg("name"));
}

void bind_transport_options(py::module_& module) {
  py::class_<PolicyOptions>(module, "PolicyOptions")
      .def(py::init<>())
      .def_readwrite("protected_share", &PolicyOptions::protected_share)
      .def("validate", &PolicyOptions::validate);

  py::class_<RateControlOptions>(module, "RateControlOptions")
      .def(py::init<>())
      .def_readwrite("initial_rate", &RateControlOptions::initial_rate)
      .def_readwrite("min_rate", &RateControlOptions::min_rate)
      .def_readwrite("max_rate", &RateControlOptions::max_rate)
      .def_readwrite("receive_rate", &RateControlOptions::receive_rate)
      .def_readwrite("shared_band_pacing", &RateControlOptions::shared_band_pacing)
      .def("validate", &RateControlOptions::validate);

  py::class_<LossInjectionOptions>(module, "LossInjectionOptions")
      .def(py::init<>())
      .def_readwrite("drop_rate", &LossInjectionOptions::drop_rate)
      .def_readwrite("mean_burst_length", &LossInjectionOptions::mean_burst_length)
      .def_readwrite("seed", &LossInjectionOptions::seed)
      .def("enabled", &LossInjectionOptions::enabled)
      .def("validate", &LossInjectionOptions::validate);

  py::class_<TransportOptions> transport(module, "TransportOptions");
  transport.def(py::init<>())
      .def_readwrite("bind_host", &TransportOptions::bind_host)
      .def_readwrite("control_port", &TransportOptions::control_port)
      .def_readwrite("local_addresses", &TransportOptions::local_addresses)
      .def_readwrite("paths", &TransportOptions::paths)
      .def_readwrite("mtu", &TransportOptions::mtu)
      .def_readwrite("socket_buffer_bytes", &TransportOptions::socket_buffer_bytes)
      .def_readwrite("batch", &TransportOptions::batch)
      .def_readwrite("backlog_bytes", &TransportOptions::backlog_bytes)
      .def_readwrite("parity_members", &TransportOptions::parity_members)
      .def_readwrite("local_path", &TransportOptions::local_path)
      .def_readwrite("policy", &TransportOptions::policy)
      .def_readwrite("rate", &TransportOptions::rate)
      .def_readwrite("inject", &TransportOptions::inject)
      .def("validate", &TransportOptions::validate);
  def_duration(transport, "connect_timeout_ms", &TransportOptions::connect_timeout);
  def_duration(transport, "early_arrival_ttl_ms", &TransportOptions::early_arrival_ttl);
  def_duration(transport, "feedback_interval_us", &TransportOptions::feedback_interval);
  def_duration(transport, "quiet_before_report_us", &TransportOptions::quiet_before_report);
}

void bind_communicator_options(py::module_& module) {
  py::class_<CommunicatorOptions>(module, "CommunicatorOptions")
      .def(py::init<>())
      .def_readwrite("transport", &CommunicatorOptions::transport)
      .def_readwrite("advertise_host", &CommunicatorOptions::advertise_host)
      .def_readwrite("algorithm", &CommunicatorOptions::algorithm)
      .def_readwrite("servers", &CommunicatorOptions::servers)
      .def_readwrite("segment_bytes", &CommunicatorOptions::segment_bytes)
      .def_readwrite("concurrent_collectives", &CommunicatorOptions::concurrent_collectives)
      .def_readwrite("store_prefix", &CommunicatorOptions::store_prefix)
      .def_readwrite("topology", &CommunicatorOptions::topology)
      .def_readwrite("host_id", &CommunicatorOptions::host_id)
      .def("validate", &CommunicatorOptions::validate, py::arg("world_size"));

  py::class_<CollectiveOptions> collective(module, "CollectiveOptions");
  collective.def(py::init<>())
      .def_readwrite("layer", &CollectiveOptions::layer)
      .def_readwrite("num_layers", &CollectiveOptions::num_layers)
      .def_readwrite("loss_budget", &CollectiveOptions::loss_budget)
      .def_readwrite("broadcast_loss_budget", &CollectiveOptions::broadcast_loss_budget)
      .def_readwrite("op", &CollectiveOptions::op)
      .def_readwrite("aggregation", &CollectiveOptions::aggregation)
      .def_readwrite("algorithm", &CollectiveOptions::algorithm)
      .def_readwrite("topology", &CollectiveOptions::topology)
      .def_readwrite("wire", &CollectiveOptions::wire)
      .def_readwrite("hadamard_rotation", &CollectiveOptions::hadamard_rotation)
      .def("validate", &CollectiveOptions::validate);
  def_duration(collective, "deadline_ms", &CollectiveOptions::deadline);
}

}  // namespace

void bind_options(py::module_& module) {
  bind_enums(module);
  bind_transport_options(module);
  bind_communicator_options(module);
}

}  // namespace dlcp::python
