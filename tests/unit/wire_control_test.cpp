#include <gtest/gtest.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "wire/byte_order.hpp"
#include "wire/control.hpp"
#include "wire/data_header.hpp"
#include "wire/reject_reason.hpp"

namespace dlcp::wire {
namespace {

constexpr std::uint32_t kU32Max = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint64_t kU64Max = std::numeric_limits<std::uint64_t>::max();

// ---------------------------------------------------------------------------------------------
// Helpers

std::vector<std::byte> frame_of(const ControlMessage& m) {
  std::vector<std::byte> out;
  encode_control(m, out);
  return out;
}

// The body of a frame: everything after the length prefix.
std::vector<std::byte> body_of(const ControlMessage& m) {
  const auto frame = frame_of(m);
  return {frame.begin() + kControlLengthPrefixBytes, frame.end()};
}

std::vector<std::byte> bytes(std::initializer_list<unsigned> values) {
  std::vector<std::byte> out;
  for (const unsigned v : values) out.push_back(static_cast<std::byte>(v));
  return out;
}

RejectReason reject_of(std::span<const std::byte> body) {
  const auto result = decode_control_body(body);
  EXPECT_FALSE(result.has_value());
  return result.has_value() ? RejectReason::kCount : result.error();
}

template <class T>
T decode_as(std::span<const std::byte> body) {
  auto result = decode_control_body(body);
  EXPECT_TRUE(result.has_value()) << to_string(result.error());
  if (!result.has_value()) return T{};
  EXPECT_TRUE(std::holds_alternative<T>(*result));
  if (!std::holds_alternative<T>(*result)) return T{};
  return std::get<T>(*result);
}

template <class T>
T round_trip(const T& m) {
  const auto frame = frame_of(m);
  const auto length = decode_control_length(frame);
  EXPECT_TRUE(length.has_value());
  EXPECT_EQ(std::size_t{*length}, frame.size() - kControlLengthPrefixBytes);
  return decode_as<T>(std::span<const std::byte>(frame).subspan(kControlLengthPrefixBytes));
}

void expect_same(const Hello& a, const Hello& b) {
  EXPECT_EQ(a.job_token, b.job_token);
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.data_sockets, b.data_sockets);
  EXPECT_EQ(a.nonce, b.nonce);
  EXPECT_EQ(a.features, b.features);
  EXPECT_EQ(a.host_identity, b.host_identity);
  EXPECT_EQ(a.local_socket, b.local_socket);
}

void expect_same(const FlowStart& a, const FlowStart& b) {
  EXPECT_EQ(a.message_id, b.message_id);
  EXPECT_EQ(a.total_floats, b.total_floats);
  EXPECT_EQ(a.stride_floats, b.stride_floats);
  EXPECT_EQ(a.priority_class, b.priority_class);
  EXPECT_EQ(a.loss_budget_ppm, b.loss_budget_ppm);
  EXPECT_EQ(a.packet_count, b.packet_count);
  EXPECT_EQ(a.protected_count, b.protected_count);
  EXPECT_EQ(a.protected_bitmap, b.protected_bitmap);
}

void expect_same(const RoundFinished& a, const RoundFinished& b) {
  EXPECT_EQ(a.message_id, b.message_id);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.packets_sent, b.packets_sent);
}

void expect_same(const MissingRanges& a, const MissingRanges& b) {
  EXPECT_EQ(a.message_id, b.message_id);
  EXPECT_EQ(a.round, b.round);
  EXPECT_EQ(a.ranges, b.ranges);
}

void expect_same(const Stop& a, const Stop& b) {
  EXPECT_EQ(a.message_id, b.message_id);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.packets_received, b.packets_received);
  EXPECT_EQ(a.packets_missing, b.packets_missing);
}

