// The engine's lifecycle, commands, loop and the endpoint's outputs.
#include "transport/engine.hpp"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cstdio>

#include "common/net.hpp"
#include "switch/switch_plan.hpp"
#include "wire/values.hpp"

namespace dlcp::transport {
namespace {

constexpr int kBurstsPerStep = 4;
constexpr Duration kSendBackoff = std::chrono::microseconds(50);
// The longest the loop sleeps: how late pending handshakes expire, at most.
constexpr Duration kIdleWait = std::chrono::milliseconds(50);
// While a control connection has bytes the kernel did not take yet, retry this often.
constexpr Duration kControlRetry = std::chrono::milliseconds(1);
// How long an exiting engine waits for its peers to close their sides of the control connections
// after its Goodbye (ControlChannel::peer_finished): a round trip on any path dlcp runs on, and
// only a peer that is stuck makes it wait that long.
constexpr Duration kGoodbyeLinger = std::chrono::seconds(2);

protocol::EndpointOptions endpoint_options(const TransportOptions& options) {
  protocol::EndpointOptions e;
  e.rank = options.rank;
  e.world_size = options.world_size;
  e.job_token = options.job_token;
  e.policy = options.policy;
  e.rate = options.rate;
  e.feedback_interval = options.feedback_interval;
  e.quiet_before_report = options.quiet_before_report;
  e.parity_members = static_cast<std::uint8_t>(options.parity_members);
  e.backlog_bytes = options.backlog_bytes;
  e.early_arrival_ttl = options.early_arrival_ttl;
  e.burst_packets = static_cast<std::size_t>(options.batch);
  e.trailer_bytes = options.packet_mac ? wire::kMacTrailerBytes : 0;
  e.shared_band_dscps = switchconf::shares_best_effort_class(
      switchconf::make_switch_plan(options.policy.dscp, switchconf::PortOptions{}));
  return e;
}

TransportOptions validated(const TransportOptions& options) {
  options.validate();
  return options;
}

std::vector<std::uint32_t> socket_addresses(const DataPlane& data) {
  std::vector<std::uint32_t> addresses;
  for (const auto& socket : data.sockets()) addresses.push_back(socket.ipv4());
  return addresses;
}

}  // namespace

PeerReadiness::PeerReadiness(std::size_t peers) : ready(peers), ready_future(peers), stride(peers) {
  for (std::size_t r = 0; r < peers; ++r) ready_future[r] = ready[r].get_future().share();
}

Engine::Engine(const TransportOptions& options)
    : options_(validated(options)),
      bind_ipv4_(net::resolve_ipv4(options_.bind_host)),
      job_key_(options_.job_secret, options_.job_token),
      data_(options_, bind_ipv4_),
      endpoint_(endpoint_options(options_)),
      local_(options_.world_size),
      awaiting_local_(static_cast<std::size_t>(options_.world_size)),
      known_(static_cast<std::size_t>(options_.world_size)),
      receive_rate_(options_.rate.receive_rate, options_.rate.max_rate, socket_addresses(data_)),
      controls_(static_cast<std::size_t>(options_.world_size)),
      readiness_(static_cast<std::size_t>(options_.world_size)) {
  acceptor_ = std::make_unique<Acceptor>(
      options_, bind_ipv4_, job_key_, poller_, [this] { return our_hello(); },
      [this](int rank) { return known_[static_cast<std::size_t>(rank)] != 0; });
  // Injected loss is a diagnostic of the UDP path: with it on, every peer stays on UDP.
  if (options_.local_path && !options_.inject.enabled()) host_identity_ = read_host_identity();
  if (host_identity_) {
    local_enabled_ = true;
    local_acceptor_ = std::make_unique<LocalAcceptor>(
        job_key_, poller_, [this](int rank, std::vector<std::byte>& transcript) -> LocalLink* {
          if (rank < 0 || rank >= options_.world_size) return nullptr;
          auto& awaiting = awaiting_local_[static_cast<std::size_t>(rank)];
          if (!awaiting) return nullptr;
          transcript = awaiting->transcript;
          return &awaiting->link;
        });
  }
  endpoint_.set_receive_rate(receive_rate_.bytes_per_s());
  if (!data_.gso()) endpoint_.disable_runs();
  for (std::size_t k = 0; k < data_.sockets().size(); ++k) {
    poller_.watch(data_.sockets()[k].fd(), epoll_tag::kData | k);
  }
  io_thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  // An orderly exit: peers that no longer need us must not count our closing as a failure.
  {
    auto done = std::make_shared<std::promise<void>>();
    auto said = done->get_future();
    post([this, done] {
      // Records still queued for the rings (a last Settled) go before the Goodbye.
      local_.pump(SteadyClock::now());
      endpoint_.say_goodbye();
      deliver_outputs();
      for (auto& control : controls_) {
        if (!control.open()) continue;
        control.flush();
        control.finish();
      }
      // Nothing may be sent on the finished connections: the loop ends here.
      stopping_.store(true);
      done->set_value();
    });
    said.wait_for(std::chrono::seconds(1));
  }
  stopping_.store(true);
  poller_.wake();
  if (io_thread_.joinable()) io_thread_.join();
  linger_until_peers_finished(SteadyClock::now() + kGoodbyeLinger);
  // What is still open, and commands posted after the loop's last pass, fail with kAborted.
  for (auto& control : controls_) control.close();
  endpoint_.shut_down("transport shut down");
  local_.shut_down("transport shut down");
  run_commands();
  deliver_outputs();
}

void Engine::linger_until_peers_finished(TimePoint deadline) {
  for (;;) {
    std::vector<pollfd> waiting;
    for (auto& control : controls_) {
      if (!control.peer_finished()) waiting.push_back({control.fd(), POLLIN, 0});
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (waiting.empty() || left.count() <= 0) return;
    ::poll(waiting.data(), waiting.size(), static_cast<int>(left.count()));
  }
}

void Engine::post(std::function<void()> command) const {
  {
    std::lock_guard lock(commands_mutex_);
    commands_.push_back(std::move(command));
  }
  poller_.wake();
}

void Engine::run_commands() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(commands_mutex_);
    batch.swap(commands_);
  }
  for (auto& command : batch) {
    command();
    deliver_outputs();
  }
}

