// Token-bucket pacer: releases bytes at `rate` with at most `burst_bytes` sent back to back.
#pragma once

#include <cstdint>

#include "common/time.hpp"

namespace dlcp::protocol {

class Pacer {
 public:
  // rate_bytes_per_s > 0, burst_bytes > 0; the bucket starts full.
  Pacer(double rate_bytes_per_s, std::uint64_t burst_bytes, TimePoint now);

  // Changes the rate; tokens accumulated so far are kept (capped at the burst).
  void set_rate(double rate_bytes_per_s, TimePoint now);
  double rate() const { return rate_; }
  // Changes the burst (> 0); tokens above the new burst are dropped.
  void set_burst(std::uint64_t burst_bytes, TimePoint now);
  std::uint64_t burst() const { return static_cast<std::uint64_t>(burst_); }

  // Drops any tokens saved up (the bucket keeps a debt, if it has one): nothing more leaves back
  // to back until tokens accrue again at the current rate.
  void drain(TimePoint now);

  // Bytes that may be sent now (tokens available, never above the burst).
  std::uint64_t available(TimePoint now);
  // Records that bytes were sent; the bucket may go negative by at most one packet's worth.
  void consume(std::uint64_t bytes, TimePoint now);
  // How long until `bytes` tokens are available (zero if available now).
  Duration wait_for(std::uint64_t bytes, TimePoint now);

 private:
  void refill(TimePoint now);

  double rate_;
  double burst_;
  double tokens_;
  TimePoint last_;
};

// The burst for a sender at `rate_bytes_per_s` that gets a rate report every `feedback_interval`:
// an eighth of an interval of data (250 us at the default 2 ms), so that whatever a sender puts
// on the wire back to back is seen by the next report and answered before it can repeat, and a
// burst sprayed over a switch's ports stays well inside the small buffer of its drop-eligible
// queues (half an interval overflowed the testbed's 48 KiB queues at 400 Mbit/s and lost a fifth
// of the drop-eligible packets, more than any loss budget); at least 2 datagrams, so a slow
// sender still batches its system calls; at most max(16 datagrams, 256 KiB), enough to keep a
// fast path busy between the engine's wake-ups.
std::uint64_t burst_for_rate(double rate_bytes_per_s, std::uint64_t datagram_bytes,
                             Duration feedback_interval);

// Applies a new rate from the rate controller: the burst follows it (burst_for_rate), and a cut
// takes effect at once. Without the drain, a sender told to slow down would first spend the
// tokens it saved at the old rate, a whole burst at line rate, into the queue that was marked.
void apply_rate(Pacer& pacer, double rate_bytes_per_s, std::uint64_t datagram_bytes,
                Duration feedback_interval, TimePoint now);

}  // namespace dlcp::protocol
