#include "protocol/rate_controller.hpp"

#include <gtest/gtest.h>

#include "dlcp/error.hpp"

#include <chrono>
#include <limits>
#include <stdexcept>
#include <string>

namespace dlcp::protocol {
namespace {

using std::chrono::milliseconds;

RateControlConfig config() {
  RateControlConfig c;
  c.initial_rate = 1e8;
  c.min_rate = 1e6;
  c.max_rate = 4e8;
  c.increase = 1.25;
  c.decrease = 0.9;
  c.keep_up = 0.8;
  c.congestion_loss = 0.1;
  c.hold_intervals = 2;
  return c;
}

// A report of `bytes` delivered over 10 ms in 1000-byte packets, with `lost` packets missing.
Feedback report(double delivered_rate, std::uint64_t lost = 0, std::uint64_t ce = 0) {
  Feedback f;
  f.interval = milliseconds(10);
  f.received_bytes = static_cast<std::uint64_t>(delivered_rate * 0.01);
  f.received_packets = f.received_bytes / 1000;
  f.lost_packets = lost;
  f.ce_marked = ce;
  return f;
}

TEST(RateController, StartsAtInitialRate) {
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.rate(), 1e8);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.0);
}

TEST(RateController, IncreasesWhenReceiverKeepsUp) {
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(8.1e7)), 1.25e8);  // just above keep_up * rate
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1.25e8)), 1.5625e8);
  EXPECT_DOUBLE_EQ(rc.rate(), 1.5625e8);
}

TEST(RateController, IncreaseCappedAtMaxRate) {
  RateController rc(config());
  for (int i = 0; i < 20; ++i) rc.on_feedback(report(rc.rate()));
  EXPECT_DOUBLE_EQ(rc.rate(), 4e8);
}

TEST(RateController, HoldsWhenReceiverFallsBehindWithoutLoss) {
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(7.9e7)), 1e8);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e7)), 1e8);
}

TEST(RateController, ApplicationLimitedSenderRegainsUpToInitialRate) {
  // One marked burst cuts the rate; afterwards the sender has too little to send to deliver
  // keep_up * rate (1e6 B/s of a rate near 1e8), yet the reports are clean.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(4e7, 0, 400)), 5e7);  // halved, hold 2
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 5e7);          // held
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 5e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 6.25e7);  // then regains by `increase`
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 7.8125e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 9.765625e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 1e8);  // up to initial_rate, never beyond
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 1e8);
  // Beyond initial_rate only a sender that proves the receiver keeps up grows.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e8)), 1.25e8);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6)), 1.25e8);
}

TEST(RateController, RandomLossBelowThresholdDoesNotSlowDown) {
  RateController rc(config());
  // 100 packets lost of 1100: 9.09% < 10%.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e8, 100)), 1.25e8);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 100.0 / 1100.0);
}

TEST(RateController, LossExactlyAtThresholdIsNotCongestion) {
  RateController rc(config());
  Feedback f;
  f.interval = milliseconds(10);
  f.received_bytes = 900000;  // 9e7 B/s
  f.received_packets = 900;
  f.lost_packets = 100;  // loss 0.1, not above
  EXPECT_DOUBLE_EQ(rc.on_feedback(f), 1.25e8);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.1);
}

TEST(RateController, CongestionDropsToDeliveredMinusHeadroomAndHolds) {
  RateController rc(config());
  // Delivered 6e7 B/s (600 packets) with 200 lost: loss 0.25.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(6e7, 200)), 0.9 * 6e7);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.25);
  // Two held reports: no increase although the receiver keeps up.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7);
  // Then increase again.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7 * 1.25);
}

TEST(RateController, CeMarksCutInProportionToTheMarkedShare) {
  // 4e7 B/s delivered over 10 ms is 400 packets; a quarter of them marked: cut by an eighth.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(4e7, 0, 100)), 0.875e8);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.0);
  // All marked: cut by half.
  RateController all(config());
  EXPECT_DOUBLE_EQ(all.on_feedback(report(4e7, 0, 400)), 0.5e8);
}

TEST(RateController, CeCutNeverBelowDeliveredMinusHeadroom) {
  // All 900 packets marked would halve the rate, but 9e7 got through: keep 0.9 of that.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(9e7, 0, 900)), 8.1e7);
}

TEST(RateController, CeMarksOnALittleTrafficCutALittle) {
  // A sender with little to send (10 packets in the interval, 1 marked) delivers far below its
  // rate; the mark says a queue is building, not that the rate should fall to what it sent.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e6, 0, 1)), 0.95e8);
}

