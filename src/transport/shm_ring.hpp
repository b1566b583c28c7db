// A single-producer, single-consumer ring of records in memory that two processes share (the local
// path, local_path.hpp). The producer owns the write position, the consumer the read position;
// both are byte counts since the start that only grow, so full and empty never look alike.
//
// Layout of the region: RingHeader (two cache lines), then `capacity` bytes of records. A record
// is an 8-byte header (u32 payload bytes, u32 kind) and its payload, padded to 8 bytes; it never
// wraps: where the rest of the ring is too short, a padding record fills it and the record starts
// at the ring's beginning.
//
// The peer on the other side is authenticated but not trusted with our memory: every position and
// record header read from the shared region is copied, then checked, and a bad one throws
// RingCorrupt (the peer is then failed). A record's payload is the peer's to change until it is
// released, so consumers copy what they decide on before using it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>

namespace dlcp::transport {

struct RingHeader {
  alignas(64) std::atomic<std::uint64_t> head;  // bytes ever written (producer)
  alignas(64) std::atomic<std::uint64_t> tail;  // bytes ever released (consumer)
};
static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the ring's positions are shared between processes");

inline constexpr std::size_t kRingHeaderBytes = sizeof(RingHeader);
inline constexpr std::size_t kRecordHeaderBytes = 8;
inline constexpr std::size_t kRecordAlign = 8;
// Record kind 0 pads the ring's end; the path's own kinds start at 1.
inline constexpr std::uint32_t kPadRecord = 0;

class RingCorrupt : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bytes a region needs for a ring of `capacity` bytes of records.
constexpr std::size_t ring_region_bytes(std::size_t capacity) {
  return kRingHeaderBytes + capacity;
}

// Whether `capacity` is usable: a power of two of at least 4 KiB.
bool valid_ring_capacity(std::size_t capacity);

// Zeroes the positions of a fresh region (the producer's side, before it is shared).
void init_ring(std::span<std::byte> region);

class RingWriter {
 public:
  RingWriter() = default;
  // `region` holds a ring of region.size() - kRingHeaderBytes bytes (valid_ring_capacity).
  explicit RingWriter(std::span<std::byte> region);

  // The largest payload a single record may carry (a quarter of the ring, so that a record
  // always fits once the consumer caught up, whatever the padding).
  std::size_t max_payload() const { return capacity_ / 4; }
  // Room for a record with `bytes` of payload now: its payload, to fill before commit(), or an
  // empty span when the consumer has not released enough yet. Throws RingCorrupt.
  std::span<std::byte> reserve(std::size_t bytes);
  // Publishes the record reserve() last returned, `bytes` (at most what was reserved) long.
  void commit(std::uint32_t kind, std::size_t bytes);
  // Bytes written and not yet released by the consumer (a snapshot).
  std::size_t used() const;

 private:
  std::uint64_t read_tail() const;

  RingHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t head_ = 0;      // ours: what we published
  std::uint64_t reserved_ = 0;  // where the reserved record starts
};

struct RingRecord {
  std::uint32_t kind = 0;
  std::span<const std::byte> payload;  // in the shared region, valid until release()
};

class RingReader {
 public:
  RingReader() = default;
  explicit RingReader(std::span<std::byte> region);

  // The next record, or none when the ring is empty. Throws RingCorrupt.
  std::optional<RingRecord> peek();
  // Releases the record peek() returned to the producer.
  void release();
  // Whether anything was released since the last call (the producer may be waiting for room).
  bool take_released();

 private:
  RingHeader* header_ = nullptr;
  const std::byte* data_ = nullptr;
  std::size_t capacity_ = 0;
  std::uint64_t tail_ = 0;          // ours: what we released
  std::uint64_t record_bytes_ = 0;  // of the record peek() returned, padding included
  bool released_ = false;
};

}  // namespace dlcp::transport
