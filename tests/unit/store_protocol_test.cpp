// The TcpStore codec: every frame round-trips, every malformed input is refused with the right
// reason, and no prefix of a valid frame decodes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "dlcp/error.hpp"
#include "rendezvous/store_protocol.hpp"
#include "wire/byte_order.hpp"

namespace dlcp::rendezvous {
namespace {

std::vector<std::byte> encode(const StoreRequest& request) {
  std::vector<std::byte> frame;
  encode_store_request(request, frame);
  return frame;
}

std::vector<std::byte> encode(const StoreResponse& response) {
  std::vector<std::byte> frame;
  encode_store_response(response, frame);
  return frame;
}

std::span<const std::byte> body_of(const std::vector<std::byte>& frame) {
  return std::span<const std::byte>(frame).subspan(kStoreLengthPrefixBytes);
}

// A key with every byte value, so that nothing is treated as text.
std::string binary_key() {
  std::string key;
  for (int i = 0; i < 256; ++i) key += static_cast<char>(i);
  return key;
}

std::vector<StoreRequest> sample_requests() {
  return {
      SetRequest{"rank/3/address", "10.0.0.3:4000"},
      SetRequest{"", ""},
      SetRequest{binary_key(), std::string(70000, '\xAB')},
      GetRequest{"rank/0/address", 30000},
      GetRequest{std::string(kMaxStoreKeyBytes, 'k'), std::numeric_limits<std::uint32_t>::max()},
      AddRequest{"barrier", 1},
      AddRequest{"barrier", std::numeric_limits<std::int64_t>::min()},
      AddRequest{"barrier", -7},
      CheckRequest{{"a"}},
      CheckRequest{{"a", "", binary_key()}},
      WaitRequest{{"rank/0", "rank/1", "rank/2"}, 0},
      WaitRequest{{"x"}, 12345},
  };
}

std::vector<StoreResponse> sample_responses() {
  return {
      OkResponse{},
      ValueResponse{""},
      ValueResponse{binary_key()},
      CounterResponse{0},
      CounterResponse{std::numeric_limits<std::int64_t>::min()},
      CounterResponse{std::numeric_limits<std::int64_t>::max()},
      CheckedResponse{true},
      CheckedResponse{false},
      ErrorResponse{StoreErrorKind::kDeadline, "store: timed out waiting for 'x'"},
      ErrorResponse{StoreErrorKind::kInvalidArgument, ""},
      ErrorResponse{StoreErrorKind::kProtocol, "malformed"},
  };
}

TEST(StoreProtocol, EveryRequestRoundTrips) {
  for (const auto& request : sample_requests()) {
    const auto frame = encode(request);
    const auto length = decode_store_frame_length(frame);
    ASSERT_TRUE(length.has_value());
    EXPECT_EQ(*length, frame.size() - kStoreLengthPrefixBytes);
    const auto decoded = decode_store_request(body_of(frame));
    ASSERT_TRUE(decoded.has_value())
        << describe_request(request) << ": " << to_string(decoded.error());
    EXPECT_EQ(*decoded, request) << describe_request(request);
  }
}

TEST(StoreProtocol, EveryResponseRoundTrips) {
  for (const auto& response : sample_responses()) {
    const auto frame = encode(response);
    const auto length = decode_store_frame_length(frame);
    ASSERT_TRUE(length.has_value());
    EXPECT_EQ(*length, frame.size() - kStoreLengthPrefixBytes);
    const auto decoded = decode_store_response(body_of(frame));
    ASSERT_TRUE(decoded.has_value()) << to_string(decoded.error());
    EXPECT_EQ(*decoded, response);
  }
}

TEST(StoreProtocol, LayoutIsBigEndianAndVersioned) {
  const auto frame = encode(AddRequest{"ab", 0x0102030405060708});
  const std::vector<std::uint8_t> expected = {0, 0, 0, 16,  // body length
                                              1, 3,         // version, ADD
                                              0, 0, 0, 2,  'a', 'b', 1, 2, 3, 4, 5, 6, 7, 8};
  ASSERT_EQ(frame.size(), expected.size());
  for (std::size_t i = 0; i < frame.size(); ++i) {
    EXPECT_EQ(std::to_integer<std::uint8_t>(frame[i]), expected[i]) << "byte " << i;
  }
}

TEST(StoreProtocol, EncodeAppendsWholeFrames) {
  std::vector<std::byte> stream;
  encode_store_request(SetRequest{"a", "1"}, stream);
  encode_store_request(GetRequest{"a", 5}, stream);
  const auto first = decode_store_frame_length(stream);
  ASSERT_TRUE(first.has_value());
  const auto second_at = kStoreLengthPrefixBytes + *first;
  const auto rest = std::span<const std::byte>(stream).subspan(second_at);
  const auto second = decode_store_frame_length(rest);
  ASSERT_TRUE(second.has_value());
  const auto decoded = decode_store_request(rest.subspan(kStoreLengthPrefixBytes, *second));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(*decoded, StoreRequest(GetRequest{"a", 5}));
}

TEST(StoreProtocol, TruncationAtEveryLengthIsRefused) {
  for (const auto& request : sample_requests()) {
    const auto frame = encode(request);
    const auto body = body_of(frame);
    // Stepping through a 70 KB value one byte at a time adds nothing; sample long bodies.
    const std::size_t step = body.size() > 4096 ? 97 : 1;
    for (std::size_t n = 0; n < body.size(); n += step) {
      EXPECT_FALSE(decode_store_request(body.first(n)).has_value())
          << describe_request(request) << " cut to " << n << " bytes";
    }
  }
  for (const auto& response : sample_responses()) {
    const auto frame = encode(response);
    const auto body = body_of(frame);
    for (std::size_t n = 0; n < body.size(); ++n) {
      EXPECT_FALSE(decode_store_response(body.first(n)).has_value()) << "cut to " << n;
    }
  }
  EXPECT_EQ(decode_store_request({}).error(), StoreDecodeError::kTruncated);
  const std::byte prefix[3] = {};
  EXPECT_EQ(decode_store_frame_length(prefix).error(), StoreDecodeError::kTruncated);
}

TEST(StoreProtocol, TrailingBytesAreRefused) {
  for (const auto& request : sample_requests()) {
    auto frame = encode(request);
    frame.push_back(std::byte{0});
    EXPECT_EQ(decode_store_request(body_of(frame)).error(), StoreDecodeError::kTrailingBytes);
  }
  for (const auto& response : sample_responses()) {
    auto frame = encode(response);
    frame.push_back(std::byte{0});
    EXPECT_EQ(decode_store_response(body_of(frame)).error(), StoreDecodeError::kTrailingBytes);
  }
}

TEST(StoreProtocol, BadLengthPrefixIsRefusedBeforeBuffering) {
  std::byte prefix[4] = {};
  EXPECT_EQ(decode_store_frame_length(prefix).error(), StoreDecodeError::kBadLength);
  wire::put_u32(prefix, 0, 1);  // shorter than version + type
  EXPECT_EQ(decode_store_frame_length(prefix).error(), StoreDecodeError::kBadLength);
  wire::put_u32(prefix, 0, static_cast<std::uint32_t>(kMaxStoreFrameBytes + 1));
  EXPECT_EQ(decode_store_frame_length(prefix).error(), StoreDecodeError::kBadLength);
  wire::put_u32(prefix, 0, 0xFFFFFFFF);
  EXPECT_EQ(decode_store_frame_length(prefix).error(), StoreDecodeError::kBadLength);
  wire::put_u32(prefix, 0, static_cast<std::uint32_t>(kMaxStoreFrameBytes));
  EXPECT_TRUE(decode_store_frame_length(prefix).has_value());
}

TEST(StoreProtocol, BadVersionIsRefused) {
  auto frame = encode(SetRequest{"a", "b"});
  frame[4] = std::byte{2};
  EXPECT_EQ(decode_store_request(body_of(frame)).error(), StoreDecodeError::kBadVersion);
  frame[4] = std::byte{0};
  EXPECT_EQ(decode_store_request(body_of(frame)).error(), StoreDecodeError::kBadVersion);
  auto response = encode(OkResponse{});
  response[4] = std::byte{0xFF};
  EXPECT_EQ(decode_store_response(body_of(response)).error(), StoreDecodeError::kBadVersion);
}

TEST(StoreProtocol, UnknownOrMisdirectedTypeIsRefused) {
  for (const int type : {0, 6, 0x80, 0x86, 0xFF}) {
    auto frame = encode(SetRequest{"a", "b"});
    frame[5] = static_cast<std::byte>(type);
    EXPECT_EQ(decode_store_request(body_of(frame)).error(), StoreDecodeError::kBadType) << type;
    EXPECT_EQ(decode_store_response(body_of(frame)).error(), StoreDecodeError::kBadType) << type;
  }
  // A response is not a request, and the other way round.
  EXPECT_EQ(decode_store_request(body_of(encode(OkResponse{}))).error(),
            StoreDecodeError::kBadType);
  EXPECT_EQ(decode_store_response(body_of(encode(SetRequest{"a", "b"}))).error(),
            StoreDecodeError::kBadType);
}

// Builds a frame body field by field, for inputs the encoder refuses to produce.
struct BodyBuilder {
  std::vector<std::byte> bytes;
  BodyBuilder(StoreFrameType type) {
    u8(kStoreProtocolVersion);
    u8(static_cast<std::uint8_t>(type));
  }
  BodyBuilder& u8(std::uint8_t v) {
    bytes.push_back(std::byte{v});
    return *this;
  }
  BodyBuilder& u32(std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) u8(static_cast<std::uint8_t>(v >> shift));
    return *this;
  }
  BodyBuilder& str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    for (const char c : s) u8(static_cast<std::uint8_t>(c));
    return *this;
  }
};

