#include "transport/engine.hpp"

#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/net.hpp"
#include "policy/policy.hpp"
#include "switch/switch_plan.hpp"
#include "transport/handshake.hpp"
#include "transport/link_rate.hpp"

namespace dlcp::transport {
namespace {

// epoll tags: the top byte says what kind of descriptor, the rest which one.
constexpr std::uint64_t kTagShift = 56;
constexpr std::uint64_t kTagWake = 1ull << kTagShift;
constexpr std::uint64_t kTagListener = 2ull << kTagShift;
constexpr std::uint64_t kTagData = 3ull << kTagShift;
constexpr std::uint64_t kTagControl = 4ull << kTagShift;
constexpr std::uint64_t kTagPending = 5ull << kTagShift;
constexpr std::uint64_t kTagMask = 0xFFull << kTagShift;

constexpr std::size_t kMaxDatagram = 65507;  // largest UDP payload over IPv4
constexpr std::size_t kIpUdpOverhead = 28;
constexpr Duration kHandshakeTimeout = std::chrono::seconds(10);
// Connections still handshaking at once: enough for every peer to dial twice, and few enough
// that a flood of connections cannot exhaust descriptors or memory.
constexpr std::size_t kMinPendingConnections = 64;
constexpr Duration kTimerTick = std::chrono::milliseconds(1);
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

Engine::Engine(const TransportOptions& options)
    : options_(options),
      peers_(static_cast<std::size_t>(std::max(options.world_size, 0))),
      peer_ready_(peers_.size()),
      peer_ready_future_(peers_.size()),
      peer_stride_(peers_.size()) {
  try {
    options_.validate();
  } catch (const std::invalid_argument& e) {
    throw Error(ErrorCode::kInvalidArgument, -1, e.what());
  }
  job_key_.emplace(options_.job_secret, options_.job_token);
  shared_band_dscps_ = switchconf::shares_best_effort_class(
      switchconf::make_switch_plan(options_.policy.dscp, switchconf::PortOptions{}));
  trailer_bytes_ = options_.packet_mac ? wire::kMacTrailerBytes : 0;
  iov_per_packet_ = options_.packet_mac ? 3 : 2;
  bind_ipv4_ = net::resolve_ipv4(options_.bind_host);
  listener_ = net::listen_tcp(bind_ipv4_, options_.control_port);
  net::set_nonblocking(listener_.get());
  control_port_ = ntohs(net::local_address(listener_.get()).sin_port);

  const auto batch = static_cast<std::size_t>(options_.batch);
  std::vector<std::uint32_t> data_addresses;
  for (int k = 0; k < options_.paths; ++k) {
    std::uint32_t ipv4 = bind_ipv4_;
    if (!options_.local_addresses.empty()) {
      ipv4 = net::resolve_ipv4(
          options_.local_addresses[static_cast<std::size_t>(k) % options_.local_addresses.size()]);
    }
    sockets_.emplace_back(ipv4, options_.socket_buffer_bytes, batch, kMaxDatagram);
    data_addresses.push_back(ipv4);
  }
  const bool wildcard =
      std::find(data_addresses.begin(), data_addresses.end(), INADDR_ANY) != data_addresses.end();
  if (options_.rate.receive_rate > 0) {
    receive_rate_ = options_.rate.receive_rate;
  } else if (wildcard) {
    receive_links_by_route_ = true;
    receive_rate_ = options_.rate.max_rate;  // until the first peer joins
  } else {
    receive_rate_ = detect_receive_rate(data_addresses).value_or(options_.rate.max_rate);
  }
  direct_receive_.assign(sockets_.size(), 0);
  if (options_.inject.enabled()) injector_.emplace(options_.inject);
  expectations_ = {options_.job_token, static_cast<std::uint16_t>(options_.rank),
                   static_cast<std::uint32_t>(options_.world_size), options_.packet_mac};

  for (std::size_t r = 0; r < peers_.size(); ++r) {
    peers_[r].rank = static_cast<int>(r);
    peer_ready_future_[r] = peer_ready_[r].get_future().share();
  }
  header_scratch_.resize(batch * wire::kDataHeaderBytes);
  trailer_scratch_.resize(batch * trailer_bytes_);
  per_socket_.resize(sockets_.size());
  per_socket_groups_.resize(sockets_.size());
  iov_scratch_.resize(iov_per_packet_ * batch);
  burst_.reserve(batch);

  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_.valid() || !wake_.valid()) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("epoll/eventfd", errno));
  }
  watch(wake_.get(), kTagWake, EPOLLIN);
  watch(listener_.get(), kTagListener, EPOLLIN);
  for (std::size_t k = 0; k < sockets_.size(); ++k) watch(sockets_[k].fd(), kTagData | k, EPOLLIN);
  io_thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  // An orderly exit: peers that no longer need us must not count our closing as a failure.
  {
    auto done = std::make_shared<std::promise<void>>();
    auto said = done->get_future();
    post([this, done] {
      for (auto& peer : peers_) {
        if (!peer.connected) continue;
        peer.control.send(wire::Goodbye{});
        peer.control.flush();
        peer.control.finish();
      }
      // Nothing may be sent on the finished connections: the loop ends here.
      stopping_.store(true);
      done->set_value();
    });
    said.wait_for(std::chrono::seconds(1));
  }
  stopping_.store(true);
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof(one));
  if (io_thread_.joinable()) io_thread_.join();
  // Commands posted after the loop's last pass: posts fail with kAborted below, not with a
  // broken promise.
  run_commands();
  for (auto& [key, message] : outgoing_) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, key.peer, "transport shut down before the message settled")));
  }
  for (auto& [key, message] : incoming_) {
    message->promise.set_exception(std::make_exception_ptr(
        Error(ErrorCode::kAborted, key.peer, "transport shut down before the message settled")));
  }
}

