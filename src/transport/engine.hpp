// The socket engine: the driver of the protocol endpoint (protocol/endpoint.hpp) over real
// sockets. One I/O thread owns the endpoint, every socket and all connection state. User threads
// post commands (send, recv, connect, counters) through a queue and the poller's wake-up; the
// endpoint's completions come back as callbacks on the I/O thread (MessageCallback).
// Split by job: engine.cpp (lifecycle, commands, the loop, the endpoint's outputs),
// engine_connect.cpp (dialing, accepted peers, registering a peer), data_plane.cpp (data
// sockets), acceptor.cpp (the listening side of the handshake), poller.cpp (epoll), and for
// peers on this host local_path.cpp (messages through shared memory) and local_handoff.cpp
// (handing its segments over).
#pragma once

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/time.hpp"
#include "dlcp/transport.hpp"
#include "protocol/endpoint.hpp"
#include "transport/acceptor.hpp"
#include "transport/control_channel.hpp"
#include "transport/data_plane.hpp"
#include "transport/host_identity.hpp"
#include "transport/job_key.hpp"
#include "transport/link_rate.hpp"
#include "transport/local_handoff.hpp"
#include "transport/local_path.hpp"
#include "transport/poller.hpp"

namespace dlcp::transport {

// Per peer, across threads: set once by the I/O thread when its handshake completes.
struct PeerReadiness {
  std::vector<std::promise<void>> ready;
  std::vector<std::shared_future<void>> ready_future;
  std::vector<std::atomic<std::uint16_t>> stride;  // float32 values per packet on its path
  explicit PeerReadiness(std::size_t peers);
};

// The I/O thread's callbacks for open transfers and failure listeners.
struct CompletionTable {
  std::unordered_map<std::uint64_t, MessageCallback> transfers;
  std::uint64_t next_token = 1;
  std::vector<std::function<void(const Error&)>> failure_listeners;
};

class Engine final : public Transport {
 public:
  explicit Engine(const TransportOptions& options);
  ~Engine() override;

  using Transport::recv;
  using Transport::send;
  int rank() const override { return options_.rank; }
  std::uint16_t control_port() const override { return acceptor_->port(); }
  void connect(int peer, const std::string& host, std::uint16_t port) override;
  void send(int peer, std::uint64_t message_id, std::span<const float> values,
            const MessageOptions& options, std::span<const std::uint16_t> contributions,
            MessageCallback done) override;
  void recv(int peer, std::uint64_t message_id, std::span<float> values,
            const MessageOptions& options, std::span<std::uint16_t> contributions,
            MessageCallback done) override;
  TransportCounters counters() const override;
  std::uint16_t max_packet_floats(int peer) const override;
  std::optional<Error> failure() const override;
  void on_failure(std::function<void(const Error&)> listener) override;
  void abort(const std::string& why) override;

 private:
  // Commands from user threads, run on the I/O thread.
  void post(std::function<void()> command) const;
  // At exit, after the Goodbyes: waits until every peer closed its side or `deadline`.
  void linger_until_peers_finished(TimePoint deadline);
  void run_commands();
  void loop();
  void on_ready(std::uint64_t tag, TimePoint now);
  void send_step(TimePoint now);
  Duration next_wait(TimePoint now);
  // Carries out what the endpoint and the local path produced: control frames, lost peers,
  // completions.
  void deliver_outputs();
  void deliver(protocol::Completed& done);
  std::uint64_t remember(MessageCallback done);

  // Joining (engine_connect.cpp).
  wire::Hello our_hello() const;
  // `link`: the dialer's local link, complete; the listener's completes later (finish_local).
  void register_peer(int rank, ControlChannel control, const wire::Hello& hello,
                     std::span<const std::byte> transcript, std::optional<LocalLink> link);
  // Whether a peer's Hello puts it on this host with the local path on both sides.
  bool shares_host(const wire::Hello& hello) const;
  void link_local(int rank, LocalLink link, std::uint16_t stride);
  void finish_local(int rank);
  void mark_ready(int rank, std::uint16_t stride);
  void on_accepted(AcceptedPeer accepted);
  void on_control_readable(int rank, TimePoint now);
  void check_controls(TimePoint now);

  TransportOptions options_;
  std::uint32_t bind_ipv4_ = 0;
  JobKey job_key_;
  Poller poller_;
  DataPlane data_;
  std::unique_ptr<Acceptor> acceptor_;
  protocol::Endpoint endpoint_;
  // The local path (on when local_enabled_): its listener, messages, and per peer whether its
  // handshake is done (known_) and, on the listening side, its link waiting for the exchange.
  bool local_enabled_ = false;
  std::optional<HostIdentity> host_identity_;
  std::unique_ptr<LocalAcceptor> local_acceptor_;
  LocalPath local_;
  struct AwaitingLocal {
    LocalLink link;
    std::vector<std::byte> transcript;
    std::uint16_t stride = 0;
  };
  std::vector<std::optional<AwaitingLocal>> awaiting_local_;
  std::vector<std::uint8_t> known_;
  std::vector<protocol::Completed> local_done_;
  ReceiveRate receive_rate_;
  std::vector<ControlChannel> controls_;  // per peer, open while it is connected
  PeerReadiness readiness_;
  CompletionTable completions_;  // I/O thread
  protocol::EndpointOutputs outputs_;
  protocol::Burst burst_;
  TimePoint send_blocked_until_{};  // after the kernel refused a whole burst
  std::uint64_t control_rto_min_us_ = 0;
  struct {
    mutable std::mutex mutex;
    std::optional<Error> error;  // guarded by mutex
  } first_failure_;
  mutable std::mutex commands_mutex_;
  mutable std::vector<std::function<void()>> commands_;
  std::atomic<bool> stopping_{false};
  std::thread io_thread_;
};

}  // namespace dlcp::transport
