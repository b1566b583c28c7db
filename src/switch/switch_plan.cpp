#include "switch/switch_plan.hpp"

#include <algorithm>
#include <string>

#include "common/invalid_option.hpp"

namespace dlcp::switchconf {

void PortOptions::validate() const {
  if (!(rate_bps >= 1e5 && rate_bps <= 1e12)) {
    invalid_option("PortOptions.rate_bps", "must be within [1e5, 1e12]", rate_bps);
  }
  if (mtu < 576 || mtu > 65535) invalid_option("PortOptions.mtu", "must be 576..65535", mtu);
  if (buffer_bytes < static_cast<std::size_t>(mtu)) {
    invalid_option("PortOptions.buffer_bytes",
                   "must hold one packet (mtu " + std::to_string(mtu) + ")", buffer_bytes);
  }
  if (drop_eligible_bytes < static_cast<std::size_t>(mtu)) {
    invalid_option("PortOptions.drop_eligible_bytes",
                   "must hold one packet (mtu " + std::to_string(mtu) + ")", drop_eligible_bytes);
  }
  if (drop_eligible_bytes > buffer_bytes) {
    invalid_option("PortOptions.drop_eligible_bytes",
                   "must be <= buffer_bytes (" + std::to_string(buffer_bytes) +
                       ") so that drop-eligible packets are dropped first",
                   drop_eligible_bytes);
  }
}

namespace {

std::size_t queue_index(int traffic_class, bool drop_eligible) {
  return static_cast<std::size_t>(traffic_class) * 2 + (drop_eligible ? 1 : 0);
}

constexpr std::uint8_t kDscpCount = 64;

}  // namespace

std::size_t class_selector_queue(std::uint8_t dscp) {
  return queue_index(kTrafficClasses - 1 - (dscp >> 3), false);
}

SwitchPlan make_switch_plan(const DscpTable& table, const PortOptions& port) {
  table.validate();
  port.validate();
  SwitchPlan plan;
  plan.port = port;
  for (int c = 0; c < kTrafficClasses; ++c) {
    for (const bool eligible : {false, true}) {
      Queue queue;
      queue.traffic_class = c;
      queue.drop_eligible = eligible;
      queue.buffer_bytes = eligible ? port.drop_eligible_bytes : port.buffer_bytes;
      plan.queues.push_back(queue);
    }
  }
  std::vector<bool> assigned(kDscpCount, false);
  auto assign = [&](std::uint8_t dscp, std::size_t queue) {
    plan.queues[queue].dscps.push_back(dscp);
    assigned[dscp] = true;
  };
  for (int c = 0; c < kTrafficClasses; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const int traffic_class = port.best_effort_alone ? std::min(c, kTrafficClasses - 2) : c;
    assign(table.protected_dscp[i], queue_index(traffic_class, false));
    assign(table.drop_eligible_dscp[i], queue_index(traffic_class, true));
  }
  assign(table.control_dscp, queue_index(0, false));
  for (std::uint8_t dscp = 0; dscp < kDscpCount; ++dscp) {
    if (!assigned[dscp]) assign(dscp, class_selector_queue(dscp));
  }
  plan.default_queue = queue_index(kTrafficClasses - 1, false);
  return plan;
}

std::array<bool, 64> shares_best_effort_class(const SwitchPlan& plan) {
  std::array<bool, 64> shares{};
  const int best_effort = queue_of_dscp(plan, 0).traffic_class;
  for (std::size_t dscp = 0; dscp < shares.size(); ++dscp) {
    shares[dscp] =
        queue_of_dscp(plan, static_cast<std::uint8_t>(dscp)).traffic_class == best_effort;
  }
  return shares;
}

const Queue& queue_of_dscp(const SwitchPlan& plan, std::uint8_t dscp) {
  for (const Queue& queue : plan.queues) {
    for (const std::uint8_t d : queue.dscps) {
      if (d == dscp) return queue;
    }
  }
  return plan.queues.at(plan.default_queue);
}

}  // namespace dlcp::switchconf
