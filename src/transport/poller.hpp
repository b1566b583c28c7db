// The I/O thread's wait: epoll over tagged descriptors, and an eventfd other threads write to
// wake it. Tags: the top byte says what kind of descriptor, the rest which one.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <span>
#include <vector>

#include "common/fd.hpp"
#include "common/time.hpp"

namespace dlcp::transport {

namespace epoll_tag {
inline constexpr std::uint64_t kShift = 56;
inline constexpr std::uint64_t kWake = 1ull << kShift;
inline constexpr std::uint64_t kListener = 2ull << kShift;
inline constexpr std::uint64_t kData = 3ull << kShift;
inline constexpr std::uint64_t kControl = 4ull << kShift;
inline constexpr std::uint64_t kPending = 5ull << kShift;
inline constexpr std::uint64_t kLocalListener = 6ull << kShift;  // local_handoff.hpp
inline constexpr std::uint64_t kLocalPending = 7ull << kShift;
inline constexpr std::uint64_t kLocalWake = 8ull << kShift;  // a local peer wrote or made room
inline constexpr std::uint64_t kMask = 0xFFull << kShift;
}  // namespace epoll_tag

class Poller {
 public:
  Poller();  // throws dlcp::Error(kSystem)

  void watch(int fd, std::uint64_t tag);  // for reading
  void unwatch(int fd);
  // From any thread: the next (or current) wait returns at once.
  void wake() const;
  // The tags of the descriptors ready within `timeout` (wake-ups already consumed).
  std::span<const std::uint64_t> wait(Duration timeout);

 private:
  Fd epoll_;
  Fd wake_;
  std::vector<epoll_event> events_ = std::vector<epoll_event>(64);
  std::vector<std::uint64_t> ready_;
};

}  // namespace dlcp::transport