void expect_same(const RateFeedback& a, const RateFeedback& b) {
  EXPECT_EQ(a.interval_us, b.interval_us);
  EXPECT_EQ(a.received_bytes, b.received_bytes);
  EXPECT_EQ(a.received_packets, b.received_packets);
  EXPECT_EQ(a.lost_packets_estimate, b.lost_packets_estimate);
  EXPECT_EQ(a.ce_marked_packets, b.ce_marked_packets);
  EXPECT_EQ(a.ce_marked_shared_band, b.ce_marked_shared_band);
  EXPECT_EQ(a.offered_rate, b.offered_rate);
  EXPECT_EQ(a.path_received, b.path_received);
}

Hello sample_hello() {
  Hello m;
  m.job_token = 0x0123456789ABCDEFull;
  m.rank = 2;
  m.world_size = 4;
  m.data_sockets = {{0x0A000001u, 40000}, {0x0A000002u, 40001}};
  for (std::size_t i = 0; i < kNonceBytes; ++i) m.nonce[i] = static_cast<std::uint8_t>(3 * i + 1);
  m.features = hello_features::kPacketMac;
  return m;
}

// 13 packets: the bitmap's last byte is partial (5 bits used).
FlowStart sample_flow_start() {
  FlowStart m;
  m.message_id = 99;
  m.total_floats = 360 * 12 + 7;
  m.stride_floats = 360;
  m.priority_class = 3;
  m.loss_budget_ppm = 10'000;
  m.packet_count = 13;
  m.protected_bitmap = {0b1000'0001, 0b0001'0010};
  m.protected_count = 4;
  return m;
}

RoundFinished sample_round_finished() {
  return RoundFinished{12345, 2, 13};
}

MissingRanges sample_missing_ranges() {
  MissingRanges m;
  m.message_id = 99;
  m.round = 1;
  m.ranges = {{1, 2}, {5, 1}, {10, 3}};
  return m;
}

Stop sample_stop() {
  Stop m;
  m.message_id = 99;
  m.reason = StopReason::kBoundReached;
  m.packets_received = 12;
  m.packets_missing = 1;
  return m;
}

RateFeedback sample_rate_feedback() {
  RateFeedback m;
  m.interval_us = 1000;
  m.received_bytes = 1'440'000;
  m.received_packets = 1000;
  m.lost_packets_estimate = 3;
  m.ce_marked_packets = 7;
  m.ce_marked_shared_band = 5;
  m.offered_rate = 781'250'000;
  m.path_received = {500, 500};
  return m;
}

Abort sample_abort() {
  return Abort{"rank 2 (127.0.0.1:5000) closed the control connection"};
}

Authenticate sample_authenticate() {
  Authenticate m;
  for (std::size_t i = 0; i < kProofBytes; ++i) m.proof[i] = static_cast<std::uint8_t>(0xF0 - i);
  return m;
}

std::vector<ControlMessage> samples() {
  return {sample_hello(),          sample_flow_start(), sample_round_finished(),
          sample_missing_ranges(), sample_stop(),       sample_rate_feedback(),
          sample_abort(),          Goodbye{},           sample_authenticate()};
}

// ---------------------------------------------------------------------------------------------
// Round trips

TEST(WireControlRoundTrip, Hello) {
  const Hello m = sample_hello();
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, HelloWithLocalPath) {
  Hello m = sample_hello();
  m.features |= hello_features::kLocalPath;
  for (std::size_t i = 0; i < kHostIdentityBytes; ++i)
    m.host_identity[i] = static_cast<std::uint8_t>(i + 7);
  m.local_socket = "dlcp-local-0123456789abcdef";
  expect_same(round_trip(m), m);
  m.local_socket.assign(kMaxLocalSocketName, 'x');
  expect_same(round_trip(m), m);
}

