#include "protocol/path_selector.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace dlcp::protocol {
namespace {

std::size_t check_paths(std::size_t paths, const PathSelectorConfig& config) {
  if (paths == 0) throw std::invalid_argument("PathSelector: paths must be > 0");
  if (!(config.margin >= 0.0)) throw std::invalid_argument("PathSelector: margin must be >= 0");
  if (!(config.penalty > 0.0 && config.penalty <= 1.0)) {
    throw std::invalid_argument("PathSelector: penalty must be in (0, 1]");
  }
  if (!(config.min_weight > 0.0 && config.min_weight <= 1.0)) {
    throw std::invalid_argument("PathSelector: min_weight must be in (0, 1]");
  }
  return paths;
}

}  // namespace

PathSelector::PathSelector(std::size_t paths, const PathSelectorConfig& config)
    : config_(config), weights_(check_paths(paths, config), 1.0), current_(paths, 0.0) {}

// Smooth weighted round-robin (as in nginx): every path gains its weight, the one with the most
// credit is picked (lowest index on ties) and pays the total weight.
std::size_t PathSelector::next() {
  double total = 0.0;
  std::size_t best = 0;
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    current_[i] += weights_[i];
    total += weights_[i];
    if (current_[i] > current_[best]) best = i;
  }
  current_[best] -= total;
  return best;
}

void PathSelector::on_path_report(std::span<const std::uint64_t> sent,
                                  std::span<const std::uint64_t> received) {
  if (sent.size() != weights_.size() || received.size() != weights_.size()) {
    throw std::invalid_argument("PathSelector: report must have one entry per path");
  }
  std::vector<double> loss(weights_.size(), 0.0);
  double best_loss = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (sent[i] == 0) continue;
    // More received than sent (late packets of an earlier interval) counts as no loss.
    const std::uint64_t lost = sent[i] > received[i] ? sent[i] - received[i] : 0;
    loss[i] = static_cast<double>(lost) / static_cast<double>(sent[i]);
    best_loss = std::min(best_loss, loss[i]);
  }
  if (best_loss == std::numeric_limits<double>::infinity()) return;  // nothing sent anywhere

  for (std::size_t i = 0; i < weights_.size(); ++i) {
    if (sent[i] == 0) continue;  // no evidence: keep the weight
    if (loss[i] <= best_loss + config_.margin) {
      weights_[i] = 1.0;
    } else {
      // loss[i] > best_loss here, so best_loss < 1.
      weights_[i] =
          std::max(config_.min_weight, (1.0 - loss[i]) / (1.0 - best_loss) * config_.penalty);
    }
  }
}

}  // namespace dlcp::protocol
