// Rendezvous stores. Values are bytes; every blocking call releases the GIL.
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "callback_store.hpp"
#include "core_bindings.hpp"
#include "dlcp/rendezvous.hpp"
#include "dlcp/store.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

using Milliseconds = std::chrono::milliseconds;
using ReleaseGil = py::call_guard<py::gil_scoped_release>;

void bind_store_interface(py::module_& module) {
  py::class_<Store>(module, "Store")
      .def(
          "set",
          [](Store& store, const std::string& key, const py::bytes& value) {
            std::string copy = value;
            py::gil_scoped_release release;
            store.set(key, copy);
          },
          py::arg("key"), py::arg("value"))
      .def(
          "get",
          [](Store& store, const std::string& key) {
            std::string value;
            {
              py::gil_scoped_release release;
              value = store.get(key);
            }
            return py::bytes(value);
          },
          py::arg("key"))
      .def("add", &Store::add, py::arg("key"), py::arg("delta"), ReleaseGil())
      .def("check", &Store::check, py::arg("keys"), ReleaseGil())
      .def(
          "wait",
          [](Store& store, const std::vector<std::string>& keys, std::int64_t timeout_ms) {
            store.wait(keys, timeout_ms < 0 ? store.timeout() : Milliseconds(timeout_ms));
          },
          py::arg("keys"), py::arg("timeout_ms") = -1, ReleaseGil())
      .def_property(
          "timeout_ms", [](const Store& store) { return store.timeout().count(); },
          [](Store& store, std::int64_t timeout_ms) {
            store.set_timeout(Milliseconds(timeout_ms));
          });
}

void bind_store_kinds(py::module_& module) {
  py::class_<HashStore, Store>(module, "HashStore").def(py::init<>());

  py::class_<TcpStore, Store>(module, "TcpStore")
      .def(py::init([](const std::string& host, std::uint16_t port, std::int64_t timeout_ms) {
             return std::make_unique<TcpStore>(host, port, Milliseconds(timeout_ms));
           }),
           py::arg("host"), py::arg("port"), py::arg("timeout_ms") = 30000, ReleaseGil())
      .def_static(
          "serve_or_connect",
          [](const std::string& host, std::uint16_t port, bool is_server, std::int64_t timeout_ms,
             const std::string& bind_host) {
            return TcpStore::serve_or_connect(host, port, is_server, Milliseconds(timeout_ms),
                                              bind_host);
          },
          py::arg("host"), py::arg("port"), py::arg("is_server"), py::arg("timeout_ms") = 30000,
          py::arg("bind_host") = "", ReleaseGil())
      .def_property_readonly("port", &TcpStore::port)
      .def_property_readonly("address", &TcpStore::address)
      .def_property_readonly("is_server", &TcpStore::is_server);

  py::class_<CallbackStore, Store>(module, "CallbackStore",
                                   "A store whose set/get/add/check/wait are a Python object's")
      .def(py::init([](py::object methods, std::int64_t timeout_ms) {
             return std::make_unique<CallbackStore>(std::move(methods), Milliseconds(timeout_ms));
           }),
           py::arg("methods"), py::arg("timeout_ms") = 300000);

  py::class_<FileStore, Store>(module, "FileStore")
      .def(py::init<const std::string&>(), py::arg("directory"))
      .def_property_readonly("directory", &FileStore::directory);

  // The base store must outlive the prefix store: keep_alive ties it to the new object.
  py::class_<PrefixStore, Store>(module, "PrefixStore")
      .def(py::init<std::string, Store&>(), py::arg("prefix"), py::arg("base"),
           py::keep_alive<1, 3>())
      .def_property_readonly("prefix", &PrefixStore::prefix);
}

void bind_environment(py::module_& module) {
  module.def(
      "from_environment",
      [] {
        RendezvousConfig config;
        {
          py::gil_scoped_release release;
          config = from_environment();
        }
        return py::make_tuple(config.rank, config.world_size, std::move(config.store),
                              config.describe);
      },
      "(rank, world_size, store, description) from DLCP_* or torchrun's variables");
}

}  // namespace

void bind_stores(py::module_& module) {
  bind_store_interface(module);
  bind_store_kinds(module);
  bind_environment(module);
}

}  // namespace dlcp::python
