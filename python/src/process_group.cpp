#include "process_group.hpp"

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "argument_check.hpp"
#include "future_work.hpp"
#include "local_reduction.hpp"
#include "tensor_buffers.hpp"
#include "torch_store.hpp"

namespace dlcp::python {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, -1, "dlcp.torch.Options: " + what);
}

ReduceOp to_dlcp(const c10d::ReduceOp& op) {
  return op == c10d::ReduceOp::AVG ? ReduceOp::kAverage : ReduceOp::kSum;
}

}  // namespace

at::Tensor only_tensor(const std::vector<at::Tensor>& tensors, const char* what) {
  require(tensors.size() == 1, "dlcp: ", what, " takes one tensor per rank, got ", tensors.size(),
          " (the dlcp backend drives one CPU device per process)");
  require_dense_cpu(tensors[0], what);
  return tensors[0];
}

void BackendOptions::validate(int world_size) const {
  communicator.validate(world_size);
  if (!(loss_budget >= 0 && loss_budget <= 1)) {
    invalid("loss_budget must be within [0, 1], got " + std::to_string(loss_budget));
  }
  if (lossy_min_entries < 0) {
    invalid("lossy_min_entries must be >= 0, got " + std::to_string(lossy_min_entries));
  }
  if (num_layers < 1) invalid("num_layers must be >= 1, got " + std::to_string(num_layers));
  if (layer < 0 || layer >= num_layers) {
    invalid("layer must be within [0, num_layers - 1 = " + std::to_string(num_layers - 1) +
            "], got " + std::to_string(layer));
  }
  if (deadline.count() <= 0) {
    invalid("deadline_ms must be positive, got " + std::to_string(deadline.count()));
  }
}

ProcessGroupDlcp::ProcessGroupDlcp(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                   const BackendOptions& options)
    : c10d::ProcessGroup(rank, size), options_(options) {
  options_.validate(size);
  TorchStore rendezvous(store);
  communicator_ = Communicator::create(rendezvous, rank, size, options_.communicator);
  completer_ = std::make_unique<FutureCompleter>();
}

ProcessGroupDlcp::~ProcessGroupDlcp() {
  // Python may drop the last reference while holding the GIL, and a pending future's Python
  // callback (a hook's .then) needs the GIL to finish: let go of it while draining.
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release release;
    shutdown();
  } else {
    shutdown();
  }
}

void ProcessGroupDlcp::shutdown() {
  std::shared_ptr<Communicator> leaving;
  {
    std::lock_guard lock(mutex_);
    leaving = std::move(communicator_);
  }
  if (completer_) completer_->drain();
  leaving.reset();  // waits for the communicator's queue, then says goodbye to the peers
}

std::shared_ptr<Communicator> ProcessGroupDlcp::live(const char* what) const {
  std::lock_guard lock(mutex_);
  if (!communicator_) {
    throw Error(ErrorCode::kAborted, -1,
                std::string("dlcp: ") + what + " on a process group that was shut down");
  }
  return communicator_;
}

