#include "testbed_options.hpp"

#include <stdexcept>

namespace dlcp::testbed {

void TestbedOptions::validate() const {
  if (prefix.empty() || prefix.size() > 8 ||
      prefix.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789") != std::string::npos) {
    throw std::invalid_argument("TestbedOptions.prefix = '" + prefix +
                                "' must be 1-8 lowercase letters or digits");
  }
  if (hosts < 2 || hosts > 16) {
    throw std::invalid_argument("TestbedOptions.hosts = " + std::to_string(hosts) +
                                " is outside [2, 16]");
  }
  if (spines < 1 || spines > 4) {
    throw std::invalid_argument("TestbedOptions.spines = " + std::to_string(spines) +
                                " is outside [1, 4]");
  }
  port.validate();
  if (gray.spine < -1 || gray.spine >= spines) {
    throw std::invalid_argument("TestbedOptions.gray.spine = " + std::to_string(gray.spine) +
                                " is not a spine (0.." + std::to_string(spines - 1) +
                                ") or -1 for none");
  }
  if (!(gray.loss_rate >= 0 && gray.loss_rate <= 0.5)) {
    throw std::invalid_argument("TestbedOptions.gray.loss_rate = " +
                                std::to_string(gray.loss_rate) + " is outside [0, 0.5]");
  }
  if (!(gray.burst_ms >= 0 && gray.burst_ms <= 10000)) {
    throw std::invalid_argument("TestbedOptions.gray.burst_ms = " + std::to_string(gray.burst_ms) +
                                " is outside [0, 10000]");
  }
}

}  // namespace dlcp::testbed
