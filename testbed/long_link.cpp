#include "long_link.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <vector>

#include "tap_device.hpp"

namespace dlcp::testbed {

namespace {

Nanos monotonic_now() {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return Nanos(static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec);
}

double microseconds(Nanos duration) {
  return static_cast<double>(duration.count()) / 1e3;
}

struct Frame {
  Nanos arrival{0};
  Nanos release{0};
  std::vector<unsigned char> bytes;
};

// Frames of one direction waiting for their release, sorted by release time (arrival order too,
// unless options.reorder lets a frame's jitter take it past the ones before it).
using Waiting = std::deque<Frame>;

constexpr int kReadBatch = 64;  // frames read from one device before releasing due ones

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

std::runtime_error system_error(const std::string& what) {
  return std::runtime_error("long link: " + what + ": " + std::strerror(errno));
}

}  // namespace

LongLink::LongLink(const std::array<std::string, 2>& netns, const std::string& interface,
                   const LongLinkOptions& options, std::uint64_t seed)
    : options_(options),
      // The two directions draw from different streams of the same seed.
      models_{LongLinkModel(options, seed * 2 + 1), LongLinkModel(options, seed * 2 + 2)} {
  try {
    for (int side = 0; side < 2; ++side) taps_[side] = open_tap(netns[side], interface);
    timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0) throw system_error("timerfd_create");
    stop_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (stop_fd_ < 0) throw system_error("eventfd");
  } catch (...) {
    for (int& fd : taps_) close_fd(fd);
    close_fd(timer_fd_);
    close_fd(stop_fd_);
    throw;
  }
  started_ = monotonic_now();
  thread_ = std::thread([this] { forward(); });
}

LongLink::~LongLink() {
  const std::uint64_t one = 1;
  if (::write(stop_fd_, &one, sizeof one) < 0) {
    // eventfd writes of 1 cannot fail short of an overflow; the join below would then hang, so
    // there is nothing better to do than to let it.
  }
  if (thread_.joinable()) thread_.join();
  for (int& fd : taps_) close_fd(fd);
  close_fd(timer_fd_);
  close_fd(stop_fd_);
}

LongLinkStats LongLink::stats() const {
  LongLinkStats copy;
  {
    std::lock_guard lock(mutex_);
    copy = stats_;
  }
  clockid_t clock{};
  timespec cpu{};
  if (::pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) == 0 &&
      ::clock_gettime(clock, &cpu) == 0) {
    copy.cpu_seconds = static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
  }
  copy.wall_seconds = microseconds(monotonic_now() - started_) / 1e6;
  return copy;
}

