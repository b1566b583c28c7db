// Collectives with a root: reduce, gather and scatter. All exact (no loss budget): they carry
// results and metrics, not gradients.
#include "argument_check.hpp"
#include "local_reduction.hpp"
#include "process_group.hpp"
#include "tensor_buffers.hpp"

namespace dlcp::python {

void ProcessGroupDlcp::check_rank(int rank, const char* what) const {
  require(rank >= 0 && rank < getSize(), "dlcp: ", what, " rank ", rank,
          " is outside the group of ", getSize());
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::reduce(std::vector<at::Tensor>& tensors,
                                                        const c10d::ReduceOptions& opts) {
  const at::Tensor tensor = only_tensor(tensors, "reduce");
  check_rank(static_cast<int>(opts.rootRank), "reduce root");
  require(opts.rootTensor == 0, "dlcp: reduce rootTensor must be 0");
  // Reduced on a copy everywhere: only the root's tensor changes.
  const at::Tensor result = tensor.detach().clone(at::MemoryFormat::Contiguous);
  FutureCompleter::Job job = reduction_job(result, opts.reduceOp, "reduce", false);
  if (getRank() == opts.rootRank) {
    job.finish = [finish = std::move(job.finish), result,
                  target = tensor.detach()](const std::vector<CollectiveResult>& results) {
      if (finish) finish(results);
      target.copy_(result);
    };
  }
  job.value = {tensor};
  return work(post(std::move(job)), c10d::OpType::REDUCE);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor input = only_tensor(inputs, "gather input");
  const int root = static_cast<int>(opts.rootRank);
  check_rank(root, "gather root");
  std::vector<at::Tensor> targets;
  if (getRank() == root) {
    require(outputs.size() == 1 && static_cast<int>(outputs[0].size()) == getSize(),
            "dlcp: gather needs one list of ", getSize(), " output tensors on the root");
    targets = outputs[0];
    for (const at::Tensor& target : targets) {
      require_dense_cpu(target, "gather output");
      require(target.scalar_type() == input.scalar_type() && target.numel() == input.numel(),
              "dlcp: every gather output must match the input's dtype and size (",
              c10::toString(input.scalar_type()), ", ", input.numel(), " entries)");
    }
  } else {
    require(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
            "dlcp: gather takes output tensors on the root only");
  }
  FutureCompleter::Job job =
      gather_job(input, "gather", [targets](const std::vector<at::Tensor>& parts) {
        for (std::size_t rank = 0; rank < targets.size(); ++rank) {
          targets[rank].detach().copy_(parts[rank].reshape(targets[rank].sizes()));
        }
      });
  job.value = targets;
  return work(post(std::move(job)), c10d::OpType::GATHER);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor output = only_tensor(outputs, "scatter output");
  const int root = static_cast<int>(opts.rootRank);
  check_rank(root, "scatter root");
  const auto slot = static_cast<std::int64_t>(padded_floats(output));
  auto staging = at::zeros({slot * getSize()}, at::TensorOptions().dtype(at::kFloat));
  if (getRank() == root) {
    require(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
            "dlcp: scatter needs one list of ", getSize(), " input tensors on the root");
    for (int rank = 0; rank < getSize(); ++rank) {
      const at::Tensor& source = inputs[0][static_cast<std::size_t>(rank)];
      require_dense_cpu(source, "scatter input");
      require(source.scalar_type() == output.scalar_type() && source.numel() == output.numel(),
              "dlcp: every scatter input must match the output's dtype and size (",
              c10::toString(output.scalar_type()), ", ", output.numel(), " entries)");
      pack_bytes(source, staging.narrow(0, rank * slot, slot));
    }
  } else {
    require(inputs.empty() || (inputs.size() == 1 && inputs[0].empty()),
            "dlcp: scatter takes input tensors on the root only");
  }
  FutureCompleter::Job job;
  if (slot > 0) {
    job.works.push_back(live("scatter")->broadcast(
        {staging.data_ptr<float>(), static_cast<std::size_t>(staging.numel())}, root,
        collective_options(0, options_.layer)));
  }
  job.finish = [this, staging, slot, target = output.detach(),
                rank = getRank()](const std::vector<CollectiveResult>& results) {
    unpack_bytes(staging.narrow(0, rank * slot, slot), target);
    count(results, 0);
  };
  job.value = {output};
  return work(post(std::move(job)), c10d::OpType::SCATTER);
}

}  // namespace dlcp::python
