// Joining peers: dialing, accepted peers, and registering a peer once it is proven (its data
// addresses, path MTU, packet keys), with the endpoint and the data plane.
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>

#include "common/net.hpp"
#include "policy/policy.hpp"
#include "transport/engine.hpp"
#include "transport/handshake.hpp"

namespace dlcp::transport {
namespace {

constexpr std::size_t kIpUdpOverhead = 28;
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

// TransportOptions::control_rto_min on a control connection, where the kernel supports it;
// returns what the kernel took (0: its default stays).
std::uint64_t set_control_rto_min(int fd, std::chrono::microseconds rto_min) {
  const auto micros = static_cast<int>(rto_min.count());
  if (micros == 0) return 0;
  // Older kernels refuse the options (ENOPROTOOPT): their 200 ms floor stays, as the counters say.
  if (::setsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &micros, sizeof(micros)) != 0) return 0;
  ::setsockopt(fd, IPPROTO_TCP, kTcpDelackMaxUs, &micros, sizeof(micros));
  int applied = 0;
  socklen_t length = sizeof(applied);
  if (::getsockopt(fd, IPPROTO_TCP, kTcpRtoMinUs, &applied, &length) == 0 && applied > 0) {
    return static_cast<std::uint64_t>(applied);
  }
  return 0;
}

}  // namespace

wire::Hello Engine::our_hello() const {
  wire::Hello hello;
  hello.job_token = options_.job_token;
  hello.rank = static_cast<std::uint16_t>(options_.rank);
  hello.world_size = static_cast<std::uint16_t>(options_.world_size);
  for (const auto& socket : data_.sockets()) {
    hello.data_sockets.push_back({socket.ipv4(), socket.port()});
  }
  hello.nonce = random_nonce();
  hello.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks |
                   wire::hello_features::kWireDtypes | wire::hello_features::kParity;
  if (options_.packet_mac) hello.features |= wire::hello_features::kPacketMac;
  if (local_enabled_) {
    hello.features |= wire::hello_features::kLocalPath;
    hello.host_identity = *host_identity_;
    hello.local_socket = local_acceptor_->name();
  }
  return hello;
}

bool Engine::shares_host(const wire::Hello& hello) const {
  return local_enabled_ && (hello.features & wire::hello_features::kLocalPath) != 0 &&
         hello.host_identity == *host_identity_;
}

