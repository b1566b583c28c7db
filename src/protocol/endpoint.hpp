// The protocol endpoint of one host: every message table and every protocol decision, with no
// I/O, no threads and no clock of its own (the shape of a QUIC connection object).
//
// A driver feeds it what happens (posted sends and receives, decoded data packets, control
// frames, peers that join or are lost, `now`) and carries out what comes back: bursts of data
// packets with their path and codepoint (next_burst), control frames, completions, lost peers
// (take_outputs), and when to call again (next_timeout, next_send). The socket engine
// (src/transport/) and the simulator (sim/) are two such drivers; the wire bytes, sockets, the
// handshake, packet MACs and injected test loss stay with them.
//
// Split by job: endpoint.cpp (peers, control dispatch, failures, lifecycle, counters),
// endpoint_send.cpp (posting, bursts, the sender's side of rounds, rate reports),
// endpoint_receive.cpp (posting, placement, settlement, budget groups, the early-arrival backlog),
// endpoint_timers.cpp (deadlines, missing-range reports, rate reports, when to wake).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/time.hpp"
#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
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
#include "wire/control.hpp"
#include "wire/data_header.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::protocol {

struct EndpointOptions {
  int rank = 0;
  int world_size = 2;
  std::uint64_t job_token = 0;
  PolicyOptions policy;
  RateControlOptions rate;
  Duration feedback_interval = std::chrono::microseconds(2000);
  Duration quiet_before_report = std::chrono::microseconds(1000);
  // Protected packets per parity packet (TransportOptions::parity_members); 0: no parity.
  std::uint8_t parity_members = 0;
  std::size_t backlog_bytes = 256u << 20;
  Duration early_arrival_ttl = std::chrono::seconds(60);
  std::size_t max_early_messages = 1 << 16;
  // Settled message ids remembered, so that their late packets are refused as stale.
  std::size_t settled_memory = 1 << 16;
  // Packets per burst (one sendmmsg batch in the socket engine).
  std::size_t burst_packets = 64;
  // Consecutive packets that share a path and codepoint (one UDP GSO send), at most
  // max_run_bytes of datagrams; 1 sprays every packet on its own path.
  std::size_t max_run_packets = 64;
  std::size_t max_run_bytes = 65000;
  // Data packets carry a MAC trailer of this many bytes after the payload (0: none).
  std::size_t trailer_bytes = 0;
  // Bytes the pacers count per datagram beyond its UDP payload (the simulator counts IP and UDP
  // headers, since its rates are line rates; the socket engine counts payloads).
  std::size_t datagram_overhead_bytes = 0;
  // Per DSCP: queued in best effort's class by the switches (shared_band_pacing and its marks).
  std::array<bool, 64> shared_band_dscps{};
  // What this host offers its senders in total, bytes/s (set_receive_rate may change it).
  double receive_rate = 0;
  // Rate reports offer each sender its share of receive_rate (off: no offer, an ablation).
  bool offer_receive_share = true;
  // Data packets are sent ECN-capable as the policy says (off: never, an ablation).
  bool ecn_capable = true;
  // Unprotected packets carry the drop-eligible codepoint (off: the protected one, an ablation).
  bool drop_precedence = true;
};

// A peer as the driver learnt it when it joined.
struct PeerLink {
  std::string address;             // for messages, e.g. "10.0.0.2:4000"
  std::size_t datagram_bytes = 0;  // a full data datagram: header, stride floats, trailer
  std::uint16_t stride = 0;        // float32 values per packet on the path
  std::size_t send_paths = 1;      // the peer's data sockets we spray over
  std::size_t receive_paths = 1;   // our data sockets it sprays over
};

struct SendRequest {
  MessageKey key;
  std::uint64_t token = 0;  // the driver's, handed back with the completion
  // The payload, or no data with total_floats set (a simulated payload: nothing is read).
  std::span<const float> values;
  std::uint32_t total_floats = 0;
  MessageOptions options;
  // Contributions per packet, one per packet (overrides options.contributions), or empty.
  std::span<const std::uint16_t> contributions;
  // The protected set chosen elsewhere (a simulated payload), one flag per packet; otherwise it
  // is ranked from the values.
  std::optional<std::vector<std::uint8_t>> protected_flags;
};

