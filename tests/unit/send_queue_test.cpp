#include "protocol/send_queue.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlcp::protocol {
namespace {

struct Message {
  std::string name;
  int priority_class = 0;
  std::uint64_t order = 0;
  bool ready = true;
};

void push(SendQueue<Message>& queue, Message& message) {
  queue.push(&message, message.priority_class, message.order);
}

std::vector<std::string> names(const SendQueue<Message>& queue) {
  std::vector<std::string> seen;
  queue.visit([&](const Message& message) {
    seen.push_back(message.name);
    return true;
  });
  return seen;
}

TEST(SendQueue, MostUrgentClassFirstThenPostingOrder) {
  SendQueue<Message> queue;
  Message late_gradient{"late gradient", 3, queue.next_order()};
  Message early_gradient{"early gradient", 3, queue.next_order()};
  Message first_layer{"first layer", 0, queue.next_order()};
  push(queue, early_gradient);
  push(queue, late_gradient);
  push(queue, first_layer);  // posted last, sent first
  EXPECT_EQ(names(queue),
            (std::vector<std::string>{"first layer", "late gradient", "early gradient"}));
}

TEST(SendQueue, FirstSkipsMessagesWhosePacerWaits) {
  SendQueue<Message> queue;
  Message urgent{"urgent", 0, queue.next_order(), false};
  Message bulk{"bulk", 5, queue.next_order(), true};
  push(queue, urgent);
  push(queue, bulk);
  const auto ready = [](const Message& message) { return message.ready; };
  EXPECT_EQ(queue.first(ready), &bulk);
  urgent.ready = true;
  EXPECT_EQ(queue.first(ready), &urgent);
  bulk.ready = urgent.ready = false;
  EXPECT_EQ(queue.first(ready), nullptr);
}

TEST(SendQueue, ANewRoundKeepsItsPlaceAndPushRemoveAreIdempotent) {
  SendQueue<Message> queue;
  Message a{"a", 1, queue.next_order()};
  Message b{"b", 1, queue.next_order()};
  push(queue, a);
  push(queue, b);
  push(queue, a);  // already queued
  EXPECT_EQ(queue.size(), 2u);
  queue.remove(&a, a.priority_class, a.order);  // its round is sent
  queue.remove(&a, a.priority_class, a.order);
  EXPECT_EQ(names(queue), (std::vector<std::string>{"b"}));
  push(queue, a);  // a recovery round: ahead of b again, by its posting order
  EXPECT_EQ(names(queue), (std::vector<std::string>{"a", "b"}));
  // visit stops when told to.
  int visited = 0;
  queue.visit([&](const Message&) { return ++visited < 1; });
  EXPECT_EQ(visited, 1);
  queue.remove(&a, a.priority_class, a.order);
  queue.remove(&b, b.priority_class, b.order);
  EXPECT_TRUE(queue.empty());
}

}  // namespace
}  // namespace dlcp::protocol
