// The transport engine: the driver of the protocol core (src/protocol/) over real sockets. One
// I/O thread per endpoint owns every socket and all message state. User threads post commands
// (send, recv, connect, counters) through a queue and an eventfd; futures carry the results back.
// Split by job: engine.cpp (lifecycle, commands, control messages, failures, the loop),
// engine_connect.cpp (dialing, accepting, the handshake), engine_timers.cpp (rate reports,
// deadlines, reports), engine_send.cpp (packets of each message's MessageSender onto the wire:
// priority queue, pacing, spraying, GSO), engine_receive.cpp (datagrams into each message's
// MessageReceiver: validation, placement, settlement, budget groups, early-arrival backlog).
#pragma once

#include <netinet/in.h>
#include <sys/epoll.h>

#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/fd.hpp"
#include "common/time.hpp"
#include "dlcp/transport.hpp"
#include "protocol/budget_groups.hpp"
#include "protocol/delivery_meter.hpp"
#include "protocol/early_arrivals.hpp"
#include "protocol/message_key.hpp"
#include "protocol/message_receiver.hpp"
#include "protocol/message_sender.hpp"
#include "protocol/path_selector.hpp"
#include "protocol/peer_pacing.hpp"
#include "protocol/send_queue.hpp"
#include "protocol/settled_messages.hpp"
#include "protocol/timer_queue.hpp"
#include "transport/control_channel.hpp"
#include "transport/data_socket.hpp"
#include "transport/job_key.hpp"
#include "transport/loss_injector.hpp"
#include "transport/replay_window.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"

namespace dlcp::transport {

using protocol::MessageKey;
using protocol::MessageKeyHash;

// epoll tags: the top byte says what kind of descriptor, the rest which one.
namespace epoll_tag {
inline constexpr std::uint64_t kShift = 56;
inline constexpr std::uint64_t kWake = 1ull << kShift;
inline constexpr std::uint64_t kListener = 2ull << kShift;
inline constexpr std::uint64_t kData = 3ull << kShift;
inline constexpr std::uint64_t kControl = 4ull << kShift;
inline constexpr std::uint64_t kPending = 5ull << kShift;
inline constexpr std::uint64_t kMask = 0xFFull << kShift;
}  // namespace epoll_tag

inline constexpr std::size_t kMaxDatagram = 65507;  // largest UDP payload over IPv4
inline constexpr Duration kHandshakeTimeout = std::chrono::seconds(10);
// Settled message ids remembered, so that their late packets are refused as stale.
inline constexpr std::size_t kSettledMemory = 1 << 16;
// Receives not posted yet that the backlog holds arrivals for.
inline constexpr std::size_t kMaxEarlyMessages = 1 << 16;
// How often the loop wakes while anything is open: rate reports are due per feedback interval.
inline constexpr Duration kTimerTick = std::chrono::milliseconds(1);

struct OutgoingMessage {
  MessageKey key;
  std::span<const float> values;
  MessageOptions options;
  int priority_class = 0;
  std::uint8_t protected_tos = 0;  // policy::data_tos of the class, per precedence
  std::uint8_t drop_eligible_tos = 0;
  // Paced by its peer's shared-band pacer as well (RateControlOptions::shared_band_pacing).
  bool shared_band = false;
  std::uint32_t budget_ppm = 0;
  std::optional<protocol::MessageSender> sender;
  std::uint64_t order = 0;  // its place in the send queue within its priority class
  TimePoint posted{};
  TimePoint deadline{};
  MessageStats stats;
  std::promise<MessageResult> promise;
};

struct IncomingMessage {
  MessageKey key;
  std::span<float> values;
  MessageOptions options;
  std::optional<protocol::MessageReceiver> receiver;
  TimePoint posted{};
  TimePoint deadline{};
  MessageStats stats;
  std::promise<MessageResult> promise;
  // What this receive adds to its budget group's allowed entries (its own budget, once known).
  std::uint64_t group_allowed = 0;
};

// The engine's timers, on protocol::TimerQueue: checked against the message when they fire.
struct MessageTimer {
  enum class Kind : std::uint8_t { kReceiveDeadline, kReport, kSendDeadline };
  MessageKey key;
  Kind kind = Kind::kReceiveDeadline;
};

struct PeerState {
  int rank = -1;
  bool connected = false;
  bool joined = false;        // completed a handshake once: a second one is refused
  std::string failure;        // non-empty once the peer is lost
  bool said_goodbye = false;  // shut down in order: its closing is not a job failure
  std::string address;        // control address, for messages
  ControlChannel control;
  std::vector<sockaddr_in> data_addresses;
  std::size_t datagram_bytes = 0;
  std::optional<protocol::PeerPacing> pacing;
  std::optional<protocol::PathSelector> paths;
  std::vector<std::uint64_t> path_sent;  // since the last feedback from this peer
  // Packet MAC (TransportOptions::packet_mac): keys of this connection, per direction.
  std::optional<PacketMac> mac_send;
  std::optional<PacketMac> mac_receive;
  std::uint64_t mac_counter = 0;  // next counter to send
  std::uint16_t pair_seq = 0;     // next DataHeader::pair_seq to send (wraps)
  std::optional<ReplayWindow> replay;
  // Receive side: what this peer sent us since our last feedback to it.
  protocol::DeliveryMeter delivered;
};

// An accepted control connection still in its handshake (see handshake.hpp): waiting for the
// dialer's Hello, then for its proof.
struct PendingConnection {
  ControlChannel control;
  TimePoint accepted{};
  std::optional<wire::Hello> dialer_hello;
  std::vector<std::byte> transcript;  // once our Hello is sent
};

class Engine final : public Transport {
 public:
  explicit Engine(const TransportOptions& options);
  ~Engine() override;

