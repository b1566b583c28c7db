// The `dlcp` torch.distributed backend: a c10d::ProcessGroup over one dlcp communicator.
//
// Collectives are posted to the communicator at once (asynchronously, in call order) and return
// a Work whose future the completer thread marks when the collective is done, so DDP overlaps
// gradient transfers with the backward pass exactly as with gloo. Float SUM/AVG all-reduces and
// reduce-scatters of at least `lossy_min_entries` entries may lose up to `loss_budget` of their
// contributions (unbiased); everything else is loss-free and exact: other ops and dtypes are
// reduced here from every rank's tensor gathered byte for byte (local_reduction.hpp).
// Split by job: process_group.cpp (lifecycle, all-reduce, broadcast, all-gather, barrier),
// process_group_rooted.cpp (reduce, gather, scatter), process_group_sharded.cpp
// (reduce-scatter, all-to-all), process_group_p2p.cpp (send, recv).
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "dlcp/communicator.hpp"
#include "future_completer.hpp"

namespace dlcp::python {

struct BackendOptions {
  CommunicatorOptions communicator;
  double loss_budget = 0;                 // reduce side of lossy all-reduces
  std::int64_t lossy_min_entries = 1024;  // smaller all-reduces are always loss-free
  Aggregation aggregation = Aggregation::kUnbiased;
  int layer = 0;  // priority class of the backend's all-reduces (the hook sets its own)
  int num_layers = 1;
  std::chrono::milliseconds deadline{30000};  // per transfer
  // How gradient-sized reductions travel: float SUM/AVG all-reduces and reduce-scatters of at
  // least lossy_min_entries entries (the ones a loss budget may apply to); every other
  // collective stays float32. Error feedback needs a tensor's identity across calls, which a
  // process group does not see: the communication hook offers it.
  WireDtype wire = WireDtype::kFloat32;
  bool hadamard_rotation = false;  // on the same reductions (CollectiveOptions)

  // Throws dlcp::Error(kInvalidArgument) naming the field.
  void validate(int world_size) const;
};

// Sums over every collective since the process group was created (or reset). Ratios are
// computed from them in Python (dlcp/torch/metrics.py), where they are unit-tested.
struct CollectiveTotals {
  std::uint64_t collectives = 0;
  std::uint64_t lossy_collectives = 0;  // posted with a loss budget above 0
  std::uint64_t entries = 0;
  std::uint64_t contributions_expected = 0;
  std::uint64_t contributions_received = 0;
  std::uint64_t broadcast_entries_missing = 0;
  double seconds = 0;  // sum of the collectives' own durations (they may overlap)
};

// The one tensor of a per-rank tensor list (the backend drives one CPU device per process),
// checked to be a dense CPU tensor.
at::Tensor only_tensor(const std::vector<at::Tensor>& tensors, const char* what);

class ProcessGroupDlcp final : public c10d::ProcessGroup {
 public:
  // Joins the job through `store` (collective over all `size` ranks).
  ProcessGroupDlcp(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                   const BackendOptions& options);
  ~ProcessGroupDlcp() override;

  const std::string getBackendName() const override { return "dlcp"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  // Blocks until every rank arrives: ranks must see collectives in the same order, so the
  // barrier is posted from the calling thread (the returned Work is already complete).
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  // All-to-all moves every rank's whole input to every rank (exact, not bandwidth-optimal);
  // with split sizes, the ranks first agree on them (blocking the calling thread briefly).
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank,
                                      int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;

  CollectiveTotals totals() const;
  void reset_totals();
  TransportCounters counters() const;
  const BackendOptions& options() const { return options_; }

  // Completes every posted collective, then leaves the job; later collectives raise.
  // Idempotent; also run by the destructor.
  void shutdown();

 private:
  std::shared_ptr<Communicator> live(const char* what) const;
  CollectiveOptions collective_options(double loss_budget, int layer) const;
  c10::intrusive_ptr<c10::ivalue::Future> post(FutureCompleter::Job job);
  c10::intrusive_ptr<c10d::Work> work(c10::intrusive_ptr<c10::ivalue::Future> future,
                                      c10d::OpType type) const;
  void count(const std::vector<CollectiveResult>& results, std::uint64_t lossy);
  // Reduces `tensor` in place over every rank with `op`: dlcp's float all-reduce for float
  // SUM/AVG (with the loss budget if `may_lose` and the tensor is large enough), else exactly
  // from the gathered tensors. Checks that `op` can reduce the dtype.
  FutureCompleter::Job reduction_job(const at::Tensor& tensor, const c10d::ReduceOp& op,
                                     const char* what, bool may_lose);
  // An exact all-gather of `input`'s bytes; `use` receives every rank's tensor (the dtype and
  // shape of `input`, rank r's at r) on the completer's thread.
  FutureCompleter::Job gather_job(const at::Tensor& input, const char* what,
                                  std::function<void(const std::vector<at::Tensor>&)> use);
  // Reduce-scatter of `combined` (every rank's shards, rank r's at [r * n, (r + 1) * n)) into
  // `output` (n entries).
  FutureCompleter::Job reduce_scatter_job(const at::Tensor& combined, const at::Tensor& output,
                                          const c10d::ReduceOp& op, const char* what);
  // All-to-all of flat `input` into flat `output`: this rank sends in_counts[r] entries to rank r
  // (in rank order) and receives out_counts[r] from it. Validates against the other ranks'.
  FutureCompleter::Job alltoall_job(const at::Tensor& input, const at::Tensor& output,
                                    const std::vector<std::int64_t>& in_counts,
                                    const std::vector<std::int64_t>& out_counts, const char* what);
  void check_rank(int rank, const char* what) const;

  BackendOptions options_;
  mutable std::mutex mutex_;  // guards communicator_ and totals_
  std::shared_ptr<Communicator> communicator_;
  CollectiveTotals totals_;
  // Declared last: destroyed first, so queued futures complete while the communicator lives.
  std::unique_ptr<FutureCompleter> completer_;
};

}  // namespace dlcp::python
