// Completes torch futures when dlcp collectives finish, through a WorkCompleter: each job's
// future is marked, with its tensors or the collective's error, in the order the jobs were
// posted. The future's callbacks (DDP's, a user's .then) run on the completer's thread.
#pragma once

#include <ATen/core/ivalue.h>

#include <functional>
#include <vector>

#include "work_completer.hpp"

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

  void add(Job job);
  // Returns once every job added so far is complete.
  void drain() { completer_.drain(); }

 private:
  WorkCompleter completer_;
};

// A future whose value is a list of tensors, as DDP's reducer and torch's Work expect.
c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future();

}  // namespace dlcp::python
