// The communicator: collectives over float buffers between the ranks of one job.
//
//   dlcp::HashStore store;   // or a TcpStore / FileStore / from_environment()
//   auto comm = dlcp::Communicator::create(store, rank, world_size, {});
//   dlcp::Work work = comm->allreduce(gradients, {.layer = 3, .num_layers = 50,
//                                                 .loss_budget = 0.05,
//                                                 .op = dlcp::ReduceOp::kAverage});
//   dlcp::CollectiveResult r = work.wait();   // throws dlcp::Error naming the failed peer
//
// Every rank must issue the same collectives in the same order (as with MPI, Gloo or NCCL); a
// collective's buffers must stay alive until its Work is done. Collectives run asynchronously,
// several at a time, so a front-layer all-reduce posted later can overtake a back-layer one.
//
// Bounded loss applies to the reduce side only by default: every rank ends an all-reduce with
// bit-identical results, because each block is reduced once, by its owner, and then broadcast
// loss-free. A reduced block is divided by the contributions that actually arrived (average) or
// rescaled by world/arrived (sum), so a lost contribution does not bias the result toward zero.
//
// Ranks that share a host run all-reduce, reduce-scatter, all-gather and broadcast
// hierarchically when the job spans several hosts (CommunicatorOptions::topology): within the
// host first, loss-free, then among the hosts, then within the host again; the same guarantees
// hold (docs/collectives.md, "Hierarchical collectives").
//
// Parameter-server mode: with CommunicatorOptions::servers = S > 0 the last S ranks of the world
// are servers; they call serve() and the others (the workers) call the collectives, whose size()
// and rank() count workers only.
#pragma once

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "dlcp/error.hpp"
#include "dlcp/options.hpp"
#include "dlcp/store.hpp"
#include "dlcp/transport.hpp"

namespace dlcp {

enum class Algorithm : std::uint8_t {
  kRing,             // reduce-scatter then all-gather around a ring, pipelined in segments
  kTranspose,        // every rank sends block j to its owner j, owners reduce and send to all
  kParameterServer,  // workers push shards to servers and pull the results
};

enum class ReduceOp : std::uint8_t { kSum, kAverage };

// Whether all-reduce, reduce-scatter, all-gather and broadcast run flat (every worker talks to
// every other one over the network) or hierarchically (reduce within each host over loss-free
// local transfers, run the algorithm among the hosts, spread the result within each host; see
// docs/collectives.md, "Hierarchical collectives").
enum class Topology : std::uint8_t {
  kAuto,          // hierarchical when workers span several hosts and some host holds several
  kFlat,          // every worker is its own host
  kHierarchical,  // always by host (parameter server too: a host's leaders push its sums)
};

enum class Aggregation : std::uint8_t {
  kUnbiased,  // divide by (or rescale to) the contributions that arrived; the default
  kZeroFill,  // the reference system's rule: a lost contribution counts as zero (biased)
};

const char* to_string(Algorithm algorithm);
// Parses "ring", "tar"/"transpose", "ps"/"parameter-server"; throws Error(kInvalidArgument).
Algorithm parse_algorithm(const std::string& name);
const char* to_string(Topology topology);  // "auto", "flat", "hierarchical"
// Parses "auto", "flat", "hierarchical"/"hier"; throws Error(kInvalidArgument).
Topology parse_topology(const std::string& name);

struct CollectiveOptions {
  int layer = 0;  // the tensor's layer position (0 = nearest the input): the priority class
  int num_layers = 1;
  // Fraction of each reduce-side transfer's entries that may be missing (0 = reliable).
  double loss_budget = 0;
  // The same for the broadcast side (all-gather, pull). Above 0 a block that does not arrive
  // falls back to the rank's local value and replicas may drift apart (see resync in docs).
  double broadcast_loss_budget = 0;
  ReduceOp op = ReduceOp::kSum;
  Aggregation aggregation = Aggregation::kUnbiased;
  std::optional<Algorithm> algorithm{};       // default: CommunicatorOptions::algorithm
  std::optional<Topology> topology{};         // default: CommunicatorOptions::topology
  std::chrono::milliseconds deadline{30000};  // per transfer; a dead peer fails sooner
  // How all-reduce's and reduce-scatter's values travel (broadcast, all-gather and point-to-point
  // are float32 only).
  // With a 16-bit dtype every rank first rounds its input to it, blocks are reduced in float32
  // and each result is rounded once more before it is sent, the owner's copy too, so that every
  // rank ends bit-identical. Transpose and parameter server round a block's sum once; ring
  // forwards partial sums, rounding them at each of its size()-1 hops.
  WireDtype wire = WireDtype::kFloat32;
  // Error feedback for a 16-bit wire: the caller's buffer of values.size() floats (reduce-scatter:
  // input.size()), zero before the first call and kept per tensor, into which each call leaves
  // its input's rounding error and from which the next call adds it back. Empty = off.
  std::span<float> error_feedback{};
  // A randomized Hadamard rotation of the values before the all-reduce and back after (the same
  // on every rank; reduce-scatter rotates each shard and its owner unrotates the output), so that a
  // lost packet's error is spread thinly over many entries instead of zeroing a run of them. Costs
  // O(n log n) per call; off by default.
  bool hadamard_rotation = false;

