#include "testbed_options.hpp"

#include <string>

#include "common/invalid_option.hpp"

namespace dlcp::testbed {

void TestbedOptions::validate() const {
  if (prefix.empty() || prefix.size() > 8 ||
      prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos) {
    invalid_option("TestbedOptions.prefix", "must be 1-8 lowercase letters or digits", prefix);
  }
  if (hosts < 2 || hosts > 16) invalid_option("TestbedOptions.hosts", "must be 2..16", hosts);
  if (spines < 1 || spines > 4) invalid_option("TestbedOptions.spines", "must be 1..4", spines);
  port.validate();
  if (gray.spine < -1 || gray.spine >= spines) {
    invalid_option("TestbedOptions.gray.spine",
                   "must be a spine (0.." + std::to_string(spines - 1) + ") or -1 for none",
                   gray.spine);
  }
  if (!(gray.loss_rate >= 0 && gray.loss_rate <= 0.5)) {
    invalid_option("TestbedOptions.gray.loss_rate", "must be within [0, 0.5]", gray.loss_rate);
  }
  if (!(gray.burst_ms >= 0 && gray.burst_ms <= 10000)) {
    invalid_option("TestbedOptions.gray.burst_ms", "must be within [0, 10000]", gray.burst_ms);
  }
}

}  // namespace dlcp::testbed
