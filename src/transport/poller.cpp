#include "transport/poller.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "common/net.hpp"
#include "dlcp/error.hpp"

namespace dlcp::transport {

Poller::Poller() {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_.valid() || !wake_.valid()) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("epoll/eventfd", errno));
  }
  watch(wake_.get(), epoll_tag::kWake);
}

void Poller::watch(int fd, std::uint64_t tag) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = tag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("epoll_ctl", errno));
  }
}

void Poller::unwatch(int fd) {
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void Poller::wake() const {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(wake_.get(), &one, sizeof(one));
}

std::span<const std::uint64_t> Poller::wait(Duration timeout) {
  if (timeout < Duration::zero()) timeout = Duration::zero();
  const timespec limit{static_cast<time_t>(timeout.count() / 1'000'000'000),
                       static_cast<long>(timeout.count() % 1'000'000'000)};
  const int n = ::epoll_pwait2(epoll_.get(), events_.data(), static_cast<int>(events_.size()),
                               &limit, nullptr);
  ready_.clear();
  for (int i = 0; i < n; ++i) {
    const std::uint64_t tag = events_[static_cast<std::size_t>(i)].data.u64;
    if (tag == epoll_tag::kWake) {
      std::uint64_t count = 0;
      [[maybe_unused]] const auto r = ::read(wake_.get(), &count, sizeof(count));
      continue;
    }
    ready_.push_back(tag);
  }
  return ready_;
}

}  // namespace dlcp::transport
