// Failures over real loopback sockets: peers that vanish (destroyed in-process or SIGKILLed as a
// separate process), peers that never send or never receive, invalid arguments, and a peer of
// another job. Every failure must surface as a dlcp::Error with the right code, naming the peer,
// and well before anything would hang.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "transport_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr auto kWait = 20s;

// Runs the future to completion and returns the dlcp::Error it throws (fails when it does not).
template <typename T>
std::optional<Error> error_of(std::future<T>& future) {
  try {
    future.get();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected dlcp::Error, got " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "expected dlcp::Error, the future succeeded";
  return std::nullopt;
}

// Calls fn, which must throw dlcp::Error; returns it.
template <typename Fn>
std::optional<Error> thrown_by(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected dlcp::Error, got " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "expected dlcp::Error, nothing was thrown";
  return std::nullopt;
}

// Caps a rank's send rate so that a large message takes long enough to be interrupted.
void cap_rate(TransportOptions& options, double rate) {
  options.rate.min_rate = rate / 10;
  options.rate.initial_rate = rate;
  options.rate.max_rate = rate;
}

TEST(Failure, SenderDestroyedMidTransferFailsTheWaitingReceiver) {
  const auto values = make_values(4u << 20, 3);
  auto buffer = make_sentinel_buffer(values.size());
  constexpr auto kDeadline = 10s;
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 0) cap_rate(options, 20e6);  // 16 MB take ~0.8 s
  });
  auto got = world[1]->recv(0, 1, buffer, {.deadline = kDeadline});
  auto sent = world[0]->send(1, 1, values, {.deadline = kDeadline});
  ASSERT_TRUE(eventually([&] { return world[1]->counters().datagrams_received >= 100; }, 10s));
  ASSERT_FALSE(ready_within(got, 0ms)) << "transfer finished before the sender was destroyed";

  const auto destroyed = Clock::now();
  world[0].reset();
  // The destroyed side's own pending send is aborted.
  ASSERT_TRUE(ready_within(sent, 0ms));
  if (auto e = error_of(sent)) {
    EXPECT_EQ(e->code(), ErrorCode::kAborted) << e->what();
  }

  ASSERT_TRUE(ready_within(got, kDeadline + 1s));
  const double waited = seconds_since(destroyed);
  const auto e = error_of(got);
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->code() == ErrorCode::kPeerLost || e->code() == ErrorCode::kDeadline)
      << to_string(e->code()) << ": " << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_LT(waited, 2.0) << "peer loss took " << waited << " s to surface";

  // The lost peer stays lost: later operations fail at once with the same cause.
  auto again = world[1]->recv(0, 2, buffer, {});
  ASSERT_TRUE(ready_within(again, 2s));
  if (auto later = error_of(again)) {
    EXPECT_EQ(later->code(), ErrorCode::kPeerLost);
    EXPECT_TRUE(mentions(later->what(), "rank 0"));
  }
  auto send_again = world[1]->send(0, 3, values, {});
  ASSERT_TRUE(ready_within(send_again, 2s));
  if (auto later = error_of(send_again)) {
    EXPECT_EQ(later->code(), ErrorCode::kPeerLost);
  }
}

TEST(Failure, ReceiverDestroyedMidTransferFailsTheSender) {
  const auto values = make_values(4u << 20, 8);
  auto buffer = make_sentinel_buffer(values.size());
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 1) cap_rate(options, 20e6);
  });
  auto got = world[0]->recv(1, 1, buffer, {.deadline = 10s});
  auto sent = world[1]->send(0, 1, values, {.deadline = 10s});
  ASSERT_TRUE(eventually([&] { return world[0]->counters().datagrams_received >= 100; }, 10s));
  ASSERT_FALSE(ready_within(sent, 0ms)) << "transfer finished before the receiver was destroyed";

  const auto destroyed = Clock::now();
  world[0].reset();
  ASSERT_TRUE(ready_within(got, 0ms));
  if (auto e = error_of(got)) {
    EXPECT_EQ(e->code(), ErrorCode::kAborted) << e->what();
  }
  ASSERT_TRUE(ready_within(sent, 11s));
  const double waited = seconds_since(destroyed);
  const auto e = error_of(sent);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kPeerLost) << to_string(e->code()) << ": " << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_LT(waited, 2.0) << "peer loss took " << waited << " s to surface";
}

