// The switch plan as Linux tc commands: HTB gives strict priority between classes (a class with a
// lower `prio` always borrows first) at the emulated link rate; bfifo leaves give each queue its
// buffer; u32 filters read the DSCP (SO_PRIORITY does not survive a bridge).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "switch/switch_config.hpp"

namespace dlcp::switchconf {

namespace {

std::string bits(double bps) {
  return std::to_string(static_cast<std::uint64_t>(std::llround(bps))) + "bit";
}

constexpr int kProtectedQuantumFactor = 20;

std::string hex_byte(unsigned value) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", value & 0xffu);
  return text;
}

}  // namespace

std::string linux_tc_classid(std::size_t queue_index) {
  // 1:10, 1:11 for class 0 (normal, drop-eligible), 1:20, 1:21 for class 1, ... (hex minors).
  return "1:" + std::to_string(queue_index / 2 + 1) + std::to_string(queue_index % 2);
}

std::vector<std::string> linux_tc_commands(const SwitchPlan& plan, const std::string& device) {
  const PortOptions& port = plan.port;
  // HTB needs a burst of at least one packet, and about a timer tick of data at high rates.
  const auto burst = std::max<std::uint64_t>(4 * static_cast<std::uint64_t>(port.mtu),
                                             static_cast<std::uint64_t>(port.rate_bps / 8 / 1000));
  const std::string burst_text =
      " burst " + std::to_string(burst) + " cburst " + std::to_string(burst);
  // A leaf's guaranteed rate is tiny, so almost all bandwidth is borrowed in priority order.
  const double leaf_rate = std::max(8e3, port.rate_bps / 1000);
  const std::string dev = " dev " + device;

  std::vector<std::string> commands;
  commands.push_back("qdisc replace" + dev + " root handle 1: htb default " +
                     linux_tc_classid(plan.default_queue).substr(2));
  commands.push_back("class add" + dev + " parent 1: classid 1:1 htb rate " + bits(port.rate_bps) +
                     " ceil " + bits(port.rate_bps) + burst_text + " quantum " +
                     std::to_string(port.mtu));
  for (std::size_t q = 0; q < plan.queues.size(); ++q) {
    const Queue& queue = plan.queues[q];
    const std::string classid = linux_tc_classid(q);
    // Within a class, HTB shares bandwidth by quantum: the protected queue's is 20 times the
    // drop-eligible one's, so under overload drop-eligible packets wait in their small buffer and
    // are dropped, like yellow packets above a lower WRED threshold in one switch queue.
    const int quantum = queue.drop_eligible ? port.mtu : kProtectedQuantumFactor * port.mtu;
    commands.push_back("class add" + dev + " parent 1:1 classid " + classid + " htb rate " +
                       bits(leaf_rate) + " ceil " + bits(port.rate_bps) + burst_text + " prio " +
                       std::to_string(queue.traffic_class) + " quantum " + std::to_string(quantum));
    commands.push_back("qdisc add" + dev + " parent " + classid + " handle " + classid.substr(2) +
                       ": bfifo limit " + std::to_string(queue.buffer_bytes));
  }
  // Exact matches first for codepoints whose queue differs from their class selector's (the
  // drop-eligible ones, with the default table), then one match per class selector (3 DSCP bits).
  // The TOS byte's ECN bits are masked off.
  for (std::size_t q = 0; q < plan.queues.size(); ++q) {
    for (const std::uint8_t dscp : plan.queues[q].dscps) {
      if (q == class_selector_queue(dscp)) continue;
      commands.push_back(
          "filter add" + dev + " parent 1: protocol ip prio 1 u32 match ip dsfield " +
          hex_byte(static_cast<unsigned>(dscp) << 2) + " 0xfc flowid " + linux_tc_classid(q));
    }
  }
  for (unsigned selector = 0; selector < 8; ++selector) {
    commands.push_back(
        "filter add" + dev + " parent 1: protocol ip prio 2 u32 match ip dsfield " +
        hex_byte(selector << 5) + " 0xe0 flowid " +
        linux_tc_classid(class_selector_queue(static_cast<std::uint8_t>(selector << 3))));
  }
  return commands;
}

}  // namespace dlcp::switchconf
