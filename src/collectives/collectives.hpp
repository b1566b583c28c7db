// The collective algorithms, as free functions over a Group (the shape Gloo uses). Each one
// waits for all of its transfers before it returns or throws, except when the transport is
// aborted (which the communicator does on any failure), so buffers are free afterwards.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

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

// Which stripe of a buffer a worker's parameter-server push holds: flat, the one stripe of 1;
// hierarchical, the stripe it leads (its host's sum). kNoStripe (ps_descriptor.hpp): none.
struct PsStripe {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
};

// Worker side of the parameter server: shard s of `values` is pushed to server s, which reduces
// it and sends it back to every pusher. `ps_seq` counts parameter-server collectives. `group`
// may be a stripe's leaders (members, input_contributions, workers_reduced): the servers are
// then still the transport ranks after the job's workers.
CollectiveResult ps_allreduce(const Group& group, std::uint32_t ps_seq, std::span<float> values,
                              const CollectiveOptions& options, PsStripe stripe = {});
// A worker that pushes nothing in a parameter-server collective (hierarchical: it leads no stripe,
// or an empty one, which it names with its host's `contributions`) still tells every server so,
// since servers read every worker's descriptor of every collective, in order, before they reduce
// it. Posted at construction, before the worker's local stage (which may wait for the servers'
// results), and awaited by await().
class PsAbstention {
 public:
  PsAbstention(const Group& group, std::uint32_t ps_seq, const CollectiveOptions& options,
               PsStripe stripe, std::uint16_t contributions);
  void await();

 private:
  Transfers transfers_;
  BufferPool<float>::Lease words_;
  std::vector<Transfers::Handle> sends_;
};
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
// options' budgets. The network algorithm of an all-reduce (ring_allreduce, transpose_allreduce
// or a parameter-server push and pull) runs once per non-empty stripe, among the stripe's leaders
// (a group whose ranks are hosts), on the host's sum; `stripe` names it.
using NetworkAllreduce =
    std::function<CollectiveResult(const Group& leaders, std::uint32_t seq, int stripe,
                                   std::span<float> host_sum, const CollectiveOptions& options)>;
CollectiveResult hierarchical_allreduce(const Group& group, const HostLayout& hosts,
                                        std::uint32_t seq, std::span<float> values,
                                        const CollectiveOptions& options,
                                        const NetworkAllreduce& network);
// The parameter server by host: stripe i's leaders push their hosts' sums of stripe i to the
// servers (as workers counting for their hosts' workers) and spread the results within their
// hosts; every other worker tells the servers it pushes nothing. `seq` numbers the transfers
// within hosts, `ps_seq` those with the servers. On one host the stripes are finalized there and
// the servers receive descriptors only.
CollectiveResult hierarchical_ps_allreduce(const Group& group, const HostLayout& hosts,
                                           std::uint32_t seq, std::uint32_t ps_seq,
                                           std::span<float> values,
                                           const CollectiveOptions& options);
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
