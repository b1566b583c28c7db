// Parameter server. Buffers are cut into stripes (flat: one; hierarchical: one per leader of a
// host) and each stripe into one shard per server, of whole blocks. Each stripe's pushers (flat:
// every worker; hierarchical: the stripe's leader on each host, pushing its host's sum) push
// their shards, each server reduces what arrived and sends the result back to them; the pulls
// carry each block's contribution count so workers can report how much arrived. Pushes and pulls
// carry the tensor's priority class, so when several collectives are in flight the servers
// answer front layers first.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/ps_descriptor.hpp"
#include "collectives/ps_plan.hpp"
#include "collectives/reduction.hpp"
#include "policy/policy.hpp"

namespace dlcp::collectives {
namespace {

// A server waits for the next collective for as long as the job lives; dead workers are noticed
// through the transport's failure report, not through this deadline.
constexpr std::chrono::milliseconds kIdleDeadline = std::chrono::hours(24 * 365);

// Servers follow the job's workers, all of whom a group's reduction counts (reduced_world():
// the group's size when flat, the job's workers for a group of stripe leaders).
int server_rank(const Group& g, int index) {
  return g.reduced_world() + index;
}

// Transfers with the servers name them by transport rank, whatever group the worker runs in.
Group with_servers(const Group& g) {
  Group direct = g;
  direct.members.clear();
  return direct;
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

// The descriptor of a collective with `options`, before the worker's own shard is filled in.
PsDescriptor describe(const CollectiveOptions& options, PsStripe stripe,
                      std::uint16_t contributions) {
  PsDescriptor d;
  d.layer = static_cast<std::uint32_t>(options.layer);
  d.num_layers = static_cast<std::uint32_t>(options.num_layers);
  d.loss_budget_ppm = policy::budget_ppm(options.loss_budget);
  d.broadcast_budget_ppm = policy::budget_ppm(options.broadcast_loss_budget);
  d.op = options.op;
  d.aggregation = options.aggregation;
  d.wire = options.wire;
  d.deadline_ms = static_cast<std::uint32_t>(options.deadline.count());
  d.stripes = stripe.count;
  d.stripe = stripe.index;
  d.contributions = stripe.index == kNoStripe ? 0 : contributions;
  return d;
}

}  // namespace

CollectiveResult ps_allreduce(const Group& g, std::uint32_t ps_seq, std::span<float> values,
                              const CollectiveOptions& options, PsStripe stripe) {
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
  // What this worker pushes already sums input_contributions workers (hierarchical: its host's).
  MessageOptions push = g.message_options(options, options.loss_budget);
  push.contributions = g.input_contributions;

  Transfers transfers(with_servers(g));
  std::vector<Transfers::Handle> pulls;
  std::vector<Transfers::Handle> sends;
  for (int s = 0; s < g.servers; ++s) {
    const Range shard = shard_of(g, values.size(), block, s);
    PsDescriptor d = describe(options, stripe, g.input_contributions);
    d.shard_floats = static_cast<std::uint32_t>(shard.size);
    d.segment_floats = static_cast<std::uint32_t>(segment);
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
      sends.push_back(
          transfers.send(server, message_id(ps_seq, Phase::kPush, 0, static_cast<std::uint32_t>(k)),
                         values.subspan(seg.begin, seg.size), push));
    }
  }

