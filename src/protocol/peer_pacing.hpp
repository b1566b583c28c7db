// The pace of everything sent to one peer, without I/O: its rate controller and token-bucket
// pacer, and, with RateControlOptions::shared_band_pacing, a second pair for the packets that
// share best effort's switch class, which only the marks in that class cut. Fed by the peer's
// rate reports; the engine and the simulator ask it when a datagram may leave.
#pragma once

#include <cstdint>
#include <optional>

#include "common/time.hpp"
#include "dlcp/options.hpp"
#include "protocol/pacer.hpp"
#include "protocol/rate_controller.hpp"

namespace dlcp::protocol {

// One rate report as a sender applies it: what the peer received in the interval, how many of
// the CE marks were in the shared band, and the share of its receive rate it offers (0: none).
struct RateReport {
  Feedback feedback;
  std::uint64_t shared_band_marks = 0;
  double offered_rate = 0;
};

class PeerPacing {
 public:
  // Paced in datagrams of `datagram_bytes`; the peer reports every `feedback_interval`.
  PeerPacing(const RateControlOptions& options, std::uint64_t datagram_bytes,
             Duration feedback_interval, TimePoint now);

  // Bytes that may leave now for a packet in the shared band (`shared_band`) or not.
  std::uint64_t available(bool shared_band, TimePoint now);
  // How long until a whole datagram may leave.
  Duration wait(bool shared_band, TimePoint now);
  void consume(std::uint64_t bytes, bool shared_band, TimePoint now);
  void on_report(const RateReport& report, TimePoint now);

  std::uint64_t datagram_bytes() const { return datagram_bytes_; }
  double rate() const { return pacer_.rate(); }
  double shared_band_rate() const { return shared_pacer_ ? shared_pacer_->rate() : 0.0; }
  // The loss of the last judged sample of this peer's reports.
  double last_loss() const { return rate_.last_loss(); }
  std::uint64_t reports() const { return rate_.reports(); }
  std::uint64_t congested_reports() const { return rate_.congested_reports(); }

 private:
  RateControlOptions options_;
  std::uint64_t datagram_bytes_;
  Duration feedback_interval_;
  RateController rate_;
  Pacer pacer_;
  std::optional<RateController> shared_rate_;
  std::optional<Pacer> shared_pacer_;
};

}  // namespace dlcp::protocol
