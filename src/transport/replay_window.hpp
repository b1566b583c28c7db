// Anti-replay for authenticated data packets: each MAC counter of one sender is accepted at most
// once. Packets are sprayed over several paths, so counters arrive somewhat out of order; the
// window remembers the last `window` counters below the highest one accepted and refuses
// anything older, whose state is forgotten.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::transport {

class ReplayWindow {
 public:
  // window: counters remembered, a positive multiple of 64 (throws std::invalid_argument).
  explicit ReplayWindow(std::uint64_t window = kDefaultWindow);

  // True when `counter` was never recorded and is not older than the window.
  bool fresh(std::uint64_t counter) const;
  // Records a counter whose packet authenticated; call only when fresh(counter).
  void record(std::uint64_t counter);

  // Spraying reorders by at most a few batches per path; this leaves a wide margin.
  static constexpr std::uint64_t kDefaultWindow = 1u << 16;

 private:
  bool bit(std::uint64_t counter) const;
  void set_bit(std::uint64_t counter, bool value);

  std::uint64_t window_;
  std::vector<std::uint64_t> bits_;  // bit (counter % window_): counter seen
  std::uint64_t highest_ = 0;
  bool any_ = false;
};

}  // namespace dlcp::transport
