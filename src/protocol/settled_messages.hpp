// The receives that settled recently, so that their late packets are refused as stale instead of
// waiting in the early-arrival backlog for a receive that will never be posted. Bounded: beyond
// `capacity` the oldest are forgotten (their late packets then count as unknown messages).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>

#include "protocol/message_key.hpp"

namespace dlcp::protocol {

class SettledMessages {
 public:
  explicit SettledMessages(std::size_t capacity) : capacity_(capacity) {}

  // `flow_seen`: its FlowStart was applied before it settled.
  void remember(const MessageKey& key, bool flow_seen);
  bool contains(const MessageKey& key) const { return settled_.contains(key); }
  // A receive posted again under `key` starts a new transfer.
  void forget(const MessageKey& key) { settled_.erase(key); }
  // A FlowStart for `key`, whose receive is not posted. True when it belongs to the settled
  // message (its packets overtook it: now marked seen, nothing more to do). False when `key` is
  // not settled, or its FlowStart was seen already: then it starts a new use of the id, which is
  // forgotten here so that the new transfer's packets are held, not refused.
  bool absorb_flow_start(const MessageKey& key);
  std::size_t size() const { return settled_.size(); }

 private:
  struct Entry {
    bool flow_seen = false;
    std::uint64_t generation = 0;  // which remember() put it here, to age out the right one
  };

  std::size_t capacity_;
  std::unordered_map<MessageKey, Entry, MessageKeyHash> settled_;
  std::deque<std::pair<MessageKey, std::uint64_t>> order_;  // oldest first
  std::uint64_t next_generation_ = 0;
};

}  // namespace dlcp::protocol
