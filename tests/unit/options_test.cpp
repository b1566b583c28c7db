// Unit tests for the options convention: every options struct's validate() refuses a value with
// dlcp::Error(kInvalidArgument, -1, "<Struct>.<field> <what is required>, got <value>"), built by
// common/invalid_option.hpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "common/invalid_option.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/error.hpp"
#include "dlcp/options.hpp"

namespace dlcp {
namespace {

using std::chrono::milliseconds;

// The message of the Error(kInvalidArgument, -1) that `call` throws; "" (and a failure) otherwise.
std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_EQ(e.peer(), -1) << e.what();
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw something other than dlcp::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "accepted";
  return "";
}

TEST(InvalidOption, ValuesReadAsTheyWereSet) {
  EXPECT_EQ(option_value(0), "0");
  EXPECT_EQ(option_value(-3), "-3");
  EXPECT_EQ(option_value(std::uint8_t{200}), "200");  // a number, not a character
  EXPECT_EQ(option_value(std::size_t{65536}), "65536");
  EXPECT_EQ(option_value(1.5), "1.5");
  EXPECT_EQ(option_value(-0.25), "-0.25");
  EXPECT_EQ(option_value(0.1), "0.1");  // shortest exact form, not 0.100000
  EXPECT_EQ(option_value(1e8), "1e+08");
  EXPECT_EQ(option_value(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(option_value(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(option_value(true), "true");
  EXPECT_EQ(option_value(std::string("Bad-Name")), "'Bad-Name'");
  EXPECT_EQ(option_value(""), "''");  // a string literal is text, not a bool
  EXPECT_EQ(option_value(milliseconds(0)), "0 ms");
  EXPECT_EQ(option_value(std::chrono::microseconds(-5)), "-5 us");
  EXPECT_EQ(option_value(std::chrono::seconds(2)), "2 s");
}

TEST(InvalidOption, ThrowsTheOneForm) {
  EXPECT_EQ(refusal([] { invalid_option("TransportOptions.paths", "must be 1..64", 0); }),
            "TransportOptions.paths must be 1..64, got 0");
}

TEST(InvalidOption, PublicStructsUseTheForm) {
  EXPECT_EQ(refusal([] {
              TransportOptions o;
              o.paths = 0;
              o.validate();
            }),
            "TransportOptions.paths must be 1..64, got 0");
  EXPECT_EQ(refusal([] {
              TransportOptions o;
              o.control_rto_min = std::chrono::seconds(2);
              o.validate();
            }),
            "TransportOptions.control_rto_min must be 0 .. 1 s, got 2000000 us");
  EXPECT_EQ(refusal([] {
              TransportOptions o;
              o.job_secret.resize(8);
              o.validate();
            }),
            "TransportOptions.job_secret must be empty or 16..64 bytes, got 8");
  // The nested structs refuse through TransportOptions::validate() in their own name.
  EXPECT_EQ(refusal([] {
              TransportOptions o;
              o.policy.protected_share = 2;
              o.validate();
            }),
            "PolicyOptions.protected_share must be within [0, 1], got 2");
  EXPECT_EQ(refusal([] {
              TransportOptions o;
              o.inject.mean_burst_length = 0.5;
              o.validate();
            }),
            "LossInjectionOptions.mean_burst_length must be >= 1 and finite, got 0.5");
  EXPECT_EQ(refusal([] { MessageOptions{.loss_budget = 1.5}.validate(); }),
            "MessageOptions.loss_budget must be within [0, 1], got 1.5");
  EXPECT_EQ(refusal([] { MessageOptions{.layer = 3, .num_layers = 2}.validate(); }),
            "MessageOptions.layer must be 0..1, got 3");
  EXPECT_EQ(refusal([] { CollectiveOptions{.layer = 3, .num_layers = 2}.validate(); }),
            "CollectiveOptions.layer must be 0..1, got 3");
  EXPECT_EQ(refusal([] { CollectiveOptions{.deadline = milliseconds(0)}.validate(); }),
            "CollectiveOptions.deadline must be positive, got 0 ms");
  EXPECT_EQ(refusal([] {
              CommunicatorOptions o;
              o.servers = 2;
              o.validate(2);
            }),
            "CommunicatorOptions.servers must be 0..1 (at least one worker), got 2");
  EXPECT_EQ(refusal([] {
              CommunicatorOptions o;
              o.store_prefix.clear();
              o.validate(2);
            }),
            "CommunicatorOptions.store_prefix must not be empty, got ''");
}

// Every refusal of the public structs, one per rule, has the form (RateControlOptions aside: its
// validate() lives in src/protocol/rate_controller.cpp and still throws std::invalid_argument).
TEST(InvalidOption, EveryRuleOfThePublicStructsHasTheForm) {
  const std::regex form(
      R"(^[A-Z][A-Za-z]*(\.[a-z_]+(\[[0-9]+\])?|\.validate\([a-z_]+\))+ .+, got .+$)");
  const auto transport = [](const std::function<void(TransportOptions&)>& set) {
    return [set] {
      TransportOptions o;
      set(o);
      o.validate();
    };
  };
  const auto message = [](const std::function<void(MessageOptions&)>& set) {
    return [set] {
      MessageOptions o;
      set(o);
      o.validate();
    };
  };
  const auto collective = [](const std::function<void(CollectiveOptions&)>& set) {
    return [set] {
      CollectiveOptions o;
      set(o);
      o.validate();
    };
  };
  const auto communicator = [](const std::function<void(CommunicatorOptions&)>& set,
                               int world = 4) {
    return [set, world] {
      CommunicatorOptions o;
      set(o);
      o.validate(world);
    };
  };
  const std::vector<std::function<void()>> calls = {
      transport([](auto& o) { o.world_size = 0; }),
      transport([](auto& o) { o.rank = 2; }),
      transport([](auto& o) { o.paths = 65; }),
      transport([](auto& o) { o.mtu = 100; }),
      transport([](auto& o) { o.batch = 0; }),
      transport([](auto& o) { o.socket_buffer_bytes = 1024; }),
      transport([](auto& o) { o.connect_timeout = milliseconds(0); }),
      transport([](auto& o) { o.early_arrival_ttl = milliseconds(-1); }),
      transport([](auto& o) { o.feedback_interval = std::chrono::microseconds(0); }),
      transport([](auto& o) { o.quiet_before_report = std::chrono::microseconds(-1); }),
      transport([](auto& o) { o.control_rto_min = std::chrono::microseconds(-1); }),
      transport([](auto& o) { o.job_secret.resize(65); }),
      transport([](auto& o) { o.packet_mac = true; }),
      transport([](auto& o) { o.policy.dscp.protected_dscp[3] = 64; }),
      transport([](auto& o) { o.policy.dscp.control_dscp = o.policy.dscp.protected_dscp[0]; }),
      transport([](auto& o) { o.policy.dscp.protected_dscp[1] = o.policy.dscp.protected_dscp[0]; }),
      transport([](auto& o) { o.policy.protected_share = -1; }),
      transport([](auto& o) { o.inject.drop_rate = 2; }),
      transport([](auto& o) { o.inject.class_drop_rate[2] = 1.5; }),
      transport([](auto& o) { o.inject.class_mark_rate[2] = -1; }),
      transport([](auto& o) {
        o.inject.source_drop_rate = {0.5, 2.0};
      }),
      message([](auto& o) { o.budget_group_size = 3; }),
      message([](auto& o) {
        o.budget_group = 1;
        o.budget_group_size = 0;
      }),
      message([](auto& o) { o.num_layers = 0; }),
      message([](auto& o) { o.layer = -1; }),
      message([](auto& o) { o.loss_budget = std::numeric_limits<double>::quiet_NaN(); }),
      message([](auto& o) { o.deadline = milliseconds(0); }),
      message([](auto& o) { o.contributions = 0; }),
      message([](auto& o) { o.wire = static_cast<WireDtype>(7); }),
      collective([](auto& o) { o.num_layers = 0; }),
      collective([](auto& o) { o.layer = 1; }),
      collective([](auto& o) { o.loss_budget = -0.5; }),
      collective([](auto& o) { o.broadcast_loss_budget = 1.5; }),
      collective([](auto& o) { o.deadline = milliseconds(-1); }),
      collective([](auto& o) { o.deadline = milliseconds(0x100000000ll); }),
      communicator([](auto&) {}, 0),
      communicator([](auto& o) { o.servers = -1; }),
      communicator([](auto& o) { o.algorithm = Algorithm::kParameterServer; }),
      communicator([](auto& o) { o.segment_bytes = 2; }),
      communicator([](auto& o) { o.concurrent_collectives = 65; }),
      communicator([](auto& o) { o.store_prefix.clear(); }),
  };
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::string what = refusal(calls[i]);
    EXPECT_TRUE(std::regex_match(what, form)) << "rule " << i << ": " << what;
  }
}

}  // namespace
}  // namespace dlcp
