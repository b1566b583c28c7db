// Collectives that shard: reduce-scatter (FSDP's and ZeRO's gradient step, which may carry the
// loss budget) and all-to-all (exact).
#include <algorithm>
#include <numeric>

#include "argument_check.hpp"
#include "local_reduction.hpp"
#include "process_group.hpp"
#include "tensor_buffers.hpp"

namespace dlcp::python {
namespace {

at::Tensor flat_copy(const at::Tensor& tensor) {
  return tensor.detach().reshape({-1}).clone(at::MemoryFormat::Contiguous);
}

}  // namespace

FutureCompleter::Job ProcessGroupDlcp::reduce_scatter_job(const at::Tensor& combined,
                                                          const at::Tensor& output,
                                                          const c10d::ReduceOp& op,
                                                          const char* what) {
  // The whole of `combined` is reduced (dlcp's all-reduce moves each rank's share of it once
  // per step, as a reduce-scatter would, and then shares the results), and this rank keeps its
  // shard: gradients may lose a budget of their contributions, as in an all-reduce.
  FutureCompleter::Job job = reduction_job(combined, op, what, true);
  const std::int64_t n = output.numel();
  job.finish = [finish = std::move(job.finish), combined, n, rank = getRank(),
                target = output.detach()](const std::vector<CollectiveResult>& results) {
    if (finish) finish(results);
    if (n > 0) target.copy_(combined.narrow(0, rank * n, n).view(target.sizes()));
  };
  return job;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor output = only_tensor(outputs, "reduce_scatter output");
  require(inputs.size() == 1 && static_cast<int>(inputs[0].size()) == getSize(),
          "dlcp: reduce_scatter needs one list of ", getSize(), " input tensors");
  std::vector<at::Tensor> flat;
  for (const at::Tensor& input : inputs[0]) {
    require_dense_cpu(input, "reduce_scatter input");
    require(input.scalar_type() == output.scalar_type() && input.numel() == output.numel(),
            "dlcp: every reduce_scatter input must match the output's dtype and size (",
            c10::toString(output.scalar_type()), ", ", output.numel(), " entries)");
    flat.push_back(input.detach().reshape({-1}));
  }
  FutureCompleter::Job job =
      reduce_scatter_job(at::cat(flat).contiguous(), output, opts.reduceOp, "reduce_scatter");
  job.value = {output};
  return work(post(std::move(job)), c10d::OpType::REDUCE_SCATTER);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  require_dense_cpu(output, "reduce_scatter_tensor output");
  require_dense_cpu(input, "reduce_scatter_tensor input");
  require(
      input.scalar_type() == output.scalar_type() && input.numel() == output.numel() * getSize(),
      "dlcp: reduce_scatter_tensor input must hold world size x the output (", getSize(), " x ",
      output.numel(), " entries of ", c10::toString(output.scalar_type()), ")");
  FutureCompleter::Job job =
      reduce_scatter_job(flat_copy(input), output, opts.reduceOp, "reduce_scatter_tensor");
  job.value = {output};
  return work(post(std::move(job)), c10d::OpType::_REDUCE_SCATTER_BASE);
}

FutureCompleter::Job ProcessGroupDlcp::alltoall_job(const at::Tensor& input,
                                                    const at::Tensor& output,
                                                    const std::vector<std::int64_t>& in_counts,
                                                    const std::vector<std::int64_t>& out_counts,
                                                    const char* what) {
  const auto size = static_cast<std::size_t>(getSize());
  // Every rank's counts, agreed first (blocking: the data transfer's size depends on them).
  auto mine = at::tensor(in_counts, at::TensorOptions().dtype(at::kLong));
  auto all_counts = at::empty({getSize() * getSize()}, at::TensorOptions().dtype(at::kLong));
  live(what)
      ->allgather({static_cast<float*>(mine.data_ptr()), size * 2},
                  {static_cast<float*>(all_counts.data_ptr()), size * size * 2},
                  collective_options(0, options_.layer))
      .wait();
  const auto* counts = all_counts.data_ptr<std::int64_t>();  // [sender][receiver]
  std::int64_t largest = 0;
  for (std::size_t sender = 0; sender < size; ++sender) {
    const std::int64_t expected = counts[sender * size + static_cast<std::size_t>(getRank())];
    require(expected == out_counts[sender], "dlcp: ", what, ": rank ", sender, " sends ", expected,
            " entries to rank ", getRank(), ", which expects ", out_counts[sender]);
    largest = std::max(largest, std::accumulate(counts + sender * size,
                                                counts + (sender + 1) * size, std::int64_t{0}));
  }
  // Every rank's input, padded to the largest, gathered; this rank takes its parts.
  at::Tensor padded = at::zeros({largest}, input.options());
  if (input.numel() > 0) padded.narrow(0, 0, input.numel()).copy_(input);
  const at::Tensor target = output.detach();
  std::vector<std::int64_t> count_table(counts, counts + size * size);
  if (largest == 0) return {};
  return gather_job(
      padded, what,
      [target, count_table, size, rank = getRank()](const std::vector<at::Tensor>& parts) {
        std::int64_t at_output = 0;
        for (std::size_t sender = 0; sender < size; ++sender) {
          const std::int64_t* row = &count_table[sender * size];
          const std::int64_t offset =
              std::accumulate(row, row + static_cast<std::size_t>(rank), std::int64_t{0});
          const std::int64_t length = row[static_cast<std::size_t>(rank)];
          if (length > 0) {
            target.narrow(0, at_output, length).copy_(parts[sender].narrow(0, offset, length));
          }
          at_output += length;
        }
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_split_sizes,
    std::vector<int64_t>& input_split_sizes, const c10d::AllToAllOptions& /*opts*/) {
  require_dense_cpu(output, "all_to_all_single output");
  require_dense_cpu(input, "all_to_all_single input");
  require(output.is_contiguous(), "dlcp: all_to_all_single output must be contiguous");
  require(input.scalar_type() == output.scalar_type(),
          "dlcp: all_to_all_single input and output must have one dtype");
  // Splits count rows (the first dimension); none means equal parts.
  const auto entries_per_row = [](const at::Tensor& tensor) -> std::int64_t {
    return tensor.dim() == 0 || tensor.size(0) == 0 ? 1 : tensor.numel() / tensor.size(0);
  };
  const auto counts = [&](const at::Tensor& tensor, const std::vector<int64_t>& splits,
                          const char* which) {
    const std::int64_t rows = tensor.dim() == 0 ? 1 : tensor.size(0);
    std::vector<std::int64_t> result;
    if (splits.empty()) {
      require(rows % getSize() == 0, "dlcp: all_to_all_single ", which, " has ", rows,
              " rows, not divisible by the group's ", getSize());
      result.assign(static_cast<std::size_t>(getSize()),
                    rows / getSize() * entries_per_row(tensor));
    } else {
      require(static_cast<int>(splits.size()) == getSize(), "dlcp: all_to_all_single ", which,
              " split sizes need ", getSize(), " entries, got ", splits.size());
      require(std::accumulate(splits.begin(), splits.end(), std::int64_t{0}) == rows,
              "dlcp: all_to_all_single ", which, " split sizes do not add up to its ", rows,
              " rows");
      for (const int64_t split : splits) result.push_back(split * entries_per_row(tensor));
    }
    return result;
  };
  const auto in_counts = counts(input, input_split_sizes, "input");
  const auto out_counts = counts(output, output_split_sizes, "output");
  FutureCompleter::Job job =
      alltoall_job(input.detach().reshape({-1}).contiguous(), output.detach().view({-1}), in_counts,
                   out_counts, "all_to_all_single");
  job.value = {output};
  return work(post(std::move(job)), c10d::OpType::ALLTOALL_BASE);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::alltoall(std::vector<at::Tensor>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllToAllOptions& /*opts*/) {
  require(
      static_cast<int>(inputs.size()) == getSize() && static_cast<int>(outputs.size()) == getSize(),
      "dlcp: all_to_all needs ", getSize(), " input and ", getSize(), " output tensors");
  std::vector<at::Tensor> flat_inputs;
  std::vector<std::int64_t> in_counts;
  std::vector<std::int64_t> out_counts;
  for (int rank = 0; rank < getSize(); ++rank) {
    const at::Tensor& input = inputs[static_cast<std::size_t>(rank)];
    const at::Tensor& output = outputs[static_cast<std::size_t>(rank)];
    require_dense_cpu(input, "all_to_all input");
    require_dense_cpu(output, "all_to_all output");
    require(input.scalar_type() == inputs[0].scalar_type() &&
                output.scalar_type() == inputs[0].scalar_type(),
            "dlcp: all_to_all tensors must have one dtype");
    flat_inputs.push_back(input.detach().reshape({-1}));
    in_counts.push_back(input.numel());
    out_counts.push_back(output.numel());
  }
  const std::int64_t total = std::accumulate(out_counts.begin(), out_counts.end(), std::int64_t{0});
  at::Tensor received = at::empty({total}, inputs[0].options());
  FutureCompleter::Job job = alltoall_job(at::cat(flat_inputs).contiguous(), received, in_counts,
                                          out_counts, "all_to_all");
  job.finish = [finish = std::move(job.finish), received, outputs,
                out_counts](const std::vector<CollectiveResult>& results) {
    if (finish) finish(results);
    std::int64_t offset = 0;
    for (std::size_t rank = 0; rank < outputs.size(); ++rank) {
      const std::int64_t length = out_counts[rank];
      if (length > 0) {
        outputs[rank].detach().copy_(
            received.narrow(0, offset, length).view(outputs[rank].sizes()));
      }
      offset += length;
    }
  };
  job.value = outputs;
  return work(post(std::move(job)), c10d::OpType::ALLTOALL);
}

}  // namespace dlcp::python