void Engine::watch(int fd, std::uint64_t tag, std::uint32_t events) {
  epoll_event event{};
  event.events = events;
  event.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("epoll_ctl", errno));
  }
}

void Engine::unwatch(int fd) {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void Engine::post(std::function<void()> command) const {
  {
    std::lock_guard lock(commands_mutex_);
    commands_.push_back(std::move(command));
  }
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof(one));
}

void Engine::run_commands() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(commands_mutex_);
    batch.swap(commands_);
  }
  for (auto& command : batch) command();
}

std::string Engine::describe_peer(int peer) const {
  std::string text = "rank " + std::to_string(peer);
  if (peer >= 0 && static_cast<std::size_t>(peer) < peers_.size() &&
      !peers_[static_cast<std::size_t>(peer)].address.empty()) {
    text += " (" + peers_[static_cast<std::size_t>(peer)].address + ")";
  }
  return text;
}

wire::Hello Engine::our_hello() const {
  wire::Hello hello;
  hello.job_token = options_.job_token;
  hello.rank = static_cast<std::uint16_t>(options_.rank);
  hello.world_size = static_cast<std::uint16_t>(options_.world_size);
  for (const auto& socket : sockets_) hello.data_sockets.push_back({socket.ipv4(), socket.port()});
  hello.nonce = random_nonce();
  hello.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks;
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
  peer.rate.emplace(options_.rate);
  peer.pacer.emplace(
      peer.rate->rate(),
      burst_for_rate(peer.rate->rate(), peer.datagram_bytes, options_.feedback_interval), now);
  if (options_.rate.shared_band_pacing) {
    peer.shared_band_rate.emplace(options_.rate);
    peer.shared_band_pacer.emplace(peer.shared_band_rate->rate(),
                                   burst_for_rate(peer.shared_band_rate->rate(),
                                                  peer.datagram_bytes, options_.feedback_interval),
                                   now);
  }
  peer.paths.emplace(peer.data_addresses.size());
  peer.path_sent.assign(peer.data_addresses.size(), 0);
  peer.delivered = DeliveryMeter(sockets_.size());
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
  watch(peer.control.fd(), kTagControl | static_cast<std::uint64_t>(rank), EPOLLIN);
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
    watch(fd.get(), kTagPending | id, EPOLLIN);
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

void Engine::on_control_readable(int rank, TimePoint now) {
  PeerState& peer = peers_[static_cast<std::size_t>(rank)];
  if (!peer.connected) return;
  std::vector<wire::ControlMessage> messages;
  const auto status = peer.control.read(messages);
  for (auto& message : messages) {
    on_control_message(peer, message, now);
    if (!peer.connected) return;
  }
  if (status == ControlChannel::ReadStatus::kClosed) {
    fail_peer(peer, "closed the control connection (process exited or crashed?)");
  } else if (status == ControlChannel::ReadStatus::kFailed) {
    fail_peer(peer, peer.control.error());
  }
}

void Engine::on_control_message(PeerState& peer, wire::ControlMessage& message, TimePoint now) {
  std::visit(
      [&](auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, wire::Hello> || std::is_same_v<T, wire::Authenticate>) {
          rejects_.add(wire::RejectReason::kBadControlType);  // only valid in the handshake
        } else if constexpr (std::is_same_v<T, wire::FlowStart>) {
          on_flow_start(peer, body, now);
        } else if constexpr (std::is_same_v<T, wire::RoundFinished>) {
          on_round_finished(peer, body, now);
        } else if constexpr (std::is_same_v<T, wire::MissingRanges>) {
          on_missing_ranges(peer, body);
        } else if constexpr (std::is_same_v<T, wire::Stop>) {
          on_stop(peer, body, now);
        } else if constexpr (std::is_same_v<T, wire::RateFeedback>) {
          on_rate_feedback(peer, body, now);
        } else if constexpr (std::is_same_v<T, wire::Abort>) {
          fail_peer(peer, "aborted the job: " + body.reason, ErrorCode::kAborted);
        } else if constexpr (std::is_same_v<T, wire::Goodbye>) {
          peer.said_goodbye = true;
        }
      },
      message);
}

