#include "transport/engine.hpp"

#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "common/net.hpp"
#include "switch/switch_plan.hpp"
#include "transport/link_rate.hpp"

namespace dlcp::transport {

Engine::Engine(const TransportOptions& options)
    : options_(options),
      peers_(static_cast<std::size_t>(std::max(options.world_size, 0))),
      peer_ready_(peers_.size()),
      peer_ready_future_(peers_.size()),
      peer_stride_(peers_.size()),
      early_({options.backlog_bytes, kMaxEarlyMessages, options.early_arrival_ttl}) {
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
  watch(wake_.get(), epoll_tag::kWake, EPOLLIN);
  watch(listener_.get(), epoll_tag::kListener, EPOLLIN);
  for (std::size_t k = 0; k < sockets_.size(); ++k)
    watch(sockets_[k].fd(), epoll_tag::kData | k, EPOLLIN);
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
    const TimePoint last = message->receiver->last_packet();
    if (key.peer == except_peer || now - last < kStalled) continue;
    if (oldest == nullptr || last < oldest->receiver->last_packet()) oldest = message.get();
  }
  if (oldest == nullptr) return {};
  const auto waited =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - oldest->receiver->last_packet())
          .count();
  const auto* tracker = oldest->receiver->tracker();
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
        const std::uint64_t index = tag & ~epoll_tag::kMask;
        switch (tag & epoll_tag::kMask) {
          case epoll_tag::kWake: {
            std::uint64_t count = 0;
            [[maybe_unused]] const auto r = ::read(wake_.get(), &count, sizeof(count));
            break;
          }
          case epoll_tag::kListener:
            accept_connections(now);
            break;
          case epoll_tag::kData:
            receive_on(index, now);
            break;
          case epoll_tag::kControl:
            on_control_readable(static_cast<int>(index), now);
            break;
          case epoll_tag::kPending:
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
    snapshot.backlog_packets = early_.datagrams();
    snapshot.backlog_bytes = early_.datagram_bytes();
    for (const auto& peer : peers_) {
      if (!peer.pacing) continue;
      snapshot.send_rate_bytes_per_s =
          std::max(snapshot.send_rate_bytes_per_s, peer.pacing->rate());
      snapshot.shared_band_send_rate_bytes_per_s =
          std::max(snapshot.shared_band_send_rate_bytes_per_s, peer.pacing->shared_band_rate());
      snapshot.rate_reports += peer.pacing->reports();
      snapshot.rate_reports_congested += peer.pacing->congested_reports();
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
