#include "protocol/budget_groups.hpp"

#include <gtest/gtest.h>

namespace dlcp::protocol {
namespace {

TEST(BudgetGroups, RefusesAnExtraMemberOrAnotherSize) {
  BudgetGroups groups;
  EXPECT_EQ(groups.join(1, 2, {0, 10}, 100), "");
  EXPECT_NE(groups.join(1, 3, {1, 10}, 100).find("was posted with 2"), std::string::npos);
  EXPECT_EQ(groups.join(1, 2, {1, 10}, 100), "");
  EXPECT_NE(groups.join(1, 2, {2, 10}, 100).find("already has its 2"), std::string::npos);
  // A refused first member leaves no group behind.
  BudgetGroups other;
  EXPECT_EQ(other.join(5, 1, {0, 1}, 10), "");
  other.leave(5, {0, 1});
  EXPECT_FALSE(other.contains(5));
}

TEST(BudgetGroups, WithinBudgetOnlyOnceEveryMemberIsPosted) {
  BudgetGroups groups;
  groups.join(1, 2, {0, 10}, 100);
  groups.on_allowed(1, 0, 10);
  groups.on_received(1, 95);
  EXPECT_FALSE(groups.within_budget(1));  // the second member is not posted
  groups.join(1, 2, {1, 10}, 100);
  groups.on_allowed(1, 0, 10);
  groups.on_received(1, 85);  // missing 5 + 15 = 20 of 20 allowed
  EXPECT_TRUE(groups.within_budget(1));
  EXPECT_EQ(groups.open_members(1).size(), 2u);
}

TEST(BudgetGroups, SlackIsWhatTheOthersLeaveUnspent) {
  BudgetGroups groups;
  groups.join(1, 2, {0, 10}, 100);
  EXPECT_EQ(groups.slack(1, 100, 0), 0u);  // before every member is posted
  groups.join(1, 2, {1, 10}, 100);
  groups.on_allowed(1, 0, 10);
  groups.on_allowed(1, 0, 10);
  groups.on_received(1, 98);  // member 0 misses 2 of its 10
  // Member 1 (missing 100, allowed 10) may miss 8 more.
  EXPECT_EQ(groups.slack(1, 100, 10), 8u);
  // Allowances that shrink are taken back.
  groups.on_allowed(1, 10, 4);
  EXPECT_EQ(groups.slack(1, 100, 10), 2u);
}

TEST(BudgetGroups, ForgottenWithItsLastMember) {
  BudgetGroups groups;
  groups.join(1, 2, {0, 10}, 10);
  groups.join(1, 2, {1, 10}, 10);
  groups.leave(1, {0, 10});
  EXPECT_TRUE(groups.contains(1));
  EXPECT_EQ(groups.open_members(1).size(), 1u);
  groups.leave(1, {1, 10});
  EXPECT_FALSE(groups.contains(1));
  EXPECT_FALSE(groups.within_budget(1));
}

}  // namespace
}  // namespace dlcp::protocol
