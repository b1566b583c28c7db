// The switch configuration a SwitchPlan implies, as text a switch takes: Linux tc commands (the
// testbed applies exactly these) and SONiC's config_db JSON. Used by the tools and the testbed,
// not by the library.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "switch/switch_plan.hpp"

namespace dlcp::switchconf {

// Linux tc commands (`tc -batch` syntax, without the leading "tc") that configure one egress
// device: an HTB root at the link rate, one leaf per queue with HTB priority = traffic class and a
// bfifo of the queue's buffer (the protected leaf of a class gets 20 times the drop-eligible
// leaf's quantum), and u32 filters on the DSCP. The testbed applies exactly these.
std::vector<std::string> linux_tc_commands(const SwitchPlan& plan, const std::string& device);

// The classid ("1:10") of a queue in linux_tc_commands, for reading per-queue statistics.
std::string linux_tc_classid(std::size_t queue_index);

// SONiC QoS configuration (config_db JSON) for the named ports: DSCP_TO_TC_MAP, TC_TO_QUEUE_MAP,
// strict-priority SCHEDULER, and a WRED/ECN profile that marks ECN-capable (protected) packets and
// drops Not-ECT (drop-eligible) packets above the small threshold: the drop precedence of a
// commodity switch with 8 queues per port.
std::string sonic_qos_json(const SwitchPlan& plan, const DscpTable& table,
                           const std::vector<std::string>& ports);

}  // namespace dlcp::switchconf
