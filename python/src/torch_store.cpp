#include "torch_store.hpp"

#include <exception>
#include <utility>

#include "store_failure.hpp"

namespace dlcp::python {
namespace {

// Torch stores report every failure as c10::Error / std::runtime_error.
template <class Call>
auto translated(const char* operation, const std::string& key, Call&& call) {
  try {
    return std::forward<Call>(call)();
  } catch (const std::exception& error) {
    throw_store_failure("torch store", operation, key, error.what());
  }
}

}  // namespace

TorchStore::TorchStore(c10::intrusive_ptr<c10d::Store> store) : store_(std::move(store)) {
  set_timeout(store_->getTimeout());
}

void TorchStore::set(const std::string& key, const std::string& value) {
  translated("set", key,
             [&] { store_->set(key, std::vector<std::uint8_t>(value.begin(), value.end())); });
}

std::string TorchStore::get(const std::string& key) {
  return translated("get", key, [&] {
    const std::vector<std::uint8_t> value = store_->get(key);
    return std::string(value.begin(), value.end());
  });
}

std::int64_t TorchStore::add(const std::string& key, std::int64_t delta) {
  return translated("add", key, [&] { return store_->add(key, delta); });
}

bool TorchStore::check(const std::vector<std::string>& keys) {
  return translated("check", joined_keys(keys), [&] { return store_->check(keys); });
}

void TorchStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  translated("wait", joined_keys(keys), [&] { store_->wait(keys, timeout); });
}

}  // namespace dlcp::python
