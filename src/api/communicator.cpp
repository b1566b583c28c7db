// The communicator: joins the job through the store, then runs collectives on a small pool of
// threads over one transport. The first failure aborts the transport (so every buffer is
// released and every peer learns the cause at once) and breaks the communicator for good.
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "api/host_grouping.hpp"
#include "api/job_secret.hpp"
#include "api/point_to_point.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/value_transform.hpp"
#include "common/time.hpp"
#include "dlcp/communicator.hpp"

namespace dlcp {
namespace {

// Block size for a world of one, where nothing is sent.
constexpr std::uint16_t kSoloBlock = 1024;

std::uint64_t random_token() {
  std::random_device device;
  std::uint64_t token = 0;
  while (token == 0) token = (std::uint64_t{device()} << 32) | device();
  return token;
}

// CollectiveOptions::error_feedback: one residual per value that is rounded to a 16-bit wire.
void require_error_feedback_fits(const CollectiveOptions& options, std::size_t values) {
  if (options.error_feedback.empty()) return;
  if (options.wire == WireDtype::kFloat32) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "CollectiveOptions.error_feedback needs a 16-bit wire (bf16 or fp16): fp32 "
                "leaves no rounding error to feed back");
  }
  if (options.error_feedback.size() != values) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "CollectiveOptions.error_feedback holds " +
                    std::to_string(options.error_feedback.size()) + " floats for " +
                    std::to_string(values) + " values");
  }
}

std::pair<std::string, std::uint16_t> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw Error(ErrorCode::kProtocol, -1, "store holds a malformed address '" + address + "'");
  }
  return {address.substr(0, colon),
          static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)))};
}

class CommunicatorImpl final : public Communicator {
 public:
  CommunicatorImpl(Store& store, int rank, int world_size, const CommunicatorOptions& options);
  ~CommunicatorImpl() override;

  int rank() const override { return world_rank_; }
  int size() const override { return workers_; }
  bool is_server() const override { return world_rank_ >= workers_; }

  Work allreduce(std::span<float> values, const CollectiveOptions& options) override;
  Work broadcast(std::span<float> values, int root, const CollectiveOptions& options) override;
  Work allgather(std::span<const float> input, std::span<float> output,
                 const CollectiveOptions& options) override;
  Work reduce_scatter(std::span<const float> input, std::span<float> output,
                      const CollectiveOptions& options) override;
  void barrier() override;
  Work send(std::span<const float> values, int peer, std::uint32_t tag,
            const CollectiveOptions& options) override;
  Work recv(std::span<float> values, int peer, std::uint32_t tag,
            const CollectiveOptions& options) override;
  Work recv_any(std::span<float> values, std::uint32_t tag,
                const CollectiveOptions& options) override;
  void serve() override;
  TransportCounters counters() const override { return transport_->counters(); }

 private:
  struct Task {
    std::function<CollectiveResult()> run;
    std::promise<CollectiveResult> promise;
  };

  void join(Store& store);
  void require_worker(const char* what) const;
  // Whether a collective with these options runs by host (CollectiveOptions::topology, else the
  // communicator's; kAuto: when the workers span several hosts and share at least one).
  bool hierarchical(const CollectiveOptions& options) const;
  // Queues a collective; `make` receives the collective's sequence number(s) at submission, so
  // every rank numbers its collectives identically whatever thread later runs them.
  Work submit(std::function<std::function<CollectiveResult()>()> make);
  void run_tasks();
  void execute(Task& task);

  CommunicatorOptions options_;
  int world_rank_;
  int world_size_;
  int workers_;
  collectives::Scratch scratch_;  // declared before the transport: it outlives every transfer
  // Shared with api::PointToPoint.
  std::shared_ptr<Transport> transport_;
  std::optional<collectives::Group> group_;
  // Which workers share a host (learnt at rendezvous by the workers; empty on a server).
  std::optional<collectives::HostLayout> hosts_;
  std::optional<api::PointToPoint> point_to_point_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Task>> queue_;
  std::size_t running_ = 0;
  bool stopping_ = false;
  std::uint32_t next_seq_ = 0;
  std::uint32_t next_ps_seq_ = 0;
  std::optional<Error> broken_;
  std::vector<std::thread> threads_;
};

