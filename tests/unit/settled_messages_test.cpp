#include "protocol/settled_messages.hpp"

#include <gtest/gtest.h>

namespace dlcp::protocol {
namespace {

TEST(SettledMessages, RemembersUntilForgottenOrAgedOut) {
  SettledMessages settled(3);
  settled.remember({0, 1}, true);
  settled.remember({1, 1}, true);
  EXPECT_TRUE(settled.contains({0, 1}));
  EXPECT_TRUE(settled.contains({1, 1}));
  EXPECT_FALSE(settled.contains({0, 2}));
  settled.forget({0, 1});  // posted again: a new transfer
  EXPECT_FALSE(settled.contains({0, 1}));
  settled.remember({0, 2}, true);
  settled.remember({0, 3}, true);
  settled.remember({0, 4}, true);  // a fourth within a memory of 3: the oldest goes
  EXPECT_FALSE(settled.contains({1, 1}));
  EXPECT_TRUE(settled.contains({0, 2}));
  EXPECT_TRUE(settled.contains({0, 4}));
  EXPECT_LE(settled.size(), 3u);
}

TEST(SettledMessages, AKeyRememberedAgainIsAsYoungAsItsLastSettling) {
  SettledMessages settled(2);
  settled.remember({0, 1}, true);
  settled.remember({0, 2}, true);
  settled.remember({0, 1}, true);  // settled again: its first entry in the order is stale
  settled.remember({0, 3}, true);  // ages out the first entry, which must not forget {0, 1}
  EXPECT_TRUE(settled.contains({0, 1}));
  EXPECT_TRUE(settled.contains({0, 3}));
  settled.remember({0, 4}, true);
  EXPECT_FALSE(settled.contains({0, 2}));
}

TEST(SettledMessages, AFlowStartOvertakenByItsPacketsIsAbsorbedOnce) {
  SettledMessages settled(8);
  EXPECT_FALSE(settled.absorb_flow_start({0, 1}));  // not settled: hold it for the receive
  settled.remember({0, 1}, false);                  // settled from its data alone
  EXPECT_TRUE(settled.absorb_flow_start({0, 1}));   // its own late FlowStart
  EXPECT_TRUE(settled.contains({0, 1}));
  // A second FlowStart is a new use of the id: forgotten, so its packets are held, not refused.
  EXPECT_FALSE(settled.absorb_flow_start({0, 1}));
  EXPECT_FALSE(settled.contains({0, 1}));
  settled.remember({0, 2}, true);  // its FlowStart was applied before it settled
  EXPECT_FALSE(settled.absorb_flow_start({0, 2}));
  EXPECT_FALSE(settled.contains({0, 2}));
}

}  // namespace
}  // namespace dlcp::protocol
