// Layer position -> priority class (0 = most urgent = front layers).
//
// Mapping, with L = num_layers:
//   L >= 8: class = floor(layer * 8 / L). Every class gets floor(L/8) or ceil(L/8) consecutive
//           layers, layer 0 is class 0 and layer L-1 is class 7 (since (L-1)*8/L >= 7 when L >= 8).
//   2 <= L < 8: class = round(layer * 7 / (L - 1)), halves rounded up. Layer 0 is class 0, layer
//           L-1 is class 7, and distinct layers get distinct classes spread over 0..7 (steps of
//           7/(L-1) > 1), so a switch still tells every layer apart.
//   L == 1: the only layer is the front layer: class 0.
// Both regimes agree at L = 8 (class = layer) and are monotone non-decreasing in layer.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "policy/policy.hpp"

namespace dlcp::policy {

int priority_class(int layer, int num_layers) {
  if (num_layers < 1 || layer < 0 || layer >= num_layers) {
    throw std::invalid_argument("priority_class: layer = " + std::to_string(layer) +
                                " with num_layers = " + std::to_string(num_layers) +
                                " (need num_layers >= 1 and 0 <= layer < num_layers)");
  }
  const std::int64_t l = layer;
  const std::int64_t n = num_layers;
  constexpr std::int64_t k = kPriorityClasses;
  if (n == 1) return 0;
  if (n >= k) return static_cast<int>(l * k / n);
  // round(l * (k - 1) / (n - 1)) with halves up, in integers.
  return static_cast<int>((2 * l * (k - 1) + (n - 1)) / (2 * (n - 1)));
}

}  // namespace dlcp::policy
