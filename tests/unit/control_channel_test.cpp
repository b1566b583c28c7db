// The control channel's limits, over a socket pair: a peer that stops reading fails the channel
// once the queue passes its bound, and an oversized frame is refused before it is buffered.
#include "transport/control_channel.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "wire/byte_order.hpp"

namespace dlcp::transport {
namespace {

struct SocketPair {
  Fd ours;
  Fd theirs;
};

SocketPair socket_pair() {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fds), 0);
  return {Fd(fds[0]), Fd(fds[1])};
}

wire::RateFeedback feedback() {
  wire::RateFeedback m;
  m.path_received.assign(64, 7);  // about 300 bytes per frame
  return m;
}

TEST(ControlChannel, PeerThatStopsReadingFailsTheChannelAtTheBound) {
  constexpr std::size_t kBound = 1 << 20;
  auto pair = socket_pair();
  ControlChannel channel(std::move(pair.ours), kBound);
  // The kernel buffers some of it; the rest queues in the channel until the bound.
  std::size_t sent = 0;
  while (channel.healthy() && sent < 100'000) {
    channel.send(feedback());
    ++sent;
  }
  ASSERT_FALSE(channel.healthy()) << "still healthy after " << sent << " frames";
  EXPECT_GT(channel.queued_bytes(), kBound);
  EXPECT_LT(channel.queued_bytes(), kBound + 1024) << "the queue grew past one frame beyond";
  EXPECT_NE(channel.error().find("stopped reading"), std::string::npos) << channel.error();
  EXPECT_FALSE(channel.flush());
  // Nothing more is queued once failed.
  const std::size_t queued = channel.queued_bytes();
  channel.send(feedback());
  EXPECT_EQ(channel.queued_bytes(), queued);
}

TEST(ControlChannel, ReaderThatKeepsUpNeverFails) {
  constexpr std::size_t kBound = 64 << 10;
  auto pair = socket_pair();
  ControlChannel channel(std::move(pair.ours), kBound);
  std::vector<std::byte> sink(1 << 16);
  for (int i = 0; i < 20'000; ++i) {
    channel.send(feedback());
    while (::read(pair.theirs.get(), sink.data(), sink.size()) > 0) {
    }
    ASSERT_TRUE(channel.healthy()) << "after " << i << " frames: " << channel.error();
    ASSERT_TRUE(channel.flush());
  }
}

// A connected TCP pair on loopback: ours non-blocking, theirs blocking.
SocketPair tcp_pair() {
  Fd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)),
            0);
  EXPECT_EQ(::listen(listener.get(), 1), 0);
  socklen_t length = sizeof(address);
  ::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&address), &length);
  Fd theirs(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_EQ(::connect(theirs.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)),
            0);
  Fd ours(::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  return {std::move(ours), std::move(theirs)};
}

// Regression: a peer that sends its Abort and exits with our frames unread resets the
// connection; the Abort before the reset must still be delivered, not lost with the error.
TEST(ControlChannel, FramesBeforeAResetAreDelivered) {
  auto pair = tcp_pair();
  ControlChannel channel(std::move(pair.ours));
  channel.send(feedback());  // left unread by the peer, so its close sends a reset
  std::vector<std::byte> frame;
  wire::encode_control(wire::Abort{"rank 2 closed the control connection"}, frame);
  ASSERT_EQ(::write(pair.theirs.get(), frame.data(), frame.size()),
            static_cast<ssize_t>(frame.size()));
  pollfd waiter{channel.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&waiter, 1, 5000), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the feedback arrive there
  pair.theirs.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // and the reset here
  std::vector<wire::ControlMessage> messages;
  const auto status = channel.read(messages);
  EXPECT_NE(status, ControlChannel::ReadStatus::kOk);
  ASSERT_EQ(messages.size(), 1u) << channel.error();
  ASSERT_TRUE(std::holds_alternative<wire::Abort>(messages.front()));
  EXPECT_EQ(std::get<wire::Abort>(messages.front()).reason, "rank 2 closed the control connection");
}

