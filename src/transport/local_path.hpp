// The local path: messages between two ranks of one host through shared memory instead of UDP
// (TransportOptions::local_path). Each direction is a ring in a segment its sender made
// (local_segment.hpp, handed over by local_handoff.hpp), carrying the records of local_records.hpp;
// an eventfd per side wakes the other's I/O thread, which stays the one owner of all state here.
//
// It keeps the Transport contract of the UDP path: the same message ids, packets of the same size
// (a chunk of the ring holds whole packets, each encoded in the message's wire dtype, so 16-bit
// values round exactly as on the wire), per-packet contribution counts written by the receive,
// deadlines, abort, and the failure of a lost peer (the control connection still tells, as for
// UDP peers). It is loss-free: a receive completes with every packet (Completion::kComplete);
// MessageStats counts the packets the message is cut into, as sent and received once each.
// Receives posted before their peer joined wait here until its handshake says which path
// carries them (take_parked hands them to the UDP endpoint).
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/time.hpp"
#include "dlcp/transport.hpp"
#include "protocol/endpoint.hpp"
#include "protocol/timer_queue.hpp"
#include "transport/local_handoff.hpp"
#include "transport/local_records.hpp"
#include "transport/shm_ring.hpp"

namespace dlcp::transport {

// Largest data record: whole packets up to this many bytes (at least one packet).
inline constexpr std::size_t kLocalChunkBytes = 256u << 10;

class LocalPath {
 public:
  explicit LocalPath(int world_size);

  // Its link is complete: messages with `rank` go through it from now on. `description` names
  // the peer in errors (Endpoint::describe_peer).
  void add_peer(int rank, LocalLink link, std::string description);
  bool linked(int rank) const;
  int wake_fd(int rank) const;

  // Requests, on the I/O thread; a refusal comes back as a failed completion. `packet_floats`:
  // the sender's values per packet (as the UDP path would cut the message).
  void post_send(protocol::SendRequest request, std::uint16_t packet_floats, TimePoint now);
  // For a linked peer, or one whose path is not known yet (parked until add_peer or take_parked).
  void post_receive(protocol::ReceiveRequest request, TimePoint now);
  // Parked receives of a peer that turned out to be reached over UDP, their deadlines shortened
  // by the time they waited here.
  std::vector<protocol::ReceiveRequest> take_parked(int rank, TimePoint now);
  // The posted receives from `rank` that belong to a budget group (their tokens left out), for
  // the driver to join them to their groups when the peer's link completes.
  std::vector<protocol::ReceiveRequest> grouped_receives(int rank) const;
  // The receive of message `id` from `rank` fails with `why` (the driver refused it).
  void fail_receive(int rank, std::uint64_t id, ErrorCode code, const std::string& why);

  // Moves what the rings allow: reads every peer's records, writes ours. Wakes peers as needed.
  void pump(TimePoint now);
  void on_timeout(TimePoint now);
  std::optional<TimePoint> next_timeout() const { return timers_.next(); }

  // Everything with `rank` fails with `error`; its segments and descriptors are let go. What the
  // peer wrote before it went is read first: its control connection (which told of its end)
  // may overtake its last records, a Settled completing a send.
  void fail_peer(int rank, const Error& error, TimePoint now);
  // Everything fails with kAborted and new requests are refused.
  void abort(const std::string& why);
  void shut_down(const std::string& why);

  // Peers failed for breaking the path (a corrupt ring), each with why (not naming the peer):
  // the driver fails them for good, as a peer that broke the protocol on its control connection.
  std::vector<Error> take_broken_peers() { return std::exchange(broken_, {}); }

  void take_completions(std::vector<protocol::Completed>& out);
  bool has_completions() const { return !completions_.empty(); }
  void add_counters(TransportCounters& counters) const;

