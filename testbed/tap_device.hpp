// A TAP device: an Ethernet interface whose frames this process reads and writes through a file
// descriptor. The long link puts one into each site's bridge and forwards between them.
#pragma once

#include <string>

namespace dlcp::testbed {

// Creates TAP device `interface` (layer 2, no packet-information header) inside network namespace
// `netns` and returns its non-blocking descriptor. The device lives while the descriptor is open.
// Throws std::runtime_error saying what is missing: /dev/net/tun, or root (CAP_NET_ADMIN).
int open_tap(const std::string& netns, const std::string& interface);

}  // namespace dlcp::testbed