TEST(ControlChannel, OversizedFrameIsRefusedBeforeItIsBuffered) {
  auto pair = socket_pair();
  ControlChannel channel(std::move(pair.ours));
  channel.set_max_frame_bytes(1024);
  std::vector<std::byte> prefix(wire::kControlLengthPrefixBytes);
  wire::put_u32(prefix, 0, 1025);
  ASSERT_EQ(::write(pair.theirs.get(), prefix.data(), prefix.size()), 4);
  std::vector<wire::ControlMessage> messages;
  EXPECT_EQ(channel.read(messages), ControlChannel::ReadStatus::kFailed);
  EXPECT_TRUE(messages.empty());
  EXPECT_NE(channel.error().find("exceeds the limit of 1024"), std::string::npos)
      << channel.error();
}

TEST(ControlChannel, FramesUpToTheLimitArrive) {
  auto pair = socket_pair();
  ControlChannel channel(std::move(pair.ours));
  std::vector<std::byte> frame;
  wire::encode_control(feedback(), frame);
  channel.set_max_frame_bytes(frame.size() - wire::kControlLengthPrefixBytes);
  ASSERT_EQ(::write(pair.theirs.get(), frame.data(), frame.size()),
            static_cast<ssize_t>(frame.size()));
  std::vector<wire::ControlMessage> messages;
  EXPECT_EQ(channel.read(messages), ControlChannel::ReadStatus::kOk) << channel.error();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_TRUE(std::holds_alternative<wire::RateFeedback>(messages.front()));
}

// What the counters report per control connection: the kernel's retransmission timeout (at least
// its floor, so never zero on TCP) and no resends on a healthy loopback connection; zeros where
// the kernel cannot say (not TCP, or closed).
TEST(ControlChannel, TcpStatsComeFromTheKernel) {
  auto pair = tcp_pair();
  ControlChannel channel(std::move(pair.ours));
  channel.send(feedback());
  ASSERT_TRUE(channel.flush()) << channel.error();
  const ControlTcpStats tcp = channel.tcp_stats();
  EXPECT_GT(tcp.rto_us, 0u);
  EXPECT_EQ(tcp.retransmits, 0u);

  auto local = socket_pair();
  const ControlTcpStats none = ControlChannel(std::move(local.ours)).tcp_stats();
  EXPECT_EQ(none.rto_us, 0u);
  EXPECT_EQ(none.retransmits, 0u);
  channel.close();
  EXPECT_EQ(channel.tcp_stats().rto_us, 0u);
}

// The lingering close at exit: after finish(), the channel waits for the peer's end of the stream,
// discarding what the peer still sends meanwhile (closing with it unread would reset the
// connection and could discard our Goodbye); a channel that never finished waits for nothing.
TEST(ControlChannel, PeerFinishedOnlyOnceThePeerClosesItsSide) {
  auto pair = tcp_pair();
  ControlChannel channel(std::move(pair.ours));
  EXPECT_TRUE(channel.peer_finished()) << "nothing to wait for before finish()";
  channel.send(feedback());
  ASSERT_TRUE(channel.flush()) << channel.error();
  channel.finish();
  const char late[] = "rate feedback sent after our Goodbye";
  ASSERT_EQ(::write(pair.theirs.get(), late, sizeof late), static_cast<ssize_t>(sizeof late));
  EXPECT_FALSE(channel.peer_finished()) << "the peer has not closed yet";
  // The peer reads our frame and our end of the stream, then closes its side.
  std::vector<std::byte> received(4096);
  ssize_t total = 0;
  for (;;) {
    const ssize_t n = ::recv(pair.theirs.get(), received.data(), received.size(), 0);
    ASSERT_GE(n, 0) << std::strerror(errno);
    if (n == 0) break;
    total += n;
  }
  EXPECT_GT(total, 0);
  pair.theirs.reset();
  pollfd ready{channel.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&ready, 1, 5000), 1);
  EXPECT_TRUE(channel.peer_finished());
}

}  // namespace
}  // namespace dlcp::transport
