// Joining peers: dialing and accepting control connections, the handshake, and registering a
// peer once it is proven (its data addresses, path MTU, pacing and packet keys).
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "common/net.hpp"
#include "policy/policy.hpp"
#include "transport/engine.hpp"
#include "transport/handshake.hpp"
#include "transport/link_rate.hpp"

namespace dlcp::transport {
namespace {

constexpr std::size_t kIpUdpOverhead = 28;
// Connections still handshaking at once: enough for every peer to dial twice, and few enough
// that a flood of connections cannot exhaust descriptors or memory.
constexpr std::size_t kMinPendingConnections = 64;
// TCP_RTO_MIN_US and TCP_DELACK_MAX_US of recent kernels' linux/tcp.h; the C library's headers
// may predate them.
constexpr int kTcpRtoMinUs = 45;
constexpr int kTcpDelackMaxUs = 46;

std::size_t path_datagram_bytes(const sockaddr_in& destination, int configured_mtu) {
  // The route's MTU to the peer, read from a connected throwaway socket.
  int mtu = 1500;
  Fd probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (probe.valid() && ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&destination),
                                 sizeof(destination)) == 0) {
    socklen_t length = sizeof(mtu);
    if (::getsockopt(probe.get(), IPPROTO_IP, IP_MTU, &mtu, &length) != 0) mtu = 1500;
  }
  if (configured_mtu > 0) mtu = std::min(mtu, configured_mtu);
  return std::min<std::size_t>(static_cast<std::size_t>(mtu) - kIpUdpOverhead, kMaxDatagram);
}
}  // namespace

wire::Hello Engine::our_hello() const {
  wire::Hello hello;
  hello.job_token = options_.job_token;
  hello.rank = static_cast<std::uint16_t>(options_.rank);
  hello.world_size = static_cast<std::uint16_t>(options_.world_size);
  for (const auto& socket : sockets_) hello.data_sockets.push_back({socket.ipv4(), socket.port()});
  hello.nonce = random_nonce();
  hello.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks |
                   wire::hello_features::kWireDtypes;
  if (options_.packet_mac) hello.features |= wire::hello_features::kPacketMac;
  return hello;
}

void Engine::connect(int peer, const std::string& host, std::uint16_t port) {
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "cannot connect rank " + std::to_string(options_.rank) + " to rank " +
                    std::to_string(peer) + " in a world of " + std::to_string(options_.world_size));
  }
  const TimePoint deadline = SteadyClock::now() + options_.connect_timeout;
  auto ready = peer_ready_future_[static_cast<std::size_t>(peer)];
  if (options_.rank > peer) {
    // The higher rank dials.
    DialResult dialed =
        dial_peer(peer, net::resolve_ipv4(host), port, our_hello(), *job_key_, deadline);
    auto done = std::make_shared<std::promise<void>>();
    auto done_future = done->get_future();
    auto fd = std::make_shared<Fd>(std::move(dialed.fd));
    post([this, peer, fd, hello = std::move(dialed.peer_hello),
          transcript = std::move(dialed.transcript), done]() mutable {
      try {
        const int raw = fd->get();
        register_peer(peer, ControlChannel(std::move(*fd)), hello, raw, transcript);
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
    done_future.get();
    return;
  }
  if (ready.wait_until(deadline) != std::future_status::ready) {
    throw Error(ErrorCode::kConnect, peer,
                "rank " + std::to_string(peer) + " did not connect to rank " +
                    std::to_string(options_.rank) + " (listening on " +
                    net::describe(bind_ipv4_, control_port_) + ") within " +
                    std::to_string(options_.connect_timeout.count()) + " ms");
  }
  ready.get();
}

void Engine::learn_receive_links(const PeerState& peer) {
  for (const auto& address : peer.data_addresses) {
    const std::uint32_t ipv4 = ntohl(address.sin_addr.s_addr);
    const auto local = local_address_toward(ipv4);
    // A peer on this host is reached through loopback, whatever interface owns its address.
    if (local == ipv4) continue;
    auto link = local ? interface_of(*local) : std::nullopt;
    if (link) {
      receive_links_.insert(std::move(*link));
    } else {
      receive_link_unknown_ = true;
    }
  }
  const std::vector<std::string> links(receive_links_.begin(), receive_links_.end());
  const auto rate = receive_link_unknown_ ? std::nullopt : links_rate(links);
  receive_rate_ = rate.value_or(options_.rate.max_rate);
}

void Engine::set_control_rto_min(int fd) {
  const auto micros = static_cast<int>(options_.control_rto_min.count());
  if (micros == 0) return;
  // Older kernels refuse the options (ENOPROTOOPT): their 200 ms floor stays, as the counters say.
  if (::setsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &micros, sizeof(micros)) != 0) return;
  ::setsockopt(fd, IPPROTO_TCP, kTcpDelackMaxUs, &micros, sizeof(micros));
  int applied = 0;
  socklen_t length = sizeof(applied);
  if (::getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &applied, &length) == 0 && applied > 0) {
    stats_.control_rto_min_us = static_cast<std::uint64_t>(applied);
  }
}

