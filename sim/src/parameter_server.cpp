// Parameter-server training: workers push each layer's gradient slices to the servers as soon as
// backward produces them; a server, once it has a slice from every worker, sends the updated
// slice back to all of them; a worker's next forward pass runs each layer as soon as that layer's
// slices are back (so front layers, pulled first under dlcp's priorities, unblock compute first).
#include <algorithm>

#include "ns3/simulator.h"
#include "server_slices.hpp"
#include "workload.hpp"

namespace dlcp::sim {

namespace {

class ParameterServerJob : public TrainingJob {
 public:
  ParameterServerJob(const WorkloadConfig& config, const ModelProfile& model, int hosts,
                     std::uint32_t packet_floats, MessageTransport& transport, std::uint64_t seed,
                     std::function<void()> on_done)
      : config_(config),
        num_layers_(static_cast<int>(model.layers.size())),
        forward_(forward_times(config, model)),
        transport_(transport),
        on_done_(std::move(on_done)),
        speed_(config.compute_jitter, seed) {
    // Servers spread evenly over the hosts (and so over the leaves); the rest are workers.
    const int servers = std::clamp(config.servers, 1, hosts - 1);
    std::vector<bool> is_server(static_cast<std::size_t>(hosts), false);
    for (int s = 0; s < servers; ++s) {
      const int host = s * hosts / servers;
      is_server[host] = true;
      servers_.push_back(host);
    }
    for (int h = 0; h < hosts; ++h) {
      if (is_server[h]) continue;
      Worker worker;
      worker.host = h;
      workers_.push_back(worker);
    }
    make_slices(model, packet_floats);
    pushes_.assign(slices_.size(), 0);
    for (Worker& w : workers_) w.pulled.assign(static_cast<std::size_t>(num_layers_), 0);
  }

  void start() override {
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      workers_[w].speed = speed_.draw();
      forward_layer(w, 0);
    }
  }

  TrainingResult result() const override {
    std::vector<const std::vector<ns3::Time>*> forward_ends;
    for (const Worker& w : workers_) forward_ends.push_back(&w.forward_end);
    return training_result(config_.iterations, forward_ends);
  }

 private:
  struct Worker {
    int host = 0;
    int iteration = 0;  // backward passes completed
    int waiting_on = -1;
    double speed = 1.0;  // this iteration's compute-time factor
    std::vector<int> pulled;
    std::vector<ns3::Time> forward_end;
  };

  void make_slices(const ModelProfile& model, std::uint32_t packet_floats) {
    std::vector<std::uint64_t> layer_bytes;
    for (const Layer& l : model.layers) layer_bytes.push_back(scaled_bytes(config_, l.params));
    slices_of_layer_.resize(model.layers.size());
    const std::uint64_t block = scaled_block_floats(packet_floats, config_.size_scale);
    for (const ServerSlice& slice :
         server_slices(layer_bytes, static_cast<int>(servers_.size()), config_.slicing, block)) {
      slices_of_layer_[static_cast<std::size_t>(slice.layer)].push_back(
          static_cast<int>(slices_.size()));
      slices_.push_back(slice);
    }
  }

  void forward_layer(std::size_t w, int layer) {
    Worker& worker = workers_[w];
    auto& pulled = worker.pulled[layer];
    const int needed = static_cast<int>(slices_of_layer_[layer].size());
    if (worker.iteration > 0) {
      if (pulled < needed) {
        worker.waiting_on = layer;  // resumed by the last pull of this layer
        return;
      }
      pulled -= needed;
    }
    ns3::Simulator::Schedule(forward_[layer] * worker.speed, &ParameterServerJob::forward_done,
                             this, w, layer);
  }

  void forward_done(std::size_t w, int layer) {
    Worker& worker = workers_[w];
    if (layer + 1 < num_layers_) {
      forward_layer(w, layer + 1);
      return;
    }
    worker.forward_end.push_back(ns3::Simulator::Now());
    if (worker.iteration == config_.iterations) {
      if (++finished_workers_ == workers_.size() && on_done_) on_done_();
      return;
    }
    backward_layer(w, num_layers_ - 1);
  }

  void backward_layer(std::size_t w, int layer) {
    const ns3::Time compute = forward_[layer] * (config_.backward_factor * workers_[w].speed);
    ns3::Simulator::Schedule(compute, &ParameterServerJob::backward_done, this, w, layer);
  }

  void backward_done(std::size_t w, int layer) {
    Worker& worker = workers_[w];
    for (int slice : slices_of_layer_[layer]) {
      Message push;
      push.src = worker.host;
      push.dst = servers_[slices_[slice].server];
      push.bytes = slices_[slice].bytes;
      push.layer = layer;
      push.num_layers = num_layers_;
      push.phase = FlowPhase::kPush;
      push.loss_budget = config_.loss_budget;  // the push side may lose up to the budget
      if (library::budget_ppm(push.loss_budget) != 0) {
        // The workers' pushes of one slice in one iteration share their budget at the server, as
        // the library's parameter server groups them: a late or lossy worker's tail is left out
        // when the others arrived whole.
        push.budget_group = 1 + static_cast<std::uint64_t>(worker.iteration) * slices_.size() +
                            static_cast<std::uint64_t>(slice);
        push.budget_group_size = static_cast<std::uint32_t>(workers_.size());
      }
      transport_.send(push, [this, slice] { pushed(slice); });
    }
    if (layer > 0) {
      backward_layer(w, layer - 1);
    } else {
      ++worker.iteration;
      worker.speed = speed_.draw();
      forward_layer(w, 0);
    }
  }

  void pushed(int slice) {
    if (++pushes_[slice] < static_cast<int>(workers_.size())) return;
    pushes_[slice] = 0;
    const ServerSlice& s = slices_[slice];
    for (std::size_t w = 0; w < workers_.size(); ++w) {
      Message pull;
      pull.src = servers_[s.server];
      pull.dst = workers_[w].host;
      pull.bytes = s.bytes;
      pull.layer = s.layer;
      pull.num_layers = num_layers_;
      pull.phase = FlowPhase::kPull;
      pull.loss_budget = 0.0;  // the broadcast side is loss-free by default (docs/protocol.md)
      transport_.send(pull, [this, w, layer = s.layer] { pulled(w, layer); });
    }
  }

  void pulled(std::size_t w, int layer) {
    Worker& worker = workers_[w];
    ++worker.pulled[layer];
    if (worker.waiting_on == layer &&
        worker.pulled[layer] >= static_cast<int>(slices_of_layer_[layer].size())) {
      worker.waiting_on = -1;
      forward_layer(w, layer);
    }
  }

  WorkloadConfig config_;
  int num_layers_;
  std::vector<ns3::Time> forward_;
  MessageTransport& transport_;
  std::function<void()> on_done_;
  ComputeSpeed speed_;
  std::vector<int> servers_;
  std::vector<Worker> workers_;
  std::vector<ServerSlice> slices_;
  std::vector<std::vector<int>> slices_of_layer_;
  std::vector<int> pushes_;
  std::size_t finished_workers_ = 0;
};

}  // namespace

std::unique_ptr<TrainingJob> make_parameter_server_job(
    const WorkloadConfig& config, const ModelProfile& model, int hosts, std::uint32_t packet_floats,
    MessageTransport& transport, std::uint64_t seed, std::function<void()> on_done) {
  return std::make_unique<ParameterServerJob>(config, model, hosts, packet_floats, transport, seed,
                                              std::move(on_done));
}

}  // namespace dlcp::sim
