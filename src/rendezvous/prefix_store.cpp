// PrefixStore: forwards every call to the base store with "<prefix>/" in front of each key.
#include <utility>

#include "dlcp/store.hpp"

namespace dlcp {

PrefixStore::PrefixStore(std::string prefix, Store& base)
    : prefix_(std::move(prefix)), base_(base) {
  set_timeout(base.timeout());
}

std::vector<std::string> PrefixStore::qualified(const std::vector<std::string>& keys) const {
  std::vector<std::string> result;
  result.reserve(keys.size());
  for (const auto& key : keys) result.push_back(qualified(key));
  return result;
}

void PrefixStore::set(const std::string& key, const std::string& value) {
  base_.set(qualified(key), value);
}

// Waits with this store's timeout (which may differ from base's), then reads the value, which
// cannot disappear in between: stores have no delete.
std::string PrefixStore::get(const std::string& key) {
  const std::string full_key = qualified(key);
  if (timeout() != base_.timeout()) base_.wait({full_key}, timeout());
  return base_.get(full_key);
}

std::int64_t PrefixStore::add(const std::string& key, std::int64_t delta) {
  return base_.add(qualified(key), delta);
}

bool PrefixStore::check(const std::vector<std::string>& keys) {
  return base_.check(qualified(keys));
}

void PrefixStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  base_.wait(qualified(keys), timeout);
}

}  // namespace dlcp