struct ReceiveRequest {
  MessageKey key;
  std::uint64_t token = 0;
  // Where the values go, or no data with total_floats set (nothing is placed).
  std::span<float> values;
  std::uint32_t total_floats = 0;
  MessageOptions options;
  // Written per arriving packet with its contribution count (0: never arrived), or empty.
  std::span<std::uint16_t> contributions;
};

// One data packet to send: its header (complete but for a MAC), values and marks.
struct OutgoingPacket {
  wire::DataHeader header;
  std::span<const float> values;  // header.expected_floats() of them, or none (simulated)
  // A parity packet's payload, already encoded (header.payload_bytes of it), valid until
  // burst_sent; empty for a packet of values or a simulated payload.
  std::span<const std::byte> payload;
  std::uint8_t tos = 0;
};

// Packets of one message, cut into runs that share a path and a codepoint; every packet of a
// run but the last is full-sized (so a run can be one GSO send).
struct Burst {
  struct Run {
    std::size_t first = 0;  // into packets
    std::size_t count = 0;
    std::size_t path = 0;  // index of the peer's data address
  };
  int peer = -1;
  std::size_t datagram_bytes = 0;  // a full datagram of this message, trailer included
  std::vector<OutgoingPacket> packets;
  std::vector<Run> runs;
  // Filled by the driver before burst_sent: 1 for each run the network took.
  std::vector<std::uint8_t> run_sent;
};

struct OutgoingControl {
  int peer = -1;
  wire::ControlMessage message;
};

// A send or receive ended: settled (result) or failed (error).
struct Completed {
  std::uint64_t token = 0;
  bool is_send = false;
  MessageResult result;
  std::optional<Error> error;
};

// A peer the endpoint gave up on (its abort, or the driver's on_peer_lost): the driver closes
// its connection. `job_failure` is false for a peer that left in order.
struct PeerLost {
  int peer = -1;
  Error error;
  bool job_failure = true;
};

struct EndpointOutputs {
  std::vector<OutgoingControl> control;
  std::vector<Completed> completions;
  std::vector<PeerLost> lost_peers;
  bool empty() const { return control.empty() && completions.empty() && lost_peers.empty(); }
  void clear() {
    control.clear();
    completions.clear();
    lost_peers.clear();
  }
};

// Where the driver puts a large datagram's payload before reading it (direct placement).
struct DirectPlacement {
  enum class Action : std::uint8_t { kPlace, kHold, kDiscard };
  Action action = Action::kDiscard;
  std::span<float> target;  // kPlace: the payload's values (empty for a simulated receive)
};

// Argument checks of a request, made where it is posted (throw Error(kInvalidArgument)): the
// peer, the size and the options of any request; then, for a send, what the path to the peer
// carries (`path_stride` float32 values per packet, 0 before it joined), the per-packet counts
// and flags.
void check_request(int peer, int rank, int world_size, std::size_t floats,
                   const MessageOptions& options);
void check_send(const SendRequest& request, int world_size, std::uint16_t path_stride);

// Why no request may be posted to a transport that was shut down (`shut_down` names why) or
// aborted (`aborted`), or nothing when neither: the same words over UDP and the local path.
std::optional<std::string> closed_refusal(const std::string& shut_down, const std::string& aborted,
                                          bool is_send);

class Endpoint {
 public:
  explicit Endpoint(const EndpointOptions& options);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const EndpointOptions& options() const { return options_; }

  // Peers.
  void on_peer_joined(int rank, const PeerLink& link, TimePoint now);
  // The driver lost the peer (its connection closed or failed): everything with it fails.
  void on_peer_lost(int rank, const std::string& why, ErrorCode code, TimePoint now);
  bool connected(int rank) const;
  void set_receive_rate(double bytes_per_s) { options_.receive_rate = bytes_per_s; }
  // A spraying run may hold one packet only from now on (the driver lost UDP GSO).
  void disable_runs() { options_.max_run_packets = 1; }