void LongLink::forward() {
  // Timer wake-ups are otherwise rounded up by the default 50 us slack.
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  if (options_.realtime) {
    const sched_param priority{1};  // the lowest real-time priority: above every normal thread
    const bool realtime = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &priority) == 0;
    std::lock_guard lock(mutex_);
    stats_.realtime = realtime;
  }
  const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  for (const int fd : {taps_[0], taps_[1], timer_fd_, stop_fd_}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
  }
  // A frame is at most the MTU plus an Ethernet header and a VLAN tag; the scratch buffer is
  // larger so that an oversized frame is read (and forwarded) whole rather than cut.
  std::vector<unsigned char> scratch(65536);
  std::array<Waiting, 2> waiting;
  std::vector<std::vector<unsigned char>> spare;  // buffers of released frames, reused
  std::array<LongLinkDirection, 2> totals{};
  const Nanos spin(static_cast<std::int64_t>(options_.spin_us * 1e3));

  // Reads what `side`'s device holds (up to a batch) and offers each frame to the model of the
  // direction away from it.
  auto read_side = [&](int side) {
    for (int n = 0; n < kReadBatch; ++n) {
      const ssize_t got = ::read(taps_[side], scratch.data(), scratch.size());
      if (got <= 0) return;  // EAGAIN: drained
      const Nanos arrival = monotonic_now();
      const auto size = static_cast<std::size_t>(got);
      const bool lossless = options_.lossless_dscp >= 0 &&
                            ipv4_dscp({scratch.data(), size}) == options_.lossless_dscp;
      const FrameDecision decision = models_[side].offer(arrival, size, lossless);
      if (decision.fate != FrameFate::kForwarded) continue;
      Frame frame{arrival, decision.release, {}};
      if (!spare.empty()) {
        frame.bytes = std::move(spare.back());
        spare.pop_back();
      }
      frame.bytes.assign(scratch.begin(), scratch.begin() + got);
      Waiting& queue = waiting[side];
      // Only with reordering can a frame be released before one already waiting.
      auto at = queue.end();
      while (at != queue.begin() && std::prev(at)->release > frame.release) --at;
      queue.insert(at, std::move(frame));
    }
  };
  auto release_due = [&](Nanos now) {
    for (int side = 0; side < 2; ++side) {
      Waiting& queue = waiting[side];
      while (!queue.empty() && queue.front().release <= now) {
        Frame& frame = queue.front();
        LongLinkDirection& total = totals[side];
        if (::write(taps_[1 - side], frame.bytes.data(), frame.bytes.size()) < 0) {
          ++total.write_errors;
        } else {
          const Nanos written = monotonic_now();
          const double added = microseconds(written - frame.arrival);
          const double late = microseconds(written - frame.release);
          ++total.delay.frames;
          total.delay.sum_us += added;
          total.delay.max_us = std::max(total.delay.max_us, added);
          total.delay.late_sum_us += late;
          total.delay.late_max_us = std::max(total.delay.late_max_us, late);
        }
        spare.push_back(std::move(frame.bytes));
        queue.pop_front();
      }
    }
  };
  auto publish = [&] {
    std::lock_guard lock(mutex_);
    for (int side = 0; side < 2; ++side) {
      stats_.direction[side] = totals[side];  // keeps stats_.realtime
      stats_.direction[side].link = models_[side].counters();
    }
  };

  for (;;) {
    read_side(0);
    read_side(1);
    Nanos now = monotonic_now();
    release_due(now);
    Nanos next = Nanos::max();
    for (const Waiting& queue : waiting) {
      if (!queue.empty()) next = std::min(next, queue.front().release);
    }
    if (next != Nanos::max() && next - now <= spin) {
      // Close to a release: spin, still reading, so that neither it nor an arrival waits for a
      // late timer.
      while ((now = monotonic_now()) < next) {
        read_side(0);
        read_side(1);
      }
      continue;
    }
    publish();
    itimerspec timer{};
    if (next != Nanos::max()) {
      const Nanos wake = next - spin;
      timer.it_value.tv_sec = static_cast<time_t>(wake.count() / 1'000'000'000);
      timer.it_value.tv_nsec = static_cast<long>(wake.count() % 1'000'000'000);
    }
    ::timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &timer, nullptr);  // all zero: disarmed
    epoll_event events[4];
    const int ready = ::epoll_wait(epoll, events, 4, -1);
    bool stop = false;
    for (int i = 0; i < ready; ++i) {
      if (events[i].data.fd == stop_fd_) stop = true;
      if (events[i].data.fd == timer_fd_) {
        std::uint64_t expirations = 0;
        if (::read(timer_fd_, &expirations, sizeof expirations) < 0) {
          // Already read or not yet expired (EAGAIN): nothing to clear.
        }
      }
    }
    if (stop) break;
  }
  publish();
  ::close(epoll);
}

LongLinkStats sum_long_links(const std::vector<LongLinkStats>& links) {
  LongLinkStats total;
  for (const auto& link : links) {
    total.cpu_seconds += link.cpu_seconds;
    total.wall_seconds = std::max(total.wall_seconds, link.wall_seconds);
    for (int d = 0; d < 2; ++d) {
      const auto& from = link.direction[d];
      auto& to = total.direction[d];
      to.link.frames_offered += from.link.frames_offered;
      to.link.forwarded_frames += from.link.forwarded_frames;
      to.link.forwarded_bytes += from.link.forwarded_bytes;
      to.link.dropped_random += from.link.dropped_random;
      to.link.dropped_burst += from.link.dropped_burst;
      to.link.dropped_queue += from.link.dropped_queue;
      to.link.bursts += from.link.bursts;
      to.link.spared += from.link.spared;
      to.write_errors += from.write_errors;
      to.delay.frames += from.delay.frames;
      to.delay.sum_us += from.delay.sum_us;
      to.delay.max_us = std::max(to.delay.max_us, from.delay.max_us);
      to.delay.late_sum_us += from.delay.late_sum_us;
      to.delay.late_max_us = std::max(to.delay.late_max_us, from.delay.late_max_us);
    }
  }
  return total;
}

LongLinkStats long_link_difference(const LongLinkStats& after, const LongLinkStats& before) {
  LongLinkStats d = after;
  d.cpu_seconds -= before.cpu_seconds;
  d.wall_seconds -= before.wall_seconds;
  for (int i = 0; i < 2; ++i) {
    auto& to = d.direction[i];
    const auto& from = before.direction[i];
    to.link.frames_offered -= from.link.frames_offered;
    to.link.forwarded_frames -= from.link.forwarded_frames;
    to.link.forwarded_bytes -= from.link.forwarded_bytes;
    to.link.dropped_random -= from.link.dropped_random;
    to.link.dropped_burst -= from.link.dropped_burst;
    to.link.dropped_queue -= from.link.dropped_queue;
    to.link.bursts -= from.link.bursts;
    to.link.spared -= from.link.spared;
    to.write_errors -= from.write_errors;
    to.delay.frames -= from.delay.frames;
    to.delay.sum_us -= from.delay.sum_us;
    to.delay.late_sum_us -= from.delay.late_sum_us;
  }
  return d;
}

}  // namespace dlcp::testbed