TEST(WireControlReject, HelloLocalPathFields) {
  Hello m = sample_hello();
  m.features |= hello_features::kLocalPath;
  m.local_socket = "x";
  auto body = body_of(m);
  // Without the feature bit, the local fields are bytes too many.
  Hello plain = sample_hello();
  auto extra = body_of(plain);
  extra.push_back(std::byte{0});
  EXPECT_EQ(reject_of(extra), RejectReason::kBadControlLength);
  // A name cut short, or one byte too many.
  body.pop_back();
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlLength);
  body = body_of(m);
  body.push_back(std::byte{'y'});
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlLength);
  // An empty name.
  body = body_of(m);
  body.pop_back();
  body.back() = std::byte{0};
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlField);
}

TEST(WireControlRoundTrip, HelloEdgeValues) {
  Hello m;
  m.job_token = kU64Max;
  m.rank = 65534;
  m.world_size = 65535;
  for (std::size_t i = 0; i < kMaxDataPorts; ++i) {
    m.data_sockets.push_back(
        {kU32Max - static_cast<std::uint32_t>(i), static_cast<std::uint16_t>(65535 - i)});
  }
  expect_same(round_trip(m), m);
  m.data_sockets.resize(1);
  m.rank = 0;
  m.world_size = 1;
  m.job_token = 0;
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, FlowStartWithPartialLastBitmapByte) {
  const FlowStart m = sample_flow_start();
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, FlowStartEdgeValues) {
  // Whole bitmap bytes, all bits protected, maximal budget and ids.
  FlowStart m;
  m.message_id = kU64Max;
  m.total_floats = 16 * 65535;
  m.stride_floats = 65535;
  m.priority_class = kPriorityClasses - 1;
  m.loss_budget_ppm = 1'000'000;
  m.packet_count = 16;
  m.protected_count = 16;
  m.protected_bitmap = {0xFF, 0xFF};
  expect_same(round_trip(m), m);

  // One packet, nothing protected.
  FlowStart one;
  one.total_floats = 1;
  one.stride_floats = 1;
  one.packet_count = 1;
  one.protected_count = 0;
  one.protected_bitmap = {0x00};
  expect_same(round_trip(one), one);

  // One packet, the last (only) bit protected.
  one.protected_bitmap = {0x01};
  one.protected_count = 1;
  expect_same(round_trip(one), one);

  // 9 packets: the last byte carries exactly one used bit, and it is set.
  FlowStart nine;
  nine.total_floats = 9 * 100 - 50;
  nine.stride_floats = 100;
  nine.packet_count = 9;
  nine.protected_bitmap = {0x00, 0x01};
  nine.protected_count = 1;
  expect_same(round_trip(nine), nine);
}

TEST(WireControlRoundTrip, RoundFinished) {
  const RoundFinished m = sample_round_finished();
  expect_same(round_trip(m), m);
  const RoundFinished edge{kU64Max, 65535, kU32Max};
  expect_same(round_trip(edge), edge);
}

TEST(WireControlRoundTrip, MissingRanges) {
  const MissingRanges m = sample_missing_ranges();
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, MissingRangesEdgeValues) {
  MissingRanges m;
  m.message_id = kU64Max;
  m.round = 65535;
  // Adjacent ranges are allowed (non-overlapping), and a range may end exactly at UINT32_MAX.
  m.ranges = {{0, 1}, {1, 1}, {kU32Max - 10, 10}};
  expect_same(round_trip(m), m);
  m.ranges = {{0, kU32Max}};
  expect_same(round_trip(m), m);
  m.ranges.clear();  // an empty list is well-formed
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, StopEveryReason) {
  for (const StopReason reason : {StopReason::kComplete, StopReason::kBoundReached,
                                  StopReason::kDeadline, StopReason::kAborted}) {
    Stop m = sample_stop();
    m.reason = reason;
    m.message_id = kU64Max;
    m.packets_received = kU32Max;
    m.packets_missing = kU32Max;
    expect_same(round_trip(m), m);
  }
}

