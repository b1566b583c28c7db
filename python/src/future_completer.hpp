// Completes torch futures when dlcp collectives finish. dlcp's Work offers no completion
// callback, so one thread per process group waits on the jobs in the order they were posted
// (the order every rank issues them in) and marks each job's future: with its tensors, or with
// the collective's error. The future's callbacks (DDP's, a hook's .then) run on this thread.
#pragma once

#include <ATen/core/ivalue.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "dlcp/communicator.hpp"

namespace dlcp::python {

class FutureCompleter {
 public:
  struct Job {
    std::vector<Work> works;
    // Runs once every work succeeded, before the future is marked: copies staged results back
    // and counts. May throw; the future then carries that error.
    std::function<void(const std::vector<CollectiveResult>&)> finish;
    c10::intrusive_ptr<c10::ivalue::Future> future;
    std::vector<at::Tensor> value;  // the future's value; also keeps the tensors alive
  };

  FutureCompleter();
  // Completes every queued job first.
  ~FutureCompleter();
  FutureCompleter(const FutureCompleter&) = delete;
  FutureCompleter& operator=(const FutureCompleter&) = delete;

  void add(Job job);
  // Returns once every job added so far is complete.
  void drain();

 private:
  void run();
  static void complete(Job& job);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

// A future whose value is a list of tensors, as DDP's reducer and torch's Work expect.
c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future();

}  // namespace dlcp::python
