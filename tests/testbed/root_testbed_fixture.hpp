// What every test of the real testbed (as root) starts from: skipped, with the reason, where the
// testbed cannot be built here or a program it needs is missing; a prefix of its own, cleared of
// an earlier run's leftovers before and after; and the prefix's namespaces, to check for them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "command.hpp"
#include "testbed.hpp"

namespace dlcp::testbed {

class RootTestbedTest : public ::testing::Test {
 protected:
  // Call first in SetUp; return from SetUp when IsSkipped() then holds.
  void prepare(const std::string& prefix, const std::string& program) {
    try {
      check_testbed_available();
    } catch (const TestbedUnavailable& e) {
      GTEST_SKIP() << e.what();
    }
    if (find_program(program).empty()) GTEST_SKIP() << program << " is not installed";
    options_.prefix = prefix;
    options_.gray.spine = -1;
    remove_leftovers(runner_, options_.prefix);
  }
  void TearDown() override {
    if (!IsSkipped()) remove_leftovers(runner_, options_.prefix);
  }

  std::vector<std::string> namespaces() { return prefixed_namespaces(runner_, options_.prefix); }

  SystemCommands runner_;
  TestbedOptions options_;
};

}  // namespace dlcp::testbed
