// The long link's losses on the wire, as an ns-3 error model on the receiving device of each
// direction: independent (random) loss and bursty loss from a Gilbert-Elliott channel that loses
// every frame in its bad state, as the testbed's long link has them. A lost frame has used the
// wire (the model sits at the receiver), as on a real link.
#pragma once

#include <cstdint>
#include <random>

#include "ns3/error-model.h"

namespace dlcp::sim {

// Per-frame transition probabilities of a two-state (good, bad) channel.
struct GilbertElliott {
  double enter_bad = 0;  // good -> bad
  double leave_bad = 1;  // bad -> good; bursts last 1 / leave_bad frames on average
};

// The channel whose long-run loss is `loss` (the bad state's stationary share,
// enter / (enter + leave)) in bursts of `mean_burst` frames on average (geometric).
GilbertElliott gilbert_elliott(double loss, double mean_burst);

struct LongLinkLossCounters {
  std::uint64_t frames = 0;  // every frame that reached the far end of the wire
  std::uint64_t dropped_random = 0;
  std::uint64_t dropped_burst = 0;
  std::uint64_t bursts = 0;  // times the channel entered its bad state
};

class LongLinkLoss : public ns3::ErrorModel {
 public:
  static ns3::TypeId GetTypeId();

  // `random_loss` of the frames lost independently, and `burst_loss` in bursts of `burst_length`
  // frames on average; draws from a generator of its own seeded with `seed`.
  void configure(double random_loss, double burst_loss, double burst_length, std::uint64_t seed);
  const LongLinkLossCounters& counters() const { return counters_; }

 private:
  bool DoCorrupt(ns3::Ptr<ns3::Packet> packet) override;
  void DoReset() override {}

  // A draw below share * 2^64 happens with probability `share`, on any standard library.
  static std::uint64_t threshold(double share);

  std::uint64_t random_threshold_ = 0;
  std::uint64_t enter_bad_threshold_ = 0;
  std::uint64_t leave_bad_threshold_ = 0;
  bool in_burst_ = false;
  std::mt19937_64 random_;
  LongLinkLossCounters counters_;
};

}  // namespace dlcp::sim
