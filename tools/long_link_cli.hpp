// `dlcp testbed long-link`: builds a two-site testbed joined by the long link and prints how
// accurately it adds the asked delay (UDP probe and ping) at several loads, and its CPU cost.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace dlcp::tools {

struct LongLinkCommand {
  CLI::App* command = nullptr;
  std::function<int()> run;
};

LongLinkCommand add_long_link_command(CLI::App* testbed_command);

}  // namespace dlcp::tools