  void validate() const;  // throws Error(kInvalidArgument) naming the field, as in options.hpp
};

struct CollectiveResult {
  std::uint64_t entries = 0;
  // Reduce side, for the blocks this rank reduced: contributions expected (entries x ranks) and
  // contributions that arrived. delivered_fraction = received / expected (1 when nothing lost).
  // Hierarchical: for the blocks this rank finalized among the hosts, counted in workers (a
  // host's locally reduced values count as its workers' contributions); the other ranks of its
  // host report 0 of 0 for them. Summed over the ranks, expected = entries x workers either way.
  // Parameter server: what the pulls say arrived, counted in workers; flat, every worker reports
  // its whole buffer; by host, each stripe leader its stripe (the others 0 of 0), so a host's
  // workers together report entries x workers, as one flat worker does.
  std::uint64_t contributions_expected = 0;
  std::uint64_t contributions_received = 0;
  double delivered_fraction = 1.0;
  // Broadcast side: entries of this rank's result that fell back to the local value.
  // Hierarchical: counted once per host, by the rank that received them among the hosts; the
  // rest of its host then holds the same fallback values.
  std::uint64_t broadcast_entries_missing = 0;
  double seconds = 0;
  int source = -1;  // point-to-point: the peer (for recv_any, the sender it matched)
};

// Completion handle of an asynchronous collective. Copyable; every copy sees the same result.
// Threading: a collective runs on one of the communicator's collective threads (at most
// concurrent_collectives at once), which sleeps until its transfers end (each ends through the
// transport's MessageCallback on its I/O thread) or any rank fails, and then completes the Work;
// a point-to-point Work is completed directly by its transfer's callback, on the I/O thread.
// Nothing polls and no thread starts per operation. A Work offers no completion callback: wait()
// blocks the calling thread, which must therefore not be one of dlcp's (e.g. code run from a
// Transport MessageCallback).
class Work {
 public:
  Work() = default;
  explicit Work(std::shared_future<CollectiveResult> result) : result_(std::move(result)) {}
  bool valid() const { return result_.valid(); }
  bool ready() const;
  // Waits; throws the collective's dlcp::Error.
  CollectiveResult wait() const { return result_.get(); }

