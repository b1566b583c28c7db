// TcpStoreServer: one thread, one poll loop. Each client sends one request at a time; GET and
// WAIT for missing keys park the client (with a deadline) instead of blocking the loop, and every
// SET/ADD re-checks the parked clients. Malformed input closes only that client.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
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

// A client may have at most one frame's worth of unprocessed input buffered.
constexpr std::size_t kInputCap = kStoreLengthPrefixBytes + kMaxStoreFrameBytes;
constexpr std::size_t kReadChunk = 64 * 1024;
// After accept() fails for lack of descriptors, leave the listener alone for a while instead of
// spinning on it.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);

// A GET or WAIT whose keys are not all there yet.
struct Parked {
  std::vector<std::string> keys;
  bool is_get = false;
  std::uint32_t timeout_ms = 0;
  Clock::time_point deadline;
};

struct Client {
  Fd fd;
  std::string peer;
  std::vector<std::byte> in;
  std::size_t in_consumed = 0;  // bytes of `in` already decoded
  std::vector<std::byte> out;
  std::size_t out_sent = 0;
  std::optional<Parked> parked;
  bool closed = false;

  std::size_t unread() const { return in.size() - in_consumed; }
};

std::string timeout_message(const Parked& parked) {
  return "store: timed out after " + std::to_string(parked.timeout_ms) + " ms waiting for key(s) " +
         describe_keys(parked.keys);
}

}  // namespace

struct TcpStoreServer::Impl {
  Fd listener;
  Fd wake;  // eventfd: stop() makes it readable
  std::string address;
  std::uint16_t port = 0;
  std::atomic<bool> stopping{false};
  std::thread thread;

  // Owned by the loop thread.
  std::map<std::string, std::string> values;
  std::vector<std::unique_ptr<Client>> clients;
  Clock::time_point listener_paused_until{};

  void run();
  void accept_clients();
  void read_from(Client& client);
  bool serve(Client& client);
  bool handle(Client& client, StoreRequest request);
  void try_unpark(Client& client, Clock::time_point now);
  void respond(Client& client, const StoreResponse& response);
  void flush(Client& client);
  void reject(Client& client, const std::string& why);
  void settle();
  int poll_timeout_ms() const;
  bool has_all(const std::vector<std::string>& keys) const {
    return std::all_of(keys.begin(), keys.end(),
                       [this](const auto& k) { return values.contains(k); });
  }
};

TcpStoreServer::TcpStoreServer(const std::string& host, std::uint16_t port)
    : impl_(std::make_unique<Impl>()) {
  const std::uint32_t ipv4 = net::resolve_ipv4(host);
  try {
    impl_->listener = net::listen_tcp(ipv4, port);
  } catch (const Error& e) {
    throw Error(
        e.code(), -1,
        std::string("store server on ") + host + ":" + std::to_string(port) + ": " + e.what());
  }
  net::set_nonblocking(impl_->listener.get());
  impl_->port = ntohs(net::local_address(impl_->listener.get()).sin_port);
  impl_->address = net::describe(ipv4, impl_->port);
  impl_->wake = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!impl_->wake.valid()) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("store server: eventfd", errno));
  }
  impl_->thread = std::thread([impl = impl_.get()] { impl->run(); });
}

TcpStoreServer::~TcpStoreServer() {
  stop();
}

std::uint16_t TcpStoreServer::port() const {
  return impl_->port;
}
std::string TcpStoreServer::address() const {
  return impl_->address;
}

void TcpStoreServer::stop() {
  if (!impl_->thread.joinable()) return;
  impl_->stopping = true;
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto written = ::write(impl_->wake.get(), &one, sizeof(one));
  impl_->thread.join();
  impl_->listener.reset();
}

void TcpStoreServer::Impl::run() {
  std::vector<pollfd> fds;
  while (!stopping) {
    fds.clear();
    fds.push_back({wake.get(), POLLIN, 0});
    const bool listening = Clock::now() >= listener_paused_until;
    fds.push_back({listening ? listener.get() : -1, POLLIN, 0});
    for (const auto& client : clients) {
      short events = POLLRDHUP;
      if (client->unread() < kInputCap) events |= POLLIN;
      if (client->out_sent < client->out.size()) events |= POLLOUT;
      fds.push_back({client->fd.get(), events, 0});
    }
    const int ready = ::poll(fds.data(), fds.size(), poll_timeout_ms());
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid arguments
    if (stopping) break;
    if (ready > 0) {
      // Clients accepted below are appended after the ones polled, so indices stay valid.
      const std::size_t polled = clients.size();
      if (fds[1].revents & POLLIN) accept_clients();
      for (std::size_t i = 0; i < polled; ++i) {
        Client& client = *clients[i];
        const short revents = fds[i + 2].revents;
        if (revents & (POLLERR | POLLHUP | POLLNVAL)) {
          client.closed = true;
          continue;
        }
        if (revents & POLLIN) read_from(client);
        // Peer closed while we were not reading (parked, or input at its cap).
        if ((revents & POLLRDHUP) && !(revents & POLLIN)) client.closed = true;
        if (revents & POLLOUT) flush(client);
      }
    }
    settle();
  }
  clients.clear();
}

void TcpStoreServer::Impl::accept_clients() {
  while (true) {
    sockaddr_in peer{};
    socklen_t length = sizeof(peer);
    const int fd = ::accept4(listener.get(), reinterpret_cast<sockaddr*>(&peer), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        listener_paused_until = Clock::now() + kAcceptBackoff;
      }
      return;  // EAGAIN (no more), or a client that went away before we accepted it
    }
    auto client = std::make_unique<Client>();
    client->fd = Fd(fd);
    client->peer = net::describe(peer);
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    clients.push_back(std::move(client));
  }
}

