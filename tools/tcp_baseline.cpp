#include "tcp_baseline.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "common/fd.hpp"
#include "common/net.hpp"
#include "common/time.hpp"
#include "cpu_time.hpp"
#include "dlcp/error.hpp"

namespace dlcp::tools {
namespace {

void write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const std::byte*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, bytes, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(ErrorCode::kSystem, -1, net::errno_message("tcp baseline send", errno));
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

void read_all(int fd, void* data, std::size_t size) {
  auto* bytes = static_cast<std::byte*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, bytes, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(ErrorCode::kSystem, -1, net::errno_message("tcp baseline recv", errno));
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

TcpRun run_tcp_baseline(std::size_t floats, int warmup, int iters) {
  constexpr std::uint32_t kLoopback = 0x7F000001;
  Fd listener = net::listen_tcp(kLoopback, 0);
  const std::uint16_t port = ntohs(net::local_address(listener.get()).sin_port);
  std::vector<float> sent(floats);
  for (std::size_t i = 0; i < floats; ++i) sent[i] = static_cast<float>(i % 1000) * 1e-3f;
  std::vector<float> got(floats);
  const std::size_t bytes = floats * sizeof(float);
  TcpRun run;
  std::atomic<std::int64_t> start_ns{0};

  std::thread receiver([&] {
    Fd fd(::accept(listener.get(), nullptr, nullptr));
    const double cpu0 = thread_cpu_seconds();
    for (int iter = -warmup; iter < iters; ++iter) {
      read_all(fd.get(), got.data(), bytes);
      const auto end = SteadyClock::now().time_since_epoch().count();
      if (iter >= 0) {
        run.times_ms.push_back(static_cast<double>(end - start_ns.load()) / 1e6);
        run.data_errors += std::memcmp(got.data(), sent.data(), bytes) == 0 ? 0 : 1;
      }
      const char ack = 1;
      write_all(fd.get(), &ack, 1);
    }
    run.receiver_cpu = thread_cpu_seconds() - cpu0;
  });

  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_in address = net::make_sockaddr(kLoopback, port);
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    receiver.detach();
    throw Error(ErrorCode::kSystem, -1, net::errno_message("tcp baseline connect", errno));
  }
  net::set_int_option(fd.get(), IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
  const double cpu0 = thread_cpu_seconds();
  for (int iter = -warmup; iter < iters; ++iter) {
    start_ns.store(SteadyClock::now().time_since_epoch().count());
    write_all(fd.get(), sent.data(), bytes);
    char ack = 0;
    read_all(fd.get(), &ack, 1);
  }
  run.sender_cpu = thread_cpu_seconds() - cpu0;
  receiver.join();
  return run;
}

}  // namespace dlcp::tools
