#include "transport/handshake.hpp"

#include <gtest/gtest.h>

#include <string>

namespace dlcp::transport {
namespace {

wire::Hello hello_from(std::uint16_t rank) {
  wire::Hello hello;
  hello.job_token = 0x0123456789ABCDEFull;
  hello.rank = rank;
  hello.world_size = 4;
  hello.data_sockets = {{0x7F000001u, 40000}};
  hello.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks |
                   wire::hello_features::kWireDtypes | wire::hello_features::kParity;
  return hello;
}

bool mentions(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckHello, AcceptsAPeerOfTheSameJobAndFormat) {
  EXPECT_EQ(check_hello(hello_from(1), hello_from(0)), "");
}

// Its version-1 data packets would each be refused as bad_version until the message's deadline.
TEST(CheckHello, NamesAPeerThatSendsTheOlderDataFormat) {
  wire::Hello older = hello_from(1);
  older.features = 0;
  const std::string why = check_hello(older, hello_from(0));
  EXPECT_TRUE(mentions(why, "format version 1")) << why;
  EXPECT_TRUE(mentions(why, "same dlcp version")) << why;
}

// Its rate reports would lack ce_marked_shared_band, and the first one would fail the connection
// on its length.
TEST(CheckHello, NamesAPeerWhoseRateReportsLackSharedBandMarks) {
  wire::Hello older = hello_from(1);
  older.features = wire::hello_features::kPairSeq;
  const std::string why = check_hello(older, hello_from(0));
  EXPECT_TRUE(mentions(why, "without shared-band marks")) << why;
  EXPECT_TRUE(mentions(why, "same dlcp version")) << why;
}

// Its data packets would be of format version 2 (float32 only, no wire dtype in the flags).
TEST(CheckHello, NamesAPeerWithoutWireDtypes) {
  wire::Hello older = hello_from(1);
  older.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks;
  const std::string why = check_hello(older, hello_from(0));
  EXPECT_TRUE(mentions(why, "format version 2")) << why;
  EXPECT_TRUE(mentions(why, "same dlcp version")) << why;
}

// Its decoder would refuse FlowStart's parity_members and every parity packet.
TEST(CheckHello, NamesAPeerWithoutParity) {
  wire::Hello older = hello_from(1);
  older.features &= static_cast<std::uint8_t>(~wire::hello_features::kParity);
  const std::string why = check_hello(older, hello_from(0));
  EXPECT_TRUE(mentions(why, "no parity packets")) << why;
  EXPECT_TRUE(mentions(why, "same dlcp version")) << why;
}

TEST(CheckHello, NamesOtherMismatches) {
  wire::Hello peer = hello_from(1);
  peer.job_token ^= 1;
  EXPECT_TRUE(mentions(check_hello(peer, hello_from(0)), "job token mismatch"));
  peer = hello_from(1);
  peer.features |= wire::hello_features::kPacketMac;
  EXPECT_TRUE(mentions(check_hello(peer, hello_from(0)), "packet MAC setting differs"));
  EXPECT_TRUE(mentions(check_hello(hello_from(0), hello_from(0)), "invalid peer rank 0"));
}

}  // namespace
}  // namespace dlcp::transport