TEST(StoreProtocol, OversizedKeyIsRefusedBeforeCopying) {
  const std::string long_key(kMaxStoreKeyBytes + 1, 'k');
  EXPECT_EQ(
      decode_store_request(BodyBuilder(StoreFrameType::kSet).str(long_key).str("v").bytes).error(),
      StoreDecodeError::kKeyTooLong);
  EXPECT_EQ(
      decode_store_request(BodyBuilder(StoreFrameType::kGet).str(long_key).u32(0).bytes).error(),
      StoreDecodeError::kKeyTooLong);
  // Only the length is there: the decoder must refuse on the length alone.
  EXPECT_EQ(decode_store_request(BodyBuilder(StoreFrameType::kAdd).u32(0xFFFFFFFF).bytes).error(),
            StoreDecodeError::kKeyTooLong);
  EXPECT_EQ(
      decode_store_request(BodyBuilder(StoreFrameType::kCheck).u32(1).str(long_key).bytes).error(),
      StoreDecodeError::kKeyTooLong);
}

TEST(StoreProtocol, OversizedValueIsRefusedBeforeCopying) {
  const auto value_length = static_cast<std::uint32_t>(kMaxStoreValueBytes + 1);
  EXPECT_EQ(decode_store_request(BodyBuilder(StoreFrameType::kSet).str("k").u32(value_length).bytes)
                .error(),
            StoreDecodeError::kValueTooLong);
  EXPECT_EQ(
      decode_store_response(BodyBuilder(StoreFrameType::kValue).u32(value_length).bytes).error(),
      StoreDecodeError::kValueTooLong);
  // A declared length within the limit but beyond the body is truncation, not an allocation.
  EXPECT_EQ(
      decode_store_request(BodyBuilder(StoreFrameType::kSet).str("k").u32(1000).bytes).error(),
      StoreDecodeError::kTruncated);
}

