// Authentication of control connections (both directions) and of the job secret's sources, over
// real loopback sockets: a peer with another secret, a listener that cannot prove itself, clients
// that know the job token but not the secret, a flood of idle connections, and the communicator
// taking its secret from the store or from DLCP_JOB_SECRET. Every refusal must name the peer and
// be counted by reason, and nothing may wait longer than its connect timeout.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "collectives_fixture.hpp"
#include "transport/job_key.hpp"
#include "transport_fixture.hpp"
#include "wire/control.hpp"

namespace dlcp::test {
namespace {

std::vector<std::uint8_t> secret(std::uint8_t fill) {
  return std::vector<std::uint8_t>(32, fill);
}

template <typename Fn>
std::optional<Error> thrown_by(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

// A blocking TCP connection that speaks raw control frames, as an attacker's client would.
class RawControl {
 public:
  explicit RawControl(int fd) : fd_(fd) {}
  ~RawControl() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawControl(RawControl&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  RawControl(const RawControl&) = delete;
  RawControl& operator=(const RawControl&) = delete;

  static RawControl dial(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    return RawControl(fd);
  }

  int fd() const { return fd_; }

  void send(const wire::ControlMessage& message) {
    std::vector<std::byte> frame;
    wire::encode_control(message, frame);
    EXPECT_EQ(::send(fd_, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
  }

  // The next frame, or nothing when the connection closed or nothing came within the limit.
  std::optional<wire::ControlMessage> receive(int timeout_ms = 5000) {
    std::vector<std::byte> prefix(wire::kControlLengthPrefixBytes);
    if (!read_exact(prefix, timeout_ms)) return std::nullopt;
    const auto length = wire::decode_control_length(prefix);
    if (!length) return std::nullopt;
    std::vector<std::byte> body(*length);
    if (!read_exact(body, timeout_ms)) return std::nullopt;
    auto message = wire::decode_control_body(body);
    if (!message) return std::nullopt;
    return std::move(*message);
  }

  // True when the peer closes the connection within the limit (frames before that are skipped).
  bool closed_within(int timeout_ms) {
    std::vector<std::byte> sink(4096);
    for (;;) {
      pollfd waiter{fd_, POLLIN, 0};
      if (::poll(&waiter, 1, timeout_ms) <= 0) return false;
      const ssize_t n = ::recv(fd_, sink.data(), sink.size(), 0);
      if (n <= 0) return true;
    }
  }

 private:
  bool read_exact(std::vector<std::byte>& out, int timeout_ms) {
    std::size_t done = 0;
    while (done < out.size()) {
      pollfd waiter{fd_, POLLIN, 0};
      if (::poll(&waiter, 1, timeout_ms) <= 0) return false;
      const ssize_t n = ::recv(fd_, out.data() + done, out.size() - done, 0);
      if (n <= 0) return false;
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

  int fd_;
};

// A TCP listener on an ephemeral loopback port, for playing a fake peer.
class RawListener {
 public:
  RawListener() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof(address)), 0);
    EXPECT_EQ(::listen(fd_, 8), 0);
    socklen_t length = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~RawListener() { ::close(fd_); }
  std::uint16_t port() const { return port_; }
  RawControl accept() { return RawControl(::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC)); }

 private:
  int fd_;
  std::uint16_t port_ = 0;
};

wire::Hello hello_of(std::uint64_t token, std::uint16_t rank, std::uint16_t world) {
  wire::Hello hello;
  hello.job_token = token;
  hello.rank = rank;
  hello.world_size = world;
  hello.data_sockets.push_back({0x7F000001u, 9});
  hello.nonce = transport::random_nonce();
  hello.features = wire::hello_features::kPairSeq | wire::hello_features::kSharedBandMarks |
                   wire::hello_features::kWireDtypes |
                   wire::hello_features::kParity;
  return hello;
}

TEST(Auth, PeerWithAnotherSecretIsRefusedAtConnectNamingIt) {
  constexpr auto kConnectTimeout = 2s;
  const std::uint64_t token = random_job_token();
  TransportOptions low = test_options(0, 2, token);
  TransportOptions high = test_options(1, 2, token);
  low.job_secret = secret(1);
  high.job_secret = secret(2);
  low.connect_timeout = high.connect_timeout = kConnectTimeout;
  auto waiter = Transport::create(low);
  auto dialler = Transport::create(high);

  std::optional<Error> waiter_error;
  double waiter_seconds = 0;
  std::thread waiting([&] {
    const auto start = Clock::now();
    waiter_error = thrown_by([&] { waiter->connect(1, kLoopback, dialler->control_port()); });
    waiter_seconds = seconds_since(start);
  });
  const auto start = Clock::now();
  const auto e = thrown_by([&] { dialler->connect(0, kLoopback, waiter->control_port()); });
  const double dialler_seconds = seconds_since(start);
  waiting.join();

  ASSERT_TRUE(e.has_value()) << "the dialler joined a peer with another secret";
  EXPECT_EQ(e->code(), ErrorCode::kConnect) << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_TRUE(mentions(e->what(), "job secret"));
  EXPECT_LT(dialler_seconds, 2.5);

  ASSERT_TRUE(waiter_error.has_value()) << "the listener joined a peer with another secret";
  EXPECT_EQ(waiter_error->code(), ErrorCode::kConnect) << waiter_error->what();
  EXPECT_TRUE(mentions(waiter_error->what(), "rank 1"));
  EXPECT_LT(waiter_seconds, 3.5);
  EXPECT_EQ(reject_count(waiter->counters(), "bad_auth"), 1u);
}

// A fake listener that knows the token but not the secret: it answers the Hello properly, then
// either forges a proof or reflects the dialler's own proof back.
void dialler_detects_fake_listener(bool reflect) {
  const std::uint64_t token = random_job_token();
  RawListener fake;
  std::thread listener([&] {
    RawControl connection = fake.accept();
    const auto hello = connection.receive();
    ASSERT_TRUE(hello && std::holds_alternative<wire::Hello>(*hello));
    connection.send(hello_of(token, 0, 2));
    const auto proof = connection.receive();
    ASSERT_TRUE(proof && std::holds_alternative<wire::Authenticate>(*proof));
    connection.send(reflect ? std::get<wire::Authenticate>(*proof) : wire::Authenticate{});
    connection.closed_within(5000);
  });
  TransportOptions options = test_options(1, 2, token);
  options.job_secret = secret(7);
  options.connect_timeout = 3s;
  auto dialler = Transport::create(options);
  const auto start = Clock::now();
  const auto e = thrown_by([&] { dialler->connect(0, kLoopback, fake.port()); });
  const double seconds = seconds_since(start);
  dialler.reset();  // closes the connection, so the fake listener returns
  listener.join();
  ASSERT_TRUE(e.has_value()) << "the dialler trusted a listener without the secret";
  EXPECT_EQ(e->code(), ErrorCode::kProtocol) << e->what();
  EXPECT_EQ(e->peer(), 0);
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_TRUE(mentions(e->what(), "failed authentication"));
  EXPECT_LT(seconds, 2.0);
}

TEST(Auth, DiallerRefusesAListenerWithAForgedProof) {
  dialler_detects_fake_listener(false);
}

TEST(Auth, DiallerRefusesAListenerReflectingItsOwnProof) {
  dialler_detects_fake_listener(true);
}

TEST(Auth, ClientsWithTheTokenButNotTheSecretAreRefusedAndLearnNothing) {
  const std::uint64_t token = random_job_token();
  TransportOptions low = test_options(0, 2, token);
  TransportOptions high = test_options(1, 2, token);
  low.job_secret = high.job_secret = secret(3);
  auto listener = Transport::create(low);

  // A forged proof, a frame that is not a proof, and a proof from another job's secret.
  const std::vector<wire::ControlMessage> second_frames = {
      wire::Authenticate{}, wire::Stop{.message_id = 1},
      wire::Authenticate{transport::JobKey(secret(4), token)
                             .proof(transport::HandshakeRole::kDialer, std::vector<std::byte>(8))}};
  for (const auto& second : second_frames) {
    RawControl client = RawControl::dial(listener->control_port());
    client.send(hello_of(token, 1, 2));
    const auto answer = client.receive();
    ASSERT_TRUE(answer && std::holds_alternative<wire::Hello>(*answer))
        << "the listener did not answer a Hello with the right token";
    client.send(second);
    // The listener closes without sending its own proof first.
    const auto after = client.receive(5000);
    EXPECT_FALSE(after.has_value()) << "the listener sent a frame to an unauthenticated client";
    EXPECT_TRUE(client.closed_within(5000));
  }
  EXPECT_EQ(reject_count(listener->counters(), "bad_auth"), second_frames.size());

  // The impostors claimed rank 1; the real rank 1 still joins and a transfer works.
  auto dialler = Transport::create(high);
  std::thread waiting([&] { listener->connect(1, kLoopback, dialler->control_port()); });
  dialler->connect(0, kLoopback, listener->control_port());
  waiting.join();
  const auto values = make_values(10'000, 1);
  auto buffer = make_sentinel_buffer(values.size());
  auto got = listener->recv(1, 1, buffer, {});
  auto sent = dialler->send(0, 1, values, {});
  ASSERT_TRUE(ready_within(got, 10s));
  expect_delivery_matches(values, buffer, got.get());
  ASSERT_TRUE(ready_within(sent, 10s));
}

TEST(Auth, AFloodOfIdleConnectionsCannotKeepAPeerOut) {
  const std::uint64_t token = random_job_token();
  TransportOptions low = test_options(0, 2, token);
  TransportOptions high = test_options(1, 2, token);
  low.job_secret = high.job_secret = secret(5);
  low.connect_timeout = high.connect_timeout = 5s;
  auto listener = Transport::create(low);
  constexpr int kIdle = 200;  // beyond the listener's limit of handshakes in progress (64)
  std::vector<std::unique_ptr<RawControl>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<RawControl>(RawControl::dial(listener->control_port())));
  }
  ASSERT_TRUE(eventually(
      [&] { return reject_count(listener->counters(), "handshake_limit") >= kIdle - 64; }, 5s))
      << "only " << reject_count(listener->counters(), "handshake_limit") << " evicted";
  // Most idle connections were closed by the listener.
  int closed = 0;
  for (auto& connection : idle) closed += connection->closed_within(0) ? 1 : 0;
  EXPECT_GE(closed, kIdle - 64);

  auto dialler = Transport::create(high);
  std::thread waiting([&] { listener->connect(1, kLoopback, dialler->control_port()); });
  const auto e = thrown_by([&] { dialler->connect(0, kLoopback, listener->control_port()); });
  waiting.join();
  EXPECT_FALSE(e.has_value()) << e->what();
}

TEST(Auth, APeerWithOtherPacketMacSettingIsNamedAtConnect) {
  const std::uint64_t token = random_job_token();
  TransportOptions low = test_options(0, 2, token);
  TransportOptions high = test_options(1, 2, token);
  low.job_secret = high.job_secret = secret(6);
  low.packet_mac = true;
  low.connect_timeout = high.connect_timeout = 2s;
  auto waiter = Transport::create(low);
  auto dialler = Transport::create(high);
  std::thread waiting([&] { thrown_by([&] { waiter->connect(1, kLoopback, 1); }); });
  const auto e = thrown_by([&] { dialler->connect(0, kLoopback, waiter->control_port()); });
  waiting.join();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kProtocol) << e->what();
  EXPECT_TRUE(mentions(e->what(), "rank 0"));
  EXPECT_TRUE(mentions(e->what(), "packet MAC setting differs"));
}

// Communicators: the secret comes from the store by default, from the environment when set.
void allreduce_pair_exact(HashStore& store, const CommunicatorOptions& options) {
  run_per_rank(2, [&](int rank) {
    auto comm = Communicator::create(store, rank, 2, options);
    auto values = exact_input(5000, rank);
    comm->allreduce(values, {}).wait();
    EXPECT_TRUE(bit_equal(values, exact_sum(5000, 2))) << "rank " << rank;
  });
}

TEST(Auth, CommunicatorSharesAFreshSecretThroughTheStore) {
  ::unsetenv("DLCP_JOB_SECRET");
  HashStore store;
  store.set_timeout(20s);
  const auto options = communicator_options(Algorithm::kRing);
  allreduce_pair_exact(store, options);
  const std::string stored = store.get(options.store_prefix + "/job_secret");
  EXPECT_EQ(stored.size(), 64u) << "a 32-byte secret in hex";
}

TEST(Auth, CommunicatorTakesTheSecretFromTheEnvironment) {
  ::setenv("DLCP_JOB_SECRET", std::string(64, 'e').c_str(), 1);
  HashStore store;
  store.set_timeout(20s);
  const auto options = communicator_options(Algorithm::kRing);
  allreduce_pair_exact(store, options);
  EXPECT_FALSE(store.check({options.store_prefix + "/job_secret"}))
      << "the environment's secret must not be written to the store";
  ::setenv("DLCP_JOB_SECRET", "not-hex", 1);
  const auto e = thrown_by([&] { Communicator::create(store, 0, 1, options); });
  ::unsetenv("DLCP_JOB_SECRET");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(mentions(e->what(), "DLCP_JOB_SECRET"));
}

TEST(Auth, RanksWithDifferentSecretsFailToJoinNamingEachOther) {
  HashStore store;
  store.set_timeout(20s);
  auto options = communicator_options(Algorithm::kRing);
  options.transport.connect_timeout = 2s;
  std::vector<std::optional<Error>> errors(2);
  run_per_rank(2, [&](int rank) {
    CommunicatorOptions mine = options;
    mine.transport.job_secret = secret(static_cast<std::uint8_t>(10 + rank));
    errors[static_cast<std::size_t>(rank)] =
        thrown_by([&] { Communicator::create(store, rank, 2, mine); });
  });
  for (int rank = 0; rank < 2; ++rank) {
    const auto& e = errors[static_cast<std::size_t>(rank)];
    ASSERT_TRUE(e.has_value()) << "rank " << rank << " joined despite another secret";
    EXPECT_EQ(e->code(), ErrorCode::kConnect) << e->what();
    EXPECT_TRUE(mentions(e->what(), "rank " + std::to_string(1 - rank)));
  }
}

}  // namespace
}  // namespace dlcp::test