void TcpStoreServer::Impl::read_from(Client& client) {
  // Drop decoded bytes before growing the buffer, so it never holds more than kInputCap + chunk.
  if (client.in_consumed > 0) {
    client.in.erase(client.in.begin(),
                    client.in.begin() + static_cast<std::ptrdiff_t>(client.in_consumed));
    client.in_consumed = 0;
  }
  while (client.unread() < kInputCap) {
    const std::size_t at = client.in.size();
    client.in.resize(at + kReadChunk);
    const ssize_t n = ::recv(client.fd.get(), client.in.data() + at, kReadChunk, 0);
    client.in.resize(at + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    client.closed = true;  // EOF or a reset
    return;
  }
}

// Decodes and handles buffered frames until the client is parked, has output pending, or has
// no whole frame left. Returns true when a handled request changed the values.
bool TcpStoreServer::Impl::serve(Client& client) {
  bool changed = false;
  while (!client.closed && !client.parked && client.out_sent == client.out.size()) {
    const auto pending = std::span<const std::byte>(client.in).subspan(client.in_consumed);
    if (pending.size() < kStoreLengthPrefixBytes) break;
    const auto length = decode_store_frame_length(pending);
    if (!length) {
      reject(client, std::string(to_string(length.error())));
      break;
    }
    if (pending.size() < kStoreLengthPrefixBytes + *length) break;
    auto request = decode_store_request(pending.subspan(kStoreLengthPrefixBytes, *length));
    client.in_consumed += kStoreLengthPrefixBytes + *length;
    if (!request) {
      reject(client, std::string(to_string(request.error())));
      break;
    }
    changed = handle(client, std::move(*request)) || changed;
  }
  if (client.in_consumed == client.in.size()) {
    client.in.clear();
    client.in_consumed = 0;
  }
  return changed;
}

bool TcpStoreServer::Impl::handle(Client& client, StoreRequest request) {
  return std::visit(
      [&](auto& r) -> bool {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, SetRequest>) {
          values[r.key] = std::move(r.value);
          respond(client, OkResponse{});
          return true;
        } else if constexpr (std::is_same_v<T, AddRequest>) {
          const auto found = values.find(r.key);
          std::string value = found == values.end() ? std::string() : found->second;
          try {
            const std::int64_t sum = add_to_counter(r.key, value, r.delta);
            values[r.key] = std::move(value);
            respond(client, CounterResponse{sum});
            return true;
          } catch (const Error& e) {
            respond(client, ErrorResponse{StoreErrorKind::kInvalidArgument, e.what()});
            return false;
          }
        } else if constexpr (std::is_same_v<T, CheckRequest>) {
          respond(client, CheckedResponse{has_all(r.keys)});
          return false;
        } else {
          Parked parked;
          if constexpr (std::is_same_v<T, GetRequest>) {
            parked.keys = {std::move(r.key)};
            parked.is_get = true;
          } else {
            parked.keys = std::move(r.keys);
          }
          parked.timeout_ms = r.timeout_ms;
          parked.deadline = Clock::now() + std::chrono::milliseconds(r.timeout_ms);
          client.parked = std::move(parked);
          try_unpark(client, Clock::now());
          return false;
        }
      },
      request);
}

void TcpStoreServer::Impl::try_unpark(Client& client, Clock::time_point now) {
  const Parked& parked = *client.parked;
  if (has_all(parked.keys)) {
    if (parked.is_get) {
      respond(client, ValueResponse{values.at(parked.keys.front())});
    } else {
      respond(client, OkResponse{});
    }
    client.parked.reset();
  } else if (now >= parked.deadline) {
    respond(client, ErrorResponse{StoreErrorKind::kDeadline, timeout_message(parked)});
    client.parked.reset();
  }
}

void TcpStoreServer::Impl::respond(Client& client, const StoreResponse& response) {
  encode_store_response(response, client.out);
  flush(client);
}

void TcpStoreServer::Impl::flush(Client& client) {
  while (!client.closed && client.out_sent < client.out.size()) {
    const ssize_t n = ::send(client.fd.get(), client.out.data() + client.out_sent,
                             client.out.size() - client.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      client.out_sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    } else {
      client.closed = true;
    }
  }
  if (client.out_sent == client.out.size()) {
    client.out.clear();
    client.out_sent = 0;
  }
}

// Tells the client why (best effort) and closes it; the other clients are not affected.
void TcpStoreServer::Impl::reject(Client& client, const std::string& why) {
  respond(client, ErrorResponse{StoreErrorKind::kProtocol,
                                "store server " + address + ": malformed request from " +
                                    client.peer + " (" + why + "); closing the connection"});
  client.closed = true;
}

// Answers parked clients whose keys appeared or whose deadline passed, and handles the frames
// behind them, until nothing changes; then forgets closed clients.
void TcpStoreServer::Impl::settle() {
  bool again = true;
  while (again) {
    again = false;
    const auto now = Clock::now();
    for (auto& client : clients) {
      if (client->parked) try_unpark(*client, now);
      if (serve(*client)) again = true;
    }
  }
  std::erase_if(clients, [](const auto& client) { return client->closed; });
}

int TcpStoreServer::Impl::poll_timeout_ms() const {
  std::optional<Clock::time_point> next;
  if (Clock::now() < listener_paused_until) next = listener_paused_until;
  for (const auto& client : clients) {
    if (client->parked && (!next || client->parked->deadline < *next)) {
      next = client->parked->deadline;
    }
  }
  if (!next) return -1;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(wait, 0, 60'000));
}

}  // namespace dlcp
