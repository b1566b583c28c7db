// The transfers of one collective call, and waiting for them without polling.
//
// Each transfer completes through its MessageCallback, on the transport's I/O thread, into a slot
// of a small shared state (a mutex, a condition variable, one outcome per transfer); the group's
// one failure listener (PeerFailures) marks every live state failed. The collective's own thread
// sleeps on the condition variable until its transfer ended or a peer failed, whichever comes
// first. Nothing runs on the I/O thread but storing an outcome and a notify.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

#include "dlcp/transport.hpp"

namespace dlcp::collectives {

struct Group;

// What the transfers of a live collective wait on, shared with their callbacks (which may run
// after the collective returned or threw).
struct TransferState {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::optional<MessageOutcome>> outcomes;  // by handle; guarded by mutex
  bool peer_failed = false;                             // guarded by mutex
};

// The transport's first peer failure, fanned out to the collectives waiting at the time and to
// those that start later. One listener per group, registered with the transport once, for its
// lifetime; each collective adds its state while it runs (a set, so the cost is bounded by the
// collectives in flight).
class PeerFailures {
 public:
  static std::shared_ptr<PeerFailures> watch(Transport& transport);

  void add(TransferState* state);
  void remove(TransferState* state);

 private:
  void fail();

  std::mutex mutex_;
  bool failed_ = false;                      // guarded by mutex_
  std::unordered_set<TransferState*> live_;  // guarded by mutex_; lock order: this, then a state
};

class Transfers {
 public:
  using Handle = std::size_t;

  explicit Transfers(const Group& group);
  ~Transfers();
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  // Post a transfer (Transport::send/recv; `contributions` as there) with a peer named by its
  // group rank; await it by its handle.
  Handle send(int peer, std::uint64_t message_id, std::span<const float> values,
              const MessageOptions& options, std::span<const std::uint16_t> contributions = {});
  Handle recv(int peer, std::uint64_t message_id, std::span<float> values,
              const MessageOptions& options, std::span<std::uint16_t> contributions = {});

  // Waits for a transfer (once per handle); throws the transport's first peer failure as soon as
  // one happens, even when this transfer's peer is alive, so that no rank waits for a deadline
  // behind a dead one.
  MessageResult await(Handle transfer);
  void await_all(std::span<const Handle> transfers) {
    for (const Handle transfer : transfers) await(transfer);
  }

 private:
  Handle add_slot();
  MessageCallback completion(Handle transfer) const;

  int transport_rank(int group_rank) const;

  Transport& transport_;
  std::vector<int> members_;  // Group::members
  std::shared_ptr<PeerFailures> failures_;
  std::shared_ptr<TransferState> state_ = std::make_shared<TransferState>();
};

}  // namespace dlcp::collectives
