// Runs a function once every Work of a job is done. One thread per communicator waits on the
// jobs in the order they were added (the order every rank issues them in) and then calls the
// job's `done` on that thread, with the results or the first failure. The torch backend and the
// hook complete their futures this way, through Python callables (core_communicator.cpp:
// when_done, allreduce_slices). Needs no Python itself. The thread sleeps on each Work in turn
// (nothing polls) and no thread starts per call.
//
// Why this thread rather than completion callbacks: transfers do complete through callbacks now
// (Transport's MessageCallback, which point-to-point Works use), but those run on the transport's
// I/O thread, and a collective's Work completes on one of the communicator's collective threads.
// Running the Python callables there would (1) put the GIL in the I/O path: every transfer of the
// transport would stall whenever another thread holds the GIL; (2) deadlock when a callable waits
// for another transfer (the backend's callable completes a torch future whose then-callbacks are
// user code, free to call wait() on another dlcp Work; one that can only end on the same I/O
// thread would never end), or when a collective thread blocks on the GIL that a Python thread
// holds while it waits for that collective; and (3) lose the posting order the backend relies on.
// So the callables run here, on a thread of their own that may block.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "dlcp/communicator.hpp"

namespace dlcp::python {

class WorkCompleter {
 public:
  // Called once, on the completer's thread, after every work of the job has finished (also
  // after a failure, so that no transfer still writes into the job's buffers). Must not throw.
  using Done =
      std::function<void(const std::vector<CollectiveResult>& results, std::exception_ptr failure)>;
  struct Job {
    std::vector<Work> works;
    Done done;
  };

  WorkCompleter();
  // Completes every queued job first.
  ~WorkCompleter();
  WorkCompleter(const WorkCompleter&) = delete;
  WorkCompleter& operator=(const WorkCompleter&) = delete;

  void add(Job job);
  // Returns once every job added so far is complete.
  void drain();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  bool busy_ = false;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dlcp::python