CommunicatorImpl::CommunicatorImpl(Store& store, int rank, int world_size,
                                   const CommunicatorOptions& options)
    : options_(options), world_rank_(rank), world_size_(world_size) {
  options_.validate(world_size);
  if (rank < 0 || rank >= world_size) {
    throw Error(
        ErrorCode::kInvalidArgument, -1,
        "rank " + std::to_string(rank) + " is outside a world of " + std::to_string(world_size));
  }
  workers_ = world_size - options_.servers;
  join(store);
  if (!is_server()) {
    for (int t = 0; t < options_.concurrent_collectives; ++t) {
      threads_.emplace_back([this] { run_tasks(); });
    }
  }
}

void CommunicatorImpl::join(Store& store) {
  const std::string prefix = options_.store_prefix + "/";
  TransportOptions transport = options_.transport;
  transport.rank = world_rank_;
  transport.world_size = world_size_;
  if (transport.job_token == 0) {
    if (world_rank_ == 0) store.set(prefix + "job_token", std::to_string(random_token()));
    transport.job_token = std::stoull(store.get(prefix + "job_token"));
  }
  if (transport.job_secret.empty()) {
    transport.job_secret = api::agree_job_secret(store, prefix + "job_secret", world_rank_,
                                                 std::getenv(api::kJobSecretVariable));
  }
  transport_ = Transport::create(transport);
  const std::string host =
      options_.advertise_host.empty() ? transport.bind_host : options_.advertise_host;
  store.set(prefix + "address/" + std::to_string(world_rank_),
            host + ":" + std::to_string(transport_->control_port()));
  // Increasing peer order on every rank: a rank dials the lower ranks in turn and is dialled by
  // the higher ones, so no two ranks wait for each other.
  std::uint16_t block = 0;
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer == world_rank_) continue;
    const auto [peer_host, port] =
        split_address(store.get(prefix + "address/" + std::to_string(peer)));
    transport_->connect(peer, peer_host, port);
    const std::uint16_t carried = transport_->max_packet_floats(peer);
    block = block == 0 ? carried : std::min(block, carried);
  }
  // One block size for the whole job, so packet blocks line up at every hop.
  store.set(prefix + "block/" + std::to_string(world_rank_), std::to_string(block));
  for (int peer = 0; peer < world_size_; ++peer) {
    if (peer == world_rank_) continue;
    const auto theirs =
        static_cast<std::uint16_t>(std::stoul(store.get(prefix + "block/" + std::to_string(peer))));
    block = std::min(block, theirs);
  }
  if (world_size_ == 1) block = kSoloBlock;
  group_.emplace(collectives::Group{*transport_, world_rank_, workers_, options_.servers, block,
                                    options_.segment_bytes, scratch_});
  // Servers take no part in the layout: they learn from each collective's descriptors whose
  // pushes to expect.
  if (!is_server()) {
    hosts_.emplace(
        api::learn_host_layout(store, prefix + "host/", world_rank_, workers_, options_.host_id));
  }
  point_to_point_.emplace(transport_, world_rank_, workers_);
}

CommunicatorImpl::~CommunicatorImpl() {
  {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
  if (!is_server() && options_.servers > 0 && !broken_) {
    try {
      collectives::ps_shutdown(*group_, next_ps_seq_);
    } catch (const std::exception&) {
      // The servers notice a vanished worker through its closed connection.
    }
  }
}

void CommunicatorImpl::require_worker(const char* what) const {
  if (is_server()) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                std::string(what) + " called on parameter-server rank " +
                    std::to_string(world_rank_) + "; servers call serve()");
  }
}

bool CommunicatorImpl::hierarchical(const CollectiveOptions& options) const {
  switch (options.topology.value_or(options_.topology)) {
    case Topology::kFlat:
      return false;
    case Topology::kHierarchical:
      return true;
    case Topology::kAuto:
      return hosts_->hierarchy_pays();
  }
  return false;
}

Work CommunicatorImpl::submit(std::function<std::function<CollectiveResult()>()> make) {
  auto task = std::make_unique<Task>();
  Work work(task->promise.get_future().share());
  {
    std::lock_guard lock(mutex_);
    if (broken_) {
      task->promise.set_exception(std::make_exception_ptr(*broken_));
      return work;
    }
    task->run = make();
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
  return work;
}

void CommunicatorImpl::run_tasks() {
  for (;;) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    execute(*task);
    {
      std::lock_guard lock(mutex_);
      --running_;
    }
    wake_.notify_all();
  }
}

