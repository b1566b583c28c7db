// Parameter server. Shard s of every buffer (a range of whole blocks) belongs to server s.
// Workers push their shards, each server reduces what arrived and sends the result back to
// every worker; the pulls carry each block's contribution count so workers can report how much
// arrived. Pushes and pulls carry the tensor's priority class, so when several collectives are
// in flight the servers answer front layers first.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/ps_descriptor.hpp"
#include "collectives/reduction.hpp"
#include "policy/policy.hpp"

namespace dlcp::collectives {
namespace {

// A server waits for the next collective for as long as the job lives; dead workers are noticed
// through the transport's failure report, not through this deadline.
constexpr std::chrono::milliseconds kIdleDeadline = std::chrono::hours(24 * 365);

int server_rank(const Group& g, int index) {
  return g.size + index;
}

Range shard_of(const Group& g, std::size_t total, std::size_t block, int index) {
  return aligned_part(total, static_cast<std::size_t>(g.servers), block,
                      static_cast<std::size_t>(index));
}

MessageOptions descriptor_options(const Group& g, std::chrono::milliseconds deadline) {
  CollectiveOptions reliable;
  reliable.deadline = deadline;
  MessageOptions options = g.message_options(reliable, 0);
  options.packet_floats = 0;  // a handful of words: one packet whatever the block size
  return options;
}

}  // namespace

CollectiveResult ps_allreduce(const Group& g, std::uint32_t ps_seq, std::span<float> values,
                              const CollectiveOptions& options) {
  CollectiveResult result;
  result.entries = values.size();
  const std::size_t block = g.block_for(options.wire);
  const std::size_t max_shard = shard_of(g, values.size(), block, 0).size;
  const std::size_t segment =
      segment_floats(g.segment_bytes / sizeof(float), block, max_shard, kMaxSegments);
  const std::size_t shard_blocks = blocks_in(max_shard, block);
  const auto servers = static_cast<std::size_t>(g.servers);
  auto descriptors = g.scratch.floats.acquire(servers * kPsDescriptorWords);
  auto pulled_counts = g.scratch.counts.acquire(servers * shard_blocks);

  Transfers transfers(g);
  std::vector<Transfers::Handle> pulls;
  std::vector<Transfers::Handle> sends;
  for (int s = 0; s < g.servers; ++s) {
    const Range shard = shard_of(g, values.size(), block, s);
    PsDescriptor d;
    d.shard_floats = static_cast<std::uint32_t>(shard.size);
    d.segment_floats = static_cast<std::uint32_t>(segment);
    d.layer = static_cast<std::uint32_t>(options.layer);
    d.num_layers = static_cast<std::uint32_t>(options.num_layers);
    d.loss_budget_ppm = policy::budget_ppm(options.loss_budget);
    d.broadcast_budget_ppm = policy::budget_ppm(options.broadcast_loss_budget);
    d.op = options.op;
    d.aggregation = options.aggregation;
    d.wire = options.wire;
    d.deadline_ms = static_cast<std::uint32_t>(options.deadline.count());
    const auto wire = encode_descriptor(d);
    auto words = descriptors.span().subspan(static_cast<std::size_t>(s) * kPsDescriptorWords,
                                            kPsDescriptorWords);
    std::ranges::copy(wire, words.begin());
    const int server = server_rank(g, s);
    auto counts =
        pulled_counts.span().subspan(static_cast<std::size_t>(s) * shard_blocks, shard_blocks);
    for (std::size_t k = 0; k < segment_count(shard.size, segment); ++k) {
      const Range seg = segment_of(shard, segment, k);
      pulls.push_back(
          transfers.recv(server, message_id(ps_seq, Phase::kPull, 0, static_cast<std::uint32_t>(k)),
                         values.subspan(seg.begin, seg.size),
                         g.message_options(options, options.broadcast_loss_budget),
                         counts.subspan(k * (segment / block), blocks_in(seg.size, block))));
    }
    sends.push_back(transfers.send(server, message_id(ps_seq, Phase::kDescriptor, 0, 0), words,
                                   descriptor_options(g, options.deadline)));
    for (std::size_t k = 0; k < segment_count(shard.size, segment); ++k) {
      const Range seg = segment_of(shard, segment, k);
      sends.push_back(transfers.send(
          server, message_id(ps_seq, Phase::kPush, 0, static_cast<std::uint32_t>(k)),
          values.subspan(seg.begin, seg.size), g.message_options(options, options.loss_budget)));
    }
  }

  const float fallback_scale = options.op == ReduceOp::kSum ? static_cast<float>(g.size) : 1.0f;
  std::size_t next_pull = 0;
  for (int s = 0; s < g.servers; ++s) {
    const Range shard = shard_of(g, values.size(), block, s);
    auto counts = pulled_counts.span().subspan(static_cast<std::size_t>(s) * shard_blocks,
                                               blocks_in(shard.size, block));
    for (std::size_t k = 0; k < segment_count(shard.size, segment); ++k)
      transfers.await(pulls[next_pull++]);
    if (shard.size == 0) continue;
    const auto target = values.subspan(shard.begin, shard.size);
    // Blocks the pull lost keep this worker's own gradient (scaled for a sum).
    result.broadcast_entries_missing +=
        fall_back_to_local(target, counts, 1, target, fallback_scale, block);
    for (std::size_t b = 0; b < counts.size(); ++b) {
      const std::size_t floats = std::min(block, shard.size - b * block);
      result.contributions_expected += floats * static_cast<std::uint64_t>(g.size);
      result.contributions_received += floats * std::uint64_t{counts[b]};
    }
  }
  transfers.await_all(sends);
  return result;
}

void ps_shutdown(const Group& g, std::uint32_t ps_seq) {
  auto descriptors =
      g.scratch.floats.acquire(static_cast<std::size_t>(g.servers) * kPsDescriptorWords);
  Transfers transfers(g);
  std::vector<Transfers::Handle> sends;
  PsDescriptor d;
  d.shutdown = true;
  const auto wire = encode_descriptor(d);
  for (int s = 0; s < g.servers; ++s) {
    auto words = descriptors.span().subspan(static_cast<std::size_t>(s) * kPsDescriptorWords,
                                            kPsDescriptorWords);
    std::ranges::copy(wire, words.begin());
    sends.push_back(transfers.send(server_rank(g, s), message_id(ps_seq, Phase::kDescriptor, 0, 0),
                                   words, descriptor_options(g, std::chrono::seconds(10))));
  }
  transfers.await_all(sends);
}

namespace {

class Server {
 public:
  explicit Server(const Group& g) : g_(g) {}

