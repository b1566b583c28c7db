#include "transport/shm_ring.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "transport/host_identity.hpp"

namespace dlcp::transport {
namespace {

constexpr std::size_t kCapacity = 4096;

struct Region {
  alignas(64) std::byte bytes[ring_region_bytes(kCapacity)];
  std::span<std::byte> span() { return {bytes, sizeof(bytes)}; }
  RingHeader& header() { return *reinterpret_cast<RingHeader*>(bytes); }
};

bool write(RingWriter& writer, std::uint32_t kind, const std::string& text) {
  const auto room = writer.reserve(text.size());
  if (room.empty()) return false;
  std::memcpy(room.data(), text.data(), text.size());
  writer.commit(kind, text.size());
  return true;
}

std::string read(RingReader& reader, std::uint32_t& kind) {
  const auto record = reader.peek();
  if (!record) return "<empty>";
  kind = record->kind;
  std::string text(reinterpret_cast<const char*>(record->payload.data()), record->payload.size());
  reader.release();
  return text;
}

TEST(ShmRing, CapacityMustBeAPowerOfTwoOfAtLeastAPage) {
  EXPECT_TRUE(valid_ring_capacity(4096));
  EXPECT_TRUE(valid_ring_capacity(4u << 20));
  EXPECT_FALSE(valid_ring_capacity(2048));
  EXPECT_FALSE(valid_ring_capacity(4096 + 8));
  std::vector<std::byte> odd(kRingHeaderBytes + 5000);
  EXPECT_THROW(init_ring(odd), RingCorrupt);
}

TEST(ShmRing, RecordsArriveInOrderWithTheirKinds) {
  Region region;
  init_ring(region.span());
  RingWriter writer(region.span());
  RingReader reader(region.span());
  EXPECT_FALSE(reader.peek().has_value());
  ASSERT_TRUE(write(writer, 1, "first"));
  ASSERT_TRUE(write(writer, 2, "second record"));
  std::uint32_t kind = 0;
  EXPECT_EQ(read(reader, kind), "first");
  EXPECT_EQ(kind, 1u);
  EXPECT_EQ(read(reader, kind), "second record");
  EXPECT_EQ(kind, 2u);
  EXPECT_EQ(read(reader, kind), "<empty>");
  EXPECT_TRUE(reader.take_released());
  EXPECT_FALSE(reader.take_released());
  EXPECT_EQ(writer.used(), 0u);
}

TEST(ShmRing, FullRingRefusesUntilTheReaderReleases) {
  Region region;
  init_ring(region.span());
  RingWriter writer(region.span());
  RingReader reader(region.span());
  EXPECT_EQ(writer.max_payload(), kCapacity / 4);
  EXPECT_TRUE(writer.reserve(kCapacity / 4 + 1).empty()) << "larger than a record may be";
  // 1000-byte payloads take 1008 bytes each: four fit in 4096 bytes, the fifth does not.
  const std::string block(1000, 'a');
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(write(writer, 1, block)) << i;
  EXPECT_EQ(writer.used(), 4u * 1008);
  EXPECT_FALSE(write(writer, 1, block));
  std::uint32_t kind = 0;
  EXPECT_EQ(read(reader, kind), block);
  // Room for 1008 bytes now, but not contiguous: 64 bytes at the end, 1008 at the start. The
  // record goes to the start behind a padding record, which the reader skips.
  ASSERT_TRUE(write(writer, 3, std::string(1000, 'b')));
  for (int i = 0; i < 3; ++i) EXPECT_EQ(read(reader, kind), block);
  EXPECT_EQ(read(reader, kind), std::string(1000, 'b'));
  EXPECT_EQ(kind, 3u);
  EXPECT_EQ(writer.used(), 0u);
}

TEST(ShmRing, WrapsManyTimesWithoutLosingARecord) {
  Region region;
  init_ring(region.span());
  RingWriter writer(region.span());
  RingReader reader(region.span());
  std::size_t written = 0;
  std::size_t read_count = 0;
  for (int round = 0; round < 2000; ++round) {
    // Sizes 1..700 bytes, several per round, read back in a lagging order.
    const std::string text(static_cast<std::size_t>(1 + (round * 37) % 700),
                           static_cast<char>('a' + round % 26));
    if (write(writer, 1, text)) ++written;
    if (round % 3 != 0) {
      std::uint32_t kind = 0;
      const std::string got = read(reader, kind);
      if (got != "<empty>") {
        ++read_count;
        EXPECT_EQ(got, std::string(got.size(), got.front()));
      }
    }
  }
  std::uint32_t kind = 0;
  while (read(reader, kind) != "<empty>") ++read_count;
  EXPECT_EQ(read_count, written);
  EXPECT_GT(written, 1000u);
}

TEST(ShmRing, ImpossiblePositionsAreCorruption) {
  Region region;
  init_ring(region.span());
  RingWriter writer(region.span());
  RingReader reader(region.span());
  ASSERT_TRUE(write(writer, 1, "x"));
  // A consumer claiming to have read more than was written.
  region.header().tail.store(64);
  EXPECT_THROW(writer.reserve(8), RingCorrupt);
  region.header().tail.store(0);
  // A producer claiming more than the ring holds.
  region.header().head.store(kCapacity + 8);
  EXPECT_THROW(reader.peek(), RingCorrupt);
  // A record header whose length runs past what was written.
  region.header().head.store(16);
  const std::uint32_t huge = 4000;
  std::memcpy(region.bytes + kRingHeaderBytes, &huge, sizeof(huge));
  EXPECT_THROW(reader.peek(), RingCorrupt);
}

TEST(HostIdentity, BootIdAndNamespaceInodeFromFixedText) {
  const auto identity =
      make_host_identity("0123abcd-4567-89ef-0011-2233445566ff\n", 0x0102030405060708);
  ASSERT_TRUE(identity.has_value());
  const HostIdentity expected{0x01, 0x23, 0xab, 0xcd, 0x45, 0x67, 0x89, 0xef,
                              0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0xff,
                              0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
  EXPECT_EQ(*identity, expected);
  EXPECT_NE(make_host_identity("0123abcd-4567-89ef-0011-2233445566ff", 1), identity);
  EXPECT_FALSE(make_host_identity("not a uuid", 1).has_value());
  EXPECT_FALSE(make_host_identity("0123abcd-4567-89ef-0011-2233445566", 1).has_value());
  EXPECT_FALSE(make_host_identity("0123abcd-4567-89ef-0011-2233445566ff00", 1).has_value());
  // This host has both.
  EXPECT_TRUE(read_host_identity().has_value());
}

}  // namespace
}  // namespace dlcp::transport
