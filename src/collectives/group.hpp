// What every collective algorithm works with: the transport, this rank's place among the workers,
// the agreed block size, scratch buffers, and waiting that notices a dead rank at once.
#pragma once

#include <cstdint>
#include <future>
#include <span>

#include "collectives/buffer_pool.hpp"
#include "dlcp/communicator.hpp"
#include "dlcp/transport.hpp"

namespace dlcp::collectives {

struct Scratch {
  BufferPool<float> floats;
  BufferPool<std::uint16_t> counts;
};

struct Group {
  Transport& transport;
  int rank = 0;  // among the workers; workers are transport ranks 0 .. size-1
  int size = 1;
  int servers = 0;          // parameter servers: transport ranks size .. size+servers-1
  std::uint16_t block = 1;  // float32 values per packet, the same on every rank
  std::size_t segment_bytes = 4u << 20;
  Scratch& scratch;

  // Waits for a transfer; throws the transport's first peer failure as soon as one happens, even
  // when this transfer's peer is alive, so that no rank waits for a deadline behind a dead one.
  MessageResult await(std::future<MessageResult>& transfer) const;

  // Values per packet in `wire`: the unit in which collectives cut buffers and count
  // contributions (a 16-bit packet of the same size holds about twice as many).
  std::size_t block_for(WireDtype wire) const;

  // Transport options for a transfer of this collective (its wire dtype and packet size).
  MessageOptions message_options(const CollectiveOptions& options, double loss_budget,
                                 std::span<std::uint16_t> counts = {}) const;
};

}  // namespace dlcp::collectives