  // Descriptors are read in collective order by this thread alone, so a worker's shutdown is
  // always seen before anything that follows it; the reductions run on `threads` helpers.
  void run(int threads) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back([this] { work(); });
    try {
      for (std::uint32_t seq = 0;; ++seq) {
        const PsDescriptor d = read_descriptors(seq);
        if (d.shutdown) break;
        if (d.shard_floats == 0) continue;
        std::unique_lock lock(mutex_);
        // At most `threads` collectives in flight: each holds a shard per worker of scratch.
        changed_.wait(lock, [&] {
          return error_ || jobs_.size() + busy_ < static_cast<std::size_t>(threads);
        });
        if (error_) break;
        jobs_.push_back({seq, d});
        changed_.notify_all();
      }
    } catch (...) {
      record(std::current_exception());
    }
    {
      std::lock_guard lock(mutex_);
      closing_ = true;
    }
    changed_.notify_all();
    for (auto& thread : pool) thread.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  struct Job {
    std::uint32_t seq;
    PsDescriptor descriptor;
  };

  void record(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (!error_) error_ = error;
    changed_.notify_all();
  }

  void work() {
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return closing_ || error_ || !jobs_.empty(); });
        if (error_ || jobs_.empty()) return;
        job = jobs_.front();
        jobs_.pop_front();
        ++busy_;
      }
      try {
        reduce_and_return(job.seq, job.descriptor);
      } catch (...) {
        record(std::current_exception());
      }
      {
        std::lock_guard lock(mutex_);
        --busy_;
      }
      changed_.notify_all();
    }
  }

  // Every worker's descriptor of collective `seq`; they must agree.
  PsDescriptor read_descriptors(std::uint32_t seq) {
    const auto workers = static_cast<std::size_t>(g_.size);
    auto words = g_.scratch.floats.acquire(workers * kPsDescriptorWords);
    Transfers transfers(g_);
    std::vector<Transfers::Handle> receives;
    CollectiveOptions idle;
    idle.deadline = kIdleDeadline;
    for (std::size_t w = 0; w < workers; ++w) {
      MessageOptions options = g_.message_options(idle, 0);
      options.packet_floats = 0;
      receives.push_back(transfers.recv(
          static_cast<int>(w), message_id(seq, Phase::kDescriptor, 0, 0),
          words.span().subspan(w * kPsDescriptorWords, kPsDescriptorWords), options));
    }
    std::optional<PsDescriptor> first;
    for (std::size_t w = 0; w < workers; ++w) {
      transfers.await(receives[w]);
      auto d = decode_descriptor(words.span().subspan(w * kPsDescriptorWords, kPsDescriptorWords));
      if (!d) {
        throw Error(ErrorCode::kProtocol, static_cast<int>(w),
                    "worker " + std::to_string(w) + " sent a bad parameter-server descriptor (" +
                        d.error() + ") for collective " + std::to_string(seq));
      }
      if (first && !(*d == *first)) {
        throw Error(
            ErrorCode::kProtocol, static_cast<int>(w),
            "workers disagree on parameter-server collective " + std::to_string(seq) + ": worker " +
                std::to_string(w) + " pushes " + std::to_string(d->shard_floats) + " floats" +
                (d->shutdown ? " (shut down)" : "") + ", worker 0 " +
                std::to_string(first->shard_floats) + (first->shutdown ? " (shut down)" : "") +
                "; every rank must issue the same collectives in the same order");
      }
      first = *d;
    }
    return *first;
  }

  void reduce_and_return(std::uint32_t seq, const PsDescriptor& d) {
    const std::size_t block = g_.block_for(d.wire);
    if (d.segment_floats % block != 0) {
      throw Error(ErrorCode::kProtocol, 0,
                  "parameter-server segment of " + std::to_string(d.segment_floats) +
                      " floats is not a multiple of the job's block of " + std::to_string(block));
    }
    const auto workers = static_cast<std::size_t>(g_.size);
    const std::size_t shard = d.shard_floats;
    const std::size_t segment = d.segment_floats;
    const std::size_t blocks = blocks_in(shard, block);
    CollectiveOptions options;
    options.layer = static_cast<int>(d.layer);
    options.num_layers = static_cast<int>(d.num_layers);
    options.deadline = std::chrono::milliseconds(d.deadline_ms);
    options.wire = d.wire;
    const double budget = policy::budget_fraction(d.loss_budget_ppm);
    const double broadcast_budget = policy::budget_fraction(d.broadcast_budget_ppm);

    auto pushed = g_.scratch.floats.acquire(workers * shard);
    auto pushed_counts = g_.scratch.counts.acquire(workers * blocks);
    auto reduced_counts = g_.scratch.counts.acquire(blocks);
    const auto values_of = [&](std::size_t w, Range seg) {
      return pushed.span().subspan(w * shard + seg.begin, seg.size);
    };
    const auto counts_of = [&](std::span<std::uint16_t> all, std::size_t w, std::size_t k,
                               Range seg) {
      return all.subspan(w * blocks + k * (segment / block), blocks_in(seg.size, block));
    };
    const std::size_t segments = segment_count(shard, segment);
    Transfers transfers(g_);
    std::vector<std::vector<Transfers::Handle>> pushes(workers);
    for (std::size_t w = 0; w < workers; ++w) {
      for (std::size_t k = 0; k < segments; ++k) {
        const Range seg = segment_of({0, shard}, segment, k);
        const std::uint64_t id = message_id(seq, Phase::kPush, 0, static_cast<std::uint32_t>(k));
        MessageOptions push = g_.message_options(options, budget);
        if (budget > 0) {
          // The workers' pushes of one segment share their budget: a late or lossy worker's
          // tail is left out when the others arrived whole.
          push.budget_group = id;
          push.budget_group_size = static_cast<std::uint32_t>(workers);
        }
        pushes[w].push_back(transfers.recv(static_cast<int>(w), id, values_of(w, seg), push,
                                           counts_of(pushed_counts.span(), w, k, seg)));
      }
    }
    std::vector<Transfers::Handle> pulls;
    for (std::size_t k = 0; k < segments; ++k) {
      const Range seg = segment_of({0, shard}, segment, k);
      const auto acc = values_of(0, seg);
      const auto acc_counts = counts_of(reduced_counts.span(), 0, k, seg);
      for (std::size_t w = 0; w < workers; ++w) {
        transfers.await(pushes[w][k]);
        const auto counts = counts_of(pushed_counts.span(), w, k, seg);
        if (w == 0) {
          clear_missing(acc, counts, block);
          std::ranges::copy(counts, acc_counts.begin());
        } else {
          accumulate(acc, acc_counts, values_of(w, seg), counts, block);
        }
      }
      finalize(acc, acc_counts, block, g_.size, d.op, d.aggregation);
      // Pulls tell each worker how many contributions each block holds (at least 1 on the wire).
      for (auto& count : acc_counts) count = std::max<std::uint16_t>(count, 1);
      for (std::size_t w = 0; w < workers; ++w) {
        pulls.push_back(transfers.send(
            static_cast<int>(w), message_id(seq, Phase::kPull, 0, static_cast<std::uint32_t>(k)),
            acc, g_.message_options(options, broadcast_budget), acc_counts));
      }
    }
    transfers.await_all(pulls);
  }

  const Group& g_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Job> jobs_;
  std::size_t busy_ = 0;
  bool closing_ = false;
  std::exception_ptr error_;
};

}  // namespace

void ps_serve(const Group& group, int threads) {
  Server(group).run(std::max(1, threads));
}

}  // namespace dlcp::collectives