TEST(SharedBandPacing, MarksInTheSharedBandGoToItsControllerOnly) {
  Feedback whole = report(4e7, 3, 100);
  const BandReports split = split_by_band(whole, 60);
  EXPECT_EQ(split.peer.ce_marked, 40u);
  EXPECT_EQ(split.shared_band.ce_marked, 60u);
  for (const Feedback& part : {split.peer, split.shared_band}) {
    EXPECT_EQ(part.interval, whole.interval);
    EXPECT_EQ(part.received_bytes, whole.received_bytes);
    EXPECT_EQ(part.received_packets, whole.received_packets);
    EXPECT_EQ(part.lost_packets, whole.lost_packets);
  }
  // A count above the marks (a decoder lets none through) is bounded by them.
  const BandReports bounded = split_by_band(whole, 500);
  EXPECT_EQ(bounded.peer.ce_marked, 0u);
  EXPECT_EQ(bounded.shared_band.ce_marked, 100u);
  // Each controller cuts by the share of all packets marked in its own band: 60 of 400 packets is
  // 15%, a cut of 7.5%; 40 of 400, 5%.
  RateController shared(config());
  RateController peer(config());
  EXPECT_DOUBLE_EQ(shared.on_feedback(split.shared_band), 1e8 * (1 - 0.075));
  EXPECT_DOUBLE_EQ(peer.on_feedback(split.peer), 1e8 * (1 - 0.05));
}

TEST(RateController, CeCutIsHeldLikeALossCut) {
  RateController rc(config());
  rc.on_feedback(report(4e7, 0, 400));                 // 5e7, hold 2
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5e7)), 5e7);  // held although the receiver keeps up
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5e7)), 5e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5e7)), 5e7 * 1.25);
}

TEST(RateController, CongestionLossOutweighsCeMarks) {
  // Loss above the threshold with marks too: the loss rule (delivered minus headroom) applies.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(6e7, 200, 600)), 0.9 * 6e7);
}

TEST(RateController, CongestionCutsAtMostHalfPerReport) {
  // 100 packets of 1000 bytes got through (1e7 B/s) and 900 were lost: the delivered rate would
  // cut to 9e6, but one report halves the rate at most.
  RateController rc(config());
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e7, 900)), 5e7);
  // Loss that persists keeps halving it, report after report, down to the delivered rate.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e7, 900)), 2.5e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e7, 900)), 1.25e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e7, 900)), 9e6);
}

TEST(RateController, MessageTailDoesNotCollapseTheRate) {
  // A message's last, small packet arrives and its predecessor is lost: 200 bytes in the
  // interval (2e4 B/s), loss 0.5. Cutting to the delivered rate would leave 1% of the rate.
  RateControlConfig c = config();
  c.loss_sample_packets = 1;  // judged on its own
  RateController rc(c);
  Feedback tail;
  tail.interval = milliseconds(10);
  tail.received_bytes = 200;
  tail.received_packets = 1;
  tail.lost_packets = 1;
  EXPECT_DOUBLE_EQ(rc.on_feedback(tail), 5e7);
}

TEST(RateController, CongestionNeverBelowMinRate) {
  RateControlConfig c = config();
  c.initial_rate = 1.5e6;  // half of it is below min_rate (1e6)
  RateController rc(c);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(1e5, 1000)), 1e6);
}

TEST(RateController, CongestionNeverRaisesTheRate) {
  RateController rc(config());
  // Delivered above the sending rate (a draining queue) with CE marks: the rate does not rise.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(2e8, 0, 5)), 1e8);
}

TEST(RateController, CongestionDuringHoldDropsAgainAndRestartsHold) {
  RateController rc(config());
  rc.on_feedback(report(6e7, 200));                        // 5.4e7, hold 2
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7);  // hold 1 left
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(4e7, 100)), 3.6e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(3.6e7)), 3.6e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(3.6e7)), 3.6e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(3.6e7)), 4.5e7);
}

TEST(RateController, ZeroHoldIncreasesRightAway) {
  RateControlConfig c = config();
  c.hold_intervals = 0;
  RateController rc(c);
  rc.on_feedback(report(6e7, 200));
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7 * 1.25);
}

