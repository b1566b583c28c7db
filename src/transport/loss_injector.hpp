// Diagnostic loss injection on the receive path (off by default): random or bursty drops of data
// packets, optionally per priority class or per sending rank, and CE marks read on a class's
// packets. Bursty loss is a
// Gilbert-Elliott channel with a good state (no loss) and a bad state (every packet lost),
// parameterised by the long-run drop rate and the mean burst length, so drop_rate stays the average
// loss whatever the burst length.
#pragma once

#include <array>
#include <cstdint>
#include <random>

#include "dlcp/options.hpp"

namespace dlcp::transport {

using LossInjectionConfig = dlcp::LossInjectionOptions;

class LossInjector {
 public:
  explicit LossInjector(const LossInjectionConfig& config);

  // Decides the fate of one arriving data packet of the given priority class (0..7) from
  // `source_rank` (-1: unknown, so no per-source rate applies).
  bool should_drop(int priority_class, int source_rank = -1);
  // Whether an arriving packet of the class is to be read as CE-marked (class_mark_rate).
  bool should_mark(int priority_class);

  // Gilbert-Elliott transition probabilities for a long-run rate and mean burst length:
  // p_bad_to_good = 1 / burst; p_good_to_bad = rate * p_bad_to_good / (1 - rate).
  // At rate 1 the channel stays bad (p_good_to_bad = 1).
  static double good_to_bad(double rate, double burst);
  static double bad_to_good(double burst);

 private:
  struct Channel {
    bool bad = false;
  };
  double rate_for(int priority_class) const;

  LossInjectionConfig config_;
  std::mt19937_64 rng_;
  std::array<Channel, 8> channels_{};
};

}  // namespace dlcp::transport