  int rank() const override { return options_.rank; }
  std::uint16_t control_port() const override { return control_port_; }
  void connect(int peer, const std::string& host, std::uint16_t port) override;
  std::future<MessageResult> send(int peer, std::uint64_t message_id, std::span<const float> values,
                                  const MessageOptions& options) override;
  std::future<MessageResult> recv(int peer, std::uint64_t message_id, std::span<float> values,
                                  const MessageOptions& options) override;
  TransportCounters counters() const override;
  std::uint16_t max_packet_floats(int peer) const override;
  std::optional<Error> failure() const override;
  void abort(const std::string& why) override;

 private:
  // Commands from user threads, run on the I/O thread.
  void post(std::function<void()> command) const;
  void run_commands();
  void loop();

  // Lifecycle and control (engine.cpp).
  wire::Hello our_hello() const;
  void learn_receive_links(const PeerState& peer);
  // TransportOptions::control_rto_min on a control connection, where the kernel supports it.
  void set_control_rto_min(int fd);
  void register_peer(int rank, ControlChannel control, const wire::Hello& hello, int fd_for_address,
                     std::span<const std::byte> transcript);
  void accept_connections(TimePoint now);
  void on_pending_readable(std::uint64_t id, TimePoint now);
  // The handshake steps of a pending connection; false when it must be dropped (counted).
  bool on_dialer_hello(PendingConnection& pending, const wire::ControlMessage& message);
  bool on_dialer_proof(PendingConnection& pending, const wire::ControlMessage& message);
  void on_control_readable(int peer, TimePoint now);
  void on_control_message(PeerState& peer, wire::ControlMessage& message, TimePoint now);
  void fail_peer(PeerState& peer, const std::string& why, ErrorCode code = ErrorCode::kPeerLost);
  void on_timers(TimePoint now);
  void on_message_timer(const MessageTimer& timer, TimePoint now);
  // A rate report to `peer`, offering it an equal share of this host's receive rate.
  void send_feedback(PeerState& peer, std::size_t active_senders, TimePoint now);
  // Peers that sent us data within the last feedback interval.
  std::size_t active_senders(TimePoint now) const;
  void watch(int fd, std::uint64_t tag, std::uint32_t events);
  void unwatch(int fd);
  Duration next_wakeup(TimePoint now);
  std::string describe_peer(int peer) const;
  // When a peer aborts the job because of us, the root cause may lie further on: what this rank
  // was itself waiting for longest (a receive from another peer without a packet for a while),
  // or an empty string.
  std::string own_stall_note(int except_peer, TimePoint now) const;

