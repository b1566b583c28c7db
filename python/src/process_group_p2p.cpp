// Point-to-point: send, recv and recv from any source over the communicator's loss-free
// transfers, matched by peer and tag in posting order.
#include "argument_check.hpp"
#include "future_work.hpp"
#include "process_group.hpp"
#include "tensor_buffers.hpp"

namespace dlcp::python {

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::send(std::vector<at::Tensor>& tensors,
                                                      int dst_rank, int tag) {
  const at::Tensor tensor = only_tensor(tensors, "send");
  check_rank(dst_rank, "send destination");
  require(dst_rank != getRank(), "dlcp: send to itself (rank ", dst_rank, ")");
  auto buffer = std::make_shared<TensorBuffer>(TensorBuffer::for_bytes(tensor, "send tensor"));
  FutureCompleter::Job job;
  job.works.push_back(live("send")->send(buffer->floats(), dst_rank,
                                         static_cast<std::uint32_t>(tag),
                                         collective_options(0, options_.layer)));
  job.finish = [this, buffer](const std::vector<CollectiveResult>& results) { count(results, 0); };
  job.value = {tensor};
  return work(post(std::move(job)), c10d::OpType::SEND);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::recv(std::vector<at::Tensor>& tensors,
                                                      int src_rank, int tag) {
  const at::Tensor tensor = only_tensor(tensors, "recv");
  check_rank(src_rank, "recv source");
  require(src_rank != getRank(), "dlcp: recv from itself (rank ", src_rank, ")");
  auto buffer = std::make_shared<TensorBuffer>(TensorBuffer::for_bytes(tensor, "recv tensor"));
  FutureCompleter::Job job;
  job.works.push_back(live("recv")->recv(buffer->floats(), src_rank,
                                         static_cast<std::uint32_t>(tag),
                                         collective_options(0, options_.layer)));
  job.finish = [this, buffer](const std::vector<CollectiveResult>& results) {
    buffer->finish();
    count(results, 0);
  };
  job.value = {tensor};
  return work(post(std::move(job)), c10d::OpType::RECV);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupDlcp::recvAnysource(std::vector<at::Tensor>& tensors,
                                                               int tag) {
  const at::Tensor tensor = only_tensor(tensors, "recv");
  auto buffer = std::make_shared<TensorBuffer>(TensorBuffer::for_bytes(tensor, "recv tensor"));
  auto source = std::make_shared<std::atomic<int>>(-1);
  FutureCompleter::Job job;
  job.works.push_back(live("recv")->recv_any(buffer->floats(), static_cast<std::uint32_t>(tag),
                                             collective_options(0, options_.layer)));
  job.finish = [this, buffer, source](const std::vector<CollectiveResult>& results) {
    buffer->finish();
    source->store(results.at(0).source);
    count(results, 0);
  };
  job.value = {tensor};
  return c10::make_intrusive<FutureWork>(post(std::move(job)), getRank(),
                                         c10d::OpType::RECVANYSOURCE, std::move(source));
}

}  // namespace dlcp::python