TEST(WireControlRoundTrip, RateFeedback) {
  const RateFeedback m = sample_rate_feedback();
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, RateFeedbackEdgeValues) {
  RateFeedback m;
  m.interval_us = kU32Max;
  m.received_bytes = kU64Max;
  m.received_packets = kU32Max;
  m.lost_packets_estimate = kU32Max;
  m.ce_marked_packets = kU32Max;
  m.ce_marked_shared_band = kU32Max;
  m.offered_rate = kU64Max;
  expect_same(round_trip(m), m);  // no paths
  m.path_received.assign(kMaxDataPorts, kU32Max);
  expect_same(round_trip(m), m);
}

TEST(WireControlRoundTrip, AbortAndGoodbye) {
  EXPECT_EQ(round_trip(sample_abort()).reason, sample_abort().reason);
  EXPECT_EQ(round_trip(Abort{}).reason, "");
  // Longer reasons are cut to the maximum; non-printable bytes are replaced, never sent.
  const Abort cut = round_trip(Abort{std::string(kMaxAbortReasonBytes + 10, 'x')});
  EXPECT_EQ(cut.reason.size(), kMaxAbortReasonBytes);
  EXPECT_EQ(round_trip(Abort{"a\nb\x01"}).reason, "a?b?");
  round_trip(Goodbye{});
}

TEST(WireControlRoundTrip, Authenticate) {
  EXPECT_EQ(round_trip(sample_authenticate()).proof, sample_authenticate().proof);
  EXPECT_EQ(round_trip(Authenticate{}).proof, Authenticate{}.proof);
}

TEST(WireControlRoundTrip, EncodeAppendsFramesBackToBack) {
  std::vector<std::byte> stream{std::byte{0xAB}};
  for (const ControlMessage& m : samples()) encode_control(m, stream);
  ASSERT_EQ(stream[0], std::byte{0xAB});
  std::span<const std::byte> rest = std::span<const std::byte>(stream).subspan(1);
  std::size_t index = 0;
  while (!rest.empty()) {
    ASSERT_GE(rest.size(), kControlLengthPrefixBytes);
    const auto length = decode_control_length(rest.first(kControlLengthPrefixBytes));
    ASSERT_TRUE(length.has_value());
    ASSERT_GE(rest.size(), kControlLengthPrefixBytes + *length);
    const auto message = decode_control_body(rest.subspan(kControlLengthPrefixBytes, *length));
    ASSERT_TRUE(message.has_value()) << to_string(message.error());
    EXPECT_EQ(message->index(), index);
    rest = rest.subspan(kControlLengthPrefixBytes + *length);
    ++index;
  }
  EXPECT_EQ(index, samples().size());
}

// Regression (control_fuzz, crash-972562aa): the encoder's writer converted the output vector to
// a span before growing it, which is legal argument-evaluation order for clang; the write then
// went past the span (and, after a reallocation, into freed memory). The input was this
// RoundFinished body. Every write must land in the vector, whatever its capacity.
TEST(WireControlRoundTrip, RegressionEncodeGrowsVectorBeforeWriting) {
  const auto body = bytes({0x01, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x2A, 0x00, 0x01, 0, 0, 0, 0x0D});
  const auto decoded = decode_as<RoundFinished>(body);
  for (const std::size_t reserve :
       {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{64}}) {
    std::vector<std::byte> frame;
    frame.reserve(reserve);
    encode_control(decoded, frame);
    ASSERT_EQ(frame.size(), kControlLengthPrefixBytes + body.size());
    EXPECT_EQ(std::vector<std::byte>(frame.begin() + kControlLengthPrefixBytes, frame.end()), body);
    EXPECT_EQ(*decode_control_length(frame), body.size());
  }
}

// ---------------------------------------------------------------------------------------------
// Golden layouts

