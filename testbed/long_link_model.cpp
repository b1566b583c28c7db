#include "long_link_model.hpp"

#include <algorithm>
#include <cmath>

namespace dlcp::testbed {

GilbertElliott gilbert_elliott(double loss, double mean_burst) {
  if (loss <= 0) return {};
  const double leave_bad = 1.0 / mean_burst;
  // Stationary bad share pi = enter / (enter + leave) = loss  =>  enter = leave * loss / (1 -
  // loss).
  return {std::min(1.0, leave_bad * loss / (1.0 - loss)), leave_bad};
}

Nanos serialization_time(std::size_t bytes, double rate_bps) {
  return Nanos(std::llround(static_cast<double>(bytes) * 8.0 * 1e9 / rate_bps));
}

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() {
  return static_cast<double>(next() >> 11) * 0x1.0p-53;  // the top 53 bits: exact doubles
}

LongLinkModel::LongLinkModel(const LongLinkOptions& options, std::uint64_t seed)
    : options_(options),
      burst_channel_(gilbert_elliott(options.burst_loss, options.burst_length)),
      random_(seed) {}

double LongLinkModel::backlog_bytes(Nanos now) const {
  if (busy_until_ <= now) return 0;
  return static_cast<double>((busy_until_ - now).count()) * options_.rate_bps / 8e9;
}

int ipv4_dscp(std::span<const unsigned char> frame) {
  constexpr std::size_t kTypeOffset = 12;
  std::size_t type_at = kTypeOffset;
  auto type = [&](std::size_t at) { return frame[at] << 8 | frame[at + 1]; };
  if (frame.size() >= type_at + 2 && type(type_at) == 0x8100) type_at += 4;  // one VLAN tag
  // The IPv4 header's second byte: DSCP in its upper six bits.
  if (frame.size() < type_at + 4 || type(type_at) != 0x0800) return -1;
  return frame[type_at + 3] >> 2;
}

FrameDecision LongLinkModel::offer(Nanos arrival, std::size_t bytes, bool lossless) {
  ++counters_.frames_offered;
  if (backlog_bytes(arrival) + static_cast<double>(bytes) >
      static_cast<double>(options_.queue_bytes)) {
    ++counters_.dropped_queue;
    return {FrameFate::kQueueOverflow, Nanos(0)};
  }
  const Nanos finish =
      std::max(arrival, busy_until_) + serialization_time(bytes, options_.rate_bps);
  busy_until_ = finish;

  // Both channels draw for every frame on the wire, so that switching one off does not change
  // the other's draws.
  const double random_draw = random_.uniform();
  const double burst_draw = random_.uniform();
  const bool was_in_burst = in_burst_;
  in_burst_ =
      in_burst_ ? burst_draw >= burst_channel_.leave_bad : burst_draw < burst_channel_.enter_bad;
  if (in_burst_ && !was_in_burst) ++counters_.bursts;
  if (lossless && (in_burst_ || random_draw < options_.random_loss)) {
    ++counters_.spared;
  } else if (in_burst_) {
    ++counters_.dropped_burst;
    return {FrameFate::kBurstLoss, Nanos(0)};
  } else if (random_draw < options_.random_loss) {
    ++counters_.dropped_random;
    return {FrameFate::kRandomLoss, Nanos(0)};
  }

  Nanos release = finish + std::chrono::duration_cast<Nanos>(
                               std::chrono::duration<double, std::milli>(options_.one_way_ms));
  if (options_.jitter_us > 0) {
    const double jitter_ns = options_.jitter_us * 1e3;
    release += Nanos(std::llround((2 * random_.uniform() - 1) * jitter_ns));
  }
  if (!options_.reorder) release = std::max(release, last_release_);
  last_release_ = std::max(release, last_release_);
  ++counters_.forwarded_frames;
  counters_.forwarded_bytes += bytes;
  return {FrameFate::kForwarded, release};
}

}  // namespace dlcp::testbed
