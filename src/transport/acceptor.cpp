#include "transport/acceptor.hpp"

#include <sys/socket.h>

#include <algorithm>

#include "common/net.hpp"
#include "transport/handshake.hpp"

namespace dlcp::transport {
namespace {

// Connections still handshaking at once: enough for every peer to dial twice, and few enough
// that a flood of connections cannot exhaust descriptors or memory.
constexpr std::size_t kMinPendingConnections = 64;

}  // namespace

Acceptor::Acceptor(const TransportOptions& options, std::uint32_t bind_ipv4, const JobKey& key,
                   Poller& poller, std::function<wire::Hello()> our_hello,
                   std::function<bool(int)> joined)
    : options_(options),
      key_(key),
      poller_(poller),
      our_hello_(std::move(our_hello)),
      joined_(std::move(joined)) {
  listener_ = net::listen_tcp(bind_ipv4, options_.control_port);
  net::set_nonblocking(listener_.get());
  port_ = ntohs(net::local_address(listener_.get()).sin_port);
  poller_.watch(listener_.get(), epoll_tag::kListener);
}

void Acceptor::drop(std::unordered_map<std::uint64_t, Pending>::iterator it,
                    wire::RejectReason reason) {
  rejects_.add(reason);
  poller_.unwatch(it->second.control.fd());
  pending_.erase(it);
}

void Acceptor::accept(TimePoint now) {
  const std::size_t limit =
      std::max(kMinPendingConnections, 2 * static_cast<std::size_t>(options_.world_size));
  for (;;) {
    Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    if (pending_.size() >= limit) {
      // Evict the oldest: a real peer finishes its handshake within milliseconds, so a flood of
      // idle connections cannot keep it out, and still cannot grow without bound.
      auto oldest = std::min_element(pending_.begin(), pending_.end(), [](auto& a, auto& b) {
        return a.second.accepted < b.second.accepted;
      });
      drop(oldest, wire::RejectReason::kHandshakeLimit);
    }
    const std::uint64_t id = next_id_++;
    poller_.watch(fd.get(), epoll_tag::kPending | id);
    Pending pending{ControlChannel(std::move(fd)), now, std::nullopt, {}};
    pending.control.set_max_frame_bytes(kMaxHandshakeFrameBytes);
    pending_.emplace(id, std::move(pending));
  }
}

std::optional<AcceptedPeer> Acceptor::on_readable(std::uint64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  Pending& pending = it->second;
  std::vector<wire::ControlMessage> messages;
  const auto status = pending.control.read(messages);
  if (status != ControlChannel::ReadStatus::kOk) {
    drop(it, wire::RejectReason::kBadControlField);
    return std::nullopt;
  }
  if (messages.empty()) return std::nullopt;
  // The dialer waits for our answer after each of its two frames: more is a protocol violation.
  if (messages.size() > 1) {
    drop(it, wire::RejectReason::kBadControlType);
    return std::nullopt;
  }
  if (!pending.dialer_hello) {
    if (!on_dialer_hello(pending, messages.front())) pending_.erase(it);
    return std::nullopt;
  }
  if (!on_dialer_proof(pending, messages.front())) {
    pending_.erase(it);
    return std::nullopt;
  }
  AcceptedPeer accepted{std::move(pending.control), *pending.dialer_hello,
                        std::move(pending.transcript)};
  poller_.unwatch(accepted.control.fd());
  pending_.erase(it);
  accepted.control.set_max_frame_bytes(wire::kMaxControlFrameBytes);
  return accepted;
}

wire::Authenticate Acceptor::proof(const AcceptedPeer& peer) const {
  return wire::Authenticate{key_.proof(HandshakeRole::kListener, peer.transcript)};
}

bool Acceptor::on_dialer_hello(Pending& pending, const wire::ControlMessage& message) {
  auto refuse = [&](wire::RejectReason reason) {
    rejects_.add(reason);
    poller_.unwatch(pending.control.fd());
    return false;
  };
  const auto* hello = std::get_if<wire::Hello>(&message);
  if (hello == nullptr) return refuse(wire::RejectReason::kBadControlType);
  if (hello->job_token != options_.job_token) return refuse(wire::RejectReason::kWrongJob);
  const wire::Hello ours = our_hello_();
  if (hello->rank >= options_.world_size || hello->rank <= options_.rank || joined_(hello->rank)) {
    return refuse(wire::RejectReason::kBadSourceRank);
  }
  if (!check_hello(*hello, ours).empty()) {
    // A peer of this job with other settings (world size, packet MAC): our Hello lets it name
    // the difference instead of guessing why the connection closed.
    pending.control.send(ours);
    return refuse(wire::RejectReason::kBadControlField);
  }
  pending.dialer_hello = *hello;
  pending.transcript = handshake_transcript(*hello, ours);
  pending.control.send(ours);
  if (!pending.control.healthy()) return refuse(wire::RejectReason::kBadControlField);
  return true;
}

bool Acceptor::on_dialer_proof(Pending& pending, const wire::ControlMessage& message) {
  auto refuse = [&](wire::RejectReason reason) {
    rejects_.add(reason);
    poller_.unwatch(pending.control.fd());
    return false;
  };
  const auto* proof = std::get_if<wire::Authenticate>(&message);
  if (proof == nullptr || !key_.verify(HandshakeRole::kDialer, pending.transcript, proof->proof)) {
    return refuse(wire::RejectReason::kBadAuth);
  }
  // Another connection of the same rank may have completed meanwhile.
  if (joined_(pending.dialer_hello->rank)) return refuse(wire::RejectReason::kBadSourceRank);
  return true;
}

void Acceptor::expire(TimePoint now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now - it->second.accepted > kHandshakeTimeout) {
      rejects_.add(wire::RejectReason::kHandshakeLimit);
      poller_.unwatch(it->second.control.fd());
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace dlcp::transport
