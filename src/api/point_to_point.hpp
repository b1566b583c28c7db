// Loss-free point-to-point transfers between workers, over the transport (Communicator::send,
// recv, recv_any). The k-th send from a rank to a peer with a tag fills the k-th receive on that
// peer from the rank with that tag: both sides number their transfers per (peer, tag), which
// gives the transport id. A receive from any source posts, towards every peer that has none
// posted yet, a receive of that peer's next transfer with the tag, into a buffer of its own; the
// first to arrive is taken, and the others wait, still posted, for the next receive from their
// peer with that tag (which then copies out of the buffer). One that times out keeps its place
// in the numbering: the next receive from its peer posts it again.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "dlcp/communicator.hpp"
#include "dlcp/transport.hpp"

namespace dlcp::api {

class PointToPoint {
 public:
  // `rank` among `workers` ranks (0 .. workers - 1), over `transport` (a receive still waiting
  // keeps it).
  PointToPoint(std::shared_ptr<Transport> transport, int rank, int workers);

  Work send(std::span<const float> values, int peer, std::uint32_t tag,
            const CollectiveOptions& options);
  Work recv(std::span<float> values, int peer, std::uint32_t tag, const CollectiveOptions& options);
  // CollectiveResult::source names the sender.
  Work recv_any(std::span<float> values, std::uint32_t tag, const CollectiveOptions& options);

 private:
  using Key = std::pair<int, std::uint32_t>;  // (peer, tag's low 12 bits)
  // A receive numbered ahead by recv_any, not taken yet: posted into its own buffer, or (after it
  // timed out) only its place in the numbering.
  struct Ahead {
    std::uint32_t sequence = 0;
    std::shared_ptr<std::vector<float>> buffer;
    std::optional<std::shared_future<MessageResult>> transfer;
  };
  // What a waiting recv_any shares with later calls; it outlives this object if need be.
  struct Shared {
    std::mutex mutex;
    std::map<Key, std::uint32_t> sends;     // next sequence per (peer, tag)
    std::map<Key, std::uint32_t> receives;  // the same for receives (those ahead included)
    std::map<Key, std::deque<Ahead>> ahead;
  };

  Key checked_key(int peer, std::uint32_t tag, const char* what,
                  const CollectiveOptions& options) const;
  // Posts the receive of (peer, tag)'s transfer `sequence` into a buffer of `floats`.
  Ahead post_ahead(const Key& key, std::uint32_t sequence, std::size_t floats,
                   const CollectiveOptions& options);

  std::shared_ptr<Transport> transport_;
  int rank_;
  int workers_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
};

}  // namespace dlcp::api
