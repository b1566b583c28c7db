#include "transport/local_segment.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <utility>

#include "common/net.hpp"
#include "dlcp/error.hpp"
#include "transport/shm_ring.hpp"

namespace dlcp::transport {
namespace {

constexpr unsigned kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW;

[[noreturn]] void throw_system(const std::string& what) {
  throw Error(ErrorCode::kSystem, -1, net::errno_message(what, errno));
}

}  // namespace

SharedMapping::SharedMapping(int fd, std::size_t bytes) : size_(bytes) {
  void* data = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) throw_system("mmap of a local-path segment");
  data_ = static_cast<std::byte*>(data);
}

SharedMapping::SharedMapping(SharedMapping&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

SharedMapping& SharedMapping::operator=(SharedMapping&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

SharedMapping::~SharedMapping() {
  reset();
}

void SharedMapping::reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

LocalSegment create_segment(std::size_t ring_bytes) {
  LocalSegment segment;
  segment.fd.reset(::memfd_create("dlcp-local", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!segment.fd.valid()) throw_system("memfd_create");
  const std::size_t bytes = ring_region_bytes(ring_bytes);
  if (::ftruncate(segment.fd.get(), static_cast<off_t>(bytes)) != 0) {
    throw_system("ftruncate of a local-path segment");
  }
  // Sealed before anyone else sees it: the size can never change under a mapping (a shrink would
  // turn our accesses into SIGBUS).
  if (::fcntl(segment.fd.get(), F_ADD_SEALS, kSizeSeals | F_SEAL_SEAL) != 0) {
    throw_system("sealing a local-path segment");
  }
  segment.mapping = SharedMapping(segment.fd.get(), bytes);
  init_ring(segment.mapping.bytes());
  return segment;
}

LocalSegment open_segment(Fd fd, std::size_t ring_bytes, std::string& problem) {
  const std::size_t bytes = ring_region_bytes(ring_bytes);
  const int seals = ::fcntl(fd.get(), F_GET_SEALS);
  struct stat info {};
  if (seals < 0 || (seals & static_cast<int>(kSizeSeals)) != static_cast<int>(kSizeSeals)) {
    problem = "the peer's segment is not a size-sealed memfd";
    return {};
  }
  if (::fstat(fd.get(), &info) != 0 || !S_ISREG(info.st_mode) ||
      static_cast<std::size_t>(info.st_size) != bytes) {
    problem = "the peer's segment has " + std::to_string(info.st_size) + " bytes, not " +
              std::to_string(bytes);
    return {};
  }
  LocalSegment segment;
  segment.mapping = SharedMapping(fd.get(), bytes);
  segment.fd = std::move(fd);
  return segment;
}

Fd create_wake_fd() {
  Fd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!fd.valid()) throw_system("eventfd");
  return fd;
}

void signal_wake_fd(int fd) {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(fd, &one, sizeof(one));
}

void drain_wake_fd(int fd) {
  std::uint64_t count = 0;
  [[maybe_unused]] const auto n = ::read(fd, &count, sizeof(count));
}

}  // namespace dlcp::transport
