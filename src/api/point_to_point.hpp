// Loss-free point-to-point transfers between workers, over the transport (Communicator::send,
// recv, recv_any). The k-th send from a rank to a peer with a tag fills the k-th receive on that
// peer from the rank with that tag: both sides number their transfers per (peer, tag), which
// gives the transport id. A receive from any source posts, towards every peer that has none
// posted yet, a receive of that peer's next transfer with the tag, into a buffer of its own; the
// first to arrive is taken, and the others wait, still posted, for the next receive from their
// peer with that tag (which then copies out of the buffer). One that times out while receives
// from any source still wait is posted again for as long as the latest of them waits; otherwise
// it keeps only its place in the numbering, and the next receive from its peer posts it again.
//
// No thread waits per operation: every Work completes through the transfer's MessageCallback,
// on the transport's I/O thread (a receive taken from a buffer posted ahead copies it there).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <utility>

#include "dlcp/communicator.hpp"
#include "dlcp/transport.hpp"

namespace dlcp::api {

class PointToPoint {
 public:
  // `rank` among `workers` ranks (0 .. workers - 1), over `transport`.
  PointToPoint(std::shared_ptr<Transport> transport, int rank, int workers);

  Work send(std::span<const float> values, int peer, std::uint32_t tag,
            const CollectiveOptions& options);
  Work recv(std::span<float> values, int peer, std::uint32_t tag, const CollectiveOptions& options);
  // CollectiveResult::source names the sender.
  Work recv_any(std::span<float> values, std::uint32_t tag, const CollectiveOptions& options);

  // The numbering and the receives posted ahead, shared with the transfers' callbacks (defined
  // in point_to_point.cpp).
  struct Shared;

 private:
  std::pair<int, std::uint32_t> checked_key(int peer, std::uint32_t tag, const char* what,
                                            const CollectiveOptions& options) const;

  std::shared_ptr<Transport> transport_;
  int rank_;
  int workers_;
  // Shared with the callbacks of transfers still in flight.
  std::shared_ptr<Shared> shared_;
};

}  // namespace dlcp::api