  // Sending (engine_send.cpp).
  void start_send(std::unique_ptr<OutgoingMessage> message, TimePoint now);
  void send_step(TimePoint now);
  // Sends one burst of `message` within its peer's pacing budget; returns the bytes sent.
  std::uint64_t send_burst(OutgoingMessage& message, TimePoint now);
  // The bytes `message`'s pacers allow now: its peer's, and the shared band's if it passes that.
  std::uint64_t pacing_budget(const OutgoingMessage& message, TimePoint now);
  void enqueue(OutgoingMessage& message);
  void dequeue(OutgoingMessage& message);
  void on_missing_ranges(PeerState& peer, const wire::MissingRanges& missing);
  void on_stop(PeerState& peer, const wire::Stop& stop, TimePoint now);
  void on_rate_feedback(PeerState& peer, const wire::RateFeedback& feedback, TimePoint now);
  void fail_outgoing(OutgoingMessage& message, ErrorCode code, const std::string& why);

  // Receiving (engine_receive.cpp).
  void start_recv(std::unique_ptr<IncomingMessage> message, TimePoint now);
  void receive_on(std::size_t socket_index, TimePoint now);
  void receive_direct(std::size_t socket_index, TimePoint now);
  // Packet MAC and anti-replay of a decoded datagram (header, payload and trailer bytes);
  // false when refused (counted).
  bool authenticate(const wire::DataHeader& header, std::span<const std::byte> datagram);
  // Accounting shared by both receive paths for a decoded, accepted datagram.
  bool admit(const wire::DataHeader& header, std::size_t bytes, std::uint8_t tos,
             std::size_t socket_index, TimePoint now);
  // Whether a packet's or FlowStart's stated shape fits the posted receive (and its counts).
  bool accept_shape(IncomingMessage& message, std::uint32_t total, std::uint16_t stride);
  // Where a packet's payload goes, or empty (counted) when it must not be placed.
  std::span<float> placement(IncomingMessage& message, const wire::DataHeader& header);
  void commit(IncomingMessage& message, const wire::DataHeader& header, TimePoint now);
  // For a packet of a receive not posted yet: whether the backlog may take it (a refusal is
  // counted as stale_message or unknown_message).
  bool may_hold_early(const MessageKey& key, std::size_t bytes);
  void on_datagram(std::span<const std::byte> bytes, std::uint8_t tos, std::size_t socket_index,
                   TimePoint now);
  void deliver(IncomingMessage& message, const wire::DataHeader& header,
               std::span<const std::byte> payload, TimePoint now);
  void on_flow_start(PeerState& peer, const wire::FlowStart& flow, TimePoint now);
  void apply_flow(IncomingMessage& message, const wire::FlowStart& flow, TimePoint now);
  void on_round_finished(PeerState& peer, const wire::RoundFinished& finished, TimePoint now);
  // Settles `message` when its own budget, or its group's, allows.
  void maybe_settle(IncomingMessage& message, TimePoint now);
  void settle(IncomingMessage& message, protocol::Settlement settlement, bool by_group,
              TimePoint now);
  // Settles every open member of group `id` that holds all its protected packets, when the
  // group's missing entries are within its budget.
  void settle_group(std::uint64_t id, TimePoint now);
  // A receive ended (settled or failed): out of its budget group and the open receives.
  void end_incoming(IncomingMessage& message);
  // The entries a budget group's other members leave unspent, which `message` may miss beyond
  // its own budget (0 outside a group, or before every member is posted).
  std::uint64_t group_slack(const IncomingMessage& message) const;
  // Counts a receive that ended (settled or failed at its deadline) in stats_.
  void count_settlement(const MessageStats& stats);
  void send_missing_report(IncomingMessage& message, TimePoint now);
  void fail_incoming(IncomingMessage& message, ErrorCode code, const std::string& why,
                     bool tell_sender);

