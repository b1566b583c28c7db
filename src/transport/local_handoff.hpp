// Handing the local path's segments and wake-up descriptors to a peer on the same host, only
// after it proved the job key. Once the control handshake (handshake.hpp) found two ranks on one
// host, the dialing rank connects to the listening rank's abstract Unix socket (its name came in
// the listener's authenticated Hello) and, on a SOCK_SEQPACKET connection:
//   dialer -> listener: u16 rank, proof (HMAC under the job key, dialer role)
//   listener -> dialer: proof (listener role), with its segment and eventfd (SCM_RIGHTS)
//   dialer -> listener: one byte, with its segment and eventfd
// Both proofs cover the control handshake's transcript (fresh nonces of both sides) followed by
// a label of their own, so neither a control-handshake proof nor one of an earlier connection
// can be replayed here. The listener also refuses a connecting process of another user
// (SO_PEERCRED), and sends nothing to a connection before its proof checked out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/fd.hpp"
#include "common/time.hpp"
#include "transport/job_key.hpp"
#include "transport/local_segment.hpp"
#include "transport/poller.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::transport {

// Both directions of a local link, as one side holds them.
struct LocalLink {
  LocalSegment outgoing;  // ours: we write its ring
  LocalSegment incoming;  // the peer's: we read its ring
  Fd wake;                // ours: the peer signals it, our poller watches it
  Fd peer_wake;           // the peer's: we signal it
};

// Our half of a link before the exchange: a fresh segment and wake-up descriptor.
LocalLink new_local_link();

// The transcript the local proofs cover.
std::vector<std::byte> local_transcript(std::span<const std::byte> control_transcript);

// Dialing side, blocking until `deadline`: connects to the abstract socket `name`, proves
// itself, checks the listener's proof and swaps descriptors. Throws dlcp::Error(kConnect or
// kProtocol) naming the peer.
void dial_local(int peer, int our_rank, const std::string& name, const JobKey& key,
                std::span<const std::byte> control_transcript, LocalLink& link, TimePoint deadline);

// The listening side: an abstract Unix socket with a random name, and the connections still in
// their exchange (a bounded number, each for at most kHandshakeTimeout).
class LocalAcceptor {
 public:
  // What the listener needs of a rank that connects: its control transcript and our half of the
  // link, or none when that rank is not expected (not joined, not local, already linked).
  using Expected = std::function<LocalLink*(int rank, std::vector<std::byte>& transcript)>;

  // Throws dlcp::Error(kSystem).
  LocalAcceptor(const JobKey& key, Poller& poller, Expected expected);
  ~LocalAcceptor();

  const std::string& name() const { return name_; }
  void accept(TimePoint now);
  // A pending connection is readable: the rank whose link is now complete, if any.
  std::optional<int> on_readable(std::uint64_t id);
  void expire(TimePoint now);
  const wire::RejectCounters& rejects() const { return rejects_; }

 private:
  struct Pending {
    Fd fd;
    TimePoint accepted{};
    int rank = -1;  // once its proof checked out
  };
  void drop(std::uint64_t id, wire::RejectReason reason);

  const JobKey& key_;
  Poller& poller_;
  Expected expected_;
  Fd listener_;
  std::string name_;
  std::unordered_map<std::uint64_t, Pending> pending_;
  std::uint64_t next_id_ = 0;
  wire::RejectCounters rejects_;
};

}  // namespace dlcp::transport
