// Ring all-reduce training, DDP-style: gradients are grouped into buckets in backward order; once
// a bucket's layers are computed, every worker runs reduce-scatter then all-gather around the ring
// (2(N-1) steps, each a message of bucket/N bytes to the next worker). Buckets go one at a time,
// in order, as NCCL's single stream does; the next forward pass starts when all are reduced.
#include <algorithm>
#include <array>

#include "ns3/simulator.h"
#include "workload.hpp"

namespace dlcp::sim {

namespace {

class RingAllReduceJob : public TrainingJob {
 public:
  RingAllReduceJob(const WorkloadConfig& config, const ModelProfile& model, int hosts,
                   MessageTransport& transport, std::uint64_t seed, std::function<void()> on_done)
      : config_(config),
        num_layers_(static_cast<int>(model.layers.size())),
        forward_(forward_times(config, model)),
        transport_(transport),
        on_done_(std::move(on_done)),
        speed_(config.compute_jitter, seed),
        workers_(static_cast<std::size_t>(hosts)) {
    const auto limit =
        static_cast<std::uint64_t>(static_cast<double>(config.bucket_bytes) * config.size_scale);
    std::uint64_t bytes = 0;
    for (int layer = num_layers_ - 1; layer >= 0; --layer) {
      bytes += scaled_bytes(config, model.layers[layer].params);
      if (bytes >= limit || layer == 0) {
        buckets_.push_back(Bucket{layer, bytes});  // `layer` is the bucket's front-most layer
        bytes = 0;
      }
    }
    steps_ = 2 * (hosts - 1);
    for (Worker& w : workers_) {
      for (auto& parity : w.received) {
        parity.assign(buckets_.size(), std::vector<bool>(static_cast<std::size_t>(steps_)));
      }
      for (auto& counts : w.received_count) counts.assign(buckets_.size(), 0);
      w.ready.assign(buckets_.size(), false);
    }
  }

  void start() override {
    for (std::size_t w = 0; w < workers_.size(); ++w) start_forward(w);
  }

  TrainingResult result() const override {
    std::vector<const std::vector<ns3::Time>*> forward_ends;
    for (const Worker& w : workers_) forward_ends.push_back(&w.forward_end);
    return training_result(config_.iterations, forward_ends);
  }

 private:
  struct Bucket {
    int front_layer;
    std::uint64_t bytes;
  };
  struct Worker {
    int iteration = 0;
    std::size_t bucket = 0;  // the bucket being all-reduced
    int next_send = 0;
    std::vector<bool> ready;
    // Receipts by iteration parity: a neighbour can be one iteration ahead, never two.
    std::array<std::vector<std::vector<bool>>, 2> received;
    std::array<std::vector<int>, 2> received_count;
    std::vector<ns3::Time> forward_end;
    double speed = 1.0;  // this iteration's compute-time factor
  };

  void start_forward(std::size_t w) {
    workers_[w].speed = speed_.draw();
    ns3::Time total;
    for (const ns3::Time& t : forward_) total += t;
    ns3::Simulator::Schedule(total * workers_[w].speed, &RingAllReduceJob::forward_done, this, w);
  }

  void forward_done(std::size_t w) {
    Worker& worker = workers_[w];
    worker.forward_end.push_back(ns3::Simulator::Now());
    if (worker.iteration == config_.iterations) {
      if (++finished_workers_ == workers_.size() && on_done_) on_done_();
      return;
    }
    backward_layer(w, num_layers_ - 1);
  }

  void backward_layer(std::size_t w, int layer) {
    ns3::Simulator::Schedule(forward_[layer] * (config_.backward_factor * workers_[w].speed),
                             &RingAllReduceJob::backward_done, this, w, layer);
  }

  void backward_done(std::size_t w, int layer) {
    Worker& worker = workers_[w];
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      if (buckets_[b].front_layer == layer) worker.ready[b] = true;
    }
    progress(w);
    if (layer > 0) backward_layer(w, layer - 1);
  }

  void progress(std::size_t w) {
    Worker& worker = workers_[w];
    const int parity = worker.iteration % 2;
    while (worker.bucket < buckets_.size() && worker.ready[worker.bucket]) {
      const std::size_t b = worker.bucket;
      auto& received = worker.received[parity][b];
      while (worker.next_send < steps_ &&
             (worker.next_send == 0 || received[worker.next_send - 1])) {
        send_step(w, b, worker.next_send++);
      }
      if (worker.next_send < steps_ || worker.received_count[parity][b] < steps_) return;
      // Bucket reduced here: reset its state for the iteration after next and move on.
      std::fill(received.begin(), received.end(), false);
      worker.received_count[parity][b] = 0;
      worker.ready[b] = false;
      worker.next_send = 0;
      ++worker.bucket;
    }
    if (worker.bucket == buckets_.size()) {
      worker.bucket = 0;
      ++worker.iteration;
      start_forward(w);
    }
  }

  void send_step(std::size_t w, std::size_t bucket, int step) {
    const std::size_t n = workers_.size();
    const std::size_t next = (w + 1) % n;
    Message m;
    m.src = static_cast<int>(w);
    m.dst = static_cast<int>(next);
    m.bytes = std::max<std::uint64_t>(4, buckets_[bucket].bytes / n / 4 * 4);
    m.layer = buckets_[bucket].front_layer;
    m.num_layers = num_layers_;
    // Reduce-scatter may lose within budget (contributor counts keep it unbiased in the
    // library); all-gather is the broadcast side, loss-free by default.
    const bool reducing = step < static_cast<int>(n) - 1;
    m.phase = reducing ? FlowPhase::kReduceScatter : FlowPhase::kAllGather;
    m.loss_budget = reducing ? config_.loss_budget : 0.0;
    const int parity = workers_[w].iteration % 2;
    transport_.send(m, [this, next, bucket, step, parity] {
      Worker& receiver = workers_[next];
      receiver.received[parity][bucket][step] = true;
      ++receiver.received_count[parity][bucket];
      if (receiver.iteration % 2 == parity) progress(next);
    });
  }

  WorkloadConfig config_;
  int num_layers_;
  std::vector<ns3::Time> forward_;
  MessageTransport& transport_;
  std::function<void()> on_done_;
  ComputeSpeed speed_;
  std::vector<Worker> workers_;
  std::vector<Bucket> buckets_;
  int steps_ = 0;
  std::size_t finished_workers_ = 0;
};

}  // namespace

std::unique_ptr<TrainingJob> make_ring_allreduce_job(const WorkloadConfig& config,
                                                     const ModelProfile& model, int hosts,
                                                     MessageTransport& transport,
                                                     std::uint64_t seed,
                                                     std::function<void()> on_done) {
  return std::make_unique<RingAllReduceJob>(config, model, hosts, transport, seed,
                                            std::move(on_done));
}

}  // namespace dlcp::sim