std::uint64_t Engine::remember(MessageCallback done) {
  const std::uint64_t token = completions_.next_token++;
  completions_.transfers.emplace(token, std::move(done));
  return token;
}

void Engine::send(int peer, std::uint64_t message_id, std::span<const float> values,
                  const MessageOptions& options, std::span<const std::uint16_t> contributions,
                  MessageCallback done) {
  protocol::SendRequest request;
  request.key = {peer, message_id};
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options = options;
  request.contributions = contributions;
  const std::uint16_t stride = peer >= 0 && peer < options_.world_size
                                   ? readiness_.stride[static_cast<std::size_t>(peer)].load()
                                   : std::uint16_t{0};
  protocol::check_request(peer, options_.rank, options_.world_size, values.size(), options);
  protocol::check_send(request, options_.world_size, stride);
  const std::uint16_t packet_floats = options.packet_floats != 0
                                          ? options.packet_floats
                                          : wire::packet_values(options.wire, stride);
  auto holder = std::make_shared<protocol::SendRequest>(std::move(request));
  post([this, holder, packet_floats, done = std::move(done)]() mutable {
    holder->token = remember(std::move(done));
    if (local_.linked(holder->key.peer)) {
      local_.post_send(std::move(*holder), packet_floats, SteadyClock::now());
    } else {
      endpoint_.post_send(std::move(*holder), SteadyClock::now());
    }
  });
}

void Engine::recv(int peer, std::uint64_t message_id, std::span<float> values,
                  const MessageOptions& options, std::span<std::uint16_t> contributions,
                  MessageCallback done) {
  protocol::check_request(peer, options_.rank, options_.world_size, values.size(), options);
  protocol::ReceiveRequest request;
  request.key = {peer, message_id};
  request.values = values;
  request.total_floats = static_cast<std::uint32_t>(values.size());
  request.options = options;
  request.contributions = contributions;
  auto holder = std::make_shared<protocol::ReceiveRequest>(std::move(request));
  post([this, holder, done = std::move(done)]() mutable {
    holder->token = remember(std::move(done));
    const auto rank = static_cast<std::size_t>(holder->key.peer);
    // Until its handshake says which path a peer takes, its receives wait on the local path.
    const TimePoint now = SteadyClock::now();
    if (local_.linked(holder->key.peer)) {
      if (const auto refused = endpoint_.join_group_lossless(holder->key, holder->options,
                                                             holder->total_floats, now)) {
        protocol::Completed failed{holder->token,
                                   false,
                                   {},
                                   Error(ErrorCode::kInvalidArgument, holder->key.peer, *refused)};
        deliver(failed);
        return;
      }
      local_.post_receive(std::move(*holder), now);
    } else if (local_enabled_ && (known_[rank] == 0 || awaiting_local_[rank])) {
      // Parked: it joins its budget group once the path is known (link_local or take_parked).
      local_.post_receive(std::move(*holder), now);
    } else {
      endpoint_.post_receive(std::move(*holder), now);
    }
  });
}