std::uint16_t Engine::max_packet_floats(int peer) const {
  if (peer < 0 || peer >= options_.world_size) return 0;
  return peer_stride_[static_cast<std::size_t>(peer)].load();
}

std::optional<Error> Engine::failure() const {
  std::lock_guard lock(failure_mutex_);
  return first_failure_;
}

void Engine::abort(const std::string& why) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  post([this, why, done] {
    if (aborted_.empty()) aborted_ = why.empty() ? "aborted" : why;
    std::vector<OutgoingMessage*> out;
    for (auto& [key, message] : outgoing_) out.push_back(message.get());
    for (auto* message : out) fail_outgoing(*message, ErrorCode::kAborted, "aborted: " + aborted_);
    std::vector<IncomingMessage*> in;
    for (auto& [key, message] : incoming_) in.push_back(message.get());
    for (auto* message : in) {
      fail_incoming(*message, ErrorCode::kAborted, "aborted: " + aborted_, false);
    }
    // Peers fail their messages with us at once, naming the cause, instead of at a deadline.
    for (auto& peer : peers_) {
      if (!peer.connected) continue;
      peer.control.send(wire::Abort{aborted_});
      peer.control.flush();
    }
    done->set_value();
  });
  finished.wait();
}

std::string Engine::own_stall_note(int except_peer, TimePoint now) const {
  // Long enough that it is not merely a transfer in progress.
  constexpr Duration kStalled = std::chrono::milliseconds(500);
  const IncomingMessage* oldest = nullptr;
  for (const auto& [key, message] : incoming_) {
    if (key.peer == except_peer || now - message->last_packet < kStalled) continue;
    if (oldest == nullptr || message->last_packet < oldest->last_packet) oldest = message.get();
  }
  if (oldest == nullptr) return {};
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest->last_packet).count();
  const auto& tracker = oldest->tracker;
  return "; rank " + std::to_string(options_.rank) + " was itself waiting for message " +
         std::to_string(oldest->key.id) + " from " + describe_peer(oldest->key.peer) +
         " (no packet for " + std::to_string(waited) + " ms, " +
         (tracker ? std::to_string(tracker->received_count()) + " of " +
                        std::to_string(tracker->packet_count()) + " packets"
                  : std::string("no packets at all")) +
         ")";
}

void Engine::fail_peer(PeerState& peer, const std::string& why, ErrorCode code) {
  if (!peer.connected) return;
  peer.failure = describe_peer(peer.rank) + " " + why;
  if (code == ErrorCode::kAborted) peer.failure += own_stall_note(peer.rank, SteadyClock::now());
  if (peer.said_goodbye) peer.failure = describe_peer(peer.rank) + " left the job (shut down)";
  peer.connected = false;
  if (!peer.said_goodbye) {
    std::lock_guard lock(failure_mutex_);
    if (!first_failure_) first_failure_ = Error(code, peer.rank, peer.failure);
  }
  unwatch(peer.control.fd());
  peer.control.close();
  std::vector<OutgoingMessage*> out;
  for (auto& [key, message] : outgoing_) {
    if (key.peer == peer.rank) out.push_back(message.get());
  }
  for (auto* message : out) fail_outgoing(*message, code, peer.failure);
  std::vector<IncomingMessage*> in;
  for (auto& [key, message] : incoming_) {
    if (key.peer == peer.rank) in.push_back(message.get());
  }
  for (auto* message : in) fail_incoming(*message, code, peer.failure, false);
}

