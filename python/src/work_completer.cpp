#include "work_completer.hpp"

namespace dlcp::python {

WorkCompleter::WorkCompleter() : thread_([this] { run(); }) {}

WorkCompleter::~WorkCompleter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void WorkCompleter::add(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  changed_.notify_all();
}

void WorkCompleter::drain() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return jobs_.empty() && !busy_; });
}

void WorkCompleter::run() {
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
    std::vector<CollectiveResult> results;
    std::exception_ptr failure;
    for (const Work& work : job.works) {
      try {
        results.push_back(work.wait());
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (job.done) job.done(results, failure);
    job = {};  // its captures go before the next job, and before drain() returns
    {
      std::lock_guard lock(mutex_);
      busy_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace dlcp::python