void CommunicatorImpl::execute(Task& task) {
  {
    std::lock_guard lock(mutex_);
    if (broken_) {
      task.promise.set_exception(std::make_exception_ptr(*broken_));
      return;
    }
  }
  const TimePoint start = SteadyClock::now();
  try {
    CollectiveResult result = task.run();
    result.seconds = to_seconds(SteadyClock::now() - start);
    if (result.contributions_expected > 0) {
      result.delivered_fraction = static_cast<double>(result.contributions_received) /
                                  static_cast<double>(result.contributions_expected);
    }
    task.promise.set_value(result);
    return;
  } catch (const Error& error) {
    {
      std::lock_guard lock(mutex_);
      if (!broken_) broken_ = error;
    }
    transport_->abort(error.what());
    task.promise.set_exception(std::current_exception());
  } catch (const std::exception& other) {
    const Error error(ErrorCode::kAborted, -1, std::string("collective failed: ") + other.what());
    {
      std::lock_guard lock(mutex_);
      if (!broken_) broken_ = error;
    }
    transport_->abort(error.what());
    task.promise.set_exception(std::make_exception_ptr(error));
  }
}

Work CommunicatorImpl::allreduce(std::span<float> values, const CollectiveOptions& options) {
  require_worker("allreduce");
  options.validate();
  const Algorithm algorithm = options.algorithm.value_or(options_.algorithm);
  if (algorithm == Algorithm::kParameterServer && options_.servers == 0) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "parameter-server all-reduce needs a communicator created with servers > 0");
  }
  if (values.size() > 0xFFFFFFFFull) {
    throw Error(ErrorCode::kInvalidArgument, -1, "all-reduce of more than 2^32-1 floats");
  }
  require_error_feedback_fits(options, values.size());
  const bool by_host = hierarchical(options);
  return submit([this, values, options, algorithm, by_host]() -> std::function<CollectiveResult()> {
    // Rounding to the wire and rotating happen on the collective's own thread, in turn.
    const auto around = [this, values, options](auto algorithm_call) {
      collectives::prepare_allreduce_input(values, options, group_->block_for(options.wire));
      CollectiveResult result = algorithm_call();
      collectives::finish_allreduce_output(values, options);
      return result;
    };
    if (algorithm == Algorithm::kParameterServer && by_host) {
      // Transfers within a host are numbered like every collective's, those with the servers
      // like every parameter-server collective's.
      const std::uint32_t seq = next_seq_++;
      const std::uint32_t ps_seq = next_ps_seq_++;
      return [this, values, options, seq, ps_seq, around] {
        return around([&] {
          return collectives::hierarchical_ps_allreduce(*group_, *hosts_, seq, ps_seq, values,
                                                        options);
        });
      };
    }
    if (algorithm == Algorithm::kParameterServer) {
      const std::uint32_t ps_seq = next_ps_seq_++;
      return [this, values, options, ps_seq, around] {
        return around([&] { return collectives::ps_allreduce(*group_, ps_seq, values, options); });
      };
    }
    const std::uint32_t seq = next_seq_++;
    if (by_host) {
      const collectives::NetworkAllreduce network =
          [algorithm](const collectives::Group& leaders, std::uint32_t leaders_seq, int,
                      std::span<float> host_sum, const CollectiveOptions& o) {
            return algorithm == Algorithm::kTranspose
                       ? collectives::transpose_allreduce(leaders, leaders_seq, host_sum, o)
                       : collectives::ring_allreduce(leaders, leaders_seq, host_sum, o);
          };
      return [this, values, options, seq, around, network] {
        return around([&] {
          return collectives::hierarchical_allreduce(*group_, *hosts_, seq, values, options,
                                                     network);
        });
      };
    }
    if (algorithm == Algorithm::kTranspose) {
      return [this, values, options, seq, around] {
        return around(
            [&] { return collectives::transpose_allreduce(*group_, seq, values, options); });
      };
    }
    return [this, values, options, seq, around] {
      return around([&] { return collectives::ring_allreduce(*group_, seq, values, options); });
    };
  });
}

