// The shared memory of the local path: one anonymous segment per direction between two ranks of
// one host, made by the sender and holding one ring (shm_ring.hpp). The segment is memfd memory:
// it has no name in any file system (nothing in /dev/shm), so it lives exactly as long as a
// process holds its descriptor or mapping, and a crash leaves nothing behind. Its size is sealed
// before it is shared, so the peer cannot shrink it under our mapping. Its descriptor reaches the
// peer only after the job-key proof (local_handoff.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/fd.hpp"

namespace dlcp::transport {

// Records of each direction's ring: the larger, the more of a message is in flight between the
// two I/O threads; small enough that a few peers' rings stay in the last-level cache.
inline constexpr std::size_t kLocalRingBytes = 4u << 20;

class SharedMapping {
 public:
  SharedMapping() = default;
  // Maps all of `fd` (read-write, shared). Throws dlcp::Error(kSystem).
  SharedMapping(int fd, std::size_t bytes);
  SharedMapping(SharedMapping&& other) noexcept;
  SharedMapping& operator=(SharedMapping&& other) noexcept;
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  ~SharedMapping();

  std::span<std::byte> bytes() const { return {data_, size_}; }
  bool valid() const { return data_ != nullptr; }

 private:
  void reset();
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

// A segment: its descriptor (to hand to the peer) and our mapping of it.
struct LocalSegment {
  Fd fd;
  SharedMapping mapping;
};

// A fresh, sealed segment holding an empty ring of `ring_bytes`. Throws dlcp::Error(kSystem).
LocalSegment create_segment(std::size_t ring_bytes = kLocalRingBytes);

// Checks a segment the peer sent (a memfd whose size is sealed, holding a ring of `ring_bytes`)
// and maps it; returns why not in `problem` and an invalid segment when it is not one.
LocalSegment open_segment(Fd fd, std::size_t ring_bytes, std::string& problem);

// A non-blocking eventfd: the peer writes it to wake our I/O thread.
Fd create_wake_fd();
// Wakes whoever polls `fd` (an eventfd); a full counter already means "wake up".
void signal_wake_fd(int fd);
// Consumes the wake-ups so far.
void drain_wake_fd(int fd);

}  // namespace dlcp::transport
