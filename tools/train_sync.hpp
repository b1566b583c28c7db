// The communication backends of `dlcp bench train`: dlcp's communicator (asynchronous, several
// buckets in flight, each with its layer's priority and the loss budget), and a FIFO worker thread
// for the blocking baselines (Gloo, Open MPI): one bucket at a time in release order, which is
// what PyTorch's gloo process group does.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "dlcp/communicator.hpp"
#include "workload/training_emulator.hpp"

namespace dlcp::tools {

struct DlcpSyncOptions {
  int num_layers = 1;
  double loss_budget = 0;
  bool priority = true;  // false: every bucket in the least urgent class (ablation)
  std::chrono::milliseconds deadline{30000};
  WireDtype wire = WireDtype::kFloat32;
};

class DlcpSync final : public workload::GradientSync {
 public:
  DlcpSync(Communicator& comm, const DlcpSyncOptions& options);
  void start(std::size_t bucket_index, const workload::Bucket& bucket,
             std::span<float> values) override;
  double wait(std::size_t bucket_index) override;

 private:
  Communicator& comm_;
  DlcpSyncOptions options_;
  std::map<std::size_t, Work> in_flight_;
};

class QueuedSync final : public workload::GradientSync {
 public:
  using Allreduce = std::function<void(std::span<float>)>;
  explicit QueuedSync(Allreduce allreduce);
  ~QueuedSync() override;
  void start(std::size_t bucket_index, const workload::Bucket& bucket,
             std::span<float> values) override;
  double wait(std::size_t bucket_index) override;  // rethrows the backend's error

 private:
  void loop();
  Allreduce allreduce_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::pair<std::size_t, std::span<float>>> queue_;
  std::map<std::size_t, bool> done_;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace dlcp::tools
