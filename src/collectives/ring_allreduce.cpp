// Ring all-reduce. Step s of the reduce-scatter sends chunk (r - s) to the next rank and reduces
// chunk (r - s - 1) from the previous one; after size-1 steps rank r owns chunk (r + 1) fully
// reduced, finalizes it once, and the all-gather passes the finished chunks around loss-free.
// Every chunk is cut into segments so that reducing one segment overlaps the transfer of the
// next, and a segment is forwarded as soon as it is reduced.
#include <algorithm>
#include <vector>

#include "collectives/block_layout.hpp"
#include "collectives/collectives.hpp"
#include "collectives/message_id.hpp"
#include "collectives/reduction.hpp"
#include "wire/values.hpp"

namespace dlcp::collectives {
namespace {

class Ring {
 public:
  Ring(const Group& group, std::uint32_t seq, std::span<float> values,
       const CollectiveOptions& options)
      : g_(group),
        seq_(seq),
        values_(values),
        options_(options),
        world_(group.size),
        next_((group.rank + 1) % group.size),
        prev_((group.rank + group.size - 1) % group.size),
        block_(group.block_for(options.wire)),
        max_chunk_(aligned_part(values.size(), world_, block_, 0).size),
        chunk_blocks_(blocks_in(max_chunk_, block_)),
        segment_(
            segment_floats(group.segment_bytes / sizeof(float), block_, max_chunk_, kMaxSegments)),
        lossy_gather_(options.broadcast_loss_budget > 0),
        transfers_(group) {}

  CollectiveResult run();

 private:
  int chunk_index(int c) const { return ((c % world_) + world_) % world_; }
  Range chunk(int c) const {
    return aligned_part(values_.size(), world_, block_, static_cast<std::size_t>(chunk_index(c)));
  }
  std::size_t segments(int c) const { return segment_count(chunk(c).size, segment_); }
  // Segment k of chunk c, relative to the buffer, and its first block within the chunk.
  Range segment(int c, std::size_t k) const { return segment_of(chunk(c), segment_, k); }
  std::size_t first_block(std::size_t k) const { return k * (segment_ / block_); }
  std::span<std::uint16_t> counts_of(std::span<std::uint16_t> chunk_counts, int c,
                                     std::size_t k) const {
    return chunk_counts.subspan(first_block(k), blocks_in(segment(c, k).size, block_));
  }
  std::span<std::uint16_t> acc_counts(int c) const {
    return accumulated_.span().subspan(static_cast<std::size_t>(chunk_index(c)) * chunk_blocks_,
                                       chunk_blocks_);
  }
  std::span<std::uint16_t> gather_counts(int c) const {
    return gathered_.span().subspan(static_cast<std::size_t>(chunk_index(c)) * chunk_blocks_,
                                    chunk_blocks_);
  }

  void post_reduce_receives(int step);
  void send_reduce(int step, std::size_t k);
  void post_gather_receives();
  void send_gather(int step, std::size_t k);

  const Group& g_;
  std::uint32_t seq_;
  std::span<float> values_;
  const CollectiveOptions& options_;
  int world_;
  int next_;
  int prev_;
  std::size_t block_;
  std::size_t max_chunk_;
  std::size_t chunk_blocks_;
  std::size_t segment_;
  bool lossy_gather_;

