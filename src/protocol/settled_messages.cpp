#include "protocol/settled_messages.hpp"

namespace dlcp::protocol {

void SettledMessages::remember(const MessageKey& key, bool flow_seen) {
  const std::uint64_t generation = next_generation_++;
  settled_[key] = {flow_seen, generation};
  order_.emplace_back(key, generation);
  while (order_.size() > capacity_) {
    const auto& [old_key, old_generation] = order_.front();
    // A key remembered again since is younger than this entry of the order: keep it.
    auto it = settled_.find(old_key);
    if (it != settled_.end() && it->second.generation == old_generation) settled_.erase(it);
    order_.pop_front();
  }
}

bool SettledMessages::absorb_flow_start(const MessageKey& key) {
  auto it = settled_.find(key);
  if (it == settled_.end()) return false;
  if (!it->second.flow_seen) {
    it->second.flow_seen = true;
    return true;
  }
  settled_.erase(it);
  return false;
}

}  // namespace dlcp::protocol