void Engine::deliver(protocol::Completed& done) {
  const auto it = completions_.transfers.find(done.token);
  if (it == completions_.transfers.end()) return;
  MessageCallback callback = std::move(it->second);
  completions_.transfers.erase(it);
  MessageOutcome outcome;
  if (done.error) {
    outcome.error = std::make_exception_ptr(*done.error);
  } else {
    outcome.result = std::move(done.result);
  }
  try {
    callback(std::move(outcome));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlcp: a transfer's completion callback threw: %s\n", e.what());
  }
}

void Engine::deliver_outputs() {
  if (local_.has_completions()) {
    local_.take_completions(local_done_);
    for (auto& done : local_done_) deliver(done);
    local_done_.clear();
  }
  if (!endpoint_.has_outputs()) return;
  endpoint_.take_outputs(outputs_);
  for (auto& control : outputs_.control) {
    ControlChannel& channel = controls_[static_cast<std::size_t>(control.peer)];
    if (channel.open()) channel.send(control.message);
  }
  for (const auto& lost : outputs_.lost_peers) {
    ControlChannel& channel = controls_[static_cast<std::size_t>(lost.peer)];
    if (channel.open()) {
      poller_.unwatch(channel.fd());
      channel.close();
    }
    // The control connection tells of a local peer's death as of any other.
    if (local_.linked(lost.peer)) poller_.unwatch(local_.wake_fd(lost.peer));
    local_.fail_peer(lost.peer, lost.error, SteadyClock::now());
    if (auto& awaiting = awaiting_local_[static_cast<std::size_t>(lost.peer)]) {
      // Lost before its local link completed: connect() says why instead of timing out.
      awaiting.reset();
      readiness_.ready[static_cast<std::size_t>(lost.peer)].set_exception(
          std::make_exception_ptr(lost.error));
    }
    if (!lost.job_failure) continue;
    bool first = false;
    {
      std::lock_guard lock(first_failure_.mutex);
      if (!first_failure_.error) {
        first_failure_.error = lost.error;
        first = true;
      }
    }
    if (first) {
      for (auto& listener : completions_.failure_listeners) listener(lost.error);
      completions_.failure_listeners.clear();
    }
  }
  for (auto& done : outputs_.completions) deliver(done);
  outputs_.clear();
  // Failing a peer's local messages may have completed some.
  if (local_.has_completions()) deliver_outputs();
}

std::uint16_t Engine::max_packet_floats(int peer) const {
  if (peer < 0 || peer >= options_.world_size) return 0;
  return readiness_.stride[static_cast<std::size_t>(peer)].load();
}

std::optional<Error> Engine::failure() const {
  std::lock_guard lock(first_failure_.mutex);
  return first_failure_.error;
}

void Engine::on_failure(std::function<void(const Error&)> listener) {
  if (const auto failed = failure()) {
    listener(*failed);
    return;
  }
  post([this, listener = std::move(listener)]() mutable {
    if (const auto failed = failure()) {
      listener(*failed);
    } else {
      completions_.failure_listeners.push_back(std::move(listener));
    }
  });
}

void Engine::abort(const std::string& why) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  post([this, why, done] {
    endpoint_.abort(why, SteadyClock::now());
    local_.abort(why);
    deliver_outputs();
    for (auto& control : controls_) {
      if (control.open()) control.flush();
    }
    done->set_value();
  });
  finished.wait();
}

void Engine::send_step(TimePoint now) {
  if (now < send_blocked_until_) return;
  for (int burst = 0; burst < kBurstsPerStep; ++burst) {
    if (!endpoint_.next_burst(now, burst_)) return;
    const std::size_t sent = data_.send(burst_);
    endpoint_.burst_sent(burst_, now);
    if (!data_.gso()) endpoint_.disable_runs();
    deliver_outputs();
    if (sent == 0) {
      // The kernel's buffers are full (EAGAIN/ENOBUFS): back off briefly instead of spinning,
      // which on a small machine would take the CPU the receiving side needs to drain them.
      send_blocked_until_ = now + kSendBackoff;
      return;
    }
  }
}

