// Token-bucket pacer: releases bytes at `rate` with at most `burst_bytes` sent back to back.
#pragma once

#include <cstdint>

#include "common/time.hpp"

namespace dlcp::transport {

class Pacer {
 public:
  // rate_bytes_per_s > 0, burst_bytes > 0; the bucket starts full.
  Pacer(double rate_bytes_per_s, std::uint64_t burst_bytes, TimePoint now);

  // Changes the rate; tokens accumulated so far are kept (capped at the burst).
  void set_rate(double rate_bytes_per_s, TimePoint now);
  double rate() const { return rate_; }

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

}  // namespace dlcp::transport