  BufferPool<float>::Lease incoming_[2];
  BufferPool<std::uint16_t>::Lease incoming_counts_[2];
  BufferPool<std::uint16_t>::Lease accumulated_;
  BufferPool<std::uint16_t>::Lease gathered_;
  BufferPool<float>::Lease local_;  // the input, for blocks the all-gather may lose
  Transfers transfers_;
  std::vector<Transfers::Handle> reduce_receives_[2];
  std::vector<std::vector<Transfers::Handle>> gather_receives_;
  std::vector<Transfers::Handle> sends_;
};

void Ring::post_reduce_receives(int step) {
  const int c = g_.rank - step - 1;
  auto& receives = reduce_receives_[step % 2];
  receives.clear();
  const Range whole = chunk(c);
  for (std::size_t k = 0; k < segments(c); ++k) {
    const Range seg = segment(c, k);
    auto into = incoming_[step % 2].span().subspan(seg.begin - whole.begin, seg.size);
    auto counts = counts_of(incoming_counts_[step % 2].span(), c, k);
    receives.push_back(
        transfers_.recv(prev_,
                        message_id(seq_, Phase::kReduce, static_cast<std::uint32_t>(step),
                                   static_cast<std::uint32_t>(k)),
                        into, g_.message_options(options_, options_.loss_budget), counts));
  }
}

void Ring::send_reduce(int step, std::size_t k) {
  const int c = g_.rank - step;
  const Range seg = segment(c, k);
  sends_.push_back(transfers_.send(
      next_,
      message_id(seq_, Phase::kReduce, static_cast<std::uint32_t>(step),
                 static_cast<std::uint32_t>(k)),
      values_.subspan(seg.begin, seg.size), g_.message_options(options_, options_.loss_budget),
      counts_of(acc_counts(c), c, k)));
}

void Ring::post_gather_receives() {
  gather_receives_.resize(static_cast<std::size_t>(world_ - 1));
  for (int t = 0; t < world_ - 1; ++t) {
    const int c = g_.rank - t;
    auto& receives = gather_receives_[static_cast<std::size_t>(t)];
    receives.clear();
    for (std::size_t k = 0; k < segments(c); ++k) {
      const Range seg = segment(c, k);
      const auto counts =
          lossy_gather_ ? counts_of(gather_counts(c), c, k) : std::span<std::uint16_t>{};
      receives.push_back(
          transfers_.recv(prev_,
                          message_id(seq_, Phase::kGather, static_cast<std::uint32_t>(t),
                                     static_cast<std::uint32_t>(k)),
                          values_.subspan(seg.begin, seg.size),
                          g_.message_options(options_, options_.broadcast_loss_budget), counts));
    }
  }
}

// Gather step t forwards chunk (r + 1 - t). With a lossy gather, blocks this rank had to fill
// from its own input travel with count 1, so the next rank knows to use its own instead.
void Ring::send_gather(int step, std::size_t k) {
  const int c = g_.rank + 1 - step;
  const Range seg = segment(c, k);
  auto options = g_.message_options(options_, options_.broadcast_loss_budget);
  if (!lossy_gather_) options.contributions = static_cast<std::uint16_t>(world_);
  sends_.push_back(transfers_.send(
      next_,
      message_id(seq_, Phase::kGather, static_cast<std::uint32_t>(step),
                 static_cast<std::uint32_t>(k)),
      values_.subspan(seg.begin, seg.size), options,
      lossy_gather_ ? counts_of(gather_counts(c), c, k) : std::span<std::uint16_t>{}));
}

CollectiveResult Ring::run() {
  CollectiveResult result;
  result.entries = values_.size();
  auto& scratch = g_.scratch;
  for (auto& lease : incoming_) lease = scratch.floats.acquire(max_chunk_);
  for (auto& lease : incoming_counts_) lease = scratch.counts.acquire(chunk_blocks_);
  accumulated_ = scratch.counts.acquire(chunk_blocks_ * static_cast<std::size_t>(world_));
  std::ranges::fill(accumulated_.span(), g_.input_contributions);
  if (lossy_gather_) {
    gathered_ = scratch.counts.acquire(chunk_blocks_ * static_cast<std::size_t>(world_));
    local_ = scratch.floats.acquire(values_.size());
    std::ranges::copy(values_, local_.span().begin());
  }

  post_reduce_receives(0);
  for (std::size_t k = 0; k < segments(g_.rank); ++k) send_reduce(0, k);

  const int last_step = world_ - 2;
  for (int s = 0; s <= last_step; ++s) {
    if (s < last_step) {
      post_reduce_receives(s + 1);
    } else {
      post_gather_receives();
    }
    const int c = g_.rank - s - 1;
    const Range whole = chunk(c);
    auto& receives = reduce_receives_[s % 2];
    for (std::size_t k = 0; k < receives.size(); ++k) {
      transfers_.await(receives[k]);
      const Range seg = segment(c, k);
      const auto acc = values_.subspan(seg.begin, seg.size);
      const auto counts = counts_of(acc_counts(c), c, k);
      accumulate(acc, counts, incoming_[s % 2].span().subspan(seg.begin - whole.begin, seg.size),
                 counts_of(incoming_counts_[s % 2].span(), c, k), block_);
      if (s < last_step) {
        send_reduce(s + 1, k);
        continue;
      }
      // Chunk r + 1 is complete here: finalize it once, for every rank, and round it as the
      // others will receive it.
      const FinalizeStats stats =
          finalize(acc, counts, block_, g_.reduced_world(), options_.op, options_.aggregation);
      wire::round_to_wire(acc, options_.wire, block_);
      result.contributions_expected += stats.contributions_expected;
      result.contributions_received += stats.contributions_received;
      if (lossy_gather_) {
        std::ranges::fill(counts_of(gather_counts(c), c, k), static_cast<std::uint16_t>(world_));
      }
      send_gather(0, k);
    }
  }

  const float fallback_scale = g_.fallback_scale(options_.op);
  for (int t = 0; t < world_ - 1; ++t) {
    const int c = g_.rank - t;
    auto& receives = gather_receives_[static_cast<std::size_t>(t)];
    for (std::size_t k = 0; k < receives.size(); ++k) {
      transfers_.await(receives[k]);
      if (lossy_gather_) {
        const Range seg = segment(c, k);
        auto counts = counts_of(gather_counts(c), c, k);
        result.broadcast_entries_missing += fall_back_to_local(
            values_.subspan(seg.begin, seg.size), counts, static_cast<std::uint16_t>(world_),
            local_.span().subspan(seg.begin, seg.size), fallback_scale, block_);
        // Forwarded blocks keep their count: 0 (lost here) is sent as 1, "not the real value".
        for (auto& count : counts) count = std::max<std::uint16_t>(count, 1);
      }
      if (t + 1 < world_ - 1) send_gather(t + 1, k);
    }
  }
  transfers_.await_all(sends_);
  return result;
}

}  // namespace

CollectiveResult ring_allreduce(const Group& group, std::uint32_t seq, std::span<float> values,
                                const CollectiveOptions& options) {
  if (group.size == 1) {
    CollectiveResult result;
    result.entries = values.size();
    return result;
  }
  return Ring(group, seq, values, options).run();
}

}  // namespace dlcp::collectives