TEST(WireControlGolden, Hello) {
  Hello m;
  m.job_token = 0x1112131415161718ull;
  m.rank = 0x0102;
  m.world_size = 0x0304;
  m.data_sockets = {{0xC0A80001u, 0x1F90}};
  for (std::size_t i = 0; i < kNonceBytes; ++i) m.nonce[i] = static_cast<std::uint8_t>(0x40 + i);
  m.features =
      hello_features::kPacketMac | hello_features::kPairSeq | hello_features::kSharedBandMarks;
  auto expected = bytes({0x00, 0x00, 0x00, 0x36,                          // body length 54
                         0x01, 0x01,                                      // version, type
                         0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // job token
                         0x01, 0x02, 0x03, 0x04, 0x01,                    // rank, world, n
                         0xC0, 0xA8, 0x00, 0x01, 0x1F, 0x90});            // ipv4, port
  for (std::size_t i = 0; i < kNonceBytes; ++i) expected.push_back(std::byte(0x40 + i));  // nonce
  expected.push_back(std::byte{0x07});  // features: packet MAC, pair_seq, shared-band marks
  EXPECT_EQ(frame_of(m), expected);
}

TEST(WireControlGolden, Authenticate) {
  auto expected = bytes({0x00, 0x00, 0x00, 0x22,  // body length 34
                         0x01, 0x09});            // version, type
  for (std::size_t i = 0; i < kProofBytes; ++i) expected.push_back(std::byte(0xF0 - i));
  EXPECT_EQ(frame_of(sample_authenticate()), expected);
}

TEST(WireControlGolden, FlowStart) {
  const auto expected = bytes({0x00, 0x00, 0x00, 0x20,               // body length 32
                               0x01, 0x02,                           // version, type
                               0,    0,    0,    0,    0, 0, 0, 99,  // message id
                               0x00, 0x00, 0x10, 0xE7,               // total 4327
                               0x01, 0x68, 0x03, 0x00,  // stride 360, priority 3, reserved
                               0x00, 0x00, 0x27, 0x10,  // budget 10000 ppm
                               0x00, 0x00, 0x00, 0x0D,  // packet count 13
                               0x00, 0x00, 0x00, 0x04,  // protected count 4
                               0x81, 0x12});            // bitmap
  EXPECT_EQ(frame_of(sample_flow_start()), expected);
}

TEST(WireControlGolden, RoundFinished) {
  const auto expected = bytes({0x00, 0x00, 0x00, 0x10, 0x01, 0x03,  // length 16, version, type
                               0,    0,    0,    0,    0,    0,    0x30, 0x39,  // message id 12345
                               0x00, 0x02, 0x00, 0x00, 0x00, 0x0D});            // round 2, sent 13
  EXPECT_EQ(frame_of(sample_round_finished()), expected);
}

TEST(WireControlGolden, MissingRanges) {
  MissingRanges m;
  m.message_id = 1;
  m.round = 2;
  m.ranges = {{3, 4}};
  const auto expected = bytes({0x00, 0x00, 0x00, 0x18, 0x01, 0x04,  // length 24, version, type
                               0,    0,    0,    0,    0,    0,    0,    1,  // message id
                               0x00, 0x02, 0x00, 0x00, 0x00, 0x01,           // round, range count
                               0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04});
  EXPECT_EQ(frame_of(m), expected);
}

TEST(WireControlGolden, Stop) {
  const auto expected = bytes({0x00, 0x00, 0x00, 0x13, 0x01, 0x05,  // length 19, version, type
                               0,    0,    0,    0,    0,    0,    0,    99,  // message id
                               0x01,                                          // bound reached
                               0x00, 0x00, 0x00, 0x0C, 0x00, 0x00, 0x00, 0x01});
  EXPECT_EQ(frame_of(sample_stop()), expected);
}

TEST(WireControlGolden, RateFeedback) {
  RateFeedback m;
  m.interval_us = 0x01020304u;
  m.received_bytes = 0x1112131415161718ull;
  m.received_packets = 0x21222324u;
  m.lost_packets_estimate = 0x31323334u;
  m.ce_marked_packets = 0x41424344u;
  m.ce_marked_shared_band = 0x41424340u;
  m.offered_rate = 0x5152535455565758ull;
  m.path_received = {0x61626364u};
  const auto expected =
      bytes({0x00, 0x00, 0x00, 0x2B, 0x01, 0x06,  // length 43, version, type
             0x01, 0x02, 0x03, 0x04,              // interval
             0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x21, 0x22,
             0x23, 0x24, 0x31, 0x32, 0x33, 0x34, 0x41, 0x42, 0x43, 0x44,  // ..., ce
             0x41, 0x42, 0x43, 0x40,                                      // ce in shared band
             0x51, 0x52, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x01,  // offered rate, path count
             0x61, 0x62, 0x63, 0x64});
  EXPECT_EQ(frame_of(m), expected);
}

