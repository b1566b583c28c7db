// TcpStore: the client side. Each call borrows an idle connection (or opens one), sends one
// request and reads one response; a connection that failed in any way is closed, never reused.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <mutex>
#include <thread>
#include <type_traits>

#include "common/fd.hpp"
#include "common/net.hpp"
#include "dlcp/error.hpp"
#include "dlcp/store.hpp"
#include "rendezvous/store_protocol.hpp"
#include "rendezvous/store_value.hpp"

namespace dlcp {

namespace {

using Clock = std::chrono::steady_clock;
using namespace rendezvous;

// Slack on top of a GET/WAIT timeout before the client stops waiting for the server's answer
// (the server itself answers with kDeadline at the timeout).
constexpr auto kAnswerGrace = std::chrono::seconds(5);
constexpr auto kFirstRetryDelay = std::chrono::milliseconds(10);
constexpr auto kMaxRetryDelay = std::chrono::milliseconds(500);

std::uint32_t to_wire_timeout(std::chrono::milliseconds timeout) {
  return static_cast<std::uint32_t>(
      std::clamp<std::int64_t>(timeout.count(), 0, std::numeric_limits<std::uint32_t>::max()));
}

int remaining_ms(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, std::numeric_limits<int>::max()));
}

// now + timeout, saturated so that "wait forever" timeouts cannot overflow the clock.
Clock::time_point deadline_after(std::chrono::milliseconds timeout) {
  constexpr auto kLongest = std::chrono::hours(24 * 365);
  return Clock::now() + std::clamp<std::chrono::milliseconds>(timeout, {}, kLongest);
}

// One non-blocking connect attempt, bounded by the deadline. Returns the connected socket or
// sets `error` (errno) and returns an invalid Fd.
Fd connect_once(const sockaddr_in& address, Clock::time_point deadline, int& error) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = errno;
    return {};
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    if (errno != EINPROGRESS) {
      error = errno;
      return {};
    }
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, remaining_ms(deadline));
    if (ready <= 0) {
      error = ready == 0 ? ETIMEDOUT : errno;
      return {};
    }
    int result = 0;
    socklen_t length = sizeof(result);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &result, &length);
    if (result != 0) {
      error = result;
      return {};
    }
  }
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

struct TcpStore::Impl {
  std::unique_ptr<TcpStoreServer> server;  // set when this instance serves the store
  std::string address;                     // "host:port" of the server, for messages
  sockaddr_in socket_address{};
  std::uint16_t port = 0;

  std::mutex mutex;
  std::vector<Fd> idle;  // connections not in use by a call

  Fd connect(std::chrono::milliseconds timeout) const;
  Fd borrow(std::chrono::milliseconds timeout);
  void give_back(Fd fd);
  StoreResponse call(const StoreRequest& request, Clock::time_point deadline,
                     std::chrono::milliseconds connect_timeout);
};

// Retries refused or failed connects with a growing delay: the server may start later.
Fd TcpStore::Impl::connect(std::chrono::milliseconds timeout) const {
  const auto deadline = deadline_after(timeout);
  auto delay = kFirstRetryDelay;
  int error = 0;
  while (true) {
    Fd fd = connect_once(socket_address, deadline, error);
    if (fd.valid()) return fd;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::min<Clock::duration>(delay, deadline - Clock::now()));
    delay = std::min(delay * 2, kMaxRetryDelay);
  }
  throw Error(ErrorCode::kConnect, -1,
              net::errno_message("store: cannot connect to store server " + address + " within " +
                                     std::to_string(timeout.count()) + " ms",
                                 error));
}

Fd TcpStore::Impl::borrow(std::chrono::milliseconds timeout) {
  {
    std::lock_guard lock(mutex);
    if (!idle.empty()) {
      Fd fd = std::move(idle.back());
      idle.pop_back();
      return fd;
    }
  }
  return connect(timeout);
}

void TcpStore::Impl::give_back(Fd fd) {
  std::lock_guard lock(mutex);
  idle.push_back(std::move(fd));
}