TEST(RateController, EmptyReportsAreIgnored) {
  RateController rc(config());
  rc.on_feedback(report(6e7, 200));  // hold 2, loss 0.25
  Feedback empty;
  empty.interval = milliseconds(10);
  EXPECT_DOUBLE_EQ(rc.on_feedback(empty), 5.4e7);
  Feedback zero_interval = report(5.4e7);
  zero_interval.interval = Duration::zero();
  EXPECT_DOUBLE_EQ(rc.on_feedback(zero_interval), 5.4e7);
  Feedback negative_interval = report(5.4e7, 1000);
  negative_interval.interval = -milliseconds(1);
  EXPECT_DOUBLE_EQ(rc.on_feedback(negative_interval), 5.4e7);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.25);  // ignored reports do not update the loss
  // Ignored reports do not use up the hold.
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 5.4e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(report(5.4e7)), 6.75e7);
}

TEST(RateController, CountsAcceptedReportsAndThoseAboveTheLossThreshold) {
  RateController rc(config());
  EXPECT_EQ(rc.reports(), 0u);
  rc.on_feedback(report(1e8, 100));  // 9.09%: random loss
  Feedback at_threshold;
  at_threshold.interval = milliseconds(10);
  at_threshold.received_bytes = 900000;
  at_threshold.received_packets = 900;
  at_threshold.lost_packets = 100;  // exactly 10%: not above
  rc.on_feedback(at_threshold);
  rc.on_feedback(report(6e7, 200));    // 25%: congestion
  rc.on_feedback(report(6e7, 0, 30));  // CE marks only: not a loss report
  Feedback empty;
  empty.interval = milliseconds(10);
  rc.on_feedback(empty);  // ignored, not counted
  Feedback all_lost;
  all_lost.interval = milliseconds(10);
  all_lost.lost_packets = 50;
  rc.on_feedback(all_lost);  // 100%: congestion
  EXPECT_EQ(rc.reports(), 5u);
  EXPECT_EQ(rc.congested_reports(), 2u);
}

// A report of `received` 1000-byte packets over 10 ms with `lost` more missing.
Feedback packets(std::uint64_t received, std::uint64_t lost) {
  Feedback f;
  f.interval = milliseconds(10);
  f.received_bytes = received * 1000;
  f.received_packets = received;
  f.lost_packets = lost;
  return f;
}

TEST(RateController, LossIsJudgedOnceTheReportsHoldASample) {
  RateControlConfig c = config();
  c.loss_sample_packets = 16;
  RateController rc(c);
  // 3 of 8 lost: not judged yet, so no cut (and no increase: the receiver did not keep up).
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(5, 3)), 1e8);
  EXPECT_EQ(rc.congested_reports(), 0u);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.0);
  // 8 more arrive: 3 of 16 lost (18.75%) is congestion, cut by half at most.
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(8, 0)), 5e7);
  EXPECT_EQ(rc.congested_reports(), 1u);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 3.0 / 16.0);
  EXPECT_EQ(rc.reports(), 2u);
  // The next sample starts empty: a clean report of 16 judges 0% loss.
  rc.on_feedback(packets(16, 0));
  EXPECT_DOUBLE_EQ(rc.last_loss(), 0.0);
}

// A sender cut below its starting rate regains it on clean reports, but not while the reports
// pooled towards the next sample lose more than congestion_loss: each is too small to cut on.
TEST(RateController, AnOpenSampleThatReadsAsCongestionHoldsTheRate) {
  RateControlConfig c = config();
  c.loss_sample_packets = 16;
  c.hold_intervals = 0;
  RateController rc(c);
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(8, 8)), 5e7);  // 50% of 16: cut by half
  // 1 lost of 3, then 1 of 3 (2 of 6 so far): held, though the rate is below the initial one.
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(2, 1)), 5e7);
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(2, 1)), 5e7);
  // A clean report completes the sample at 2 of 21 (9.5%), below congestion_loss: regaining.
  EXPECT_DOUBLE_EQ(rc.on_feedback(packets(15, 0)), 6.25e7);
  EXPECT_EQ(rc.congested_reports(), 1u);
  EXPECT_DOUBLE_EQ(rc.last_loss(), 2.0 / 21.0);
}