// ---------------------------------------------------------------------------------------------
// decode_control_length

TEST(WireControlLength, AcceptsOneToMaximum) {
  EXPECT_EQ(*decode_control_length(bytes({0, 0, 0, 1})), 1u);
  EXPECT_EQ(*decode_control_length(bytes({0x00, 0x10, 0x20, 0x30})), 0x00102030u);
  std::array<std::byte, 4> prefix{};
  put_u32(prefix, 0, static_cast<std::uint32_t>(kMaxControlFrameBytes));
  EXPECT_EQ(std::size_t{*decode_control_length(prefix)}, kMaxControlFrameBytes);
  // Only the first four bytes are read.
  EXPECT_EQ(*decode_control_length(bytes({0, 0, 0, 7, 0xFF})), 7u);
}

TEST(WireControlLength, RejectsBadControlLength) {
  EXPECT_EQ(decode_control_length(bytes({0, 0, 0, 0})).error(), RejectReason::kBadControlLength);
  std::array<std::byte, 4> prefix{};
  put_u32(prefix, 0, static_cast<std::uint32_t>(kMaxControlFrameBytes + 1));
  EXPECT_EQ(decode_control_length(prefix).error(), RejectReason::kBadControlLength);
  put_u32(prefix, 0, kU32Max);
  EXPECT_EQ(decode_control_length(prefix).error(), RejectReason::kBadControlLength);
  // Fewer than four bytes available.
  EXPECT_EQ(decode_control_length(bytes({0, 0, 1})).error(), RejectReason::kBadControlLength);
  EXPECT_EQ(decode_control_length({}).error(), RejectReason::kBadControlLength);
}

// ---------------------------------------------------------------------------------------------
// decode_control_body: one test per rejection reason

TEST(WireControlReject, BadVersion) {
  for (const ControlMessage& m : samples()) {
    for (const unsigned version : {0u, 2u, 255u}) {
      auto body = body_of(m);
      body[0] = static_cast<std::byte>(version);
      EXPECT_EQ(reject_of(body), RejectReason::kBadVersion) << m.index() << " v" << version;
    }
  }
  EXPECT_EQ(reject_of(bytes({0x02})), RejectReason::kBadVersion);  // version checked first
}

TEST(WireControlReject, BadControlType) {
  for (const unsigned type : {0u, 10u, 11u, 0x80u, 255u}) {
    EXPECT_EQ(reject_of(bytes({0x01, type})), RejectReason::kBadControlType) << type;
    auto body = body_of(sample_stop());
    body[1] = static_cast<std::byte>(type);
    EXPECT_EQ(reject_of(body), RejectReason::kBadControlType) << type;
  }
}

TEST(WireControlReject, BadControlLength) {
  // Empty and version-only bodies.
  EXPECT_EQ(reject_of({}), RejectReason::kBadControlLength);
  EXPECT_EQ(reject_of(bytes({0x01})), RejectReason::kBadControlLength);
  // A trailing byte after every message type.
  for (const ControlMessage& m : samples()) {
    auto body = body_of(m);
    body.push_back(std::byte{0});
    EXPECT_EQ(reject_of(body), RejectReason::kBadControlLength) << m.index();
  }
  // A body longer than the maximum frame.
  std::vector<std::byte> huge(kMaxControlFrameBytes + 1);
  huge[0] = std::byte{1};
  huge[1] = std::byte{static_cast<std::uint8_t>(ControlType::kRoundFinished)};
  EXPECT_EQ(reject_of(huge), RejectReason::kBadControlLength);
}

