// What the long link does to each frame, as a pure function of the frame's arrival time and size,
// the link's state and a seeded random stream: no clock, no I/O, so every time, rate and ratio is
// testable with fixed inputs. The forwarder (long_link.hpp) feeds it real frames and real times.
//
// One model is one direction of the link. A frame that arrives
//   1. joins the link's queue, or is tail-dropped when the bytes still waiting to be serialized
//      plus its own would exceed the queue;
//   2. is serialized at the link rate after the frames before it (its wire time counts the frame
//      as the TAP device hands it over: Ethernet header and payload, as the switches' HTB counts);
//   3. may be lost on the wire, at random or in a burst; a lost frame still used the wire;
//   4. arrives at the far end one-way delay (plus jitter) after its last bit left.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>

#include "testbed_options.hpp"

namespace dlcp::testbed {

using Nanos = std::chrono::nanoseconds;

enum class FrameFate { kForwarded, kQueueOverflow, kRandomLoss, kBurstLoss };

struct FrameDecision {
  FrameFate fate = FrameFate::kForwarded;
  Nanos release{0};  // when the far end receives it (kForwarded only)
};

// A Gilbert-Elliott channel with loss 1 in the bad state and 0 in the good one (Gilbert's
// model). Per frame it moves good->bad with enter_bad and bad->good with leave_bad, so bursts last
// 1 / leave_bad frames on average (geometric) and the long-run loss is
// enter_bad / (enter_bad + leave_bad).
struct GilbertElliott {
  double enter_bad = 0;
  double leave_bad = 1;
};

// The transition probabilities that give long-run `loss` in bursts of mean `mean_burst` frames.
GilbertElliott gilbert_elliott(double loss, double mean_burst);

// The DSCP of an Ethernet frame carrying IPv4 (with or without one VLAN tag), else -1.
int ipv4_dscp(std::span<const unsigned char> frame);

// Time to serialize `bytes` at `rate_bps`, rounded to the nearest nanosecond.
Nanos serialization_time(std::size_t bytes, double rate_bps);

// A deterministic 64-bit generator (splitmix64): the same seed gives the same draws on every
// platform and standard library, which the tests with fixed seeds rely on.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  double uniform();  // [0, 1)

 private:
  std::uint64_t state_;
};

struct LinkCounters {
  std::uint64_t frames_offered = 0;
  std::uint64_t forwarded_frames = 0;
  std::uint64_t forwarded_bytes = 0;
  std::uint64_t dropped_random = 0;
  std::uint64_t dropped_burst = 0;
  std::uint64_t dropped_queue = 0;
  std::uint64_t bursts = 0;  // times the burst channel entered its bad state
  std::uint64_t spared = 0;  // lossless frames the wire would have lost (not in the drops above)
};

class LongLinkModel {
 public:
  LongLinkModel(const LongLinkOptions& options, std::uint64_t seed);

  // Decides the fate of a frame of `bytes` arriving at `arrival`; a `lossless` one is not lost on
  // the wire (LongLinkOptions::lossless_dscp), though the queue may drop it. Arrivals must not go
  // back in time.
  FrameDecision offer(Nanos arrival, std::size_t bytes, bool lossless = false);

  // Bytes waiting to be serialized (including the rest of the frame on the wire) at `now`.
  double backlog_bytes(Nanos now) const;
  const LinkCounters& counters() const { return counters_; }

 private:
  LongLinkOptions options_;
  GilbertElliott burst_channel_;
  SplitMix64 random_;
  Nanos busy_until_{0};    // when the wire finishes the frames queued so far
  Nanos last_release_{0};  // the latest release so far (order is kept unless options_.reorder)
  bool in_burst_ = false;
  LinkCounters counters_;
};

}  // namespace dlcp::testbed