  // Applications' requests; a refusal comes back as a failed completion.
  void post_send(SendRequest request, TimePoint now);
  void post_receive(ReceiveRequest request, TimePoint now);
  // A receive of `key` that another, loss-free path carries (the driver's local path), as a
  // member of its budget group (options.budget_group; nothing when 0): it counts as posted and
  // arriving whole, with the allowance of its budget, so that the group's UDP members can settle
  // on the group's budget. Returns why the group refuses it (the request then fails), or nothing.
  std::optional<std::string> join_group_lossless(const MessageKey& key,
                                                 const MessageOptions& options,
                                                 std::uint32_t total_floats, TimePoint now);

  // Sending: the next burst the send queue and the pacers allow now (false: none), and what the
  // driver made of it (Burst::run_sent).
  bool next_burst(TimePoint now, Burst& burst);
  void burst_sent(const Burst& burst, TimePoint now);

  // Receiving: a decoded data packet (the whole datagram, as the decoder checked it) that the
  // driver accepted (authentic, not dropped by a test injector), on its receive path `path`.
  void on_datagram(const wire::DataHeader& header, std::span<const std::byte> datagram,
                   std::uint8_t tos, std::size_t path, TimePoint now);
  // The same in steps, for a payload the driver reads straight into place: where it goes,
  // then (kPlace) that it is there, or (kHold) the whole datagram to hold. `tos` as read with it.
  DirectPlacement direct_placement(const wire::DataHeader& header, std::size_t datagram_bytes,
                                   std::size_t path, TimePoint now);
  void on_placed(const wire::DataHeader& header, std::uint8_t tos, TimePoint now);
  void hold(const wire::DataHeader& header, std::vector<std::byte> datagram, std::uint8_t tos,
            TimePoint now);
  // A control frame from a joined peer.
  void on_control(int peer, const wire::ControlMessage& message, TimePoint now);

  // Time: runs what is due; when to call on_timeout next; when a queued packet may next leave
  // (none when nothing waits to be sent).
  void on_timeout(TimePoint now);
  TimePoint next_timeout(TimePoint now) const;
  std::optional<TimePoint> next_send(TimePoint now);

  // Fails every message in flight with kAborted, tells the peers, refuses new ones.
  void abort(const std::string& why, TimePoint now);
  // An orderly exit: Goodbye to every peer, then every message still open fails with kAborted.
  void say_goodbye();
  void shut_down(const std::string& why);

  // What came out since the last call (swapped into `out`, which is cleared first).
  void take_outputs(EndpointOutputs& out);
  bool has_outputs() const { return !outputs_.empty(); }

  // The endpoint's share of the transport's counters (the driver adds its own I/O counts).
  void add_counters(TransportCounters& counters) const;
  // Refusals the endpoint counted.
  const wire::RejectCounters& rejects() const { return rejects_; }
  // The first peer failure that is a job failure, if any.
  const std::optional<Error>& first_failure() const { return first_failure_; }
  std::string describe_peer(int peer) const;

 private:
  struct Outgoing;
  struct Incoming;
  struct Peer;
  struct Timer {
    enum class Kind : std::uint8_t { kReceiveDeadline, kReport, kSendDeadline };
    MessageKey key;
    Kind kind = Kind::kReceiveDeadline;
  };

  Peer& peer(int rank) { return *peers_[static_cast<std::size_t>(rank)]; }
  const Peer& peer(int rank) const { return *peers_[static_cast<std::size_t>(rank)]; }
  // Why no request may be posted now (shut down or aborted), or nothing.
  std::optional<std::string> refusal(bool is_send) const;
  void complete(std::uint64_t token, bool is_send, MessageResult result);
  void fail(std::uint64_t token, bool is_send, ErrorCode code, int peer, const std::string& why);
  void send_control(int peer, wire::ControlMessage message);
  void lose_peer(int rank, const std::string& why, ErrorCode code, TimePoint now);
  std::string own_stall_note(int except_peer, TimePoint now) const;