void Engine::register_peer(int rank, ControlChannel control, const wire::Hello& hello,
                           int fd_for_address, std::span<const std::byte> transcript) {
  PeerState& peer = peers_[static_cast<std::size_t>(rank)];
  if (peer.joined) {
    throw Error(ErrorCode::kProtocol, rank, "rank " + std::to_string(rank) + " connected twice");
  }
  sockaddr_in remote{};
  socklen_t length = sizeof(remote);
  ::getpeername(fd_for_address, reinterpret_cast<sockaddr*>(&remote), &length);
  peer.address = net::describe(remote);
  net::set_nonblocking(fd_for_address);
  net::set_int_option(fd_for_address, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
  set_control_rto_min(fd_for_address);
  net::set_int_option(fd_for_address, IPPROTO_IP, IP_TOS, policy::control_tos(options_.policy),
                      "IP_TOS");
  for (const auto& data : hello.data_sockets) {
    // A peer bound to the wildcard address is reached at the address its control connection
    // came from.
    const std::uint32_t ipv4 = data.ipv4 != 0 ? data.ipv4 : ntohl(remote.sin_addr.s_addr);
    peer.data_addresses.push_back(net::make_sockaddr(ipv4, data.port));
  }
  if (receive_links_by_route_) learn_receive_links(peer);
  peer.datagram_bytes = path_datagram_bytes(peer.data_addresses.front(), options_.mtu);
  const std::size_t overhead = wire::kDataHeaderBytes + trailer_bytes_;
  if (peer.datagram_bytes <= overhead + wire::kFloatBytes) {
    throw Error(ErrorCode::kInvalidArgument, rank,
                "MTU towards " + describe_peer(rank) + " is too small for a data packet");
  }
  const std::size_t stride =
      std::min<std::size_t>((peer.datagram_bytes - overhead) / wire::kFloatBytes, 0xFFFF);
  peer.datagram_bytes = overhead + stride * wire::kFloatBytes;
  peer_stride_[static_cast<std::size_t>(rank)].store(static_cast<std::uint16_t>(stride));

  const TimePoint now = SteadyClock::now();
  peer.pacing.emplace(options_.rate, peer.datagram_bytes, options_.feedback_interval, now);
  peer.paths.emplace(peer.data_addresses.size());
  peer.path_sent.assign(peer.data_addresses.size(), 0);
  peer.delivered = protocol::DeliveryMeter(sockets_.size());
  if (options_.packet_mac) {
    const auto self = static_cast<std::uint16_t>(options_.rank);
    const auto other = static_cast<std::uint16_t>(rank);
    peer.mac_send.emplace(job_key_->packet_key(transcript, self, other));
    peer.mac_receive.emplace(job_key_->packet_key(transcript, other, self));
    peer.replay.emplace();
  }
  peer.control = std::move(control);
  peer.connected = true;
  peer.joined = true;
  watch(peer.control.fd(), epoll_tag::kControl | static_cast<std::uint64_t>(rank), EPOLLIN);
  peer_ready_[static_cast<std::size_t>(rank)].set_value();
}

void Engine::accept_connections(TimePoint now) {
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
      rejects_.add(wire::RejectReason::kHandshakeLimit);
      unwatch(oldest->second.control.fd());
      pending_.erase(oldest);
    }
    const std::uint64_t id = next_pending_id_++;
    watch(fd.get(), epoll_tag::kPending | id, EPOLLIN);
    PendingConnection pending{ControlChannel(std::move(fd)), now, std::nullopt, {}};
    pending.control.set_max_frame_bytes(kMaxHandshakeFrameBytes);
    pending_.emplace(id, std::move(pending));
  }
}

