#include "train_sync.hpp"

#include "dlcp/error.hpp"

namespace dlcp::tools {

DlcpSync::DlcpSync(Communicator& comm, const DlcpSyncOptions& options)
    : comm_(comm), options_(options) {}

void DlcpSync::start(std::size_t bucket_index, const workload::Bucket& bucket,
                     std::span<float> values) {
  CollectiveOptions collective;
  collective.num_layers = options_.num_layers;
  collective.layer =
      options_.priority ? static_cast<int>(bucket.first_layer) : options_.num_layers - 1;
  collective.loss_budget = options_.loss_budget;
  collective.op = ReduceOp::kSum;
  collective.deadline = options_.deadline;
  collective.wire = options_.wire;
  in_flight_.insert_or_assign(bucket_index, comm_.allreduce(values, collective));
}

double DlcpSync::wait(std::size_t bucket_index) {
  auto found = in_flight_.find(bucket_index);
  if (found == in_flight_.end()) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "bucket " + std::to_string(bucket_index) + " was not started");
  }
  const CollectiveResult result = found->second.wait();
  in_flight_.erase(found);
  return result.delivered_fraction;
}

QueuedSync::QueuedSync(Allreduce allreduce)
    : allreduce_(std::move(allreduce)), worker_([this] { loop(); }) {}

QueuedSync::~QueuedSync() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  worker_.join();
}

void QueuedSync::start(std::size_t bucket_index, const workload::Bucket& /*bucket*/,
                       std::span<float> values) {
  {
    std::lock_guard lock(mutex_);
    done_[bucket_index] = false;
    queue_.emplace_back(bucket_index, values);
  }
  changed_.notify_all();
}

double QueuedSync::wait(std::size_t bucket_index) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return error_ || done_[bucket_index]; });
  if (error_) std::rethrow_exception(error_);
  done_.erase(bucket_index);
  return 1.0;
}

void QueuedSync::loop() {
  std::unique_lock lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const auto [bucket, values] = queue_.front();
    queue_.pop_front();
    lock.unlock();
    try {
      allreduce_(values);
    } catch (...) {
      lock.lock();
      error_ = std::current_exception();
      changed_.notify_all();
      return;
    }
    lock.lock();
    done_[bucket] = true;
    changed_.notify_all();
  }
}

}  // namespace dlcp::tools
