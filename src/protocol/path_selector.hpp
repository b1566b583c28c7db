// Per-packet spraying over K paths (distinct source/destination UDP ports, optionally distinct
// local addresses). Paths are weighted: one that loses clearly more than the best path gets a
// smaller share of packets, and is probed again as it recovers.
//
// Weighting, from per-path loss fractions reported by the receiver:
//   weight_i = 1                               if loss_i <= best_loss + margin
//            = max(min_weight, (1 - loss_i) / (1 - best_loss) * penalty)  otherwise
// Packets go to paths by smooth weighted round-robin, so with equal weights consecutive packets
// take consecutive paths.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dlcp::protocol {

struct PathSelectorConfig {
  double margin = 0.02;      // loss above the best path that is still treated as healthy
  double penalty = 0.25;     // multiplier for a path that loses more than best + margin
  double min_weight = 0.05;  // never starve a path completely, so it can prove it has recovered
};

class PathSelector {
 public:
  PathSelector(std::size_t paths, const PathSelectorConfig& config = {});

  std::size_t paths() const { return weights_.size(); }
  // The path for the next packet.
  std::size_t next();
  // Updates weights from per-path (sent, received) counts over the last interval. Paths with no
  // packets sent keep their weight. Spans must have paths() entries.
  void on_path_report(std::span<const std::uint64_t> sent, std::span<const std::uint64_t> received);
  std::span<const double> weights() const { return weights_; }

 private:
  PathSelectorConfig config_;
  std::vector<double> weights_;
  std::vector<double> current_;
};

}  // namespace dlcp::protocol
