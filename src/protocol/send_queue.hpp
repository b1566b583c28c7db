// The messages with packets waiting to be sent, most urgent first: by priority class (0 first),
// then in the order they were posted, which a message keeps across its rounds. The driver sends a
// burst of the first message whose peer's pacer allows a packet now, so a more urgent message
// posted while another is in flight takes the next burst, and a message waiting on its peer's
// pacer does not hold up messages to other peers. Holds pointers; the owner keeps the messages.
// Header-only C++17, so that the simulator (C++17 for ns-3) runs the same rule.
#pragma once

#include <cstdint>
#include <set>
#include <tuple>

namespace dlcp::protocol {

template <typename Message>
class SendQueue {
 public:
  // The position of a message posted now: FIFO within its priority class.
  std::uint64_t next_order() { return next_order_++; }

  // Queues `message` (again, for a new round); nothing when it is queued already. Its class and
  // order must stay the same until it is removed.
  void push(Message* message, int priority_class, std::uint64_t order) {
    queue_.emplace(priority_class, order, message);
  }
  // Takes `message` out (its round is sent, or it ended); nothing when it is not queued.
  void remove(Message* message, int priority_class, std::uint64_t order) {
    queue_.erase({priority_class, order, message});
  }

  bool empty() const { return queue_.empty(); }
  std::size_t size() const { return queue_.size(); }

  // The most urgent message for which `ready(message)` holds, or nullptr.
  template <typename Ready>
  Message* first(Ready&& ready) const {
    for (const auto& [priority_class, order, message] : queue_) {
      if (ready(*message)) return message;
    }
    return nullptr;
  }

  // Visits the queued messages, most urgent first, while `visit(message)` returns true.
  template <typename Visit>
  void visit(Visit&& visit) const {
    for (const auto& [priority_class, order, message] : queue_) {
      if (!visit(*message)) return;
    }
  }

 private:
  std::set<std::tuple<int, std::uint64_t, Message*>> queue_;
  std::uint64_t next_order_ = 0;
};

}  // namespace dlcp::protocol
