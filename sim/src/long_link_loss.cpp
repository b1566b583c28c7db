#include "long_link_loss.hpp"

#include <algorithm>
#include <limits>

#include "ns3/object-base.h"

namespace dlcp::sim {

NS_OBJECT_ENSURE_REGISTERED(LongLinkLoss);

GilbertElliott gilbert_elliott(double loss, double mean_burst) {
  if (loss <= 0) return {};
  const double leave_bad = 1.0 / mean_burst;
  // loss = enter / (enter + leave)  =>  enter = leave * loss / (1 - loss).
  return {std::min(1.0, leave_bad * loss / (1.0 - loss)), leave_bad};
}

ns3::TypeId LongLinkLoss::GetTypeId() {
  static ns3::TypeId tid = ns3::TypeId("dlcp::sim::LongLinkLoss")
                               .SetParent<ns3::ErrorModel>()
                               .SetGroupName("DlcpSim")
                               .AddConstructor<LongLinkLoss>();
  return tid;
}

std::uint64_t LongLinkLoss::threshold(double share) {
  if (share >= 1) return std::numeric_limits<std::uint64_t>::max();
  return static_cast<std::uint64_t>(share * 0x1.0p64);
}

void LongLinkLoss::configure(double random_loss, double burst_loss, double burst_length,
                             std::uint64_t seed) {
  const GilbertElliott channel = gilbert_elliott(burst_loss, burst_length);
  random_threshold_ = threshold(random_loss);
  enter_bad_threshold_ = threshold(channel.enter_bad);
  leave_bad_threshold_ = threshold(channel.leave_bad);
  in_burst_ = false;
  random_.seed(seed);
}

bool LongLinkLoss::DoCorrupt(ns3::Ptr<ns3::Packet>) {
  ++counters_.frames;
  // Both channels draw for every frame, so that switching one off leaves the other's draws as
  // they were.
  const std::uint64_t random_draw = random_();
  const std::uint64_t burst_draw = random_();
  const bool was_in_burst = in_burst_;
  in_burst_ = in_burst_ ? burst_draw >= leave_bad_threshold_ : burst_draw < enter_bad_threshold_;
  if (in_burst_) {
    if (!was_in_burst) ++counters_.bursts;
    ++counters_.dropped_burst;
    return true;
  }
  if (random_draw < random_threshold_) {
    ++counters_.dropped_random;
    return true;
  }
  return false;
}

}  // namespace dlcp::sim