  // Sending (endpoint_send.cpp).
  std::uint16_t packet_floats(int peer, const MessageOptions& options) const;
  std::uint64_t pacing_budget(const Outgoing& message, TimePoint now);
  void enqueue(Outgoing& message);
  void dequeue(Outgoing& message);
  void on_missing_ranges(int peer, const wire::MissingRanges& missing);
  void on_stop(int peer, const wire::Stop& stop, TimePoint now);
  void on_rate_feedback(int peer, const wire::RateFeedback& feedback, TimePoint now);
  void fail_outgoing(Outgoing& message, ErrorCode code, const std::string& why);

  // Receiving (endpoint_receive.cpp).
  bool admit(const wire::DataHeader& header, std::size_t bytes, std::size_t path, TimePoint now);
  void note_tos(int peer, std::uint8_t tos);
  bool accept_shape(Incoming& message, std::uint32_t total, std::uint16_t stride);
  // Whether the packet may be placed (counted when not), and where its values go.
  bool placeable(Incoming& message, const wire::DataHeader& header);
  std::span<float> target(Incoming& message, const wire::DataHeader& header);
  void commit(Incoming& message, const wire::DataHeader& header, TimePoint now);
  // A packet now in place (arrived or rebuilt): counted, never settles by itself.
  void record_packet(Incoming& message, std::uint32_t seq, std::uint16_t contributions,
                     std::uint8_t priority_class, TimePoint now);
  bool may_hold_early(const MessageKey& key, std::size_t bytes);
  void deliver(Incoming& message, const wire::DataHeader& header,
               std::span<const std::byte> payload, TimePoint now);
  void replay_early(Incoming& message, TimePoint now);
  void on_flow_start(int peer, const wire::FlowStart& flow, TimePoint now);
  void apply_flow(Incoming& message, const wire::FlowStart& flow, TimePoint now);
  void on_round_finished(int peer, const wire::RoundFinished& finished, TimePoint now);
  void maybe_settle(Incoming& message, TimePoint now);
  void settle(Incoming& message, Settlement settlement, bool by_group, TimePoint now);
  void settle_group(std::uint64_t id, TimePoint now);
  void end_incoming(Incoming& message);
  void count_settlement(const MessageStats& stats);
  void send_missing_report(Incoming& message, TimePoint now);
  void fail_incoming(Incoming& message, ErrorCode code, const std::string& why, bool tell_sender);

  // Parity (endpoint_parity.cpp): the sender's payloads; the receiver's held parity and what it
  // rebuilds (never settles by itself: the callers do).
  std::span<const std::byte> parity_payload(Outgoing& message, std::uint32_t group);
  void on_parity(Incoming& message, const wire::DataHeader& header,
                 std::span<const std::byte> payload, TimePoint now);
  void apply_parity(Incoming& message, const wire::FlowStart& flow);
  void rebuild(Incoming& message, std::uint32_t group, TimePoint now);

  // Time (endpoint_timers.cpp).
  void send_feedback(Peer& peer, std::size_t active_senders, TimePoint now);
  std::size_t active_senders(TimePoint now) const;
  void on_timer(const Timer& timer, TimePoint now);
  void on_send_deadline(Outgoing& message);
  void on_receive_deadline(Incoming& message);

  EndpointOptions options_;
  wire::DataExpectations expectations_;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::unordered_map<MessageKey, std::unique_ptr<Outgoing>, MessageKeyHash> outgoing_;
  SendQueue<Outgoing> send_queue_;
  std::unordered_map<MessageKey, std::unique_ptr<Incoming>, MessageKeyHash> incoming_;
  EarlyArrivalBacklog early_;
  BudgetGroups groups_;
  SettledMessages settled_;
  TimerQueue<Timer> timers_;
  TimePoint next_expiry_check_{};
  std::vector<std::uint32_t> burst_seqs_;  // scratch of next_burst
  std::vector<std::byte> parity_scratch_;  // scratch of rebuild and parity_payload
  std::size_t counted_senders_ = 0;        // at the last count: the share the offers in force give
  std::string aborted_;                    // why abort() was called, empty if not
  std::string shut_down_;                  // why shut_down() was called, empty if not
  std::optional<Error> first_failure_;
  TransportCounters counters_;
  wire::RejectCounters rejects_;
  EndpointOutputs outputs_;
};

}  // namespace dlcp::protocol
