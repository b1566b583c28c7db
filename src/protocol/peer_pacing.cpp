#include "protocol/peer_pacing.hpp"

#include <algorithm>

namespace dlcp::protocol {

PeerPacing::PeerPacing(const RateControlOptions& options, std::uint64_t datagram_bytes,
                       Duration feedback_interval, TimePoint now)
    : options_(options),
      datagram_bytes_(datagram_bytes),
      feedback_interval_(feedback_interval),
      rate_(options),
      pacer_(rate_.rate(), burst_for_rate(rate_.rate(), datagram_bytes, feedback_interval), now) {
  if (options.shared_band_pacing) {
    shared_rate_.emplace(options);
    shared_pacer_.emplace(shared_rate_->rate(),
                          burst_for_rate(shared_rate_->rate(), datagram_bytes, feedback_interval),
                          now);
  }
}

std::uint64_t PeerPacing::available(bool shared_band, TimePoint now) {
  std::uint64_t bytes = pacer_.available(now);
  if (shared_band && shared_pacer_) bytes = std::min(bytes, shared_pacer_->available(now));
  return bytes;
}

Duration PeerPacing::wait(bool shared_band, TimePoint now) {
  Duration wait = pacer_.wait_for(datagram_bytes_, now);
  if (shared_band && shared_pacer_) {
    wait = std::max(wait, shared_pacer_->wait_for(datagram_bytes_, now));
  }
  return wait;
}

void PeerPacing::consume(std::uint64_t bytes, bool shared_band, TimePoint now) {
  pacer_.consume(bytes, now);
  if (shared_band && shared_pacer_) shared_pacer_->consume(bytes, now);
}

void PeerPacing::on_report(const RateReport& report, TimePoint now) {
  // Without a shared-band pacer, every mark is the peer's.
  const BandReports bands = shared_rate_ ? split_by_band(report.feedback, report.shared_band_marks)
                                         : BandReports{report.feedback, {}};
  if (shared_rate_) {
    // The offer caps the peer's pacer, which these packets pass too.
    apply_rate(*shared_pacer_,
               paced_rate(shared_rate_->on_feedback(bands.shared_band), 0.0, options_.min_rate),
               datagram_bytes_, feedback_interval_, now);
  }
  apply_rate(pacer_,
             paced_rate(rate_.on_feedback(bands.peer), report.offered_rate, options_.min_rate),
             datagram_bytes_, feedback_interval_, now);
}

}  // namespace dlcp::protocol