Duration Engine::next_wait(TimePoint now) {
  TimePoint wake = std::min(now + kIdleWait, endpoint_.next_timeout(now));
  if (const auto local = local_.next_timeout()) wake = std::min(wake, *local);
  if (const auto send = endpoint_.next_send(now)) {
    wake = std::min(wake, std::max(*send, send_blocked_until_));
  }
  for (const auto& control : controls_) {
    if (control.open() && control.wants_write()) wake = std::min(wake, now + kControlRetry);
  }
  return wake - now;
}

void Engine::on_ready(std::uint64_t tag, TimePoint now) {
  const std::uint64_t index = tag & ~epoll_tag::kMask;
  switch (tag & epoll_tag::kMask) {
    case epoll_tag::kListener:
      acceptor_->accept(now);
      break;
    case epoll_tag::kData:
      data_.receive(index, endpoint_, now);
      break;
    case epoll_tag::kControl:
      on_control_readable(static_cast<int>(index), now);
      break;
    case epoll_tag::kPending:
      if (auto accepted = acceptor_->on_readable(index)) on_accepted(std::move(*accepted));
      break;
    case epoll_tag::kLocalListener:
      local_acceptor_->accept(now);
      break;
    case epoll_tag::kLocalPending:
      if (const auto rank = local_acceptor_->on_readable(index)) finish_local(*rank);
      break;
    case epoll_tag::kLocalWake:
      if (local_.linked(static_cast<int>(index)))
        drain_wake_fd(local_.wake_fd(static_cast<int>(index)));
      break;
    default:
      break;
  }
  deliver_outputs();
}

void Engine::loop() {
  while (!stopping_.load(std::memory_order_relaxed)) {
    const auto ready = poller_.wait(next_wait(SteadyClock::now()));
    const TimePoint now = SteadyClock::now();
    try {
      for (const std::uint64_t tag : ready) on_ready(tag, now);
      run_commands();
      if (stopping_.load()) break;  // shutting down: see ~Engine
      send_step(now);
      local_.pump(now);
      for (const Error& broken : local_.take_broken_peers()) {
        endpoint_.on_peer_lost(broken.peer(), broken.what(), ErrorCode::kProtocol, now);
      }
      if (const auto local = local_.next_timeout(); local && now >= *local) local_.on_timeout(now);
      check_controls(now);
      acceptor_->expire(now);
      if (local_acceptor_) local_acceptor_->expire(now);
      if (now >= endpoint_.next_timeout(now)) endpoint_.on_timeout(now);
      deliver_outputs();
    } catch (const std::exception& e) {
      // An unexpected failure inside the loop must not leave callers waiting forever: fail every
      // peer with the cause.
      for (int rank = 0; rank < options_.world_size; ++rank) {
        endpoint_.on_peer_lost(rank, std::string("transport I/O failed: ") + e.what(),
                               ErrorCode::kPeerLost, now);
      }
      deliver_outputs();
    }
  }
}

TransportCounters Engine::counters() const {
  auto promise = std::make_shared<std::promise<TransportCounters>>();
  auto future = promise->get_future();
  post([this, promise] {
    TransportCounters snapshot;
    endpoint_.add_counters(snapshot);
    data_.add_counters(snapshot);
    wire::RejectCounters rejects;
    rejects += endpoint_.rejects();
    rejects += data_.rejects();
    rejects += acceptor_->rejects();
    if (local_acceptor_) rejects += local_acceptor_->rejects();
    local_.add_counters(snapshot);
    snapshot.rejected = rejects.total();
    for (std::size_t i = 0; i < wire::kRejectReasonCount; ++i) {
      const auto reason = static_cast<wire::RejectReason>(i);
      if (rejects.get(reason) > 0) {
        snapshot.rejected_by_reason.emplace_back(std::string(wire::to_string(reason)),
                                                 rejects.get(reason));
      }
    }
    snapshot.control_rto_min_us = control_rto_min_us_;
    for (const ControlChannel& control : controls_) {
      const ControlTcpStats tcp = control.tcp_stats();
      snapshot.control_retransmits += tcp.retransmits;
      snapshot.control_rto_max_us = std::max(snapshot.control_rto_max_us, tcp.rto_us);
    }
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
