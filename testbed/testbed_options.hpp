// What the emulated commodity-switch network looks like: hosts, spines, links and the gray failure.
#pragma once

#include <cstddef>
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

// The long link between two sites (sites = 2): a user-space delay line (long_link.hpp) that joins
// each spine of site 0 to the same spine of site 1, as a provider's wavelength joins two data
// centres. Each direction has its own queue and loss state.
struct LongLinkOptions {
  double one_way_ms = 5;  // propagation delay, each way (a round trip of 10 ms)
  // The testbed's links run at 400 Mbit/s (PortOptions::rate_bps), so the long link's default
  // rate is theirs: a site's traffic meets no new bottleneck unless one is asked for.
  double rate_bps = 400e6;
  // Each frame's delay is one_way_ms plus a uniform draw from [-jitter_us, +jitter_us]. Without
  // `reorder`, a frame never overtakes the one before it (a fibre keeps order): it is released
  // no earlier than its predecessor, which raises the mean delay when frames come closer together
  // than the jitter.
  double jitter_us = 0;
  bool reorder = false;
  double random_loss = 0;  // independent drops (Bernoulli), per frame
  // Bursty drops (a Gilbert-Elliott channel that loses every frame in its bad state): long-run
  // share of frames lost and mean burst length in frames. 0 = none.
  double burst_loss = 0;
  double burst_length = 4;
  // The link's queue before serialization (tail drop), as a provider's edge router has: 2 MiB
  // holds 40 ms at 400 Mbit/s, the scenario's longest round trip.
  std::size_t queue_bytes = 2 * 1024 * 1024;
  // The forwarder sleeps on a timer until this long before a frame's release and spins the rest,
  // because a timer's wake-up is tens of microseconds late on a loaded machine. 0 = never spin.
  double spin_us = 20;
  // Run the forwarder at real-time priority (SCHED_FIFO), so that it is not queued behind the
  // hosts' own work on a busy machine: at normal priority its releases were 25-110 us late on
  // average on a loaded 2-core machine. Its spinning is bounded by spin_us per release, and the
  // kernel's real-time throttling leaves other threads 5% of each CPU in any case. Without the
  // privilege it runs at normal priority (LongLinkStats::realtime says which).
  bool realtime = true;
  // Each spine's port onto the long link is a priority port like its host ports (the switch
  // plan's HTB classes and drop-eligible queues), shaped at kLongLinkPortShare of rate_bps with
  // queue_bytes per class, so that a backlog builds there, where dlcp's priorities and drop
  // precedence act, as at a provider-facing router with QoS, rather than in the delay line's
  // FIFO, which tail-drops whatever arrives. Off: the FIFO is the bottleneck's only queue.
  bool priority_port = true;
  // Frames of this DSCP (IPv4) are never lost on the wire, at random or in bursts (the queue still
  // tail-drops them); -1: none. A measurement knob: with dlcp's control DSCP (63 by default) it
  // shows what the control connections' own losses cost.
  int lossless_dscp = -1;
  std::uint64_t seed = 1;
};

// The share of the long link's rate its priority ports shape to: a little below the rate, so the
// delay line's own queue stays short.
inline constexpr double kLongLinkPortShare = 0.97;

struct TestbedOptions {
  std::string prefix = "dlcp";  // names: <prefix>-h<i> (hosts), <prefix>-s<k> (spines)
  int hosts = 4;                // 2..16
  int spines = 2;               // 1..4; every host has one link into each spine
  // 400 Mbit/s jumbo-frame links: a 2-core machine can fill them with room for the hosts' own
  // work, so queues really build up at the switches (1500-byte frames cap one sender at ~1 Gbit/s).
  switchconf::PortOptions port;
  GrayFailure gray;
  // 1: one site. 2: two sites, hosts split in halves (host h is in site h * sites / hosts), each
  // site with its own spines, spine k of site 0 joined to spine k of site 1 by a long link; every
  // address and route stays as with one site. The long link runs in this process, so a two-site
  // testbed lives only as long as its Testbed object.
  int sites = 1;
  LongLinkOptions long_link;

  void validate() const;  // throws dlcp::Error(kInvalidArgument) naming the field
};

}  // namespace dlcp::testbed
