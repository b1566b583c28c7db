// The `dlcp` torch.distributed backend: a c10d::ProcessGroup over one dlcp communicator.
//
// Collectives are posted to the communicator at once (asynchronously, in call order) and return
// a Work whose future the completer thread marks when the collective is done, so DDP overlaps
// gradient transfers with the backward pass exactly as with gloo. Float all-reduces of at least
// `lossy_min_entries` entries may lose up to `loss_budget` of their contributions (unbiased);
// everything else (broadcast, all-gather, integers, small tensors) is loss-free.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
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

  BackendOptions options_;
  mutable std::mutex mutex_;  // guards communicator_ and totals_
  std::shared_ptr<Communicator> communicator_;
  CollectiveTotals totals_;
  // Declared last: destroyed first, so queued futures complete while the communicator lives.
  std::unique_ptr<FutureCompleter> completer_;
};

}  // namespace dlcp::python
