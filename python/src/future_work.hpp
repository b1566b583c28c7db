// The c10d::Work a dlcp process group returns: a view of the collective's future. (torch 1.13's
// Work::create_from_future does not wait in wait() and expects Python values in result(), so
// it cannot serve a C++ backend.)
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <atomic>
#include <memory>

namespace dlcp::python {

class FutureWork final : public c10d::Work {
 public:
  // `source`, if given, is filled in (before the future completes) with the rank a receive
  // took its tensor from: sourceRank() reads it.
  FutureWork(c10::intrusive_ptr<c10::ivalue::Future> future, int rank, c10d::OpType type,
             std::shared_ptr<std::atomic<int>> source = nullptr);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  // Blocks until the collective is done (at most `timeout`, unless it is kNoTimeout) and
  // rethrows its error; a timeout raises dlcp::Error(kDeadline).
  bool wait(std::chrono::milliseconds timeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  int sourceRank() const override;

 private:
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<std::atomic<int>> source_;
};

}  // namespace dlcp::python
