#include "transport/shm_ring.hpp"

#include <bit>
#include <cstring>
#include <new>
#include <string>

namespace dlcp::transport {
namespace {

constexpr std::size_t padded(std::size_t bytes) {
  return (bytes + kRecordAlign - 1) & ~(kRecordAlign - 1);
}

struct RecordHeader {
  std::uint32_t bytes;
  std::uint32_t kind;
};
static_assert(sizeof(RecordHeader) == kRecordHeaderBytes);

RingHeader* header_of(std::span<std::byte> region) {
  return std::launder(reinterpret_cast<RingHeader*>(region.data()));
}

std::size_t capacity_of(std::span<std::byte> region) {
  if (region.size() < kRingHeaderBytes || !valid_ring_capacity(region.size() - kRingHeaderBytes) ||
      reinterpret_cast<std::uintptr_t>(region.data()) % alignof(RingHeader) != 0) {
    throw RingCorrupt("shared ring region of " + std::to_string(region.size()) +
                      " bytes is not a ring");
  }
  return region.size() - kRingHeaderBytes;
}

}  // namespace

bool valid_ring_capacity(std::size_t capacity) {
  return capacity >= 4096 && std::has_single_bit(capacity);
}

void init_ring(std::span<std::byte> region) {
  capacity_of(region);
  auto* header = new (region.data()) RingHeader{};
  header->head.store(0, std::memory_order_relaxed);
  header->tail.store(0, std::memory_order_release);
}

RingWriter::RingWriter(std::span<std::byte> region)
    : header_(header_of(region)),
      data_(region.data() + kRingHeaderBytes),
      capacity_(capacity_of(region)),
      head_(header_->head.load(std::memory_order_relaxed)) {}

std::uint64_t RingWriter::read_tail() const {
  const std::uint64_t tail = header_->tail.load(std::memory_order_acquire);
  if (tail > head_ || head_ - tail > capacity_ || tail % kRecordAlign != 0) {
    throw RingCorrupt("the consumer's read position " + std::to_string(tail) +
                      " is impossible (written: " + std::to_string(head_) + ")");
  }
  return tail;
}

std::size_t RingWriter::used() const {
  return static_cast<std::size_t>(head_ - read_tail());
}

std::span<std::byte> RingWriter::reserve(std::size_t bytes) {
  if (bytes > max_payload()) return {};
  const std::size_t record = kRecordHeaderBytes + padded(bytes);
  const std::size_t free = capacity_ - static_cast<std::size_t>(head_ - read_tail());
  const std::size_t offset = static_cast<std::size_t>(head_ % capacity_);
  const std::size_t to_end = capacity_ - offset;
  std::size_t skip = 0;
  if (record > to_end) skip = to_end;  // pad to the end, start over at the beginning
  if (skip + record > free) return {};
  if (skip != 0) {
    const RecordHeader pad{static_cast<std::uint32_t>(skip - kRecordHeaderBytes), kPadRecord};
    std::memcpy(data_ + offset, &pad, sizeof(pad));
  }
  reserved_ = head_ + skip;
  const std::size_t start = static_cast<std::size_t>(reserved_ % capacity_);
  return {data_ + start + kRecordHeaderBytes, bytes};
}

void RingWriter::commit(std::uint32_t kind, std::size_t bytes) {
  const std::size_t start = static_cast<std::size_t>(reserved_ % capacity_);
  const RecordHeader record{static_cast<std::uint32_t>(bytes), kind};
  std::memcpy(data_ + start, &record, sizeof(record));
  head_ = reserved_ + kRecordHeaderBytes + padded(bytes);
  header_->head.store(head_, std::memory_order_release);
}

RingReader::RingReader(std::span<std::byte> region)
    : header_(header_of(region)),
      data_(region.data() + kRingHeaderBytes),
      capacity_(capacity_of(region)),
      tail_(header_->tail.load(std::memory_order_relaxed)) {}

std::optional<RingRecord> RingReader::peek() {
  for (;;) {
    const std::uint64_t head = header_->head.load(std::memory_order_acquire);
    if (head < tail_ || head - tail_ > capacity_ || head % kRecordAlign != 0) {
      throw RingCorrupt("the producer's write position " + std::to_string(head) +
                        " is impossible (read: " + std::to_string(tail_) + ")");
    }
    if (head == tail_) return std::nullopt;
    const std::size_t offset = static_cast<std::size_t>(tail_ % capacity_);
    const std::size_t available = static_cast<std::size_t>(head - tail_);
    if (available < kRecordHeaderBytes) throw RingCorrupt("a record header is cut short");
    RecordHeader record;
    std::memcpy(&record, data_ + offset, sizeof(record));
    const std::size_t bytes = kRecordHeaderBytes + padded(record.bytes);
    if (bytes > available || bytes > capacity_ - offset) {
      throw RingCorrupt("a record of " + std::to_string(record.bytes) +
                        " bytes runs past what was written");
    }
    if (record.kind == kPadRecord) {
      tail_ += bytes;
      header_->tail.store(tail_, std::memory_order_release);
      released_ = true;
      continue;
    }
    record_bytes_ = bytes;
    return RingRecord{record.kind, {data_ + offset + kRecordHeaderBytes, record.bytes}};
  }
}

void RingReader::release() {
  tail_ += record_bytes_;
  record_bytes_ = 0;
  header_->tail.store(tail_, std::memory_order_release);
  released_ = true;
}

bool RingReader::take_released() {
  const bool was = released_;
  released_ = false;
  return was;
}

}  // namespace dlcp::transport