void Engine::connect(int peer, const std::string& host, std::uint16_t port) {
  if (peer < 0 || peer >= options_.world_size || peer == options_.rank) {
    throw Error(ErrorCode::kInvalidArgument, peer,
                "cannot connect rank " + std::to_string(options_.rank) + " to rank " +
                    std::to_string(peer) + " in a world of " + std::to_string(options_.world_size));
  }
  const TimePoint deadline = SteadyClock::now() + options_.connect_timeout;
  auto ready = readiness_.ready_future[static_cast<std::size_t>(peer)];
  if (options_.rank > peer) {
    // The higher rank dials.
    DialResult dialed =
        dial_peer(peer, net::resolve_ipv4(host), port, our_hello(), job_key_, deadline);
    auto link = std::make_shared<std::optional<LocalLink>>();
    if (shares_host(dialed.peer_hello)) {
      // Both sides decided alike from the two Hellos: from now on only this path carries data.
      link->emplace(new_local_link());
      dial_local(peer, options_.rank, dialed.peer_hello.local_socket, job_key_, dialed.transcript,
                 **link, deadline);
    }
    auto done = std::make_shared<std::promise<void>>();
    auto done_future = done->get_future();
    auto fd = std::make_shared<Fd>(std::move(dialed.fd));
    post([this, peer, fd, link, hello = std::move(dialed.peer_hello),
          transcript = std::move(dialed.transcript), done]() mutable {
      try {
        register_peer(peer, ControlChannel(std::move(*fd)), hello, transcript, std::move(*link));
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
                    net::describe(bind_ipv4_, acceptor_->port()) + ") within " +
                    std::to_string(options_.connect_timeout.count()) + " ms");
  }
  ready.get();
}

void Engine::on_accepted(AcceptedPeer accepted) {
  const int rank = accepted.hello.rank;
  const wire::Authenticate proof = acceptor_->proof(accepted);
  // Registered before our proof leaves, so the peer (which starts sending once it has verified
  // the proof) finds us ready.
  register_peer(rank, std::move(accepted.control), accepted.hello, accepted.transcript,
                std::nullopt);
  ControlChannel& control = controls_[static_cast<std::size_t>(rank)];
  control.send(proof);
  if (!control.healthy()) {
    endpoint_.on_peer_lost(rank, control.error(), ErrorCode::kPeerLost, SteadyClock::now());
  }
}

void Engine::register_peer(int rank, ControlChannel control, const wire::Hello& hello,
                           std::span<const std::byte> transcript,
                           std::optional<LocalLink> local_link) {
  if (known_[static_cast<std::size_t>(rank)] != 0) {
    throw Error(ErrorCode::kProtocol, rank, "rank " + std::to_string(rank) + " connected twice");
  }
  const int fd = control.fd();
  sockaddr_in remote{};
  socklen_t length = sizeof(remote);
  ::getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &length);
  net::set_nonblocking(fd);
  net::set_int_option(fd, IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
  if (const auto rto = set_control_rto_min(fd, options_.control_rto_min)) {
    control_rto_min_us_ = rto;
  }
  net::set_int_option(fd, IPPROTO_IP, IP_TOS, policy::control_tos(options_.policy), "IP_TOS");
  std::vector<sockaddr_in> addresses;
  for (const auto& data : hello.data_sockets) {
    // A peer bound to the wildcard address is reached at the address its control connection
    // came from.
    const std::uint32_t ipv4 = data.ipv4 != 0 ? data.ipv4 : ntohl(remote.sin_addr.s_addr);
    addresses.push_back(net::make_sockaddr(ipv4, data.port));
  }
  if (receive_rate_.learn(addresses)) endpoint_.set_receive_rate(receive_rate_.bytes_per_s());

  protocol::PeerLink path;
  path.address = net::describe(remote);
  const std::size_t trailer = options_.packet_mac ? wire::kMacTrailerBytes : 0;
  const std::size_t overhead = wire::kDataHeaderBytes + trailer;
  const std::size_t datagram = path_datagram_bytes(addresses.front(), options_.mtu);
  if (datagram <= overhead + wire::kFloatBytes) {
    throw Error(ErrorCode::kInvalidArgument, rank,
                "MTU towards rank " + std::to_string(rank) + " is too small for a data packet");
  }
  const std::size_t stride =
      std::min<std::size_t>((datagram - overhead) / wire::kFloatBytes, 0xFFFF);
  path.stride = static_cast<std::uint16_t>(stride);
  path.datagram_bytes = overhead + stride * wire::kFloatBytes;
  path.send_paths = addresses.size();
  path.receive_paths = data_.sockets().size();

  std::optional<PacketMac> mac_send;
  std::optional<PacketMac> mac_receive;
  if (options_.packet_mac) {
    const auto self = static_cast<std::uint16_t>(options_.rank);
    const auto other = static_cast<std::uint16_t>(rank);
    mac_send.emplace(job_key_.packet_key(transcript, self, other));
    mac_receive.emplace(job_key_.packet_key(transcript, other, self));
  }
  endpoint_.on_peer_joined(rank, path, SteadyClock::now());
  data_.add_peer(rank, std::move(addresses), std::move(mac_send), std::move(mac_receive));
  controls_[static_cast<std::size_t>(rank)] = std::move(control);
  poller_.watch(fd, epoll_tag::kControl | static_cast<std::uint64_t>(rank));
  known_[static_cast<std::size_t>(rank)] = 1;
  if (!shares_host(hello)) {
    const TimePoint now = SteadyClock::now();
    for (auto& parked : local_.take_parked(rank, now))
      endpoint_.post_receive(std::move(parked), now);
    mark_ready(rank, path.stride);
    return;
  }
  if (local_link) {
    link_local(rank, std::move(*local_link), path.stride);
    return;
  }
  // The listening side: our half waits for the dialer's exchange (finish_local), and the peer is
  // ready only then, so that nothing is sent before both sides can carry it.
  awaiting_local_[static_cast<std::size_t>(rank)] = AwaitingLocal{
      new_local_link(), std::vector<std::byte>(transcript.begin(), transcript.end()), path.stride};
}

void Engine::link_local(int rank, LocalLink link, std::uint16_t stride) {
  poller_.watch(link.wake.get(), epoll_tag::kLocalWake | static_cast<std::uint64_t>(rank));
  local_.add_peer(rank, std::move(link), endpoint_.describe_peer(rank));
  const TimePoint now = SteadyClock::now();
  for (const protocol::ReceiveRequest& parked : local_.grouped_receives(rank)) {
    if (const auto refused =
            endpoint_.join_group_lossless(parked.key, parked.options, parked.total_floats, now)) {
      local_.fail_receive(rank, parked.key.id, ErrorCode::kInvalidArgument, *refused);
    }
  }
  mark_ready(rank, stride);
}

void Engine::finish_local(int rank) {
  auto& awaiting = awaiting_local_[static_cast<std::size_t>(rank)];
  if (!awaiting) return;
  AwaitingLocal done = std::move(*awaiting);
  awaiting.reset();
  link_local(rank, std::move(done.link), done.stride);
}

void Engine::mark_ready(int rank, std::uint16_t stride) {
  readiness_.stride[static_cast<std::size_t>(rank)].store(stride);
  readiness_.ready[static_cast<std::size_t>(rank)].set_value();
}

void Engine::on_control_readable(int rank, TimePoint now) {
  ControlChannel& control = controls_[static_cast<std::size_t>(rank)];
  if (!control.open() || !endpoint_.connected(rank)) return;
  std::vector<wire::ControlMessage> messages;
  const auto status = control.read(messages);
  for (const auto& message : messages) {
    endpoint_.on_control(rank, message, now);
    deliver_outputs();
    if (!endpoint_.connected(rank)) return;
  }
  if (status == ControlChannel::ReadStatus::kClosed) {
    endpoint_.on_peer_lost(rank, "closed the control connection (process exited or crashed?)",
                           ErrorCode::kPeerLost, now);
  } else if (status == ControlChannel::ReadStatus::kFailed) {
    endpoint_.on_peer_lost(rank, control.error(), ErrorCode::kPeerLost, now);
  }
  deliver_outputs();
}

void Engine::check_controls(TimePoint now) {
  for (int rank = 0; rank < options_.world_size; ++rank) {
    ControlChannel& control = controls_[static_cast<std::size_t>(rank)];
    if (!control.open() || !endpoint_.connected(rank)) continue;
    if (!control.healthy() || (control.wants_write() && !control.flush())) {
      // What the peer sent before it went away (its Abort, its Goodbye) names the real cause
      // better than the broken pipe does.
      const std::string error = control.error();
      on_control_readable(rank, now);
      endpoint_.on_peer_lost(rank, error, ErrorCode::kPeerLost, now);
      deliver_outputs();
    }
  }
}

}  // namespace dlcp::transport