  // Blocks the pull lost keep this worker's own input, scaled to the whole job's share (a host
  // sum: x W / k for a sum, / k for an average).
  const float fallback_scale = g.fallback_scale(options.op);
  const auto workers = static_cast<std::uint64_t>(g.reduced_world());
  std::size_t next_pull = 0;
  for (int s = 0; s < g.servers; ++s) {
    const Range shard = shard_of(g, values.size(), block, s);
    auto counts = pulled_counts.span().subspan(static_cast<std::size_t>(s) * shard_blocks,
                                               blocks_in(shard.size, block));
    for (std::size_t k = 0; k < segment_count(shard.size, segment); ++k)
      transfers.await(pulls[next_pull++]);
    if (shard.size == 0) continue;
    const auto target = values.subspan(shard.begin, shard.size);
    result.broadcast_entries_missing +=
        fall_back_to_local(target, counts, 1, target, fallback_scale, block);
    for (std::size_t b = 0; b < counts.size(); ++b) {
      const std::size_t floats = std::min(block, shard.size - b * block);
      result.contributions_expected += floats * workers;
      result.contributions_received += floats * std::uint64_t{counts[b]};
    }
  }
  transfers.await_all(sends);
  return result;
}

PsAbstention::PsAbstention(const Group& g, std::uint32_t ps_seq, const CollectiveOptions& options,
                           PsStripe stripe, std::uint16_t contributions)
    : transfers_(with_servers(g)),
      words_(g.scratch.floats.acquire(static_cast<std::size_t>(g.servers) * kPsDescriptorWords)) {
  const auto wire = encode_descriptor(describe(options, stripe, contributions));
  for (int s = 0; s < g.servers; ++s) {
    auto words =
        words_.span().subspan(static_cast<std::size_t>(s) * kPsDescriptorWords, kPsDescriptorWords);
    std::ranges::copy(wire, words.begin());
    sends_.push_back(transfers_.send(server_rank(g, s),
                                     message_id(ps_seq, Phase::kDescriptor, 0, 0), words,
                                     descriptor_options(g, options.deadline)));
  }
}

void PsAbstention::await() {
  transfers_.await_all(sends_);
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

// Whether a collective has anything to reduce on this server.
bool has_values(const PsPlan& plan) {
  return std::ranges::any_of(plan.stripes,
                             [](const PsStripePlan& s) { return s.shard_floats > 0; });
}

// One stripe's shard on a server: every pusher's copy, received as one budget group per segment,
// reduced segment by segment and sent back to the pushers.
class ShardReduction {
 public:
  ShardReduction(const Group& g, Transfers& transfers, std::uint32_t seq, std::uint32_t stripe,
                 const PsStripePlan& plan, const PsDescriptor& d)
      : g_(g),
        transfers_(transfers),
        seq_(seq),
        plan_(plan),
        d_(d),
        block_(g.block_for(d.wire)),
        shard_(plan.shard_floats),
        segment_(plan.segment_floats),
        blocks_(blocks_in(shard_, block_)),
        pushed_(g.scratch.floats.acquire(plan.pushers.size() * shard_)),
        pushed_counts_(g.scratch.counts.acquire(plan.pushers.size() * blocks_)),
        reduced_counts_(g.scratch.counts.acquire(blocks_)) {
    if (shard_ > 0 && segment_ % block_ != 0) {
      throw Error(ErrorCode::kProtocol, plan.pushers.front(),
                  "parameter-server segment of " + std::to_string(segment_) +
                      " floats is not a multiple of the job's block of " + std::to_string(block_));
    }
    options_.layer = static_cast<int>(d.layer);
    options_.num_layers = static_cast<int>(d.num_layers);
    options_.deadline = std::chrono::milliseconds(d.deadline_ms);
    options_.wire = d.wire;
    const double budget = policy::budget_fraction(d.loss_budget_ppm);
    pushes_.resize(plan.pushers.size());
    for (std::size_t p = 0; p < plan.pushers.size(); ++p) {
      for (std::size_t k = 0; k < segments(); ++k) {
        const Range seg = segment_of({0, shard_}, segment_, k);
        MessageOptions push = g.message_options(options_, budget);
        if (budget > 0) {
          // The pushes of one segment share their budget: a late or lossy pusher's tail is left
          // out when the others arrived whole. Keyed by stripe, whose pushers differ.
          push.budget_group = message_id(seq, Phase::kPush, stripe, static_cast<std::uint32_t>(k));
          push.budget_group_size = static_cast<std::uint32_t>(plan.pushers.size());
        }
        pushes_[p].push_back(transfers.recv(plan.pushers[p], push_id(k), values_of(p, seg), push,
                                            counts_of(pushed_counts_.span(), p, k, seg)));
      }
    }
  }

  // An empty shard may come without a segment size (its leaders had nothing to push).
  std::size_t segments() const { return shard_ == 0 ? 0 : segment_count(shard_, segment_); }

  // Reduces segment k once every pusher's copy settled and posts its pulls on `pulls`.
  void reduce_and_return(std::size_t k, std::vector<Transfers::Handle>& pulls) {
    const Range seg = segment_of({0, shard_}, segment_, k);
    const auto acc = values_of(0, seg);
    const auto acc_counts = counts_of(reduced_counts_.span(), 0, k, seg);
    for (std::size_t p = 0; p < plan_.pushers.size(); ++p) {
      transfers_.await(pushes_[p][k]);
      const auto counts = counts_of(pushed_counts_.span(), p, k, seg);
      if (p == 0) {
        clear_missing(acc, counts, block_);
        std::ranges::copy(counts, acc_counts.begin());
      } else {
        accumulate(acc, acc_counts, values_of(p, seg), counts, block_);
      }
    }
    // Counts are in workers (a host's sum counts its workers), so this is the flat arithmetic.
    finalize(acc, acc_counts, block_, g_.size, d_.op, d_.aggregation);
    // Pulls tell each pusher how many contributions each block holds (at least 1 on the wire).
    for (auto& count : acc_counts) count = std::max<std::uint16_t>(count, 1);
    const double broadcast_budget = policy::budget_fraction(d_.broadcast_budget_ppm);
    for (const int pusher : plan_.pushers) {
      pulls.push_back(
          transfers_.send(pusher, message_id(seq_, Phase::kPull, 0, static_cast<std::uint32_t>(k)),
                          acc, g_.message_options(options_, broadcast_budget), acc_counts));
    }
  }

 private:
  std::uint64_t push_id(std::size_t k) const {
    return message_id(seq_, Phase::kPush, 0, static_cast<std::uint32_t>(k));
  }
  std::span<float> values_of(std::size_t pusher, Range seg) const {
    return pushed_.span().subspan(pusher * shard_ + seg.begin, seg.size);
  }
  std::span<std::uint16_t> counts_of(std::span<std::uint16_t> all, std::size_t pusher,
                                     std::size_t k, Range seg) const {
    return all.subspan(pusher * blocks_ + k * (segment_ / block_), blocks_in(seg.size, block_));
  }

  const Group& g_;
  Transfers& transfers_;
  std::uint32_t seq_;
  const PsStripePlan& plan_;
  const PsDescriptor& d_;
  CollectiveOptions options_;
  std::size_t block_;
  std::size_t shard_;
  std::size_t segment_;
  std::size_t blocks_;
  BufferPool<float>::Lease pushed_;
  BufferPool<std::uint16_t>::Lease pushed_counts_;
  BufferPool<std::uint16_t>::Lease reduced_counts_;
  std::vector<std::vector<Transfers::Handle>> pushes_;  // by pusher, then segment
};

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
        PsPlan plan = read_descriptors(seq);
        if (plan.common.shutdown) break;
        if (!has_values(plan)) continue;
        std::unique_lock lock(mutex_);
        // At most `threads` collectives in flight: each holds a shard per pusher of scratch.
        changed_.wait(lock, [&] {
          return error_ || jobs_.size() + busy_ < static_cast<std::size_t>(threads);
        });
        if (error_) break;
        jobs_.push_back({seq, std::move(plan)});
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
    PsPlan plan;
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
        job = std::move(jobs_.front());
        jobs_.pop_front();
        ++busy_;
      }
      try {
        reduce_and_return(job.seq, job.plan);
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

  // Every worker's descriptor of collective `seq`, and who pushes what.
  PsPlan read_descriptors(std::uint32_t seq) {
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
    std::vector<PsDescriptor> descriptors;
    descriptors.reserve(workers);
    for (std::size_t w = 0; w < workers; ++w) {
      transfers.await(receives[w]);
      auto d = decode_descriptor(words.span().subspan(w * kPsDescriptorWords, kPsDescriptorWords));
      if (!d) {
        throw Error(ErrorCode::kProtocol, static_cast<int>(w),
                    "worker " + std::to_string(w) + " sent a bad parameter-server descriptor (" +
                        d.error() + ") for collective " + std::to_string(seq));
      }
      descriptors.push_back(*d);
    }
    auto plan = plan_ps_collective(descriptors);
    if (!plan) {
      throw Error(ErrorCode::kProtocol, plan.error().worker,
                  "workers disagree on parameter-server collective " + std::to_string(seq) + ": " +
                      plan.error().reason +
                      "; every rank must issue the same collectives in the same order");
    }
    return std::move(*plan);
  }

  // Segment-major over the stripes, so every stripe's first results go out early.
  void reduce_and_return(std::uint32_t seq, const PsPlan& plan) {
    Transfers transfers(g_);
    std::vector<ShardReduction> shards;
    shards.reserve(plan.stripes.size());
    std::size_t segments = 0;
    for (std::size_t s = 0; s < plan.stripes.size(); ++s) {
      shards.emplace_back(g_, transfers, seq, static_cast<std::uint32_t>(s), plan.stripes[s],
                          plan.common);
      segments = std::max(segments, shards.back().segments());
    }
    std::vector<Transfers::Handle> pulls;
    for (std::size_t k = 0; k < segments; ++k) {
      for (auto& shard : shards) {
        if (k < shard.segments()) shard.reduce_and_return(k, pulls);
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