Work CommunicatorImpl::broadcast(std::span<float> values, int root,
                                 const CollectiveOptions& options) {
  require_worker("broadcast");
  options.validate();
  collectives::require_float32_values(options, "broadcast");
  if (root < 0 || root >= workers_) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "broadcast root " + std::to_string(root) + " is not a worker rank");
  }
  const bool by_host = hierarchical(options);
  return submit([this, values, root, options, by_host]() -> std::function<CollectiveResult()> {
    const std::uint32_t seq = next_seq_++;
    return [this, values, root, options, seq, by_host] {
      if (by_host) {
        return collectives::hierarchical_broadcast(*group_, *hosts_, seq, values, root, options);
      }
      return collectives::broadcast(*group_, seq, values, root, options);
    };
  });
}

Work CommunicatorImpl::allgather(std::span<const float> input, std::span<float> output,
                                 const CollectiveOptions& options) {
  require_worker("allgather");
  options.validate();
  collectives::require_float32_values(options, "allgather");
  if (output.size() != input.size() * static_cast<std::size_t>(workers_)) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "allgather output holds " + std::to_string(output.size()) + " floats, expected " +
                    std::to_string(input.size()) + " x " + std::to_string(workers_));
  }
  // Hierarchical transfers name the rank whose input they carry in the id's step field.
  const bool by_host =
      hierarchical(options) && workers_ <= static_cast<int>(collectives::kMaxSteps);
  return submit([this, input, output, options, by_host]() -> std::function<CollectiveResult()> {
    const std::uint32_t seq = next_seq_++;
    return [this, input, output, options, seq, by_host] {
      if (by_host) {
        return collectives::hierarchical_allgather(*group_, *hosts_, seq, input, output, options);
      }
      return collectives::allgather(*group_, seq, input, output, options);
    };
  });
}

Work CommunicatorImpl::reduce_scatter(std::span<const float> input, std::span<float> output,
                                      const CollectiveOptions& options) {
  require_worker("reduce_scatter");
  options.validate();
  if (input.size() != output.size() * static_cast<std::size_t>(workers_)) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "reduce_scatter input holds " + std::to_string(input.size()) +
                    " floats, expected the output's " + std::to_string(output.size()) + " x " +
                    std::to_string(workers_) + " workers");
  }
  if (input.size() > 0xFFFFFFFFull) {
    throw Error(ErrorCode::kInvalidArgument, -1, "reduce-scatter of more than 2^32-1 floats");
  }
  require_error_feedback_fits(options, input.size());
  // One algorithm, direct between the workers (servers, if any, take no part), so
  // options.algorithm does not matter. Hierarchical transfers name the shard's owner in the id's
  // step field.
  const bool by_host =
      hierarchical(options) && workers_ <= static_cast<int>(collectives::kMaxSteps);
  return submit([this, input, output, options, by_host]() -> std::function<CollectiveResult()> {
    const std::uint32_t seq = next_seq_++;
    return [this, input, output, options, seq, by_host] {
      if (by_host) {
        return collectives::hierarchical_reduce_scatter(*group_, *hosts_, seq, input, output,
                                                        options);
      }
      return collectives::reduce_scatter(*group_, seq, input, output, options);
    };
  });
}

void CommunicatorImpl::barrier() {
  require_worker("barrier");
  submit([this]() -> std::function<CollectiveResult()> {
    const std::uint32_t seq = next_seq_++;
    return [this, seq] {
      collectives::barrier(*group_, seq);
      return CollectiveResult{};
    };
  }).wait();
}

Work CommunicatorImpl::send(std::span<const float> values, int peer, std::uint32_t tag,
                            const CollectiveOptions& options) {
  require_worker("send");
  return point_to_point_->send(values, peer, tag, options);
}

Work CommunicatorImpl::recv(std::span<float> values, int peer, std::uint32_t tag,
                            const CollectiveOptions& options) {
  require_worker("recv");
  return point_to_point_->recv(values, peer, tag, options);
}

Work CommunicatorImpl::recv_any(std::span<float> values, std::uint32_t tag,
                                const CollectiveOptions& options) {
  require_worker("recv");
  return point_to_point_->recv_any(values, tag, options);
}

void CommunicatorImpl::serve() {
  if (!is_server()) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "serve() called on worker rank " + std::to_string(world_rank_));
  }
  try {
    collectives::ps_serve(*group_, options_.concurrent_collectives);
  } catch (const Error& error) {
    transport_->abort(error.what());
    throw;
  }
}

}  // namespace

std::unique_ptr<Communicator> Communicator::create(Store& store, int rank, int world_size,
                                                   const CommunicatorOptions& options) {
  return std::make_unique<CommunicatorImpl>(store, rank, world_size, options);
}

}  // namespace dlcp