StoreResponse TcpStore::Impl::call(const StoreRequest& request, Clock::time_point deadline,
                                   std::chrono::milliseconds connect_timeout) {
  std::vector<std::byte> frame;
  encode_store_request(request, frame);
  Fd fd = borrow(connect_timeout);

  const auto lost = [&](const std::string& what) {
    return Error(ErrorCode::kPeerLost, -1,
                 "store: lost the connection to store server " + address + " during " +
                     describe_request(request) + ": " + what);
  };
  // Waits until fd is ready for `events`; throws when the deadline passes first.
  const auto await = [&](short events) {
    while (true) {
      pollfd p{fd.get(), events, 0};
      const int ready = ::poll(&p, 1, remaining_ms(deadline));
      if (ready > 0) return;
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) throw lost(net::errno_message("poll", errno));
      throw Error(ErrorCode::kDeadline, -1,
                  "store: no answer from store server " + address + " to " +
                      describe_request(request) + " in time");
    }
  };

  for (std::size_t sent = 0; sent < frame.size();) {
    const ssize_t n =
        ::send(fd.get(), frame.data() + sent, frame.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      await(POLLOUT);
    } else {
      throw lost(net::errno_message("send", errno));
    }
  }

  const auto receive = [&](std::span<std::byte> into) {
    for (std::size_t got = 0; got < into.size();) {
      const ssize_t n = ::recv(fd.get(), into.data() + got, into.size() - got, MSG_DONTWAIT);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
      } else if (n == 0) {
        throw lost("the server closed the connection");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        await(POLLIN);
      } else {
        throw lost(net::errno_message("recv", errno));
      }
    }
  };
  std::byte prefix[kStoreLengthPrefixBytes];
  receive(prefix);
  const auto protocol_error = [&](StoreDecodeError error) {
    return Error(ErrorCode::kProtocol, -1,
                 "store: bad response from store server " + address + " to " +
                     describe_request(request) + ": " + std::string(to_string(error)));
  };
  const auto length = decode_store_frame_length(prefix);
  if (!length) throw protocol_error(length.error());
  std::vector<std::byte> body(*length);
  receive(body);
  auto response = decode_store_response(body);
  if (!response) throw protocol_error(response.error());
  give_back(std::move(fd));
  return std::move(*response);
}

namespace {

// Turns the server's answer into the expected response type, or throws its error.
template <class T>
T expect(StoreResponse response, const std::string& address, const StoreRequest& request) {
  if (auto* error = std::get_if<ErrorResponse>(&response)) {
    const ErrorCode code = error->kind == StoreErrorKind::kDeadline ? ErrorCode::kDeadline
                           : error->kind == StoreErrorKind::kInvalidArgument
                               ? ErrorCode::kInvalidArgument
                               : ErrorCode::kProtocol;
    throw Error(code, -1, error->message + " (store server " + address + ")");
  }
  if (auto* expected = std::get_if<T>(&response)) return std::move(*expected);
  throw Error(ErrorCode::kProtocol, -1,
              "store: store server " + address + " answered " + describe_request(request) +
                  " with the wrong response type");
}

}  // namespace

TcpStore::TcpStore(const std::string& host, std::uint16_t port, std::chrono::milliseconds timeout)
    : TcpStore(nullptr, host, port, timeout) {}

TcpStore::TcpStore(std::unique_ptr<TcpStoreServer> server, const std::string& host,
                   std::uint16_t port, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>()) {
  if (port == 0) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "store: cannot connect to " + host + ":0; port 0 is only valid for the server");
  }
  set_timeout(timeout);
  impl_->server = std::move(server);
  impl_->port = port;
  impl_->socket_address = net::make_sockaddr(net::resolve_ipv4(host), port);
  impl_->address = host + ":" + std::to_string(port);
  impl_->give_back(impl_->connect(timeout));
}

std::unique_ptr<TcpStore> TcpStore::serve_or_connect(const std::string& host, std::uint16_t port,
                                                     bool is_server,
                                                     std::chrono::milliseconds timeout,
                                                     const std::string& bind_host) {
  if (!is_server) return std::make_unique<TcpStore>(host, port, timeout);
  auto server = std::make_unique<TcpStoreServer>(bind_host.empty() ? host : bind_host, port);
  const std::uint16_t bound = server->port();
  return std::unique_ptr<TcpStore>(new TcpStore(std::move(server), host, bound, timeout));
}

TcpStore::~TcpStore() = default;

std::uint16_t TcpStore::port() const {
  return impl_->port;
}
std::string TcpStore::address() const {
  return impl_->address;
}
bool TcpStore::is_server() const {
  return impl_->server != nullptr;
}

void TcpStore::set(const std::string& key, const std::string& value) {
  const StoreRequest request = SetRequest{key, value};
  expect<OkResponse>(impl_->call(request, deadline_after(timeout()), timeout()), impl_->address,
                     request);
}

std::string TcpStore::get(const std::string& key) {
  const StoreRequest request = GetRequest{key, to_wire_timeout(timeout())};
  const auto deadline = deadline_after(timeout()) + kAnswerGrace;
  return expect<ValueResponse>(impl_->call(request, deadline, timeout()), impl_->address, request)
      .value;
}

std::int64_t TcpStore::add(const std::string& key, std::int64_t delta) {
  const StoreRequest request = AddRequest{key, delta};
  return expect<CounterResponse>(impl_->call(request, deadline_after(timeout()), timeout()),
                                 impl_->address, request)
      .value;
}

bool TcpStore::check(const std::vector<std::string>& keys) {
  const StoreRequest request = CheckRequest{keys};
  return expect<CheckedResponse>(impl_->call(request, deadline_after(timeout()), timeout()),
                                 impl_->address, request)
      .all_present;
}

void TcpStore::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  const StoreRequest request = WaitRequest{keys, to_wire_timeout(timeout)};
  const auto deadline = deadline_after(timeout) + kAnswerGrace;
  expect<OkResponse>(impl_->call(request, deadline, this->timeout()), impl_->address, request);
}

}  // namespace dlcp