TEST(WireControlReject, BadControlLengthFromCountFields) {
  // Hello claiming more sockets than present.
  auto hello = body_of(sample_hello());
  hello[2 + 12] = std::byte{3};
  EXPECT_EQ(reject_of(hello), RejectReason::kBadControlLength);
  // Hello claiming 255 sockets: still a length error, not a field error, since the bytes are
  // absent.
  hello[2 + 12] = std::byte{255};
  EXPECT_EQ(reject_of(hello), RejectReason::kBadControlLength);

  // FlowStart whose packet count implies a bitmap larger than what follows (no allocation).
  auto flow = body_of(sample_flow_start());
  put_u32(flow, 2 + 20, kU32Max);
  EXPECT_EQ(reject_of(flow), RejectReason::kBadControlLength);
  // ... or smaller than what follows.
  put_u32(flow, 2 + 20, 8);
  EXPECT_EQ(reject_of(flow), RejectReason::kBadControlLength);

  // MissingRanges with a huge range count and a handful of bytes (no allocation).
  auto ranges = body_of(sample_missing_ranges());
  put_u32(ranges, 2 + 10, kU32Max);
  EXPECT_EQ(reject_of(ranges), RejectReason::kBadControlLength);
  put_u32(ranges, 2 + 10, 2);
  EXPECT_EQ(reject_of(ranges), RejectReason::kBadControlLength);
  // A count whose byte size wraps a 32-bit multiplication to the bytes present (3 * 8 + 2^32).
  put_u32(ranges, 2 + 10, 0x20000003u);
  EXPECT_EQ(reject_of(ranges), RejectReason::kBadControlLength);

  // RateFeedback claiming more paths than present.
  auto feedback = body_of(sample_rate_feedback());
  feedback[2 + 36] = std::byte{200};
  EXPECT_EQ(reject_of(feedback), RejectReason::kBadControlLength);
}

TEST(WireControlReject, TruncationAtEveryLengthOfEveryType) {
  std::vector<ControlMessage> messages = samples();
  // Also the largest variable parts.
  Hello hello = sample_hello();
  hello.data_sockets.assign(kMaxDataPorts, DataAddress{1, 2});
  messages.push_back(hello);
  RateFeedback feedback = sample_rate_feedback();
  feedback.path_received.assign(kMaxDataPorts, 9);
  messages.push_back(feedback);
  MissingRanges empty_ranges = sample_missing_ranges();
  empty_ranges.ranges.clear();
  messages.push_back(empty_ranges);

  for (const ControlMessage& m : messages) {
    const auto body = body_of(m);
    ASSERT_TRUE(decode_control_body(body).has_value()) << m.index();
    for (std::size_t n = 0; n < body.size(); ++n) {
      EXPECT_EQ(reject_of(std::span<const std::byte>(body).first(n)),
                RejectReason::kBadControlLength)
          << "type index " << m.index() << " truncated to " << n << " of " << body.size();
    }
  }
}

TEST(WireControlReject, BadControlFieldHello) {
  Hello m = sample_hello();
  m.data_sockets.clear();
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "no sockets";
  m.data_sockets.assign(kMaxDataPorts + 1, DataAddress{1, 2});
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "too many sockets";
  m = sample_hello();
  m.world_size = 0;
  m.rank = 0;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "empty world";
  m = sample_hello();
  m.rank = m.world_size;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "rank outside world";
  for (unsigned bit = 6; bit < 8; ++bit) {
    m = sample_hello();
    m.features = static_cast<std::uint8_t>(1u << bit);
    EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "feature bit " << bit;
  }
}