// One packet lost in a report of four reads as 25% on its own; over the sample it is 6.25%.
TEST(RateController, ALossInASmallReportIsJudgedOverTheSample) {
  const auto run = [](int sample) {
    RateControlConfig c = config();
    c.loss_sample_packets = sample;
    RateController rc(c);
    for (const std::uint64_t lost : {1, 0, 0, 0}) rc.on_feedback(packets(4 - lost, lost));
    return rc;
  };
  const RateController pooled = run(16);
  EXPECT_EQ(pooled.congested_reports(), 0u);
  EXPECT_DOUBLE_EQ(pooled.rate(), 1e8);
  EXPECT_DOUBLE_EQ(pooled.last_loss(), 1.0 / 16.0);
  const RateController alone = run(1);
  EXPECT_EQ(alone.congested_reports(), 1u);
  EXPECT_DOUBLE_EQ(alone.rate(), 6.25e7);  // halved, held for two reports, regaining
}

TEST(RateController, AllLost) {
  RateController rc(config());
  Feedback f;
  f.interval = milliseconds(10);
  f.lost_packets = 50;
  EXPECT_DOUBLE_EQ(rc.on_feedback(f), 5e7);  // halved, as by any loss report
  EXPECT_DOUBLE_EQ(rc.last_loss(), 1.0);
  for (int i = 0; i < 6; ++i) rc.on_feedback(f);
  EXPECT_DOUBLE_EQ(rc.rate(), 1e6);  // 5e7 / 2^6 < min_rate
}

TEST(ReceiverShare, EachActiveSenderIsOfferedAnEqualShare) {
  EXPECT_DOUBLE_EQ(offered_share(4e8, 0), 4e8);  // nobody counted yet: all of it
  EXPECT_DOUBLE_EQ(offered_share(4e8, 1), 4e8);  // a lone sender is never capped below it
  EXPECT_DOUBLE_EQ(offered_share(4e8, 4), 1e8);
  EXPECT_DOUBLE_EQ(offered_share(12.5e9, 143), 12.5e9 / 143);
}

TEST(ReceiverShare, SenderPacesAtTheSmallerOfItsRateAndTheOffer) {
  EXPECT_DOUBLE_EQ(paced_rate(1e8, 0, 1e6), 1e8);        // no offer: the controller's rate
  EXPECT_DOUBLE_EQ(paced_rate(1e8, 2.5e7, 1e6), 2.5e7);  // the offer caps it
  EXPECT_DOUBLE_EQ(paced_rate(1e8, 4e8, 1e6), 1e8);      // an offer never raises it
  EXPECT_DOUBLE_EQ(paced_rate(1e8, 5e5, 1e6), 1e6);      // never below min_rate
}

TEST(ReceiverShare, SendingWindowIsTwoPacketGapsAtTheShare) {
  using std::chrono::microseconds;
  using std::chrono::nanoseconds;
  // 42 senders of 9000-byte datagrams into 100 Gbit/s: one packet each per 30.24 us.
  EXPECT_EQ(sending_window(microseconds(20), 12.5e9, 42, 9000), nanoseconds(60480));
  // 126 senders: 90.72 us between packets.
  EXPECT_EQ(sending_window(microseconds(20), 12.5e9, 126, 9000), nanoseconds(181440));
  // Few senders, or none counted yet: the packets come closer than an interval apart.
  EXPECT_EQ(sending_window(microseconds(20), 12.5e9, 8, 9000), microseconds(20));
  EXPECT_EQ(sending_window(microseconds(20), 12.5e9, 0, 9000), microseconds(20));
  // The library's 2 ms interval: 10 Gbit/s of 1500-byte datagrams, 1.2 us a packet, needs
  // 1667 senders to space their packets wider than the interval.
  EXPECT_EQ(sending_window(milliseconds(2), 1.25e9, 500, 1500), milliseconds(2));
  EXPECT_EQ(sending_window(milliseconds(2), 1.25e9, 2000, 1500),
            milliseconds(4) + microseconds(800));
  // At most 64 intervals, whatever the share: a stalled peer drops out of the count.
  EXPECT_EQ(sending_window(microseconds(20), 1e6, 10, 9000), microseconds(1280));
  EXPECT_EQ(sending_window(microseconds(20), 0.0, 10, 9000), microseconds(20));
}

TEST(ReceiverShare, APeerPartWayThroughARoundCountsForItsWholeWindow) {
  using std::chrono::microseconds;
  const auto interval = microseconds(20);
  const auto window = microseconds(60);
  EXPECT_TRUE(counts_as_sender(microseconds(0), false, interval, window));
  EXPECT_TRUE(counts_as_sender(microseconds(20), false, interval, window));   // in the interval
  EXPECT_FALSE(counts_as_sender(microseconds(21), false, interval, window));  // done sending
  EXPECT_TRUE(counts_as_sender(microseconds(21), true, interval, window));    // between packets
  EXPECT_TRUE(counts_as_sender(microseconds(60), true, interval, window));
  EXPECT_FALSE(counts_as_sender(microseconds(61), true, interval, window));  // stalled
}

