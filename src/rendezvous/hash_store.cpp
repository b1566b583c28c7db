// HashStore: a map guarded by a mutex, with a condition variable for blocking gets.
#include <condition_variable>
#include <map>
#include <mutex>

#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "rendezvous/store_value.hpp"

namespace dlcp {

struct HashStore::State {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, std::string> values;

  bool has_all(const std::vector<std::string>& keys) const {
    for (const auto& key : keys) {
      if (!values.contains(key)) return false;
    }
    return true;
  }
};

HashStore::HashStore() : state_(std::make_unique<State>()) {}
HashStore::~HashStore() = default;

void HashStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(state_->mutex);
    state_->values[key] = value;
  }
  state_->changed.notify_all();
}

std::string HashStore::get(const std::string& key) {
  wait({key}, timeout());
  std::lock_guard lock(state_->mutex);
  return state_->values.at(key);
}

std::int64_t HashStore::add(const std::string& key, std::int64_t delta) {
  std::int64_t result = 0;
  {
    std::lock_guard lock(state_->mutex);
    // A failed add must not create the key, so the sum is computed on a copy.
    const auto found = state_->values.find(key);
    std::string value = found == state_->values.end() ? std::string() : found->second;
    result = rendezvous::add_to_counter(key, value, delta);
    state_->values[key] = std::move(value);
  }
  state_->changed.notify_all();
  return result;
}

bool HashStore::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(state_->mutex);
  return state_->has_all(keys);
}

void HashStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->mutex);
  if (!state_->changed.wait_for(lock, timeout, [&] { return state_->has_all(keys); })) {
    throw Error(ErrorCode::kDeadline, -1,
                "store: timed out after " + std::to_string(timeout.count()) +
                    " ms waiting for key(s) " + rendezvous::describe_keys(keys));
  }
}

}  // namespace dlcp
