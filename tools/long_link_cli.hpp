// `dlcp testbed long-link`: builds a two-site testbed joined by the long link and prints how
// accurately it adds the asked delay (UDP probe and ping) at several loads, and its CPU cost.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "testbed_options.hpp"

namespace dlcp::tools {

struct LongLinkCommand {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

LongLinkCommand add_long_link_command(CLI::App* testbed_command);

inline constexpr const char* kLongLinkGroup = "Long link";

// The long link's own flags (delay, rate, jitter, loss; in the help's group kLongLinkGroup),
// shared with `dlcp testbed up --sites 2`.
void add_long_link_options(CLI::App* command, testbed::LongLinkOptions& link);

}  // namespace dlcp::tools
