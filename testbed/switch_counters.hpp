// What the testbed's switches did during a run: packets and drops per traffic class at every
// egress queue (congestion), and per class at the gray spine (the silent failure).
#pragma once

#include <array>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "switch/switch_plan.hpp"

namespace dlcp::testbed {

class Testbed;

struct SwitchCounters {
  using PerClass = std::array<std::uint64_t, switchconf::kTrafficClasses>;
  PerClass sent{};           // packets that left a normal queue, all ports
  PerClass dropped{};        // dropped by a full normal queue
  PerClass eligible_sent{};  // the same for the drop-eligible queues
  PerClass eligible_dropped{};
  PerClass gray_seen{};     // packets entering the gray spine
  PerClass gray_dropped{};  // of those, dropped by the gray failure

  SwitchCounters operator-(const SwitchCounters& earlier) const;
};

SwitchCounters read_switch_counters(const Testbed& testbed);

// {"queue_drop_rate": {...}, "gray_drop_rate": ..., "gray_seen": N, "gray_dropped": N,
// "by_class": [...]}: drop rates as fractions of the packets offered (sent + dropped), for
// protected/unmarked traffic of dlcp's classes 0..6, drop-eligible traffic, and the best-effort
// class 7 that TCP and background share. The gray rate is 0 when no packet crossed the gray spine
// (per-flow ECMP can route every TCP flow around it); gray_seen tells the two cases apart.
nlohmann::json counters_json(const SwitchCounters& counters);

}  // namespace dlcp::testbed