TEST(StoreProtocol, KeyCountsAreBounded) {
  EXPECT_EQ(decode_store_request(BodyBuilder(StoreFrameType::kCheck).u32(0).bytes).error(),
            StoreDecodeError::kTooManyKeys);
  EXPECT_EQ(decode_store_request(BodyBuilder(StoreFrameType::kWait).u32(0).u32(10).bytes).error(),
            StoreDecodeError::kTooManyKeys);
  EXPECT_EQ(decode_store_request(BodyBuilder(StoreFrameType::kWait)
                                     .u32(static_cast<std::uint32_t>(kMaxStoreKeysPerRequest + 1))
                                     .bytes)
                .error(),
            StoreDecodeError::kTooManyKeys);
  // A plausible count with too few bytes behind it is refused before reserving for it.
  EXPECT_EQ(
      decode_store_request(BodyBuilder(StoreFrameType::kCheck).u32(60000).str("a").bytes).error(),
      StoreDecodeError::kTruncated);
}

TEST(StoreProtocol, ResponseFieldsAreRangeChecked) {
  EXPECT_EQ(decode_store_response(BodyBuilder(StoreFrameType::kChecked).u8(2).bytes).error(),
            StoreDecodeError::kBadField);
  for (const int kind : {0, 4, 0xFF}) {
    EXPECT_EQ(
        decode_store_response(
            BodyBuilder(StoreFrameType::kError).u8(static_cast<std::uint8_t>(kind)).str("").bytes)
            .error(),
        StoreDecodeError::kBadField)
        << kind;
  }
  EXPECT_EQ(
      decode_store_response(BodyBuilder(StoreFrameType::kError)
                                .u8(1)
                                .u32(static_cast<std::uint32_t>(kMaxStoreErrorMessageBytes + 1))
                                .bytes)
          .error(),
      StoreDecodeError::kBadField);
}

TEST(StoreProtocol, EncoderRefusesOversizedInputNamingTheKey) {
  std::vector<std::byte> out;
  try {
    encode_store_request(SetRequest{std::string(kMaxStoreKeyBytes + 1, 'q'), "v"}, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'qqqq"), std::string::npos) << e.what();
  }
  try {
    encode_store_request(SetRequest{"big", std::string(kMaxStoreValueBytes + 1, 'v')}, out);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'big'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(encode_store_request(CheckRequest{{}}, out), Error);
  EXPECT_THROW(encode_store_request(WaitRequest{{}, 1}, out), Error);
  EXPECT_TRUE(out.empty());
}

TEST(StoreProtocol, LongErrorMessagesAreCutNotRefused) {
  const auto frame = encode(
      ErrorResponse{StoreErrorKind::kProtocol, std::string(kMaxStoreErrorMessageBytes * 2, 'e')});
  const auto decoded = decode_store_response(body_of(frame));
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(std::get<ErrorResponse>(*decoded).message.size(), kMaxStoreErrorMessageBytes);
}

TEST(StoreProtocol, DescribeRequestNamesTheKeys) {
  EXPECT_EQ(describe_request(SetRequest{"a/b", "v"}), "SET 'a/b'");
  EXPECT_EQ(describe_request(GetRequest{"x\n", 1}), "GET 'x\\x0a'");
  EXPECT_EQ(describe_request(WaitRequest{{"a", "b", "c", "d", "e", "f"}, 1}),
            "WAIT 'a', 'b', 'c', 'd' and 2 more");
}

}  // namespace
}  // namespace dlcp::rendezvous
