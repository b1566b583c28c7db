// What every collective algorithm works with: the transport, this rank's place among the workers,
// the agreed block size, scratch buffers, and the fan-out of peer failures that lets a collective
// notice a dead rank at once (collectives/transfers.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/buffer_pool.hpp"
#include "collectives/transfers.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/transport.hpp"

namespace dlcp::collectives {

struct Scratch {
  BufferPool<float> floats;
  BufferPool<std::uint16_t> counts;
};

struct Group {
  Transport& transport;
  int rank = 0;  // among the workers (transport ranks 0 .. size-1), or among `members`
  int size = 1;
  int servers = 0;          // parameter servers: transport ranks size .. size+servers-1
  std::uint16_t block = 1;  // float32 values per packet, the same on every rank
  std::size_t segment_bytes = 4u << 20;
  Scratch& scratch;
  // The transport's one failure listener for this group, registered here, shared by copies.
  std::shared_ptr<PeerFailures> failures = PeerFailures::watch(transport);
  // Hierarchical collectives run an algorithm among some workers only (one per host): the
  // transport rank of each group rank, which Transfers translates. Empty: group ranks are
  // transport ranks.
  std::vector<int> members{};
  // Workers already summed into each value of this rank's input (hierarchical: its host's
  // workers, reduced locally and loss-free). Its contributions travel with this count.
  std::uint16_t input_contributions = 1;
  // Workers whose values all the group's inputs sum: what a reduced block is divided by (or
  // rescaled to). 0: size.
  int workers_reduced = 0;

  int reduced_world() const { return workers_reduced > 0 ? workers_reduced : size; }
  // A block that the broadcast side lost falls back to this rank's input times this: the
  // input's share of the result (reduced_world() / input_contributions for a sum).
  float fallback_scale(ReduceOp op) const;

  // Values per packet in `wire`: the unit in which collectives cut buffers and count
  // contributions (a 16-bit packet of the same size holds about twice as many).
  std::size_t block_for(WireDtype wire) const;

  // Transport options for a transfer of this collective (its wire dtype and packet size).
  // Per-packet contribution counts go with the transfer (Transfers::send/recv), not in here.
  MessageOptions message_options(const CollectiveOptions& options, double loss_budget) const;
};

}  // namespace dlcp::collectives
