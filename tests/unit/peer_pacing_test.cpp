#include "protocol/peer_pacing.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::protocol {
namespace {

const TimePoint kT0 = TimePoint{} + std::chrono::seconds(1);
constexpr std::uint64_t kDatagram = 1500;
constexpr Duration kInterval = std::chrono::milliseconds(2);

RateControlOptions rates(bool shared_band) {
  RateControlOptions options;
  options.initial_rate = 100e6;
  options.max_rate = 100e6;
  options.min_rate = 1e6;
  options.shared_band_pacing = shared_band;
  return options;
}

RateReport marked(std::uint64_t marks, std::uint64_t shared_marks, double offered = 0) {
  RateReport report;
  report.feedback.interval = kInterval;
  report.feedback.received_bytes = 200000;
  report.feedback.received_packets = 100;
  report.feedback.ce_marked = marks;
  report.shared_band_marks = shared_marks;
  report.offered_rate = offered;
  return report;
}

TEST(PeerPacing, StartsAtTheInitialRateWithAFullBurst) {
  PeerPacing pacing(rates(false), kDatagram, kInterval, kT0);
  EXPECT_DOUBLE_EQ(pacing.rate(), 100e6);
  EXPECT_DOUBLE_EQ(pacing.shared_band_rate(), 0.0);
  EXPECT_EQ(pacing.available(false, kT0), burst_for_rate(100e6, kDatagram, kInterval));
  EXPECT_EQ(pacing.wait(true, kT0), Duration::zero());
}

TEST(PeerPacing, MarksInTheSharedBandCutOnlyItsPacer) {
  PeerPacing pacing(rates(true), kDatagram, kInterval, kT0);
  pacing.on_report(marked(50, 50), kT0);
  EXPECT_DOUBLE_EQ(pacing.rate(), 100e6);
  EXPECT_LT(pacing.shared_band_rate(), 100e6);
  // A packet in the shared band passes both pacers, one outside it only the peer's.
  pacing.consume(pacing.available(true, kT0), true, kT0);
  EXPECT_GT(pacing.available(false, kT0), 0u);
  EXPECT_GT(pacing.wait(true, kT0), Duration::zero());
}

TEST(PeerPacing, WithoutASharedBandPacerEveryMarkIsThePeers) {
  PeerPacing pacing(rates(false), kDatagram, kInterval, kT0);
  pacing.on_report(marked(50, 50), kT0);
  EXPECT_LT(pacing.rate(), 100e6);
}

TEST(PeerPacing, TheOfferCapsThePace) {
  PeerPacing pacing(rates(false), kDatagram, kInterval, kT0);
  pacing.on_report(marked(0, 0, 25e6), kT0);
  EXPECT_DOUBLE_EQ(pacing.rate(), 25e6);
  EXPECT_EQ(pacing.reports(), 1u);
  EXPECT_EQ(pacing.congested_reports(), 0u);
}

}  // namespace
}  // namespace dlcp::protocol
