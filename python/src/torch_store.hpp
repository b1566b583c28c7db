// A dlcp::Store over the c10d::Store that torch.distributed hands a backend, so a dlcp
// communicator meets its peers wherever torch's rendezvous (torchrun, env://, tcp://, file://)
// put the job.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include "dlcp/store.hpp"

namespace dlcp::python {

class TorchStore final : public Store {
 public:
  // Blocking calls time out after the torch store's own timeout.
  explicit TorchStore(c10::intrusive_ptr<c10d::Store> store);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t delta) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  using Store::wait;

 private:
  c10::intrusive_ptr<c10d::Store> store_;
};

}  // namespace dlcp::python
