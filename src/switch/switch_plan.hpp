// Switch configuration from the policy: the queues, buffers and DSCP classification a switch
// port needs so that dlcp's priority classes and drop precedence take effect. One plan, rendered
// for Linux tc (what the testbed applies) and for SONiC's QoS tables (a commodity switch).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dlcp/options.hpp"

namespace dlcp::switchconf {

struct PortOptions {
  double rate_bps = 400e6;                      // egress link rate
  int mtu = 9000;                               // largest frame's IP packet
  std::size_t buffer_bytes = 256 * 1024;        // per queue, protected and unmarked traffic
  std::size_t drop_eligible_bytes = 48 * 1024;  // per queue, drop-eligible traffic
  // Off (the default): best effort (DSCP 0 and every codepoint the table does not hold, by the
  // class-selector map) shares the least urgent traffic class with dlcp's last class. On: dlcp's
  // last class moves up into the class above and shares it, so the least urgent class is best
  // effort's alone and none of its backlog or ECN marks reach dlcp (docs/simulation.md, "The
  // lowest band and drop precedence").
  bool best_effort_alone = false;

  void validate() const;  // throws dlcp::Error(kInvalidArgument) naming the field
};

// One egress queue. Traffic class 0 is the most urgent (dlcp's priority class 0, front layers);
// a drop-eligible queue shares its class's priority but has the small buffer, so under overload
// its packets are dropped first.
struct Queue {
  int traffic_class = 0;
  bool drop_eligible = false;
  std::size_t buffer_bytes = 0;
  std::vector<std::uint8_t> dscps;  // codepoints classified into this queue
};

struct SwitchPlan {
  PortOptions port;
  std::vector<Queue> queues;  // 2 per traffic class: normal, then drop-eligible
  // Index into queues of traffic that matches no codepoint (DSCP 0 best effort lands here too).
  std::size_t default_queue = 0;
};

inline constexpr int kTrafficClasses = dlcp::kPriorityClasses;

// Every DSCP goes to exactly one queue: the table's data codepoints to their class (protected to
// the normal queue, drop-eligible to the small one; with port.best_effort_alone the last class's
// go to the class above), the control codepoint to class 0, and any other codepoint to class
// 7 - (dscp >> 3), the class-selector map a switch applies by default (so best-effort DSCP 0
// lands in the least urgent class). Throws dlcp::Error(kInvalidArgument) for an invalid table or
// port.
SwitchPlan make_switch_plan(const DscpTable& table, const PortOptions& port);

// The queue a switch's default class-selector map gives a DSCP: the normal queue of class
// 7 - (dscp >> 3).
std::size_t class_selector_queue(std::uint8_t dscp);

// The queue of a DSCP (0..63) in the plan.
const Queue& queue_of_dscp(const SwitchPlan& plan, std::uint8_t dscp);

// For each DSCP (0..63), whether a port under `plan` queues it in best effort's traffic class
// (DSCP 0's): packets there wait behind the background's backlog and take its ECN marks
// (RateControlOptions::shared_band_pacing).
std::array<bool, 64> shares_best_effort_class(const SwitchPlan& plan);

}  // namespace dlcp::switchconf
