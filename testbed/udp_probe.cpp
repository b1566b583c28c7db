#include "udp_probe.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "in_namespace.hpp"

namespace dlcp::testbed {

namespace {

// Kernel receive timestamps (SO_TIMESTAMPNS) are CLOCK_REALTIME, so the sender stamps with it too.
std::int64_t realtime_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

int udp_socket_in(const std::string& netns) {
  int fd = -1;
  run_in_namespace(netns, [&] { fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0); });
  if (fd < 0) throw std::runtime_error("cannot open a UDP socket in " + netns);
  return fd;
}

sockaddr_in address_of(const std::string& text, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::inet_pton(AF_INET, text.c_str(), &address.sin_addr) != 1) {
    throw std::runtime_error("not an IPv4 address: " + text);
  }
  return address;
}

// Sends `send(slot)` at slot times `per_second` apart until `stop` or `slots` are done. Catches
// up at most a few slots after a stall and skips the rest, as a paced sender should.
template <class Send, class Stop>
void paced(double per_second, std::uint64_t slots, Send send, Stop stop) {
  ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  constexpr std::uint64_t kMaxCatchUp = 8;
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::duration<double> interval(1.0 / per_second);
  for (std::uint64_t next = 0; next < slots && !stop();) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    const auto due = std::min(slots, static_cast<std::uint64_t>(elapsed / interval) + 1);
    if (due > next + kMaxCatchUp) next = due - kMaxCatchUp;
    for (; next < due; ++next) send(next);
    std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              interval * static_cast<double>(next)));
  }
}

struct ProbeHeader {
  std::uint64_t sequence;
  std::int64_t sent_ns;
};

}  // namespace

double UdpProbeResult::loss() const {
  if (sent == 0) return 0;
  return 1.0 - static_cast<double>(one_way_us.size()) / static_cast<double>(sent);
}

UdpProbeResult run_udp_probe(const UdpProbeOptions& options) {
  const int receiver = udp_socket_in(options.to_netns);
  const int sender = udp_socket_in(options.from_netns);
  UdpProbeResult result;
  try {
    const int on = 1;
    const int buffer = 8 << 20;
    ::setsockopt(receiver, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
    ::setsockopt(receiver, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer);
    const timeval poll{0, 50'000};
    ::setsockopt(receiver, SOL_SOCKET, SO_RCVTIMEO, &poll, sizeof poll);
    sockaddr_in any = address_of("0.0.0.0", options.port);
    if (::bind(receiver, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0) {
      throw std::runtime_error("cannot bind the probe's receiver to port " +
                               std::to_string(options.port) + ": " + std::strerror(errno));
    }
    const sockaddr_in to = address_of(options.to_address, options.port);
    const auto slots =
        static_cast<std::uint64_t>(std::llround(options.packets_per_second * options.seconds));
    std::atomic<bool> sending{true};
    std::vector<double> received;
    std::vector<bool> seen(slots, false);
    std::thread receive([&] {
      std::vector<char> data(static_cast<std::size_t>(std::max(options.payload_bytes, 64)) + 64);
      char control[256];
      // Stops once the sender is done and nothing has come for drain_seconds, so that a receiver
      // starved of CPU still reads what waits in its socket.
      const auto quiet = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(options.drain_seconds));
      auto last = std::chrono::steady_clock::now();
      while (sending.load() || std::chrono::steady_clock::now() - last < quiet) {
        iovec io{data.data(), data.size()};
        msghdr message{};
        message.msg_iov = &io;
        message.msg_iovlen = 1;
        message.msg_control = control;
        message.msg_controllen = sizeof control;
        const ssize_t got = ::recvmsg(receiver, &message, 0);
        if (got < static_cast<ssize_t>(sizeof(ProbeHeader))) continue;
        last = std::chrono::steady_clock::now();
        std::int64_t arrived = realtime_ns();
        for (cmsghdr* c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c)) {
          if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
            timespec stamp{};
            std::memcpy(&stamp, CMSG_DATA(c), sizeof stamp);
            arrived = static_cast<std::int64_t>(stamp.tv_sec) * 1'000'000'000 + stamp.tv_nsec;
          }
        }
        ProbeHeader header{};
        std::memcpy(&header, data.data(), sizeof header);
        if (header.sequence >= slots || seen[header.sequence]) continue;
        seen[header.sequence] = true;
        received.push_back(static_cast<double>(arrived - header.sent_ns) / 1e3);
      }
    });
    std::vector<char> payload(static_cast<std::size_t>(options.payload_bytes), 0);
    paced(
        options.packets_per_second, slots,
        [&](std::uint64_t slot) {
          const ProbeHeader header{slot, realtime_ns()};
          std::memcpy(payload.data(), &header, sizeof header);
          if (::sendto(sender, payload.data(), payload.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to) >= 0) {
            ++result.sent;
          }
        },
        [] { return false; });
    sending = false;
    receive.join();
    result.one_way_us = std::move(received);
  } catch (...) {
    ::close(receiver);
    ::close(sender);
    throw;
  }
  ::close(receiver);
  ::close(sender);
  return result;
}

DelaySummary summarize(std::vector<double> values) {
  DelaySummary summary;
  summary.samples = values.size();
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  summary.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(n);
  summary.median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  // Nearest rank: the smallest value with at least 99% of the values at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(n)));
  summary.p99 = values[std::max<std::size_t>(rank, 1) - 1];
  summary.min = values.front();
  summary.max = values.back();
  return summary;
}

UdpFlood::UdpFlood(const std::string& from_netns, const std::string& to_address, double mbit,
                   int payload_bytes)
    : socket_(udp_socket_in(from_netns)) {
  const sockaddr_in to = address_of(to_address, 9);  // discard
  const double per_second = mbit * 1e6 / 8 / payload_bytes;
  thread_ = std::thread([this, to, per_second, payload_bytes] {
    std::vector<char> payload(static_cast<std::size_t>(payload_bytes), 0);
    paced(
        per_second, UINT64_MAX,
        [&](std::uint64_t) {
          if (::sendto(socket_, payload.data(), payload.size(), 0,
                       reinterpret_cast<const sockaddr*>(&to), sizeof to) >= 0) {
            ++sent_;
          }
        },
        [this] { return stop_.load(); });
  });
}

UdpFlood::~UdpFlood() {
  stop_ = true;
  thread_.join();
  ::close(socket_);
}

}  // namespace dlcp::testbed
