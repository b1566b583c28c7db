// Helpers for the hardening tests: a world of communicators (threads of this process) whose ranks
// bind to distinct loopback addresses (127.0.0.<rank + 1>), so the test can find every rank's data
// sockets and address packets to it; a paced UDP flooder; and the process's resident memory.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives_fixture.hpp"
#include "udp_injection.hpp"

namespace dlcp::test {

// Sanitizers keep freed memory in quarantine and add shadow memory, so resident-size bounds only
// mean something without them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

inline std::string rank_host(int rank) {
  return "127.0.0." + std::to_string(rank + 1);
}

// Resident set size of this process, from /proc/self/status.
inline std::uint64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

struct RankSockets {
  std::uint16_t rank = 0;
  std::vector<std::uint16_t> data_ports;
};

class CommunicatorWorld {
 public:
  // Creates `size` communicators over one in-process store, rank r bound to rank_host(r).
  // customize(transport options, rank) runs before each is created.
  CommunicatorWorld(int size, CommunicatorOptions options,
                    const std::function<void(TransportOptions&, int)>& customize = {})
      : options_(std::move(options)), ranks_(static_cast<std::size_t>(size)) {
    store_.set_timeout(std::chrono::seconds(20));
    run_per_rank(size, [&](int rank) {
      CommunicatorOptions mine = options_;
      mine.transport.bind_host = rank_host(rank);
      if (customize) customize(mine.transport, rank);
      ranks_[static_cast<std::size_t>(rank)] = Communicator::create(store_, rank, size, mine);
    });
    const auto mine = own_socket_inodes();
    for (int rank = 0; rank < size; ++rank) {
      RankSockets sockets{static_cast<std::uint16_t>(rank), {}};
      const std::uint32_t host = 0x7F000001u + static_cast<std::uint32_t>(rank);
      for (const auto& socket : udp_sockets()) {
        if (socket.ipv4 == host && mine.contains(socket.inode)) {
          sockets.data_ports.push_back(socket.port);
        }
      }
      sockets_.push_back(sockets);
    }
  }

  int size() const { return static_cast<int>(ranks_.size()); }
  Communicator& operator[](int rank) { return *ranks_[static_cast<std::size_t>(rank)]; }
  const std::vector<RankSockets>& sockets() const { return sockets_; }
  std::uint64_t job_token() {
    return std::stoull(store_.get(options_.store_prefix + "/job_token"));
  }

  // Runs fn(rank, communicator) on one thread per rank; rethrows the first failure.
  void each(const std::function<void(int, Communicator&)>& fn) {
    run_per_rank(size(), [&](int rank) { fn(rank, (*this)[rank]); });
  }

  TransportCounters total_counters() {
    TransportCounters sum;
    for (auto& rank : ranks_) {
      const TransportCounters c = rank->counters();
      sum.datagrams_received += c.datagrams_received;
      sum.datagrams_sent += c.datagrams_sent;
      sum.rejected += c.rejected;
      sum.injected_drops += c.injected_drops;
      sum.backlog_bytes = std::max(sum.backlog_bytes, c.backlog_bytes);
      sum.io_thread_cpu_seconds += c.io_thread_cpu_seconds;
      for (const auto& [reason, count] : c.rejected_by_reason) {
        bool found = false;
        for (auto& [name, total] : sum.rejected_by_reason) {
          if (name == reason) {
            total += count;
            found = true;
          }
        }
        if (!found) sum.rejected_by_reason.emplace_back(reason, count);
      }
    }
    return sum;
  }

 private:
  CommunicatorOptions options_;
  HashStore store_;
  std::vector<std::unique_ptr<Communicator>> ranks_;
  std::vector<RankSockets> sockets_;
};

// Sends datagrams to every data socket of every rank in turn, at about `rate` datagrams per
// second (batches of 64 through sendmmsg), until stopped. The index-th datagram, towards `rank`,
// is pick(rank, index), usually from a pool prepared beforehand so that the flood is not limited
// by making it; it must stay valid while the flooder runs.
class Flooder {
 public:
  using Make =
      std::function<const std::vector<std::byte>&(std::uint16_t rank, std::uint64_t index)>;

  Flooder(std::vector<RankSockets> targets, double rate, Make make)
      : targets_(std::move(targets)), rate_(rate), make_(std::move(make)) {
    thread_ = std::thread([this] { run(); });
  }
  ~Flooder() { stop(); }

  void stop() {
    stopping_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t sent() const { return sent_.load(); }
  double seconds() const { return seconds_.load(); }

 private:
  void run() {
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int buffer = 4 << 20;
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof(buffer));
    std::vector<sockaddr_in> destinations;
    std::vector<std::uint16_t> owners;
    for (const auto& target : targets_) {
      for (const std::uint16_t port : target.data_ports) {
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_port = htons(port);
        address.sin_addr.s_addr = htonl(0x7F000001u + target.rank);
        destinations.push_back(address);
        owners.push_back(target.rank);
      }
    }
    constexpr std::size_t kBatch = 64;
    std::vector<iovec> iov(kBatch);
    std::vector<mmsghdr> headers(kBatch);
    const auto start = Clock::now();
    std::uint64_t index = 0;
    while (!stopping_.load() && !destinations.empty()) {
      for (std::size_t i = 0; i < kBatch; ++i, ++index) {
        const std::size_t d = index % destinations.size();
        const std::vector<std::byte>& datagram = make_(owners[d], index);
        iov[i] = {const_cast<std::byte*>(datagram.data()), datagram.size()};
        headers[i] = {};
        headers[i].msg_hdr.msg_name = &destinations[d];
        headers[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
        headers[i].msg_hdr.msg_iov = &iov[i];
        headers[i].msg_hdr.msg_iovlen = 1;
      }
      const int n = ::sendmmsg(fd, headers.data(), kBatch, 0);
      if (n > 0) sent_.fetch_add(static_cast<std::uint64_t>(n));
      // Pace: sleep while ahead of the target rate.
      const double due = static_cast<double>(sent_.load()) / rate_;
      const double elapsed = seconds_since(start);
      if (due > elapsed) {
        std::this_thread::sleep_for(std::chrono::duration<double>(due - elapsed));
      }
    }
    seconds_.store(seconds_since(start));
    ::close(fd);
  }

  std::vector<RankSockets> targets_;
  double rate_;
  Make make_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> sent_{0};
  std::atomic<double> seconds_{0};
  std::thread thread_;
};

}  // namespace dlcp::test