 private:
  std::shared_future<CollectiveResult> result_;
};

struct CommunicatorOptions {
  // The transport of this rank; create() fills in rank, world_size, the job token and, unless
  // set here, the job secret (from DLCP_JOB_SECRET, else generated by rank 0 and shared through
  // the store; see docs/security.md).
  TransportOptions transport;
  // Address peers use to reach this rank's control listener (default: transport.bind_host).
  std::string advertise_host;
  Algorithm algorithm = Algorithm::kRing;
  int servers = 0;  // parameter-server ranks at the end of the world
  // Ring all-reduce pipelines each chunk in segments of about this size.
  std::size_t segment_bytes = 4u << 20;
  int concurrent_collectives = 2;  // collectives running at once (more queue behind them)
  // Flat or hierarchical collectives (CollectiveOptions::topology overrides it per call).
  Topology topology = Topology::kAuto;
  // Which host this rank runs on, for hierarchical collectives: ranks with equal host_id form a
  // host. Empty (the default): the kernel's boot id and network namespace, as the local path
  // detects them (else the host name). A test or an unusual deployment may group ranks itself.
  // It groups the collectives only; the transport still decides the local path by itself.
  std::string host_id;
  std::string store_prefix = "dlcp";  // several communicators may share one store

  // For a world of world_size ranks (create() calls it); throws Error(kInvalidArgument) naming
  // the field, as in options.hpp.
  void validate(int world_size) const;
};

class Communicator {
 public:
  // Joins the job: publishes this rank's address in the store, connects to every peer and agrees
  // on a job token and a packet size. Collective over all ranks (servers included).
  static std::unique_ptr<Communicator> create(Store& store, int rank, int world_size,
                                              const CommunicatorOptions& options);
  virtual ~Communicator() = default;

  virtual int rank() const = 0;        // among workers (servers: rank in the world)
  virtual int size() const = 0;        // number of workers
  virtual bool is_server() const = 0;  // parameter-server rank: call serve()

  virtual Work allreduce(std::span<float> values, const CollectiveOptions& options = {}) = 0;
  // Root's values to every worker, loss-free unless broadcast_loss_budget > 0.
  virtual Work broadcast(std::span<float> values, int root,
                         const CollectiveOptions& options = {}) = 0;
  // output = concatenation of every worker's input, in rank order (output.size() = size() x
  // input.size()).
  virtual Work allgather(std::span<const float> input, std::span<float> output,
                         const CollectiveOptions& options = {}) = 0;
  // output = this rank's shard of the reduction of every worker's input: input holds size() x
  // output.size() floats, shard r at [r * n, (r + 1) * n); rank r ends with the reduced shard r.
  // The reduce half of the transpose all-reduce (each rank sends (size()-1)/size() of its input
  // and nothing comes back), whatever `options.algorithm` says; in parameter-server mode the
  // workers reduce among themselves. loss_budget, op, aggregation, wire, error_feedback (of
  // input.size() floats) and hadamard_rotation apply as for allreduce, except that the output is
  // left in float32 (only its owner holds it). Without loss and on a float32 wire the output is,
  // bit for bit, this rank's shard of a transpose all-reduce of the same inputs (when flat: by
  // host the sums are added in another order, docs/collectives.md). `output` may lie
  // inside `input` (the input is then copied first); the input is never written.
  virtual Work reduce_scatter(std::span<const float> input, std::span<float> output,
                              const CollectiveOptions& options = {}) = 0;
  virtual void barrier() = 0;
  // Point-to-point, loss-free, between worker ranks: the k-th send from this rank to `peer` with
  // `tag` fills the k-th recv posted on `peer` from this rank with that tag, which must be the
  // same size. Unordered with collectives. `options`: layer, num_layers and deadline (a loss
  // budget is refused). Tags are told apart by their low 12 bits.
  virtual Work send(std::span<const float> values, int peer, std::uint32_t tag,
                    const CollectiveOptions& options = {}) = 0;
  virtual Work recv(std::span<float> values, int peer, std::uint32_t tag,
                    const CollectiveOptions& options = {}) = 0;
  // A receive from whichever worker's transfer with `tag` arrives first (CollectiveResult::source
  // names it); a transfer of another size fails it. The other workers' next transfers with the
  // tag are then already posted and go to the next receives from them.
  virtual Work recv_any(std::span<float> values, std::uint32_t tag,
                        const CollectiveOptions& options = {}) = 0;

  // Server ranks: serve push/pull requests until every worker's communicator is destroyed.
  // Throws dlcp::Error when a worker fails.
  virtual void serve() = 0;

  virtual TransportCounters counters() const = 0;
};

}  // namespace dlcp
