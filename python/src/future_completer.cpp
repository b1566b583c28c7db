#include "future_completer.hpp"

#include <exception>

namespace dlcp::python {

c10::intrusive_ptr<c10::ivalue::Future> make_tensor_list_future() {
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()));
}

FutureCompleter::FutureCompleter() : thread_([this] { run(); }) {}

FutureCompleter::~FutureCompleter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void FutureCompleter::add(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void FutureCompleter::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

void FutureCompleter::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
    }
    complete(job);
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

void FutureCompleter::complete(Job& job) {
  // Wait for every work even after a failure, so that no transfer still writes into the
  // tensors once the future says the job is over.
  std::vector<CollectiveResult> results;
  std::exception_ptr failure;
  for (const Work& work : job.works) {
    try {
      results.push_back(work.wait());
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
  }
  if (!failure && job.finish) {
    try {
      job.finish(results);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) {
    job.future->setError(failure);
  } else {
    job.future->markCompleted(c10::IValue(job.value));
  }
}

}  // namespace dlcp::python