 private:
  struct Outgoing {
    std::uint64_t token = 0;
    std::uint64_t id = 0;
    std::span<const float> values;
    std::span<const std::uint16_t> contributions;
    std::uint16_t contribution = 1;  // for every packet when contributions is empty
    local::Announce shape;
    std::uint64_t receive_seq = 0;  // 0 until Ready
    std::uint32_t next_packet = 0;
    std::uint64_t order = 0;
    TimePoint posted{};
    TimePoint deadline{};
    std::chrono::milliseconds deadline_ms{};
  };
  struct Incoming {
    std::uint64_t token = 0;
    std::uint64_t id = 0;
    std::span<float> values;
    std::span<std::uint16_t> contributions;
    MessageOptions options;
    std::optional<local::Announce> shape;  // once announced and accepted
    std::uint64_t receive_seq = 0;
    std::uint32_t packets_received = 0;
    TimePoint posted{};
    TimePoint first_sign{};
    TimePoint deadline{};
  };
  struct PendingRecord {
    local::Kind kind{};
    std::vector<std::byte> bytes;
  };
  struct Peer {
    int rank = -1;
    std::string description;
    std::optional<LocalLink> link;
    RingWriter out;
    RingReader in;
    std::optional<Error> failure;
    std::deque<PendingRecord> records;  // small records waiting for room
    std::uint64_t next_send_seq = 1;
    std::uint64_t next_receive_seq = 1;
    std::unordered_map<std::uint64_t, Outgoing> outgoing;          // by send_seq
    std::unordered_map<std::uint64_t, std::uint64_t> sending_ids;  // message id -> send_seq
    std::unordered_map<std::uint64_t, Incoming> incoming;          // by message id
    std::unordered_map<std::uint64_t, std::uint64_t> receiving;    // receive_seq -> message id
    std::unordered_map<std::uint64_t, std::pair<local::Announce, TimePoint>> announced;
    std::vector<std::uint64_t> ready;  // send_seqs with data to write
    bool wake_peer = false;
  };
  struct Timer {
    int peer = -1;
    bool is_send = false;
    std::uint64_t key = 0;  // send_seq or message id
  };

  Peer& peer(int rank) { return peers_[static_cast<std::size_t>(rank)]; }
  // Why no request may be posted now (shut down or aborted), or nothing.
  std::optional<std::string> refusal(bool is_send) const;
  void queue_record(Peer& p, local::Kind kind, std::span<const std::byte> bytes);
  template <class T>
  void queue(Peer& p, local::Kind kind, const T& record) {
    queue_record(p, kind, std::as_bytes(std::span(&record, 1)));
  }
  void refuse(Peer& p, std::uint64_t send_seq, ErrorCode code, const std::string& why);

  // Reading (local_path_receive.cpp).
  void read_records(Peer& p, TimePoint now);
  void on_announce(Peer& p, const local::Announce& announce, TimePoint now);
  void accept_announce(Peer& p, Incoming& message, const local::Announce& announce, TimePoint seen,
                       TimePoint now);
  void on_ready(Peer& p, const local::Ready& ready);
  void on_data(Peer& p, std::span<const std::byte> record, TimePoint now);
  void on_settled(Peer& p, const local::Settled& settled, TimePoint now);
  void on_refused(Peer& p, std::span<const std::byte> record);
  void settle(Peer& p, Incoming& message, TimePoint now);
  void fail_incoming(Peer& p, std::uint64_t id, ErrorCode code, const std::string& why);

  // Writing (local_path_send.cpp).
  void write_records(Peer& p);
  bool write_chunk(Peer& p, Outgoing& message);
  Outgoing* next_ready(Peer& p);
  void fail_outgoing(Peer& p, std::uint64_t send_seq, ErrorCode code, const std::string& why);

  void fail_all(Peer& p, ErrorCode code, const std::string& why);
  void complete(std::uint64_t token, bool is_send, MessageResult result);
  void fail(std::uint64_t token, bool is_send, ErrorCode code, int peer, const std::string& why);

  std::vector<Peer> peers_;
  protocol::TimerQueue<Timer> timers_;
  std::vector<protocol::Completed> completions_;
  std::vector<Error> broken_;
  std::uint64_t next_order_ = 0;
  std::string aborted_;
  std::string shut_down_;
  struct {
    std::uint64_t messages_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t receive_deadlines = 0;
    DurationHistogram first_round_time;
    DurationHistogram recovery_time;
  } counts_;
};

}  // namespace dlcp::transport
