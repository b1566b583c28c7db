// Receives that share one loss budget (MessageOptions::budget_group), on the receiving side.
// A group's members may together miss what their budgets allow together, so a late or lossy
// member can settle on what the others left unspent; a member settles incomplete only on the
// group's budget, so members that could arrive whole do not spend the slack a late one needs.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/message_key.hpp"

namespace dlcp::protocol {

class BudgetGroups {
 public:
  // A receive of `floats` entries joins group `id` of `size` members. Returns an empty string,
  // or why it may not (the group already has its members, or was posted with another size).
  std::string join(std::uint64_t id, std::uint32_t size, const MessageKey& key,
                   std::uint64_t floats);
  // A member received `floats` more entries.
  void on_received(std::uint64_t id, std::uint64_t floats);
  // A member's allowed entries changed from `before` to `after` (its FlowStart set its budget).
  void on_allowed(std::uint64_t id, std::uint64_t before, std::uint64_t after);
  // Whether every member is posted and the group's missing entries are within its budget.
  bool within_budget(std::uint64_t id) const;
  // The members not ended yet (to settle when within_budget holds).
  std::vector<MessageKey> open_members(std::uint64_t id) const;
  // The entries the other members leave unspent, which a member missing `own_missing` with
  // `own_allowed` of the group's allowance may miss beyond its own budget (0 before every member
  // is posted).
  std::uint64_t slack(std::uint64_t id, std::uint64_t own_missing, std::uint64_t own_allowed) const;
  // A member ended (settled or failed); the group is forgotten with its last member.
  void leave(std::uint64_t id, const MessageKey& key);
  bool contains(std::uint64_t id) const { return groups_.contains(id); }

 private:
  struct Group {
    std::uint32_t size = 0;    // members expected
    std::uint32_t posted = 0;  // members posted so far
    std::uint32_t ended = 0;   // members settled or failed
    // Over the posted members: entries missing (a settled member's stay as they were) and the
    // entries their budgets allow.
    std::uint64_t missing = 0;
    std::uint64_t allowed = 0;
    std::vector<MessageKey> open;
  };
  std::unordered_map<std::uint64_t, Group> groups_;
};

}  // namespace dlcp::protocol