void Engine::on_pending_readable(std::uint64_t id, TimePoint /*now*/) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  PendingConnection& pending = it->second;
  std::vector<wire::ControlMessage> messages;
  const auto status = pending.control.read(messages);
  auto drop = [&](wire::RejectReason reason) {
    rejects_.add(reason);
    unwatch(pending.control.fd());
    pending_.erase(it);
  };
  if (status != ControlChannel::ReadStatus::kOk) return drop(wire::RejectReason::kBadControlField);
  if (messages.empty()) return;
  // The dialer waits for our answer after each of its two frames: more is a protocol violation.
  if (messages.size() > 1) return drop(wire::RejectReason::kBadControlType);
  if (!pending.dialer_hello) {
    if (!on_dialer_hello(pending, messages.front())) pending_.erase(it);
    return;
  }
  if (!on_dialer_proof(pending, messages.front())) {
    pending_.erase(it);
    return;
  }
  const wire::Hello hello = *pending.dialer_hello;
  const std::vector<std::byte> transcript = std::move(pending.transcript);
  ControlChannel control = std::move(pending.control);
  unwatch(control.fd());
  pending_.erase(it);
  control.set_max_frame_bytes(wire::kMaxControlFrameBytes);
  // Registered before our proof leaves, so the peer (which starts sending once it has verified
  // the proof) finds us ready.
  const int raw = control.fd();
  register_peer(hello.rank, std::move(control), hello, raw, transcript);
  PeerState& peer = peers_[hello.rank];
  peer.control.send(wire::Authenticate{job_key_->proof(HandshakeRole::kListener, transcript)});
  if (!peer.control.healthy()) fail_peer(peer, peer.control.error());
}

bool Engine::on_dialer_hello(PendingConnection& pending, const wire::ControlMessage& message) {
  auto refuse = [&](wire::RejectReason reason) {
    rejects_.add(reason);
    unwatch(pending.control.fd());
    return false;
  };
  const auto* hello = std::get_if<wire::Hello>(&message);
  if (hello == nullptr) return refuse(wire::RejectReason::kBadControlType);
  if (hello->job_token != options_.job_token) return refuse(wire::RejectReason::kWrongJob);
  const wire::Hello ours = our_hello();
  if (hello->rank >= options_.world_size || hello->rank <= options_.rank ||
      peers_[hello->rank].joined) {
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

bool Engine::on_dialer_proof(PendingConnection& pending, const wire::ControlMessage& message) {
  auto refuse = [&](wire::RejectReason reason) {
    rejects_.add(reason);
    unwatch(pending.control.fd());
    return false;
  };
  const auto* proof = std::get_if<wire::Authenticate>(&message);
  if (proof == nullptr ||
      !job_key_->verify(HandshakeRole::kDialer, pending.transcript, proof->proof)) {
    return refuse(wire::RejectReason::kBadAuth);
  }
  // Another connection of the same rank may have completed meanwhile.
  if (peers_[pending.dialer_hello->rank].joined) {
    return refuse(wire::RejectReason::kBadSourceRank);
  }
  return true;
}

}  // namespace dlcp::transport
