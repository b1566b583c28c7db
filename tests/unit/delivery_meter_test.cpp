#include "protocol/delivery_meter.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>

namespace dlcp::protocol {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const TimePoint kStart{milliseconds(1000)};

// Packets of 100 bytes on path 0 with these pair_seq counters, in this order.
void arrive(DeliveryMeter& meter, std::initializer_list<std::uint16_t> counters, TimePoint now) {
  for (const std::uint16_t counter : counters) meter.on_packet(100, 0, counter, now);
}

TEST(DeliveryMeter, NothingCountedIsNeverDue) {
  DeliveryMeter meter(2);
  EXPECT_FALSE(meter.due(kStart + milliseconds(100), microseconds(20)));
}

TEST(DeliveryMeter, DueOneIntervalAfterTheFirstPacket) {
  DeliveryMeter meter(2);
  meter.on_packet(9000, 0, 0, kStart);
  EXPECT_FALSE(meter.due(kStart + microseconds(19), microseconds(20)));
  EXPECT_TRUE(meter.due(kStart + microseconds(20), microseconds(20)));
}

TEST(DeliveryMeter, LastPacketIsKeptAcrossReports) {
  DeliveryMeter meter(1);
  EXPECT_FALSE(meter.last_packet().has_value());  // never sent
  meter.on_packet(9000, 0, 0, kStart);
  meter.on_packet(9000, 0, 1, kStart + microseconds(500));
  EXPECT_EQ(meter.last_packet(), kStart + microseconds(500));
  meter.take(kStart + microseconds(2500));  // a report does not make the peer idle
  EXPECT_EQ(meter.last_packet(), kStart + microseconds(500));
}

TEST(DeliveryMeter, ReportsWhatArrivedPerPathAndStartsAfresh) {
  DeliveryMeter meter(3);
  meter.on_packet(1000, 0, 0, kStart);
  meter.on_packet(2000, 2, 3, kStart + microseconds(5));
  meter.on_ce_mark(/*shared_band=*/false);
  meter.on_packet(3000, 2, 6, kStart + microseconds(10));  // 1, 2, 4 and 5 never arrived
  meter.on_ce_mark(/*shared_band=*/true);
  const wire::RateFeedback report = meter.take(kStart + microseconds(25));
  EXPECT_EQ(report.interval_us, 25u);
  EXPECT_EQ(report.received_bytes, 6000u);
  EXPECT_EQ(report.received_packets, 3u);
  EXPECT_EQ(report.lost_packets_estimate, 4u);
  EXPECT_EQ(report.ce_marked_packets, 2u);
  EXPECT_EQ(report.ce_marked_shared_band, 1u);
  EXPECT_EQ(report.path_received, (std::vector<std::uint32_t>{1, 0, 2}));

  const wire::RateFeedback next = meter.take(kStart + microseconds(50));
  EXPECT_EQ(next.received_packets, 0u);
  EXPECT_EQ(next.lost_packets_estimate, 0u);
  EXPECT_EQ(next.ce_marked_packets, 0u);
  EXPECT_EQ(next.ce_marked_shared_band, 0u);
  EXPECT_EQ(next.path_received, (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_FALSE(meter.due(kStart + milliseconds(10), microseconds(20)));
}

// The regression this class exists for: after an idle gap (compute between iterations) the
// interval must not stretch back to the previous report, or the delivered rate reads near zero.
TEST(DeliveryMeter, IntervalStartsAtTheFirstPacketAfterAnIdleGap) {
  DeliveryMeter meter(1);
  meter.on_packet(9000, 0, 0, kStart);
  (void)meter.take(kStart + microseconds(20));
  const TimePoint after_gap = kStart + milliseconds(100);
  for (int i = 0; i < 5; ++i) {
    meter.on_packet(9000, 0, static_cast<std::uint16_t>(1 + i), after_gap + microseconds(5 * i));
  }
  const wire::RateFeedback report = meter.take(after_gap + microseconds(25));
  EXPECT_EQ(report.interval_us, 25u);
  EXPECT_EQ(report.received_bytes, 45000u);
}

TEST(DeliveryMeter, PathsOutOfRangeAreCountedButNotPerPath) {
  DeliveryMeter meter(1);
  meter.on_packet(100, 7, 0, kStart);
  const wire::RateFeedback report = meter.take(kStart + microseconds(30));
  EXPECT_EQ(report.received_packets, 1u);
  EXPECT_EQ(report.path_received, (std::vector<std::uint32_t>{0}));
}

// Reports the losses of packets numbered up to the highest counter seen, whatever message they
// belonged to. The last packets of a burst are judged once any later packet arrives.
TEST(DeliveryMeter, CountsLossFromThePeersPacketCounter) {
  DeliveryMeter meter(1);
  arrive(meter, {0, 1, 2, 4, 5}, kStart);  // 3 lost
  EXPECT_EQ(meter.take(kStart + microseconds(20)).lost_packets_estimate, 1u);
  // 6 and 7 were lost at the burst's end; nothing says so until packet 8 (a retransmission).
  meter.on_packet(100, 0, 8, kStart + milliseconds(5));
  const wire::RateFeedback report = meter.take(kStart + milliseconds(6));
  EXPECT_EQ(report.received_packets, 1u);
  EXPECT_EQ(report.lost_packets_estimate, 2u);
}

TEST(DeliveryMeter, ALateArrivalCountsAgainstTheLossOfItsReport) {
  DeliveryMeter meter(1);
  arrive(meter, {0, 1, 3}, kStart);
  EXPECT_EQ(meter.take(kStart + microseconds(20)).lost_packets_estimate, 1u);  // 2 in flight
  // Packet 2 arrives behind 4 and 6: of 4..6, only 5 is missing, and 2 makes up for it.
  arrive(meter, {4, 2, 6}, kStart + microseconds(30));
  EXPECT_EQ(meter.take(kStart + microseconds(50)).lost_packets_estimate, 0u);
  // Reordered within one report: no loss.
  arrive(meter, {9, 7, 8}, kStart + microseconds(60));
  EXPECT_EQ(meter.take(kStart + microseconds(80)).lost_packets_estimate, 0u);
}

TEST(DeliveryMeter, TheCounterWrapsAt16Bits) {
  DeliveryMeter meter(1);
  for (std::uint32_t seq = 0; seq < 65534; ++seq) {
    meter.on_packet(100, 0, static_cast<std::uint16_t>(seq), kStart);
  }
  EXPECT_EQ(meter.take(kStart + microseconds(20)).lost_packets_estimate, 0u);
  // 65534 and 65535 arrive, 0 and 1 (after the wrap) are lost, 2 arrives.
  arrive(meter, {65534, 65535, 2}, kStart);
  EXPECT_EQ(meter.take(kStart + microseconds(40)).lost_packets_estimate, 2u);
  // A packet from before the wrap arriving late is not taken for one 2^16 ahead.
  meter.on_packet(100, 0, 65530, kStart);
  meter.on_packet(100, 0, 3, kStart);
  EXPECT_EQ(meter.take(kStart + microseconds(60)).lost_packets_estimate, 0u);
}

TEST(DeliveryMeter, LossBeforeTheFirstArrivalIsCounted) {
  DeliveryMeter meter(1);
  meter.on_packet(100, 0, 5, kStart);  // the peer's packets 0..4 were lost
  EXPECT_EQ(meter.take(kStart + microseconds(20)).lost_packets_estimate, 5u);
}

TEST(PacketsLost, IsNumberedLessArrivedNeverBelowZero) {
  EXPECT_EQ(packets_lost(10, 7), 3u);
  EXPECT_EQ(packets_lost(10, 10), 0u);
  // More arrived than were numbered in the interval: a late packet of an earlier interval.
  EXPECT_EQ(packets_lost(4, 5), 0u);
  EXPECT_EQ(packets_lost(0, 0), 0u);
}

}  // namespace
}  // namespace dlcp::protocol
