// The long link's forwarder: a thread that moves Ethernet frames between two TAP devices, one in
// each site's bridge, and holds each frame until the link model (long_link_model.hpp) releases
// it. The kernel here has no netem, so the delay line is this process's own.
//
// Precision: the thread sleeps on a timerfd (timer slack 1 ns) until options.spin_us before the
// next release and then spins, reading arriving frames while it spins so that their arrival
// times stay exact. It stamps a frame's arrival when it reads it and measures the delay it really
// added when it writes it; those figures (and the scheduled release they missed) are its
// accuracy, next to the link counters and the thread's CPU time.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "long_link_model.hpp"
#include "testbed_options.hpp"

namespace dlcp::testbed {

struct AddedDelay {
  std::uint64_t frames = 0;
  double sum_us = 0;  // time from reading a frame to writing it, summed over frames
  double max_us = 0;
  double late_sum_us = 0;  // how far past its scheduled release each frame was written
  double late_max_us = 0;
  double mean_us() const { return frames ? sum_us / static_cast<double>(frames) : 0; }
  double late_mean_us() const { return frames ? late_sum_us / static_cast<double>(frames) : 0; }
};

struct LongLinkDirection {
  LinkCounters link;
  AddedDelay delay;
  std::uint64_t write_errors = 0;  // frames the far TAP device refused
};

struct LongLinkStats {
  std::array<LongLinkDirection, 2> direction;  // [0]: site 0 -> site 1, [1]: site 1 -> site 0
  double cpu_seconds = 0;                      // the forwarder thread's CPU time so far
  double wall_seconds = 0;                     // since it started
  bool realtime = false;                       // whether it runs at real-time priority
};

class LongLink {
 public:
  // Creates TAP device `interface` in netns[0] and netns[1] (the caller sets their MTU and adds
  // them to its bridges) and starts forwarding. Throws std::runtime_error when it cannot (no root,
  // no /dev/net/tun).
  LongLink(const std::array<std::string, 2>& netns, const std::string& interface,
           const LongLinkOptions& options, std::uint64_t seed);
  ~LongLink();  // stops the thread and removes the devices
  LongLink(const LongLink&) = delete;
  LongLink& operator=(const LongLink&) = delete;

  LongLinkStats stats() const;

 private:
  void forward();

  LongLinkOptions options_;
  std::array<int, 2> taps_{-1, -1};
  int timer_fd_ = -1;
  int stop_fd_ = -1;
  std::array<LongLinkModel, 2> models_;
  mutable std::mutex mutex_;  // guards stats_
  LongLinkStats stats_;
  Nanos started_{0};
  std::thread thread_;
};

// Every link's counters and sums added up (CPU added, wall time and maxima the largest).
LongLinkStats sum_long_links(const std::vector<LongLinkStats>& links);
// `after` minus `before` for the counters and sums (maxima are kept from `after`).
LongLinkStats long_link_difference(const LongLinkStats& after, const LongLinkStats& before);

}  // namespace dlcp::testbed