TEST(WireControlReject, BadControlFieldFlowStart) {
  FlowStart m = sample_flow_start();
  m.stride_floats = 0;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "stride 0";

  m = sample_flow_start();
  m.total_floats = 0;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "total 0";

  m = sample_flow_start();
  m.total_floats = 360 * 16;  // 16 packets, but the header says 13 (bitmap length still fits 13)
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "packet count";

  m = sample_flow_start();
  m.loss_budget_ppm = 1'000'001;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "budget";

  // The byte after the priority class is parity_members: any value is valid.
  auto body = body_of(sample_flow_start());
  body[2 + 15] = std::byte{255};
  const auto decoded = decode_control_body(body);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<FlowStart>(*decoded).parity_members, 255);

  m = sample_flow_start();
  m.priority_class = kPriorityClasses;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "priority";

  m = sample_flow_start();
  m.protected_bitmap[1] = static_cast<std::uint8_t>(m.protected_bitmap[1] | 0x20);  // bit 13
  m.protected_count = 5;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "bit beyond count";

  m = sample_flow_start();
  m.protected_bitmap[1] = static_cast<std::uint8_t>(m.protected_bitmap[1] | 0x80);  // bit 15
  m.protected_count = 5;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "top bit beyond count";

  m = sample_flow_start();
  m.protected_count = 3;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "popcount low";
  m.protected_count = 5;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "popcount high";
  m.protected_count = kU32Max;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "popcount max";
}

TEST(WireControlReject, BadControlFieldMissingRanges) {
  MissingRanges m = sample_missing_ranges();
  m.ranges = {{4, 0}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "empty range";
  m.ranges = {{1, 2}, {7, 0}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "empty later range";
  m.ranges = {{kU32Max - 1, 2}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "end overflows";
  m.ranges = {{kU32Max, kU32Max}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "end overflows far";
  m.ranges = {{10, 2}, {3, 1}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "descending";
  m.ranges = {{3, 1}, {3, 1}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "duplicate";
  m.ranges = {{3, 5}, {7, 1}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "overlapping";
  m.ranges = {{0, 10}, {2, 3}};
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << "contained";
}

TEST(WireControlReject, BadControlFieldStop) {
  for (const unsigned reason : {4u, 5u, 255u}) {
    Stop m = sample_stop();
    m.reason = static_cast<StopReason>(reason);
    EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField) << reason;
  }
}

TEST(WireControlReject, BadControlFieldAbort) {
  auto body = body_of(Abort{"abc"});
  body[4] = std::byte{0x07};  // a control character in the reason
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlField);
  // A reason longer than the maximum, with a length field that matches it.
  std::vector<std::byte> longer = bytes({0x01, 0x07});
  const std::size_t n = kMaxAbortReasonBytes + 1;
  longer.push_back(static_cast<std::byte>(n >> 8));
  longer.push_back(static_cast<std::byte>(n & 0xFF));
  longer.resize(longer.size() + n, std::byte{'x'});
  EXPECT_EQ(reject_of(longer), RejectReason::kBadControlField);
}

TEST(WireControlReject, BadControlFieldRateFeedback) {
  RateFeedback m = sample_rate_feedback();
  m.path_received.assign(kMaxDataPorts + 1, 1);
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField);
  m.path_received.assign(255, 1);
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField);
  // More marks in the shared band than marks.
  m = sample_rate_feedback();
  m.ce_marked_shared_band = m.ce_marked_packets + 1;
  EXPECT_EQ(reject_of(body_of(m)), RejectReason::kBadControlField);
}

TEST(WireControlReject, LengthIsCheckedBeforeFields) {
  // A Stop with a bad reason and a trailing byte: the length is wrong first.
  Stop stop = sample_stop();
  stop.reason = static_cast<StopReason>(9);
  auto body = body_of(stop);
  body.push_back(std::byte{0});
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlLength);
  // A Hello with a bad rank, truncated.
  Hello hello = sample_hello();
  hello.rank = 100;
  body = body_of(hello);
  body.pop_back();
  EXPECT_EQ(reject_of(body), RejectReason::kBadControlLength);
}

}  // namespace
}  // namespace dlcp::wire
