// Deadlines of many objects without scanning them: a min-heap of (time, key). Entries are never
// cancelled; the owner checks, when one fires, whether its object still exists and is still due
// (a message settled, a report pushed back by a later packet), and schedules again if not. The
// cost of a tick is then logarithmic in the entries due, not linear in the open messages.
#pragma once

#include <cstddef>
#include <optional>
#include <queue>
#include <vector>

#include "common/time.hpp"

namespace dlcp::protocol {

template <typename Key>
class TimerQueue {
 public:
  void schedule(TimePoint at, const Key& key) { heap_.push({at, key}); }

  // The earliest time scheduled, or none.
  std::optional<TimePoint> next() const {
    if (heap_.empty()) return std::nullopt;
    return heap_.top().at;
  }

  // Takes the earliest entry due at `now` into `key`; false when none is.
  bool pop_due(TimePoint now, Key& key) {
    if (heap_.empty() || heap_.top().at > now) return false;
    key = heap_.top().key;
    heap_.pop();
    return true;
  }

  std::size_t size() const { return heap_.size(); }

 private:
  struct Entry {
    TimePoint at;
    Key key;
    bool operator>(const Entry& other) const { return at > other.at; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

}  // namespace dlcp::protocol