std::string validate_message(const RateControlConfig& c) {
  try {
    c.validate();
  } catch (const dlcp::Error& e) {
    return e.what();
  }
  return "";
}

TEST(ReceiverShare, OfferOnTheWireSaturatesInsteadOfOverflowing) {
  EXPECT_EQ(offer_on_wire(12.5e9), 12'500'000'000U);
  EXPECT_EQ(offer_on_wire(2.5e7 + 0.75), 25'000'000U);  // whole bytes/s, rounded down
  EXPECT_EQ(offer_on_wire(1e30), 18'000'000'000'000'000'000U);
  EXPECT_EQ(offer_on_wire(std::numeric_limits<double>::max()), 18'000'000'000'000'000'000U);
  EXPECT_EQ(offer_on_wire(0.0), 0U);
  EXPECT_EQ(offer_on_wire(-1.0), 0U);
  EXPECT_EQ(offer_on_wire(std::numeric_limits<double>::quiet_NaN()), 0U);
}

TEST(RateControlOptions, DefaultsAreValid) {
  EXPECT_NO_THROW(RateControlConfig{}.validate());
  EXPECT_NO_THROW(config().validate());
}

TEST(RateControlOptions, RejectsBadValuesNamingTheField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    void (*mutate)(RateControlConfig&);
    const char* field;
  };
  const Case cases[] = {
      {[](RateControlConfig& c) { c.initial_rate = 0; }, "initial_rate"},
      {[](RateControlConfig& c) { c.min_rate = -1; }, "min_rate"},
      {[](RateControlConfig& c) { c.max_rate = 0; }, "max_rate"},
      {[](RateControlConfig& c) { c.min_rate = 2e8; }, "min_rate"},
      {[](RateControlConfig& c) { c.initial_rate = 5e5; }, "initial_rate"},
      {[](RateControlConfig& c) { c.initial_rate = 5e8; }, "initial_rate"},
      {[](RateControlConfig& c) { c.increase = 0.99; }, "increase"},
      {[](RateControlConfig& c) { c.decrease = 0; }, "decrease"},
      {[](RateControlConfig& c) { c.decrease = 1.01; }, "decrease"},
      {[](RateControlConfig& c) { c.keep_up = 0; }, "keep_up"},
      {[](RateControlConfig& c) { c.keep_up = 1.5; }, "keep_up"},
      {[](RateControlConfig& c) { c.congestion_loss = -0.01; }, "congestion_loss"},
      {[](RateControlConfig& c) { c.congestion_loss = 1.01; }, "congestion_loss"},
      {[](RateControlConfig& c) { c.hold_intervals = -1; }, "hold_intervals"},
      {[](RateControlConfig& c) { c.loss_sample_packets = 0; }, "loss_sample_packets"},
      {[](RateControlConfig& c) { c.receive_rate = -1; }, "receive_rate"},
      {[](RateControlConfig& c) { c.receive_rate = std::numeric_limits<double>::infinity(); },
       "receive_rate"},
  };
  for (const Case& k : cases) {
    RateControlConfig c = config();
    k.mutate(c);
    const std::string message = validate_message(c);
    EXPECT_NE(message.find(k.field), std::string::npos) << k.field << ": " << message;
    EXPECT_THROW(RateController{c}, dlcp::Error);
  }
  RateControlConfig c = config();
  c.decrease = nan;
  EXPECT_NE(validate_message(c).find("decrease"), std::string::npos);
  c = config();
  c.receive_rate = nan;
  EXPECT_NE(validate_message(c).find("receive_rate"), std::string::npos);
  c = config();
  c.hold_intervals = -3;
  EXPECT_NE(validate_message(c).find("-3"), std::string::npos);
  // Boundary values are accepted.
  c = config();
  c.min_rate = c.initial_rate = c.max_rate = 1e8;
  c.increase = 1.0;
  c.decrease = 1.0;
  c.keep_up = 1.0;
  c.congestion_loss = 0.0;
  c.loss_sample_packets = 1;
  c.hold_intervals = 0;
  c.receive_rate = 0.0;
  EXPECT_NO_THROW(c.validate());
}

}  // namespace
}  // namespace dlcp::protocol
