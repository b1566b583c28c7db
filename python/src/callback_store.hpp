// A dlcp Store whose operations are a Python object's methods: set(key, bytes), get(key) ->
// bytes, add(key, int) -> int, check(keys) -> bool, wait(keys, timeout_ms). The communication
// hook meets through torch's store this way, with no libtorch ABI in between
// (dlcp/torch/store.py adapts torch's Python store). Each call takes the GIL; a Python exception
// becomes dlcp::Error: kDeadline when its message says "timeout", else kPeerLost.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "dlcp/store.hpp"

namespace dlcp::python {

class CallbackStore final : public Store {
 public:
  CallbackStore(pybind11::object methods, std::chrono::milliseconds timeout);
  ~CallbackStore() override;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;

 private:
  pybind11::object methods_;
};

}  // namespace dlcp::python