void Engine::send_feedback(PeerState& peer, std::size_t active_senders, TimePoint now) {
  wire::RateFeedback feedback = peer.delivered.take(now);
  feedback.offered_rate = offer_on_wire(offered_share(receive_rate_, active_senders));
  peer.control.send(feedback);
}

std::size_t Engine::active_senders(TimePoint now) const {
  std::vector<bool> mid_round(peers_.size(), false);
  for (const auto& [key, message] : incoming_) {
    if (message->mid_round) mid_round[static_cast<std::size_t>(key.peer)] = true;
  }
  std::size_t senders = 0;
  for (const auto& peer : peers_) {
    const auto last = peer.delivered.last_packet();
    if (!peer.connected || !last) continue;
    const Duration window = sending_window(options_.feedback_interval, receive_rate_,
                                           counted_senders_, peer.datagram_bytes);
    if (counts_as_sender(now - *last, mid_round[static_cast<std::size_t>(peer.rank)],
                         options_.feedback_interval, window)) {
      ++senders;
    }
  }
  return senders;
}

void Engine::on_timers(TimePoint now) {
  if (now < next_timer_check_) return;
  next_timer_check_ = now + kTimerTick;
  std::optional<std::size_t> senders;  // counted once per tick, only when a report is due
  for (auto& peer : peers_) {
    if (peer.connected && peer.delivered.due(now, options_.feedback_interval)) {
      if (!senders) {
        senders = active_senders(now);
        counted_senders_ = *senders;
      }
      send_feedback(peer, *senders, now);
    }
  }
  if (now >= next_expiry_check_) {
    next_expiry_check_ = now + std::chrono::seconds(1);
    expire_early_arrivals(now);
  }
  // Pending handshakes that never completed.
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now - it->second.accepted > kHandshakeTimeout) {
      rejects_.add(wire::RejectReason::kHandshakeLimit);
      unwatch(it->second.control.fd());
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<IncomingMessage*> report;
  std::vector<IncomingMessage*> expired_in;
  for (auto& [key, message] : incoming_) {
    if (now >= message->deadline) {
      expired_in.push_back(message.get());
    } else if (message->report_pending &&
               now - message->last_packet >= options_.quiet_before_report) {
      report.push_back(message.get());
    }
  }
  for (auto* message : report) send_missing_report(*message);
  for (auto* message : expired_in) {
    const auto& tracker = message->tracker;
    std::string detail = tracker ? std::to_string(tracker->received_count()) + " of " +
                                       std::to_string(tracker->packet_count()) + " packets, " +
                                       std::to_string(tracker->protected_missing()) +
                                       " protected missing"
                                 : "no packets at all";
    fail_incoming(*message, ErrorCode::kDeadline,
                  "message " + std::to_string(message->key.id) + " from " +
                      describe_peer(message->key.peer) + " did not settle within " +
                      std::to_string(message->options.deadline.count()) + " ms (" + detail + ")",
                  true);
  }
  std::vector<OutgoingMessage*> expired_out;
  for (auto& [key, message] : outgoing_) {
    if (now >= message->deadline) expired_out.push_back(message.get());
  }
  for (auto* message : expired_out) {
    fail_outgoing(*message, ErrorCode::kDeadline,
                  "message " + std::to_string(message->key.id) + " to " +
                      describe_peer(message->key.peer) +
                      " was not settled by the receiver within " +
                      std::to_string(message->options.deadline.count()) + " ms (" +
                      std::to_string(message->stats.packets_sent) + " packets sent in " +
                      std::to_string(message->round + 1) + " rounds)");
  }
}

Duration Engine::next_wakeup(TimePoint now) {
  // Posted commands wake the loop through the eventfd, so they need no check here.
  Duration wait = std::chrono::milliseconds(50);
  if (!outgoing_.empty() || !incoming_.empty() || !pending_.empty()) wait = kTimerTick;
  const Duration blocked = send_blocked_until_ > now ? send_blocked_until_ - now : Duration::zero();
  for (const auto& [order, seq, message] : send_order_) {
    PeerState& peer = peers_[static_cast<std::size_t>(message->key.peer)];
    Duration pacing = peer.pacer->wait_for(peer.datagram_bytes, now);
    if (message->shared_band) {
      pacing = std::max(pacing, peer.shared_band_pacer->wait_for(peer.datagram_bytes, now));
    }
    wait = std::min(wait, std::max(blocked, pacing));
    if (wait == blocked) break;
  }
  return wait;
}

