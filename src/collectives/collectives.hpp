// The collective algorithms, as free functions over a Group (the shape Gloo uses). Each one
// waits for all of its transfers before it returns or throws, except when the transport is
// aborted (which the communicator does on any failure), so buffers are free afterwards.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>

#include "collectives/group.hpp"
#include "collectives/host_layout.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp::collectives {

// Reduce-scatter then all-gather around the ring of workers, each chunk pipelined in segments.
// Contribution counts travel with the partial sums, block by block.
CollectiveResult ring_allreduce(const Group& group, std::uint32_t seq, std::span<float> values,
                                const CollectiveOptions& options);

// Worker j owns part j: every worker sends part j straight to j, j reduces and sends the result
// to everyone. A loss stays confined to one contribution.
CollectiveResult transpose_allreduce(const Group& group, std::uint32_t seq, std::span<float> values,
                                     const CollectiveOptions& options);

// The reduce half of transpose_allreduce: `input` holds g.size shards of output.size() values;
// every worker sends shard j straight to worker j, which reduces what arrived into `output`.
// Entries are summed in transpose_allreduce's order, so without loss and on a float32 wire the
// output is bit for bit that all-reduce's values at [rank * n, (rank + 1) * n). A 16-bit wire
// rounds every shard (from its own start) on a private copy; the output is not rounded.
CollectiveResult reduce_scatter(const Group& group, std::uint32_t seq, std::span<const float> input,
                                std::span<float> output, const CollectiveOptions& options);

// Worker side of the parameter server: shard s of the buffer is pushed to server s, which
// reduces it and sends it back to every worker. `ps_seq` counts parameter-server collectives.
CollectiveResult ps_allreduce(const Group& group, std::uint32_t ps_seq, std::span<float> values,
                              const CollectiveOptions& options);
// Tells every server that this worker is done (the servers stop once all workers said so).
void ps_shutdown(const Group& group, std::uint32_t ps_seq);
// Server side: serves parameter-server collectives, `threads` at a time, until all workers shut
// down. Throws the first failure.
void ps_serve(const Group& group, int threads);

CollectiveResult broadcast(const Group& group, std::uint32_t seq, std::span<float> values, int root,
                           const CollectiveOptions& options);
CollectiveResult allgather(const Group& group, std::uint32_t seq, std::span<const float> input,
                           std::span<float> output, const CollectiveOptions& options);
void barrier(const Group& group, std::uint32_t seq);

// Hierarchical collectives (docs/collectives.md, "Hierarchical collectives"), over the workers of
// `group` grouped by `hosts`. Transfers within a host are loss-free; those between hosts use the
// options' budgets. The network algorithm of an all-reduce (ring_allreduce or
// transpose_allreduce) runs once per stripe, among the stripe's leaders.
using NetworkAllreduce = CollectiveResult (*)(const Group&, std::uint32_t, std::span<float>,
                                              const CollectiveOptions&);
CollectiveResult hierarchical_allreduce(const Group& group, const HostLayout& hosts,
                                        std::uint32_t seq, std::span<float> values,
                                        const CollectiveOptions& options, NetworkAllreduce network);
// Worker j's shard is reduced on each host by the leader of stripe (local_index(j) mod stripes),
// whose host sums go to that stripe's leader on j's host; it finalizes them and hands them to j.
// The output stays float32, as in reduce_scatter.
CollectiveResult hierarchical_reduce_scatter(const Group& group, const HostLayout& hosts,
                                             std::uint32_t seq, std::span<const float> input,
                                             std::span<float> output,
                                             const CollectiveOptions& options);
CollectiveResult hierarchical_broadcast(const Group& group, const HostLayout& hosts,
                                        std::uint32_t seq, std::span<float> values, int root,
                                        const CollectiveOptions& options);
CollectiveResult hierarchical_allgather(const Group& group, const HostLayout& hosts,
                                        std::uint32_t seq, std::span<const float> input,
                                        std::span<float> output, const CollectiveOptions& options);

}  // namespace dlcp::collectives
