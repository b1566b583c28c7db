#include "protocol/budget_groups.hpp"

#include <algorithm>

namespace dlcp::protocol {

std::string BudgetGroups::join(std::uint64_t id, std::uint32_t size, const MessageKey& key,
                               std::uint64_t floats) {
  Group& group = groups_[id];
  if (group.size == 0) group.size = size;
  if (group.size != size || group.posted == group.size) {
    const std::string why = group.posted == group.size
                                ? "budget group " + std::to_string(id) + " already has its " +
                                      std::to_string(group.size) + " receives"
                                : "budget group " + std::to_string(id) + " was posted with " +
                                      std::to_string(group.size) + " receives, this one says " +
                                      std::to_string(size);
    if (group.posted == 0) groups_.erase(id);
    return why;
  }
  ++group.posted;
  group.missing += floats;
  group.open.push_back(key);
  return {};
}

void BudgetGroups::on_received(std::uint64_t id, std::uint64_t floats) {
  if (auto it = groups_.find(id); it != groups_.end()) it->second.missing -= floats;
}

void BudgetGroups::on_allowed(std::uint64_t id, std::uint64_t before, std::uint64_t after) {
  if (auto it = groups_.find(id); it != groups_.end()) it->second.allowed += after - before;
}

bool BudgetGroups::within_budget(std::uint64_t id) const {
  const auto it = groups_.find(id);
  return it != groups_.end() && it->second.posted == it->second.size &&
         it->second.missing <= it->second.allowed;
}

std::vector<MessageKey> BudgetGroups::open_members(std::uint64_t id) const {
  const auto it = groups_.find(id);
  return it == groups_.end() ? std::vector<MessageKey>{} : it->second.open;
}

std::uint64_t BudgetGroups::slack(std::uint64_t id, std::uint64_t own_missing,
                                  std::uint64_t own_allowed) const {
  const auto it = groups_.find(id);
  if (it == groups_.end() || it->second.posted < it->second.size) return 0;
  const Group& group = it->second;
  const std::uint64_t others_allowed = group.allowed - own_allowed;
  const std::uint64_t others_missing = group.missing - own_missing;
  return others_allowed > others_missing ? others_allowed - others_missing : 0;
}

void BudgetGroups::leave(std::uint64_t id, const MessageKey& key) {
  const auto it = groups_.find(id);
  if (it == groups_.end()) return;
  std::erase(it->second.open, key);
  if (++it->second.ended == it->second.size) groups_.erase(it);
}

}  // namespace dlcp::protocol