CollectiveOptions ProcessGroupDlcp::collective_options(double loss_budget, int layer) const {
  CollectiveOptions collective;
  collective.layer = layer;
  collective.num_layers = options_.num_layers;
  collective.loss_budget = loss_budget;
  collective.aggregation = options_.aggregation;
  collective.deadline = options_.deadline;
  return collective;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::work(
    c10::intrusive_ptr<c10::ivalue::Future> future, c10d::OpType type) const {
  return c10::make_intrusive<FutureWork>(std::move(future), getRank(), type);
}

c10::intrusive_ptr<c10::ivalue::Future> ProcessGroupDlcp::post(FutureCompleter::Job job) {
  job.future = make_tensor_list_future();
  auto future = job.future;
  completer_->add(std::move(job));
  return future;
}

void ProcessGroupDlcp::count(const std::vector<CollectiveResult>& results, std::uint64_t lossy) {
  std::lock_guard lock(mutex_);
  totals_.collectives += results.size();
  totals_.lossy_collectives += lossy;
  for (const CollectiveResult& result : results) {
    totals_.entries += result.entries;
    totals_.contributions_expected += result.contributions_expected;
    totals_.contributions_received += result.contributions_received;
    totals_.broadcast_entries_missing += result.broadcast_entries_missing;
    totals_.seconds += result.seconds;
  }
}

CollectiveTotals ProcessGroupDlcp::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

void ProcessGroupDlcp::reset_totals() {
  std::lock_guard lock(mutex_);
  totals_ = {};
}

TransportCounters ProcessGroupDlcp::counters() const {
  return live("counters")->counters();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::broadcast(std::vector<at::Tensor>& tensors,
                                                           const c10d::BroadcastOptions& opts) {
  const at::Tensor tensor = only_tensor(tensors, "broadcast");
  require(opts.rootTensor == 0, "dlcp: broadcast rootTensor must be 0");
  auto buffer = std::make_shared<TensorBuffer>(TensorBuffer::for_bytes(tensor, "broadcast tensor"));
  FutureCompleter::Job job;
  job.works.push_back(live("broadcast")
                          ->broadcast(buffer->floats(), static_cast<int>(opts.rootRank),
                                      collective_options(0, options_.layer)));
  job.finish = [this, buffer](const std::vector<CollectiveResult>& results) {
    buffer->finish();
    count(results, 0);
  };
  job.value = {tensor};
  return work(post(std::move(job)), c10d::OpType::BROADCAST);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::allreduce(std::vector<at::Tensor>& tensors,
                                                           const c10d::AllreduceOptions& opts) {
  const at::Tensor tensor = only_tensor(tensors, "all_reduce");
  FutureCompleter::Job job = reduction_job(tensor, opts.reduceOp, "all_reduce", true);
  job.value = {tensor};
  return work(post(std::move(job)), c10d::OpType::ALLREDUCE);
}

FutureCompleter::Job ProcessGroupDlcp::reduction_job(const at::Tensor& tensor,
                                                     const c10d::ReduceOp& op, const char* what,
                                                     bool may_lose) {
  check_reducible(op, tensor.scalar_type(), what);
  if (tensor.numel() == 0) return {};  // every rank's is empty: nothing to move
  if (!on_float_path(op, tensor.scalar_type())) {
    // Exact: every rank's tensor gathered, reduced here in its own dtype.
    const at::Tensor target = tensor.detach();
    return gather_job(target, what, [target, op](const std::vector<at::Tensor>& parts) {
      target.copy_(reduce_parts(parts, op));
    });
  }
  auto buffer = std::make_shared<TensorBuffer>(TensorBuffer::for_reduction(tensor, what));
  // Small tensors gain nothing from an early finish or from fewer bytes: exact.
  const bool gradient_sized = may_lose && tensor.numel() >= options_.lossy_min_entries;
  const bool lossy = gradient_sized && options_.loss_budget > 0;
  CollectiveOptions collective =
      collective_options(lossy ? options_.loss_budget : 0, options_.layer);
  collective.op = to_dlcp(op);
  if (gradient_sized) {
    collective.wire = options_.wire;
    collective.hadamard_rotation = options_.hadamard_rotation;
  }
  FutureCompleter::Job job;
  job.works.push_back(live(what)->allreduce(buffer->floats(), collective));
  job.finish = [this, buffer, lossy](const std::vector<CollectiveResult>& results) {
    buffer->finish();
    count(results, lossy ? 1 : 0);
  };
  return job;
}

FutureCompleter::Job ProcessGroupDlcp::gather_job(
    const at::Tensor& input, const char* what,
    std::function<void(const std::vector<at::Tensor>&)> use) {
  auto in = std::make_shared<TensorBuffer>(TensorBuffer::for_bytes(input, what));
  const auto slot = static_cast<std::int64_t>(in->floats().size());
  auto gathered = at::empty({slot * getSize()}, at::TensorOptions().dtype(at::kFloat));
  FutureCompleter::Job job;
  if (slot > 0) {  // every rank's input has the same size
    job.works.push_back(live(what)->allgather(
        in->floats(), {gathered.data_ptr<float>(), static_cast<std::size_t>(gathered.numel())},
        collective_options(0, options_.layer)));
  }
  const at::Tensor like = input.detach();
  job.finish = [this, in, gathered, slot, like,
                use = std::move(use)](const std::vector<CollectiveResult>& results) {
    std::vector<at::Tensor> parts;
    for (int rank = 0; rank < getSize(); ++rank) {
      at::Tensor part = at::empty_like(like, at::MemoryFormat::Contiguous);
      unpack_bytes(gathered.narrow(0, rank * slot, slot), part);
      parts.push_back(std::move(part));
    }
    use(parts);
    count(results, 0);
  };
  return job;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& /*opts*/) {
  const at::Tensor input = only_tensor(inputs, "all_gather");
  require(outputs.size() == 1, "dlcp: all_gather takes one output list per rank, got ",
          outputs.size());
  const std::vector<at::Tensor>& targets = outputs[0];
  require(static_cast<int>(targets.size()) == getSize(), "dlcp: all_gather needs ", getSize(),
          " output tensors (one per rank), got ", targets.size());
  for (const at::Tensor& target : targets) {
    require_dense_cpu(target, "all_gather output");
    require(target.scalar_type() == input.scalar_type() && target.numel() == input.numel(),
            "dlcp: every all_gather output must match the input's dtype and size (",
            c10::toString(input.scalar_type()), ", ", input.numel(), " entries)");
  }
  FutureCompleter::Job job =
      gather_job(input, "all_gather", [targets](const std::vector<at::Tensor>& parts) {
        for (std::size_t rank = 0; rank < targets.size(); ++rank) {
          targets[rank].detach().copy_(parts[rank].reshape(targets[rank].sizes()));
        }
      });
  job.value = targets;
  return work(post(std::move(job)), c10d::OpType::ALLGATHER);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& /*opts*/) {
  require_dense_cpu(output, "all_gather_into_tensor output");
  require(output.is_contiguous(), "dlcp: all_gather_into_tensor output must be contiguous");
  require(
      output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * getSize(),
      "dlcp: all_gather_into_tensor output must hold world size x the input (", getSize(), " x ",
      input.numel(), " entries of ", c10::toString(input.scalar_type()), ")");
  const at::Tensor flat = output.detach().view({-1});
  FutureCompleter::Job job =
      gather_job(input, "all_gather_into_tensor", [flat](const std::vector<at::Tensor>& parts) {
        std::int64_t offset = 0;
        for (const at::Tensor& part : parts) {
          flat.narrow(0, offset, part.numel()).copy_(part.reshape({-1}));
          offset += part.numel();
        }
      });
  job.value = {output};
  return work(post(std::move(job)), c10d::OpType::_ALLGATHER_BASE);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::barrier(const c10d::BarrierOptions& /*opts*/) {
  live("barrier")->barrier();
  auto future = make_tensor_list_future();
  future->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
  return work(std::move(future), c10d::OpType::BARRIER);
}

}  // namespace dlcp::python
