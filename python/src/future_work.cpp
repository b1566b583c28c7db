#include "future_work.hpp"

#include <string>
#include <thread>
#include <utility>

#include "dlcp/error.hpp"

namespace dlcp::python {

FutureWork::FutureWork(c10::intrusive_ptr<c10::ivalue::Future> future, int rank, c10d::OpType type,
                       std::shared_ptr<std::atomic<int>> source)
    : c10d::Work(rank, type), future_(std::move(future)), source_(std::move(source)) {}

int FutureWork::sourceRank() const {
  if (!source_) return c10d::Work::sourceRank();  // raises: not a receive from any source
  return source_->load();
}

bool FutureWork::isCompleted() {
  return future_->completed();
}

bool FutureWork::isSuccess() const {
  return future_->completed() && !future_->hasError();
}

std::exception_ptr FutureWork::exception() const {
  return future_->completed() ? future_->exception_ptr() : nullptr;
}

std::vector<at::Tensor> FutureWork::result() {
  return future_->value().toTensorVector();
}

bool FutureWork::wait(std::chrono::milliseconds timeout) {
  if (timeout == kNoTimeout) {
    future_->wait();
  } else {
    // c10's future has no timed wait; a timed wait is rare (monitored barriers, debugging).
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!future_->completed()) {
      if (std::chrono::steady_clock::now() >= deadline) {
        throw Error(ErrorCode::kDeadline, -1,
                    "dlcp: collective not done within " + std::to_string(timeout.count()) + " ms");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  if (future_->hasError()) std::rethrow_exception(future_->exception_ptr());
  return true;
}

}  // namespace dlcp::python
