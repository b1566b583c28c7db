#include "callback_store.hpp"

#include <pybind11/stl.h>

#include <utility>

#include "store_failure.hpp"

namespace py = pybind11;

namespace dlcp::python {
namespace {

template <class Call>
auto with_python(const char* operation, const std::string& key, Call&& call) {
  py::gil_scoped_acquire gil;
  try {
    return std::forward<Call>(call)();
  } catch (py::error_already_set& error) {
    throw_store_failure("store", operation, key, error.what());
  }
}

}  // namespace

CallbackStore::CallbackStore(py::object methods, std::chrono::milliseconds timeout)
    : methods_(std::move(methods)) {
  set_timeout(timeout);
}

CallbackStore::~CallbackStore() {
  // The last reference may go on a thread that does not hold the GIL.
  py::gil_scoped_acquire gil;
  methods_ = py::object();
}

void CallbackStore::set(const std::string& key, const std::string& value) {
  with_python("set", key, [&] { methods_.attr("set")(key, py::bytes(value)); });
}

std::string CallbackStore::get(const std::string& key) {
  return with_python(
      "get", key, [&] { return methods_.attr("get")(key).cast<py::bytes>().cast<std::string>(); });
}

std::int64_t CallbackStore::add(const std::string& key, std::int64_t delta) {
  return with_python("add", key,
                     [&] { return methods_.attr("add")(key, delta).cast<std::int64_t>(); });
}

bool CallbackStore::check(const std::vector<std::string>& keys) {
  return with_python("check", joined_keys(keys),
                     [&] { return methods_.attr("check")(keys).cast<bool>(); });
}

void CallbackStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  with_python("wait", joined_keys(keys), [&] { methods_.attr("wait")(keys, timeout.count()); });
}

}  // namespace dlcp::python
