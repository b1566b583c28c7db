#include "future_completer.hpp"

#include <exception>
#include <utility>

namespace dlcp::python {

c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

void FutureCompleter::add(Job job) {
  WorkCompleter::Job work_job;
  work_job.works = std::move(job.works);
  work_job.done = [finish = std::move(job.finish), future = std::move(job.future),
                   value = std::move(job.value)](const std::vector<CollectiveResult>& results,
                                                 std::exception_ptr failure) {
    if (!failure && finish) {
      try {
        finish(results);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure) {
      future->setError(failure);
    } else {
      future->markCompleted(c10::IValue(value));
    }
  };
  completer_.add(std::move(work_job));
}

}  // namespace dlcp::python
