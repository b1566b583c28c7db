// The gray failure: a spine that silently drops a share of the packets it forwards, emulated with
// an nftables bridge-family ruleset (numgen random) in the spine's namespace. Packets are counted
// per traffic class as they enter the spine and as they are dropped, so loss by class is measured.
//
// The forward chain counts, then jumps to chain `gate`; in random mode `gate` always jumps to
// `loss` (per-class drop rules at loss_rate), in burst mode a driver thread toggles that jump, so
// bursts drop half the packets (loss rules at 50%) and good periods none.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <thread>

#include "command.hpp"
#include "switch/switch_plan.hpp"
#include "testbed_options.hpp"

namespace dlcp::testbed {

inline constexpr const char* kGrayTable = "dlcp_gray";

// The nft ruleset (`nft -f` syntax) for the spine.
std::string gray_failure_ruleset(const switchconf::SwitchPlan& plan, const GrayFailure& gray);

// Drop probability inside the loss chain, in parts per million: loss_rate when random, 1/2 in
// burst mode.
std::uint32_t gray_drop_ppm(const GrayFailure& gray);

struct ClassLoss {
  std::array<std::uint64_t, switchconf::kTrafficClasses> seen{};
  std::array<std::uint64_t, switchconf::kTrafficClasses> dropped{};
};

// Parses `nft -j list table bridge dlcp_gray` into per-class counters.
ClassLoss parse_gray_counters(const std::string& nft_json);

// Alternating good/bad periods for burst mode, from a seeded generator: bad periods have mean
// burst_ms, good periods a mean chosen so that bursts dropping half the packets average to
// loss_rate: good = burst * (0.5 / loss_rate - 1).
class BurstSchedule {
 public:
  explicit BurstSchedule(const GrayFailure& gray);
  double mean_good_ms() const { return mean_good_ms_; }
  double mean_bad_ms() const { return mean_bad_ms_; }
  // Length of the next period in ms; periods alternate good, bad, good, ...
  double next_period_ms(bool bad);

 private:
  double mean_good_ms_;
  double mean_bad_ms_;
  std::mt19937_64 random_;
};

// Runs the burst schedule against the spine until stopped; idle in random mode.
class BurstDriver {
 public:
  BurstDriver(CommandRunner& runner, std::string spine_namespace, const GrayFailure& gray);
  ~BurstDriver();  // stops, leaving the gate closed (no loss)
  BurstDriver(const BurstDriver&) = delete;
  BurstDriver& operator=(const BurstDriver&) = delete;

 private:
  void set_gate(bool open);
  CommandRunner& runner_;
  std::string namespace_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace dlcp::testbed