  TransportOptions options_;
  std::uint32_t bind_ipv4_ = 0;
  // What this host offers its senders in total: receive_rate, else the bound links' speed, else
  // max_rate (see transport/link_rate.hpp).
  double receive_rate_ = 0;
  // A wildcard bind with receive_rate left at 0: the links are those the routes to the peers go
  // through, learnt as each joins (learn_receive_links).
  bool receive_links_by_route_ = false;
  std::set<std::string> receive_links_;
  bool receive_link_unknown_ = false;  // a peer with no route, or through no known interface
  std::size_t counted_senders_ = 0;    // at the last count: the share the offers in force give
  std::uint16_t control_port_ = 0;
  Fd listener_;
  Fd epoll_;
  Fd wake_;
  std::vector<DataSocket> sockets_;
  std::vector<std::uint8_t> direct_receive_;  // per socket: large datagrams, placed without a copy
  std::optional<LossInjector> injector_;
  std::optional<JobKey> job_key_;
  wire::DataExpectations expectations_;
  // Per DSCP: queued in best effort's class under the default switch plan (shared_band_pacing).
  std::array<bool, 64> shared_band_dscps_{};
  std::size_t trailer_bytes_ = 0;  // after every data payload: the MAC trailer, if any

  std::vector<PeerState> peers_;
  // Set once per peer by the I/O thread when its handshake completes; read by connect().
  std::vector<std::promise<void>> peer_ready_;
  std::vector<std::shared_future<void>> peer_ready_future_;
  std::vector<std::atomic<std::uint16_t>> peer_stride_;

  std::unordered_map<std::uint64_t, PendingConnection> pending_;
  std::uint64_t next_pending_id_ = 0;

  std::unordered_map<MessageKey, std::unique_ptr<OutgoingMessage>, MessageKeyHash> outgoing_;
  protocol::SendQueue<OutgoingMessage> send_queue_;
  std::unordered_map<MessageKey, std::unique_ptr<IncomingMessage>, MessageKeyHash> incoming_;
  protocol::EarlyArrivalBacklog early_;
  protocol::BudgetGroups groups_;
  protocol::SettledMessages settled_{kSettledMemory};
  TimePoint next_expiry_check_{};

  // Send scratch reused for every burst.
  std::vector<std::byte> header_scratch_;
  std::vector<std::byte> trailer_scratch_;
  std::vector<std::byte> payload_scratch_;  // 16-bit payloads of the burst, one slot per packet
  std::vector<std::byte> direct_scratch_ = std::vector<std::byte>(65536);  // a 16-bit payload
  std::size_t iov_per_packet_ = 2;  // header, payload (, trailer)
  std::vector<std::vector<OutgoingDatagram>> per_socket_;
  std::vector<std::uint32_t> burst_;
  std::vector<iovec> iov_scratch_;
  // Per socket, for each sendmmsg entry: its burst_ index range [first, first + count) and path.
  struct SendGroup {
    std::size_t first = 0;
    std::size_t count = 0;
    std::size_t path = 0;
  };
  std::vector<std::vector<SendGroup>> per_socket_groups_;

  TransportCounters stats_;
  wire::RejectCounters rejects_;
  TimePoint next_timer_check_{};
  protocol::TimerQueue<MessageTimer> timers_;
  TimePoint send_blocked_until_{};  // after the kernel refused a whole burst

  mutable std::mutex failure_mutex_;
  std::optional<Error> first_failure_;  // guarded by failure_mutex_
  std::string aborted_;                 // I/O thread: why abort() was called, empty if not

  mutable std::mutex commands_mutex_;
  mutable std::vector<std::function<void()>> commands_;
  std::atomic<bool> stopping_{false};
  std::thread io_thread_;
};

}  // namespace dlcp::transport
