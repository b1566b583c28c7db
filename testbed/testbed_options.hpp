// What the emulated commodity-switch network looks like: hosts, spines, links and the gray failure.
#pragma once

#include <cstdint>
#include <string>

#include "switch/switch_plan.hpp"

namespace dlcp::testbed {

struct GrayFailure {
  int spine = 1;            // the spine that silently loses packets; -1 = none
  double loss_rate = 0.01;  // long-run fraction of the spine's IP packets dropped
  // 0 = independent random drops. Otherwise the spine alternates between good periods and
  // bursts of this mean length (exponentially distributed) that drop half the packets, so that
  // the long-run loss is still loss_rate.
  double burst_ms = 0;
  std::uint64_t seed = 1;
};

struct TestbedOptions {
  std::string prefix = "dlcp";  // names: <prefix>-h<i> (hosts), <prefix>-s<k> (spines)
  int hosts = 4;                // 2..16
  int spines = 2;               // 1..4; every host has one link into each spine
  // 400 Mbit/s jumbo-frame links: a 2-core machine can fill them with room for the hosts' own
  // work, so queues really build up at the switches (1500-byte frames cap one sender at ~1 Gbit/s).
  switchconf::PortOptions port;
  GrayFailure gray;

  void validate() const;  // throws dlcp::Error(kInvalidArgument) naming the field
};

}  // namespace dlcp::testbed