TEST(Failure, MismatchedMessageSizesFailBothSides) {
  const auto values = make_values(50'000, 9);
  std::vector<float> buffer(40'000);
  auto world = make_world(2);
  auto got = world[1]->recv(0, 1, buffer, {.deadline = 5s});
  auto sent = world[0]->send(1, 1, values, {.deadline = 5s});
  ASSERT_TRUE(ready_within(got, 2s));
  if (auto e = error_of(got)) {
    EXPECT_EQ(e->code(), ErrorCode::kProtocol) << e->what();
    EXPECT_TRUE(mentions(e->what(), "rank 0"));
    EXPECT_TRUE(mentions(e->what(), "50000"));
    EXPECT_TRUE(mentions(e->what(), "40000"));
  }
  ASSERT_TRUE(ready_within(sent, 2s)) << "the sender was not told the receiver gave up";
  if (auto e = error_of(sent)) {
    EXPECT_EQ(e->code(), ErrorCode::kAborted) << e->what();
    EXPECT_TRUE(mentions(e->what(), "rank 1"));
  }
  // The pair still works.
  std::vector<float> right(values.size());
  auto again = world[1]->recv(0, 2, right, {});
  auto resent = world[0]->send(1, 2, values, {});
  ASSERT_TRUE(ready_within(again, kWait));
  EXPECT_EQ(again.get().stats.completion, Completion::kComplete);
  EXPECT_EQ(std::memcmp(right.data(), values.data(), values.size() * sizeof(float)), 0);
  ASSERT_TRUE(ready_within(resent, kWait));
}

TEST(Failure, PostingTheSameMessageTwiceIsRefused) {
  const auto values = make_values(20'000, 10);
  std::vector<float> buffer1(values.size());
  std::vector<float> buffer2(values.size());
  std::vector<float> other(values.size());
  auto world = make_world(2);
  // Message 1: sent twice before its receive exists, so the first send cannot have settled.
  auto sent1 = world[0]->send(1, 1, values, {});
  auto sent1_twice = world[0]->send(1, 1, values, {});
  ASSERT_TRUE(ready_within(sent1_twice, 2s));
  if (auto e = error_of(sent1_twice)) {
    EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument) << e->what();
    EXPECT_TRUE(mentions(e->what(), "already in flight"));
    EXPECT_TRUE(mentions(e->what(), "rank 1"));
  }
  // Message 2: received twice before anything is sent, so the first receive is still open.
  auto got2 = world[1]->recv(0, 2, buffer2, {});
  auto got2_twice = world[1]->recv(0, 2, other, {});
  ASSERT_TRUE(ready_within(got2_twice, 2s));
  if (auto e = error_of(got2_twice)) {
    EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument) << e->what();
    EXPECT_TRUE(mentions(e->what(), "already posted"));
    EXPECT_TRUE(mentions(e->what(), "rank 0"));
  }
  // The first postings are unharmed.
  auto got1 = world[1]->recv(0, 1, buffer1, {});
  auto sent2 = world[0]->send(1, 2, values, {});
  for (auto* future : {&got1, &got2, &sent1, &sent2}) {
    ASSERT_TRUE(ready_within(*future, kWait));
    EXPECT_EQ(future->get().stats.completion, Completion::kComplete);
  }
  EXPECT_EQ(std::memcmp(buffer1.data(), values.data(), values.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(buffer2.data(), values.data(), values.size() * sizeof(float)), 0);
}

TEST(Failure, ConnectToAbsentPeerTimesOutNamingIt) {
  TransportOptions options = test_options(1, 3, random_job_token());
  options.connect_timeout = 300ms;
  auto transport = Transport::create(options);
  // A port nobody listens on: bind a socket to learn a free one, then close it.
  const int probe = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(probe, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(::bind(probe, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(::getsockname(probe, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(probe);  // the port is free again and nobody listens on it
  const auto start = Clock::now();
  const auto dialled =
      thrown_by([&] { transport->connect(0, kLoopback, ntohs(address.sin_port)); });
  const double dial_seconds = seconds_since(start);
  ASSERT_TRUE(dialled.has_value());
  EXPECT_EQ(dialled->code(), ErrorCode::kConnect) << dialled->what();
  EXPECT_EQ(dialled->peer(), 0);
  EXPECT_TRUE(mentions(dialled->what(), "rank 0"));
  EXPECT_GE(dial_seconds, 0.25);
  EXPECT_LT(dial_seconds, 1.5);
  // Waiting for a higher rank that never dials.
  const auto wait_start = Clock::now();
  const auto waited = thrown_by([&] { transport->connect(2, kLoopback, 1); });
  const double wait_seconds = seconds_since(wait_start);
  ASSERT_TRUE(waited.has_value());
  EXPECT_EQ(waited->code(), ErrorCode::kConnect) << waited->what();
  EXPECT_EQ(waited->peer(), 2);
  EXPECT_TRUE(mentions(waited->what(), "rank 2"));
  EXPECT_GE(wait_seconds, 0.25);
  EXPECT_LT(wait_seconds, 1.5);
}

TEST(Failure, RecvFromAlivePeerThatNeverSendsHitsDeadline) {
  std::vector<float> buffer(10'000);
  constexpr auto kDeadline = 300ms;
  auto world = make_world(2);
  const auto posted = Clock::now();
  auto got = world[1]->recv(0, 1, buffer, {.deadline = kDeadline});
  ASSERT_TRUE(ready_within(got, kDeadline + 1s)) << "recv did not fail within deadline + 1 s";
  const double waited = seconds_since(posted);
  const auto e = error_of(got);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kDeadline) << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_TRUE(mentions(e->what(), "300 ms"));
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 1.3);
}

TEST(Failure, SendToPeerThatNeverPostsTheRecvHitsDeadline) {
  const auto values = make_values(20'000, 4);
  constexpr auto kDeadline = 300ms;
  auto world = make_world(2);
  const auto posted = Clock::now();
  auto sent = world[0]->send(1, 1, values, {.deadline = kDeadline});
  ASSERT_TRUE(ready_within(sent, kDeadline + 1s)) << "send did not fail within deadline + 1 s";
  const double waited = seconds_since(posted);
  const auto e = error_of(sent);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kDeadline) << e->what();
  EXPECT_EQ(e->peer(), 1);
  EXPECT_TRUE(mentions(e->what(), "rank 1"));
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 1.3);
}

TEST(Failure, ReceiverGivingUpAtItsDeadlineAbortsTheSender) {
  // The receiver drops everything, so its receive expires; its Stop tells the sender.
  const auto values = make_values(20'000, 5);
  std::vector<float> buffer(values.size());
  auto world = make_world(2, [](TransportOptions& options) {
    if (options.rank == 1) options.inject.drop_rate = 1.0;
  });
  auto got = world[1]->recv(0, 1, buffer, {.deadline = 300ms});
  auto sent = world[0]->send(1, 1, values, {.deadline = 10s});
  ASSERT_TRUE(ready_within(got, 2s));
  if (auto e = error_of(got)) {
    EXPECT_EQ(e->code(), ErrorCode::kDeadline) << e->what();
    EXPECT_TRUE(mentions(e->what(), "rank 0"));
  }
  ASSERT_TRUE(ready_within(sent, 2s)) << "sender kept going after the receiver gave up";
  if (auto e = error_of(sent)) {
    EXPECT_EQ(e->code(), ErrorCode::kAborted) << e->what();
    EXPECT_TRUE(mentions(e->what(), "rank 1"));
  }
}

// Kills and reaps a child process when the test leaves, whatever happens.
struct ChildProcess {
  pid_t pid = -1;
  ~ChildProcess() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
};

bool read_exact(int fd, void* out, std::size_t size, int timeout_ms) {
  auto* bytes = static_cast<char*>(out);
  std::size_t done = 0;
  while (done < size) {
    pollfd waiter{fd, POLLIN, 0};
    if (::poll(&waiter, 1, timeout_ms) <= 0) return false;
    const ssize_t n = ::read(fd, bytes + done, size - done);
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The child: rank 0 of a two-rank job. Reports its control port, waits for rank 1 to dial, then
// sends one large, rate-capped message and waits to be killed. Never returns.
[[noreturn]] void run_child(std::uint64_t token, int port_pipe, std::size_t floats) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  try {
    TransportOptions options = test_options(0, 2, token);
    cap_rate(options, 20e6);
    auto transport = Transport::create(options);
    const std::uint16_t port = transport->control_port();
    if (::write(port_pipe, &port, sizeof(port)) != static_cast<ssize_t>(sizeof(port))) _exit(3);
    transport->connect(1, kLoopback, 0);  // the lower rank waits; host/port unused
    const auto values = make_values(floats, 6);
    auto sent = transport->send(1, 9, values, {.deadline = 30s});
    sent.wait_for(30s);
  } catch (...) {
    _exit(2);
  }
  _exit(1);
}

TEST(Failure, PeerProcessKilledMidTransferFailsRecvWithPeerLost) {
  // Fork before this process has any transport (or any thread besides this one).
  const std::uint64_t token = random_job_token();
  constexpr std::size_t kFloats = 4u << 20;  // 16 MB at 20 MB/s: ~0.8 s
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ChildProcess child;
  child.pid = ::fork();
  ASSERT_GE(child.pid, 0) << "fork failed";
  if (child.pid == 0) {
    ::close(pipe_fds[0]);
    run_child(token, pipe_fds[1], kFloats);
  }
  ::close(pipe_fds[1]);
  std::uint16_t child_port = 0;
  const bool got_port = read_exact(pipe_fds[0], &child_port, sizeof(child_port), 10'000);
  ::close(pipe_fds[0]);
  ASSERT_TRUE(got_port) << "child did not report its control port";

  std::vector<float> buffer(kFloats);  // declared first: must outlive the transport
  auto transport = Transport::create(test_options(1, 2, token));
  transport->connect(0, kLoopback, child_port);
  constexpr auto kDeadline = 10s;
  auto got = transport->recv(0, 9, buffer, {.deadline = kDeadline});
  ASSERT_TRUE(eventually([&] { return transport->counters().datagrams_received >= 200; }, 10s))
      << "the child never started sending";
  ASSERT_FALSE(ready_within(got, 0ms)) << "transfer finished before the child was killed";

  const auto killed = Clock::now();
  ASSERT_EQ(::kill(child.pid, SIGKILL), 0);
  ASSERT_TRUE(ready_within(got, kDeadline + 1s));
  const double waited = seconds_since(killed);
  const auto e = error_of(got);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kPeerLost) << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_LT(waited, 2.0) << "the killed peer was noticed only after " << waited << " s";

  int status = 0;
  ASSERT_EQ(::waitpid(child.pid, &status, 0), child.pid);
  child.pid = -1;
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(Failure, OperationsPostedJustBeforeShutdownFailWithAborted) {
  int wrong = 0;
  std::string example;
  for (int i = 0; i < 10; ++i) {
    const auto big = make_values(1u << 20, 2);
    std::vector<float> big_buffer(big.size());
    const auto values = make_values(1000, 1);
    std::vector<float> buffer(values.size());
    auto world = make_world(2);
    // Keep rank 1's I/O thread busy sending, then post and shut down at once.
    auto drain = world[0]->recv(1, 9, big_buffer, {});
    auto busy = world[1]->send(0, 9, big, {});
    std::this_thread::sleep_for(std::chrono::microseconds(300 * (i % 5)));
    auto got = world[1]->recv(0, 1, buffer, {});
    auto sent = world[1]->send(0, 2, values, {});
    world[1].reset();
    // The busy transfer may legitimately finish before the shutdown; it must not end any other
    // way than with a result or kAborted.
    try {
      busy.get();
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kAborted) {
        ++wrong;
        example = std::string(to_string(e.code())) + ": " + e.what();
      }
    } catch (const std::exception& e) {
      ++wrong;
      example = std::string("not a dlcp::Error: ") + e.what();
    }
    // Nobody ever answers these two, so shutdown is the only way they can end.
    for (auto* future : {&got, &sent}) {
      try {
        future->get();
        ++wrong;
        example = "a result although the transport shut down";
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kAborted) {
          ++wrong;
          example = std::string(to_string(e.code())) + ": " + e.what();
        }
      } catch (const std::exception& e) {
        ++wrong;
        example = std::string("not a dlcp::Error: ") + e.what();
      }
    }
    drain.wait();  // rank 0 notices the loss; then big_buffer may go
  }
  EXPECT_EQ(wrong, 0) << "e.g. " << example;
}

TEST(Failure, InvalidArgumentsAreRefusedWithAClearMessage) {
  auto world = make_world(2);
  Transport& t = *world[0];
  const auto values = make_values(1000, 7);
  std::vector<float> buffer(1000);

  auto expect_invalid = [](const std::optional<Error>& e, const char* needle) {
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument) << e->what();
    EXPECT_TRUE(mentions(e->what(), needle));
  };
  // To its own rank.
  expect_invalid(thrown_by([&] { t.send(0, 1, values, {}); }), "rank 0");
  expect_invalid(thrown_by([&] { t.recv(0, 1, buffer, {}); }), "rank 0");
  // Outside the world.
  expect_invalid(thrown_by([&] { t.send(2, 1, values, {}); }), "rank 2");
  expect_invalid(thrown_by([&] { t.send(-1, 1, values, {}); }), "rank -1");
  expect_invalid(thrown_by([&] { t.recv(7, 1, buffer, {}); }), "rank 7");
  expect_invalid(thrown_by([&] { t.connect(0, kLoopback, t.control_port()); }), "rank 0");
  // Empty buffers.
  expect_invalid(thrown_by([&] { t.send(1, 1, std::span<const float>(), {}); }), "got 0");
  expect_invalid(thrown_by([&] { t.recv(1, 1, std::span<float>(), {}); }), "got 0");
  // Out-of-range options.
  expect_invalid(thrown_by([&] { t.send(1, 1, values, {.loss_budget = 1.5}); }), "loss_budget");
  expect_invalid(thrown_by([&] { t.recv(1, 1, buffer, {.loss_budget = 1.5}); }), "loss_budget");
  expect_invalid(thrown_by([&] { t.recv(1, 1, buffer, {.loss_budget = -0.1}); }), "loss_budget");
  expect_invalid(thrown_by([&] { t.send(1, 1, values, {.layer = 3, .num_layers = 2}); }), "layer");
  expect_invalid(thrown_by([&] { t.send(1, 1, values, {.deadline = 0ms}); }), "deadline");

  // Before connect().
  auto lonely = Transport::create(test_options(0, 2, random_job_token()));
  expect_invalid(thrown_by([&] { lonely->send(1, 1, values, {}); }), "connect");

  // Impossible transport options.
  TransportOptions bad = test_options(2, 2, 1);
  expect_invalid(thrown_by([&] { Transport::create(bad); }), "rank");
  bad = test_options(0, 0, 1);
  expect_invalid(thrown_by([&] { Transport::create(bad); }), "world_size");
  bad = test_options(0, 2, 1);
  bad.inject.drop_rate = 1.5;
  expect_invalid(thrown_by([&] { Transport::create(bad); }), "drop_rate");

  // The transport still works after refusing all of that.
  auto got = world[1]->recv(0, 1, buffer, {});
  auto sent = world[0]->send(1, 1, values, {});
  ASSERT_TRUE(ready_within(got, kWait));
  const MessageResult result = got.get();
  EXPECT_EQ(std::memcmp(buffer.data(), values.data(), values.size() * sizeof(float)), 0);
  EXPECT_EQ(result.stats.completion, Completion::kComplete);
  ASSERT_TRUE(ready_within(sent, kWait));
}

TEST(Failure, PeerOfAnotherJobIsRefusedAtConnect) {
  constexpr auto kConnectTimeout = 2s;
  TransportOptions low = test_options(0, 2, random_job_token());
  TransportOptions high = test_options(1, 2, low.job_token ^ 0x1234);
  low.connect_timeout = kConnectTimeout;
  high.connect_timeout = kConnectTimeout;
  auto waiter = Transport::create(low);
  auto dialler = Transport::create(high);

  std::optional<Error> waiter_error;
  double waiter_seconds = 0;
  std::thread waiting([&] {
    const auto start = Clock::now();
    try {
      waiter->connect(1, kLoopback, dialler->control_port());
    } catch (const Error& e) {
      waiter_error = e;
    }
    waiter_seconds = seconds_since(start);
  });
  const auto start = Clock::now();
  const auto e = thrown_by([&] { dialler->connect(0, kLoopback, waiter->control_port()); });
  const double dialler_seconds = seconds_since(start);
  waiting.join();

  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->code() == ErrorCode::kConnect || e->code() == ErrorCode::kProtocol)
      << to_string(e->code()) << ": " << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_LT(dialler_seconds, 2.5) << "the dialling side took " << dialler_seconds << " s";

  ASSERT_TRUE(waiter_error.has_value()) << "the waiting side connected to another job";
  EXPECT_EQ(waiter_error->code(), ErrorCode::kConnect) << waiter_error->what();
  EXPECT_TRUE(mentions(waiter_error->what(), "rank 1"));
  EXPECT_LT(waiter_seconds, 3.0);
  EXPECT_EQ(reject_count(waiter->counters(), "wrong_job"), 1u);
}

}  // namespace
}  // namespace dlcp::test
