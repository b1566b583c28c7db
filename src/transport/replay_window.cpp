#include "transport/replay_window.hpp"

#include <algorithm>
#include <stdexcept>

namespace dlcp::transport {

ReplayWindow::ReplayWindow(std::uint64_t window) : window_(window) {
  if (window == 0 || window % 64 != 0) {
    throw std::invalid_argument("replay window must be a positive multiple of 64");
  }
  bits_.assign(window / 64, 0);
}

bool ReplayWindow::bit(std::uint64_t counter) const {
  const std::uint64_t slot = counter % window_;
  return (bits_[slot / 64] >> (slot % 64) & 1u) != 0;
}

void ReplayWindow::set_bit(std::uint64_t counter, bool value) {
  const std::uint64_t slot = counter % window_;
  const std::uint64_t mask = std::uint64_t{1} << (slot % 64);
  if (value) {
    bits_[slot / 64] |= mask;
  } else {
    bits_[slot / 64] &= ~mask;
  }
}

bool ReplayWindow::fresh(std::uint64_t counter) const {
  if (!any_ || counter > highest_) return true;
  if (highest_ - counter >= window_) return false;  // too old to tell: refused
  return !bit(counter);
}

void ReplayWindow::record(std::uint64_t counter) {
  if (!any_) {
    any_ = true;
    highest_ = counter;
  } else if (counter > highest_) {
    // The slots of the counters skipped over now belong to new counters: clear them.
    if (counter - highest_ >= window_) {
      std::fill(bits_.begin(), bits_.end(), 0);
    } else {
      for (std::uint64_t c = highest_ + 1; c < counter; ++c) set_bit(c, false);
    }
    highest_ = counter;
  }
  set_bit(counter, true);
}

}  // namespace dlcp::transport
