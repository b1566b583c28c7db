#include "transport/delivery_meter.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace dlcp::transport {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

const TimePoint kStart{milliseconds(1000)};

TEST(DeliveryMeter, NothingCountedIsNeverDue) {
  DeliveryMeter meter(2);
  EXPECT_FALSE(meter.due(kStart + milliseconds(100), microseconds(20)));
}

TEST(DeliveryMeter, DueOneIntervalAfterTheFirstPacket) {
  DeliveryMeter meter(2);
  meter.on_packet(9000, 0, kStart);
  EXPECT_FALSE(meter.due(kStart + microseconds(19), microseconds(20)));
  EXPECT_TRUE(meter.due(kStart + microseconds(20), microseconds(20)));
}

TEST(DeliveryMeter, LastPacketIsKeptAcrossReports) {
  DeliveryMeter meter(1);
  EXPECT_FALSE(meter.last_packet().has_value());  // never sent
  meter.on_packet(9000, 0, kStart);
  meter.on_packet(9000, 0, kStart + microseconds(500));
  EXPECT_EQ(meter.last_packet(), kStart + microseconds(500));
  meter.take(kStart + microseconds(2500), 0);  // a report does not make the peer idle
  EXPECT_EQ(meter.last_packet(), kStart + microseconds(500));
}

TEST(DeliveryMeter, ReportsWhatArrivedPerPathAndStartsAfresh) {
  DeliveryMeter meter(3);
  meter.on_packet(1000, 0, kStart);
  meter.on_packet(2000, 2, kStart + microseconds(5));
  meter.on_ce_mark();
  meter.on_packet(3000, 2, kStart + microseconds(10));
  const wire::RateFeedback report = meter.take(kStart + microseconds(25), 4);
  EXPECT_EQ(report.interval_us, 25u);
  EXPECT_EQ(report.received_bytes, 6000u);
  EXPECT_EQ(report.received_packets, 3u);
  EXPECT_EQ(report.lost_packets_estimate, 4u);
  EXPECT_EQ(report.ce_marked_packets, 1u);
  EXPECT_EQ(report.path_received, (std::vector<std::uint32_t>{1, 0, 2}));

  const wire::RateFeedback next = meter.take(kStart + microseconds(50), 0);
  EXPECT_EQ(next.received_packets, 0u);
  EXPECT_EQ(next.ce_marked_packets, 0u);
  EXPECT_EQ(next.path_received, (std::vector<std::uint32_t>{0, 0, 0}));
  EXPECT_FALSE(meter.due(kStart + milliseconds(10), microseconds(20)));
}

// The regression this class exists for: after an idle gap (compute between iterations) the
// interval must not stretch back to the previous report, or the delivered rate reads near zero.
TEST(DeliveryMeter, IntervalStartsAtTheFirstPacketAfterAnIdleGap) {
  DeliveryMeter meter(1);
  meter.on_packet(9000, 0, kStart);
  (void)meter.take(kStart + microseconds(20), 0);
  const TimePoint after_gap = kStart + milliseconds(100);
  for (int i = 0; i < 5; ++i) meter.on_packet(9000, 0, after_gap + microseconds(5 * i));
  const wire::RateFeedback report = meter.take(after_gap + microseconds(25), 0);
  EXPECT_EQ(report.interval_us, 25u);
  EXPECT_EQ(report.received_bytes, 45000u);
}

TEST(DeliveryMeter, PathsOutOfRangeAreCountedButNotPerPath) {
  DeliveryMeter meter(1);
  meter.on_packet(100, 7, kStart);
  const wire::RateFeedback report = meter.take(kStart + microseconds(30), 0);
  EXPECT_EQ(report.received_packets, 1u);
  EXPECT_EQ(report.path_received, (std::vector<std::uint32_t>{0}));
}

}  // namespace
}  // namespace dlcp::transport