void Engine::loop() {
  std::vector<epoll_event> events(64);
  while (!stopping_.load(std::memory_order_relaxed)) {
    TimePoint now = SteadyClock::now();
    const Duration wait = next_wakeup(now);
    timespec timeout{static_cast<time_t>(wait.count() / 1'000'000'000),
                     static_cast<long>(wait.count() % 1'000'000'000)};
    const int n = ::epoll_pwait2(epoll_.get(), events.data(), static_cast<int>(events.size()),
                                 &timeout, nullptr);
    now = SteadyClock::now();
    try {
      for (int i = 0; i < n; ++i) {
        const std::uint64_t tag = events[static_cast<std::size_t>(i)].data.u64;
        const std::uint64_t index = tag & ~kTagMask;
        switch (tag & kTagMask) {
          case kTagWake: {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto r = ::read(wake_.get(), &count, sizeof(count));
            break;
          }
          case kTagListener:
            accept_connections(now);
            break;
          case kTagData:
            receive_on(index, now);
            break;
          case kTagControl:
            on_control_readable(static_cast<int>(index), now);
            break;
          case kTagPending:
            on_pending_readable(index, now);
            break;
          default:
            break;
        }
      }
      run_commands();
      if (stopping_.load()) break;  // shutting down: see ~Engine
      send_step(now);
      for (auto& peer : peers_) {
        if (!peer.connected) continue;
        if (!peer.control.healthy() || (peer.control.wants_write() && !peer.control.flush())) {
          // What the peer sent before it went away (its Abort, its Goodbye) names the real
          // cause better than the broken pipe does.
          const std::string error = peer.control.error();
          on_control_readable(peer.rank, now);
          fail_peer(peer, error);
        }
      }
      on_timers(now);
    } catch (const std::exception& e) {
      // An unexpected failure inside the loop must not leave callers waiting forever: fail every
      // peer with the cause.
      for (auto& peer : peers_) fail_peer(peer, std::string("transport I/O failed: ") + e.what());
    }
  }
}

TransportCounters Engine::counters() const {
  auto promise = std::make_shared<std::promise<TransportCounters>>();
  auto future = promise->get_future();
  post([this, promise] {
    TransportCounters snapshot = stats_;
    snapshot.rejected = rejects_.total();
    for (std::size_t i = 0; i < wire::kRejectReasonCount; ++i) {
      const auto reason = static_cast<wire::RejectReason>(i);
      if (rejects_.get(reason) > 0) {
        snapshot.rejected_by_reason.emplace_back(std::string(wire::to_string(reason)),
                                                 rejects_.get(reason));
      }
    }
    std::size_t backlog = 0;
    for (const auto& [key, early] : early_) backlog += early.datagrams.size();
    snapshot.backlog_packets = backlog;
    snapshot.backlog_bytes = early_bytes_;
    for (const auto& peer : peers_) {
      if (peer.pacer) {
        snapshot.send_rate_bytes_per_s =
            std::max(snapshot.send_rate_bytes_per_s, peer.pacer->rate());
      }
      if (peer.shared_band_pacer) {
        snapshot.shared_band_send_rate_bytes_per_s =
            std::max(snapshot.shared_band_send_rate_bytes_per_s, peer.shared_band_pacer->rate());
      }
      if (peer.rate) {
        snapshot.rate_reports += peer.rate->reports();
        snapshot.rate_reports_congested += peer.rate->congested_reports();
      }
    }
    snapshot.receive_rate_bytes_per_s = receive_rate_;
    timespec cpu{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    snapshot.io_thread_cpu_seconds =
        static_cast<double>(cpu.tv_sec) + static_cast<double>(cpu.tv_nsec) * 1e-9;
    promise->set_value(std::move(snapshot));
  });
  return future.get();
}

}  // namespace dlcp::transport

namespace dlcp {

std::unique_ptr<Transport> Transport::create(const TransportOptions& options) {
  return std::make_unique<transport::Engine>(options);
}

}  // namespace dlcp
