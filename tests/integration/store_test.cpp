// Rendezvous stores over real sockets, files and processes: the semantics every store shares
// (run against each kind), then what is particular to TcpStore, FileStore, PrefixStore, and the
// environment-driven set-up.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.hpp"
#include "dlcp/error.hpp"
#include "dlcp/rendezvous.hpp"
#include "dlcp/store.hpp"
#include "rendezvous/store_protocol.hpp"

namespace dlcp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr const char* kLoopback = "127.0.0.1";

// Runs `call`, expects a dlcp::Error with `code` whose message contains every `fragment`.
void expect_error(const std::function<void()>& call, ErrorCode code,
                  const std::vector<std::string>& fragments) {
  try {
    call();
    ADD_FAILURE() << "expected dlcp::Error(" << to_string(code) << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& fragment : fragments) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "'" << fragment << "' missing from: " << e.what();
    }
  }
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    std::string pattern = (std::filesystem::temp_directory_path() / "dlcp-store-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TemporaryDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A port nobody listens on right now (bound and released; the kernel rarely hands it out again
// within the test's lifetime).
std::uint16_t unused_port() {
  TcpStoreServer probe(kLoopback, 0);
  return probe.port();
}

// ---------------------------------------------------------------------------------------------
// Semantics every store shares. Each kind provides a primary store and further clients of the
// same data (another connection, another FileStore on the directory, ...).

class StoreKind {
 public:
  virtual ~StoreKind() = default;
  virtual std::unique_ptr<Store> client() = 0;
};

class HashKind : public StoreKind {
 public:
  // HashStore has no second client; views of it (PrefixStores with one prefix) stand in.
  std::unique_ptr<Store> client() override { return std::make_unique<PrefixStore>("h", base_); }

 private:
  HashStore base_;
};

class TcpKind : public StoreKind {
 public:
  std::unique_ptr<Store> client() override {
    return std::make_unique<TcpStore>(kLoopback, server_.port(), 5s);
  }

 private:
  TcpStoreServer server_{kLoopback, 0};
};

class FileKind : public StoreKind {
 public:
  std::unique_ptr<Store> client() override {
    return std::make_unique<FileStore>(directory_.path());
  }

 private:
  TemporaryDirectory directory_;
};

class PrefixKind : public StoreKind {
 public:
  std::unique_ptr<Store> client() override {
    return std::make_unique<PrefixStore>("job/7", *base_);
  }

 private:
  std::unique_ptr<TcpStore> base_ = TcpStore::serve_or_connect(kLoopback, 0, true, 5s);
};

std::unique_ptr<StoreKind> make_kind(const std::string& name) {
  if (name == "Hash") return std::make_unique<HashKind>();
  if (name == "Tcp") return std::make_unique<TcpKind>();
  if (name == "File") return std::make_unique<FileKind>();
  return std::make_unique<PrefixKind>();
}

class StoreSemantics : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    kind_ = make_kind(GetParam());
    store_ = kind_->client();
    store_->set_timeout(5s);
  }

  std::unique_ptr<StoreKind> kind_;
  std::unique_ptr<Store> store_;
};

TEST_P(StoreSemantics, SetGetOverwriteAndBinaryValues) {
  store_->set("a", "1");
  EXPECT_EQ(store_->get("a"), "1");
  store_->set("a", "2");
  EXPECT_EQ(store_->get("a"), "2");
  const std::string binary("\0\xFF\n/..", 6);
  store_->set("weird/../key with spaces", binary);
  EXPECT_EQ(kind_->client()->get("weird/../key with spaces"), binary);
  store_->set("empty", "");
  EXPECT_EQ(store_->get("empty"), "");
  const std::string long_key(3000, 'k');
  store_->set(long_key, "long");
  EXPECT_EQ(kind_->client()->get(long_key), "long");
}

TEST_P(StoreSemantics, GetBlocksUntilAnotherClientSets) {
  auto other = kind_->client();
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    other->set("late", "here");
  });
  const auto start = Clock::now();
  EXPECT_EQ(store_->get("late"), "here");
  EXPECT_GE(seconds_since(start), 0.04);
  setter.join();
}

TEST_P(StoreSemantics, GetTimesOutWithDeadlineNamingTheKey) {
  store_->set_timeout(150ms);
  const auto start = Clock::now();
  expect_error([&] { store_->get("never/set"); }, ErrorCode::kDeadline, {"never/set", "150 ms"});
  EXPECT_GE(seconds_since(start), 0.14);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST_P(StoreSemantics, CheckAndWaitOnSeveralKeys) {
  EXPECT_FALSE(store_->check({"w1", "w2"}));
  store_->set("w1", "x");
  EXPECT_FALSE(store_->check({"w1", "w2"}));
  auto other = kind_->client();
  std::thread setter([&] {
    std::this_thread::sleep_for(30ms);
    other->set("w2", "y");
  });
  store_->wait({"w1", "w2"}, 5s);
  setter.join();
  EXPECT_TRUE(store_->check({"w1", "w2"}));
  const auto start = Clock::now();
  expect_error([&] { store_->wait({"w1", "w3"}, 100ms); }, ErrorCode::kDeadline, {"w3'"});
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST_P(StoreSemantics, AddCountsAndRefusesNonCounters) {
  EXPECT_EQ(store_->add("count", 5), 5);
  EXPECT_EQ(store_->add("count", -7), -2);
  EXPECT_EQ(store_->get("count"), "-2");
  store_->set("text", "hello");
  expect_error([&] { store_->add("text", 1); }, ErrorCode::kInvalidArgument, {"text'"});
  EXPECT_EQ(store_->get("text"), "hello");
  store_->set("huge", "9223372036854775807");
  expect_error([&] { store_->add("huge", 1); }, ErrorCode::kInvalidArgument, {"huge'", "overflow"});
  EXPECT_EQ(store_->add("huge", 0), 9223372036854775807);
}

TEST_P(StoreSemantics, ConcurrentAddsFromEightThreadsAreAtomic) {
  constexpr int kThreads = 8;
  const int adds_per_thread = GetParam() == "File" ? 100 : 200;
  std::vector<std::vector<std::int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = kind_->client();
      for (int i = 0; i < adds_per_thread; ++i) seen[t].push_back(client->add("counter", 1));
    });
  }
  for (auto& thread : threads) thread.join();
  std::vector<std::int64_t> all;
  for (const auto& values : seen) all.insert(all.end(), values.begin(), values.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<std::size_t>(kThreads * adds_per_thread));
  for (std::size_t i = 0; i < all.size(); ++i) ASSERT_EQ(all[i], static_cast<std::int64_t>(i + 1));
  EXPECT_EQ(store_->get("counter"), std::to_string(kThreads * adds_per_thread));
}

// One instance shared by threads: a blocked get must not hold up a set from another thread.
TEST_P(StoreSemantics, OneInstanceServesABlockedGetAndASetConcurrently) {
  std::thread setter([&] {
    std::this_thread::sleep_for(30ms);
    store_->set("shared/late", "v");
  });
  EXPECT_EQ(store_->get("shared/late"), "v");
  setter.join();
}

INSTANTIATE_TEST_SUITE_P(AllStores, StoreSemantics,
                         ::testing::Values("Hash", "Tcp", "File", "Prefix"),
                         [](const auto& param_info) { return param_info.param; });

// ---------------------------------------------------------------------------------------------
// TcpStore

TEST(TcpStoreTest, ServeOrConnectReportsTheEphemeralPort) {
  auto server = TcpStore::serve_or_connect(kLoopback, 0, true, 5s);
  EXPECT_TRUE(server->is_server());
  EXPECT_NE(server->port(), 0);
  auto client = TcpStore::serve_or_connect(kLoopback, server->port(), false, 5s);
  EXPECT_FALSE(client->is_server());
  client->set("k", "v");
  EXPECT_EQ(server->get("k"), "v");
  expect_error([] { TcpStore(kLoopback, 0, 1s); }, ErrorCode::kInvalidArgument, {"port 0"});
}

TEST(TcpStoreTest, LargeValuesRoundTripAndOversizedOnesAreRefused) {
  TcpStoreServer server(kLoopback, 0);
  // Generous: 8 MiB each way takes seconds under ThreadSanitizer on a busy machine, and this
  // test checks what arrives, not how fast.
  constexpr auto kPatient = 60s;
  TcpStore store(kLoopback, server.port(), kPatient);
  std::string big(8 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 131);
  store.set("big", big);
  EXPECT_EQ(TcpStore(kLoopback, server.port(), kPatient).get("big"), big);
  expect_error([&] { store.set("too/big", std::string(rendezvous::kMaxStoreValueBytes + 1, 'x')); },
               ErrorCode::kInvalidArgument, {"'too/big'"});
  expect_error([&] { store.get(std::string(rendezvous::kMaxStoreKeyBytes + 1, 'k')); },
               ErrorCode::kInvalidArgument, {"above the limit"});
}

TEST(TcpStoreTest, BlockedGetDoesNotSlowOtherClients) {
  TcpStoreServer server(kLoopback, 0);
  TcpStore blocked(kLoopback, server.port(), 5s);
  blocked.set_timeout(5s);
  std::thread waiter([&] { EXPECT_EQ(blocked.get("absent"), "now"); });
  std::this_thread::sleep_for(20ms);
  TcpStore other(kLoopback, server.port(), 5s);
  const auto start = Clock::now();
  for (int i = 0; i < 50; ++i) {
    other.set("k" + std::to_string(i), "v");
    EXPECT_EQ(other.get("k" + std::to_string(i)), "v");
  }
  EXPECT_LT(seconds_since(start), 2.0);  // far below the waiter's timeout
  // Release the waiter (parked on the server all this time).
  other.set("absent", "now");
  waiter.join();
}

TEST(TcpStoreTest, ClientConnectingBeforeTheServerStartsWaitsForIt) {
  const std::uint16_t port = unused_port();
  std::unique_ptr<TcpStore> client;
  std::thread connector([&] { client = std::make_unique<TcpStore>(kLoopback, port, 5s); });
  std::this_thread::sleep_for(150ms);
  TcpStoreServer server(kLoopback, port);
  connector.join();
  ASSERT_TRUE(client);
  client->set("early", "bird");
  EXPECT_EQ(client->get("early"), "bird");
}

TEST(TcpStoreTest, UnreachableServerGivesConnectErrorNamingHostAndPort) {
  const std::uint16_t port = unused_port();
  const auto start = Clock::now();
  expect_error([&] { TcpStore(kLoopback, port, 200ms); }, ErrorCode::kConnect,
               {"127.0.0.1:" + std::to_string(port), "200 ms"});
  EXPECT_GE(seconds_since(start), 0.19);
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(TcpStoreTest, BindFailureNamesTheAddress) {
  TcpStoreServer first(kLoopback, 0);
  expect_error([&] { TcpStoreServer second(kLoopback, first.port()); }, ErrorCode::kSystem,
               {"127.0.0.1:" + std::to_string(first.port())});
}

TEST(TcpStoreTest, StoppedServerFailsPendingAndLaterCallsQuickly) {
  auto server = std::make_unique<TcpStoreServer>(kLoopback, 0);
  const std::uint16_t port = server->port();
  TcpStore store(kLoopback, port, 5s);
  store.set_timeout(10s);
  store.set("x", "1");
  std::thread waiter([&] {
    const auto start = Clock::now();
    expect_error([&] { store.get("never"); }, ErrorCode::kPeerLost,
                 {"127.0.0.1:" + std::to_string(port), "'never'"});
    EXPECT_LT(seconds_since(start), 2.0);
  });
  std::this_thread::sleep_for(50ms);
  server.reset();
  waiter.join();
  store.set_timeout(200ms);
  expect_error([&] { store.set("y", "2"); }, ErrorCode::kConnect,
               {"127.0.0.1:" + std::to_string(port)});
}

// A server in a child process, killed with SIGKILL: no FIN handshake from a stop(), just the
// kernel closing the socket.
TEST(TcpStoreTest, KilledServerProcessGivesAnErrorNotAHang) {
  int port_pipe[2];
  ASSERT_EQ(::pipe(port_pipe), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(port_pipe[0]);
    TcpStoreServer server(kLoopback, 0);
    const std::uint16_t port = server.port();
    if (::write(port_pipe[1], &port, sizeof(port)) != sizeof(port)) ::_exit(1);
    while (true) ::pause();
  }
  ::close(port_pipe[1]);
  std::uint16_t port = 0;
  ASSERT_EQ(::read(port_pipe[0], &port, sizeof(port)), static_cast<ssize_t>(sizeof(port)));
  ::close(port_pipe[0]);

  TcpStore store(kLoopback, port, 5s);
  store.set_timeout(10s);
  store.set("alive", "yes");
  std::thread waiter([&] {
    const auto start = Clock::now();
    expect_error([&] { store.get("never"); }, ErrorCode::kPeerLost, {"'never'"});
    EXPECT_LT(seconds_since(start), 2.0);
  });
  std::this_thread::sleep_for(50ms);
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  waiter.join();
}

Fd raw_connection(std::uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ADD_FAILURE() << "raw connect failed";
  }
  return fd;
}

void send_bytes(const Fd& fd, const std::vector<std::uint8_t>& bytes) {
  ASSERT_EQ(::send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(bytes.size()));
}

// Reads until the server closes the connection (or 2 s pass); returns what arrived.
std::vector<std::byte> read_until_closed(const Fd& fd) {
  timeval timeout{2, 0};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::vector<std::byte> received;
  std::byte buffer[4096];
  while (true) {
    const ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
    if (n <= 0) {
      EXPECT_TRUE(n == 0 || errno == ECONNRESET) << "server did not close the connection";
      return received;
    }
    received.insert(received.end(), buffer, buffer + n);
  }
}

TEST(TcpStoreTest, GarbageFromRawSocketsDoesNotDisturbOtherClients) {
  TcpStoreServer server(kLoopback, 0);
  TcpStore good(kLoopback, server.port(), 5s);
  good.set("before", "1");
  TcpStore waiting(kLoopback, server.port(), 5s);
  std::thread waiter([&] { EXPECT_EQ(waiting.get("after"), "2"); });

  // A frame announcing 4 GiB: refused on the length alone, before any buffering.
  Fd huge = raw_connection(server.port());
  send_bytes(huge, {0xFF, 0xFF, 0xFF, 0xFF, 1, 1});
  // A valid length with a body of nonsense: refused with an ERROR frame, then closed.
  Fd nonsense = raw_connection(server.port());
  send_bytes(nonsense, {0, 0, 0, 4, 9, 9, 9, 9});
  // Half a frame, then silence: must not block anyone.
  Fd stalled = raw_connection(server.port());
  send_bytes(stalled, {0, 0, 0, 100, 1, 1, 0});
  // A legal-looking 60 MiB frame of which only a little arrives.
  Fd slow = raw_connection(server.port());
  send_bytes(slow, {0x03, 0xC0, 0x00, 0x00, 1, 1, 0, 0});

  // Both are told why (one ERROR frame), then closed.
  for (const Fd* refused : {&huge, &nonsense}) {
    const auto answer = read_until_closed(*refused);
    ASSERT_GT(answer.size(), rendezvous::kStoreLengthPrefixBytes);
    const auto response = rendezvous::decode_store_response(
        std::span<const std::byte>(answer).subspan(rendezvous::kStoreLengthPrefixBytes));
    ASSERT_TRUE(response.has_value());
    const auto& error = std::get<rendezvous::ErrorResponse>(*response);
    EXPECT_EQ(error.kind, rendezvous::StoreErrorKind::kProtocol);
    EXPECT_NE(error.message.find("malformed request"), std::string::npos) << error.message;
  }

  const auto start = Clock::now();
  EXPECT_EQ(good.get("before"), "1");
  good.set("after", "2");
  EXPECT_EQ(good.add("n", 3), 3);
  EXPECT_LT(seconds_since(start), 2.0);  // the stalled sockets never time out
  waiter.join();
}

TEST(TcpStoreTest, RunStoreServerServesUntilSigterm) {
  int out_pipe[2];
  ASSERT_EQ(::pipe(out_pipe), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    ::_exit(run_store_server(kLoopback, 0));
  }
  ::close(out_pipe[1]);
  std::string line;
  char c = 0;
  while (::read(out_pipe[0], &c, 1) == 1 && c != '\n') line += c;
  ::close(out_pipe[0]);
  const std::string prefix = "dlcp store server listening on 127.0.0.1:";
  ASSERT_EQ(line.rfind(prefix, 0), 0u) << line;
  const auto port = static_cast<std::uint16_t>(std::stoi(line.substr(prefix.size())));
  {
    TcpStore store(kLoopback, port, 5s);
    store.set("k", "v");
    EXPECT_EQ(store.get("k"), "v");
  }
  ::kill(child, SIGTERM);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// ---------------------------------------------------------------------------------------------
// FileStore

TEST(FileStoreTest, TwoProcessesShareOneDirectory) {
  TemporaryDirectory directory;
  constexpr int kAddsEach = 100;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      FileStore store(directory.path());
      store.set_timeout(5s);
      for (int i = 0; i < kAddsEach; ++i) store.add("both", 1);
      store.set("child/ack", store.get("parent/hello") + " back");
      ::_exit(0);
    } catch (...) {
      ::_exit(1);
    }
  }
  FileStore store(directory.path());
  store.set_timeout(5s);
  for (int i = 0; i < kAddsEach; ++i) store.add("both", 1);
  store.set("parent/hello", "hello");
  EXPECT_EQ(store.get("child/ack"), "hello back");
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(store.get("both"), std::to_string(2 * kAddsEach));
}

TEST(FileStoreTest, KeysStayInsideTheDirectory) {
  TemporaryDirectory directory;
  FileStore store(directory.path() + "/nested/store");
  store.set("../escape", "no");
  store.set("/etc/passwd", "no");
  store.set(std::string(5000, '/'), "hashed name");
  EXPECT_EQ(store.get("../escape"), "no");
  EXPECT_EQ(store.get(std::string(5000, '/')), "hashed name");
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory.path())) {
    const auto relative = std::filesystem::relative(entry.path(), directory.path()).string();
    EXPECT_EQ(relative.rfind("nested", 0), 0u) << relative;
    EXPECT_EQ(relative.find(".tmp"), std::string::npos) << "leftover " << relative;
  }
}

TEST(FileStoreTest, UnusableDirectoryIsReportedByName) {
  TemporaryDirectory directory;
  const std::string file = directory.path() + "/plain-file";
  FileStore(directory.path()).set("x", "y");
  std::fclose(std::fopen(file.c_str(), "w"));
  expect_error([&] { FileStore store(file); }, ErrorCode::kSystem, {file});
}

// ---------------------------------------------------------------------------------------------
// PrefixStore and HashStore

TEST(PrefixStoreTest, NamespacesKeysOfTheBaseStore) {
  HashStore base;
  PrefixStore a("a", base);
  PrefixStore b("b", base);
  a.set("k", "from a");
  b.set("k", "from b");
  EXPECT_EQ(a.get("k"), "from a");
  EXPECT_EQ(b.get("k"), "from b");
  EXPECT_EQ(base.get("a/k"), "from a");
  EXPECT_EQ(a.add("n", 2), 2);
  EXPECT_FALSE(b.check({"n"}));
  EXPECT_TRUE(base.check({"a/n", "b/k"}));
  PrefixStore nested("inner", a);
  nested.set("x", "1");
  EXPECT_EQ(base.get("a/inner/x"), "1");
}

TEST(PrefixStoreTest, UsesItsOwnTimeout) {
  HashStore base;
  base.set_timeout(10s);
  PrefixStore short_lived("p", base);
  short_lived.set_timeout(100ms);
  const auto start = Clock::now();
  expect_error([&] { short_lived.get("missing"); }, ErrorCode::kDeadline, {"'p/missing'"});
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(HashStoreTest, FailedAddLeavesTheKeyAbsent) {
  HashStore store;
  store.set("big", "9223372036854775807");
  EXPECT_THROW(store.add("big", 1), Error);
  EXPECT_EQ(store.get("big"), "9223372036854775807");
  EXPECT_FALSE(store.check({"never"}));
}

// ---------------------------------------------------------------------------------------------
// Environment-driven set-up

TEST(RendezvousEnvironmentTest, DlcpVariablesWithATcpStore) {
  const auto spec = parse_rendezvous_environment(
      {{"DLCP_RANK", "1"}, {"DLCP_WORLD_SIZE", "4"}, {"DLCP_STORE", "tcp://10.0.0.1:29500"}});
  EXPECT_EQ(spec.rank, 1);
  EXPECT_EQ(spec.world_size, 4);
  EXPECT_EQ(spec.kind, RendezvousSpec::Kind::kTcp);
  EXPECT_EQ(spec.host, "10.0.0.1");
  EXPECT_EQ(spec.port, 29500);
  EXPECT_FALSE(spec.serve);
  EXPECT_EQ(spec.timeout, 300000ms);
  EXPECT_NE(spec.describe.find("rank 1 of 4"), std::string::npos) << spec.describe;
  EXPECT_NE(spec.describe.find("tcp://10.0.0.1:29500"), std::string::npos) << spec.describe;

  const auto rank0 = parse_rendezvous_environment({{"DLCP_RANK", "0"},
                                                   {"DLCP_WORLD_SIZE", "4"},
                                                   {"DLCP_STORE", "tcp://node0:29500"},
                                                   {"DLCP_STORE_BIND_HOST", "0.0.0.0"},
                                                   {"DLCP_STORE_TIMEOUT_MS", "1500"}});
  EXPECT_TRUE(rank0.serve);
  EXPECT_EQ(rank0.host, "node0");
  EXPECT_EQ(rank0.bind_host, "0.0.0.0");
  EXPECT_EQ(rank0.timeout, 1500ms);

  const auto external = parse_rendezvous_environment({{"DLCP_RANK", "0"},
                                                      {"DLCP_WORLD_SIZE", "1"},
                                                      {"DLCP_STORE", "tcp://h:1"},
                                                      {"DLCP_STORE_SERVER", "0"}});
  EXPECT_FALSE(external.serve);
  EXPECT_EQ(external.bind_host, "h");
}

TEST(RendezvousEnvironmentTest, FileStoreUrl) {
  const auto spec = parse_rendezvous_environment(
      {{"DLCP_RANK", "2"}, {"DLCP_WORLD_SIZE", "3"}, {"DLCP_STORE", "file:///shared/job 42"}});
  EXPECT_EQ(spec.kind, RendezvousSpec::Kind::kFile);
  EXPECT_EQ(spec.directory, "/shared/job 42");
}

TEST(RendezvousEnvironmentTest, TorchrunFallbackUsesMasterPortPlusOffset) {
  const EnvironmentVariables torchrun = {
      {"RANK", "0"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "10.1.2.3"}, {"MASTER_PORT", "29500"}};
  const auto spec = parse_rendezvous_environment(torchrun);
  EXPECT_EQ(spec.rank, 0);
  EXPECT_EQ(spec.world_size, 8);
  EXPECT_EQ(spec.host, "10.1.2.3");
  EXPECT_EQ(spec.port, 29501);
  EXPECT_TRUE(spec.serve);
  EXPECT_NE(spec.describe.find("MASTER_PORT + 1"), std::string::npos) << spec.describe;

  auto with_offset = torchrun;
  with_offset["DLCP_STORE_PORT_OFFSET"] = "0";
  EXPECT_EQ(parse_rendezvous_environment(with_offset).port, 29500);
  with_offset["DLCP_STORE_PORT_OFFSET"] = "17";
  EXPECT_EQ(parse_rendezvous_environment(with_offset).port, 29517);

  // DLCP_* wins over torchrun's variables; empty values count as unset.
  auto overridden = torchrun;
  overridden["DLCP_RANK"] = "3";
  overridden["DLCP_WORLD_SIZE"] = "";
  overridden["DLCP_STORE"] = "file:///tmp/x";
  const auto mixed = parse_rendezvous_environment(overridden);
  EXPECT_EQ(mixed.rank, 3);
  EXPECT_EQ(mixed.world_size, 8);
  EXPECT_EQ(mixed.kind, RendezvousSpec::Kind::kFile);
}

TEST(RendezvousEnvironmentTest, EveryBadVariableIsNamedWithItsValue) {
  const EnvironmentVariables good = {
      {"DLCP_RANK", "1"}, {"DLCP_WORLD_SIZE", "4"}, {"DLCP_STORE", "tcp://10.0.0.1:29500"}};
  const EnvironmentVariables torchrun = {
      {"RANK", "1"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}};
  struct Case {
    EnvironmentVariables base;
    std::string variable;
    std::optional<std::string> value;  // nullopt: remove the variable
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {good, "DLCP_RANK", std::nullopt, {"neither DLCP_RANK nor torchrun's RANK"}},
      {good, "DLCP_WORLD_SIZE", std::nullopt, {"DLCP_WORLD_SIZE", "WORLD_SIZE"}},
      {good, "DLCP_RANK", "one", {"DLCP_RANK='one'", "not a decimal integer"}},
      {good, "DLCP_RANK", " 1", {"DLCP_RANK=' 1'"}},
      {good, "DLCP_RANK", "-1", {"DLCP_RANK='-1'", "out of range"}},
      {good, "DLCP_RANK", "4", {"DLCP_RANK='4'", "DLCP_WORLD_SIZE=4"}},
      {good, "DLCP_RANK", "99999999999999999999", {"DLCP_RANK='99999999999999999999'"}},
      {good, "DLCP_WORLD_SIZE", "0", {"DLCP_WORLD_SIZE='0'", "out of range"}},
      {good, "DLCP_WORLD_SIZE", "4x", {"DLCP_WORLD_SIZE='4x'"}},
      {good, "DLCP_STORE", "redis://h:1", {"DLCP_STORE='redis://h:1'", "unknown scheme"}},
      {good, "DLCP_STORE", "10.0.0.1:29500", {"DLCP_STORE='10.0.0.1:29500'", "unknown scheme"}},
      {good, "DLCP_STORE", "tcp://host", {"DLCP_STORE='tcp://host'", "tcp://host:port"}},
      {good, "DLCP_STORE", "tcp://host:0", {"DLCP_STORE='tcp://host:0'", "port"}},
      {good, "DLCP_STORE", "tcp://host:70000", {"DLCP_STORE='tcp://host:70000'", "port"}},
      {good, "DLCP_STORE", "tcp://host:http", {"DLCP_STORE='tcp://host:http'", "port"}},
      {good, "DLCP_STORE", "tcp://:29500", {"DLCP_STORE='tcp://:29500'", "host"}},
      {good, "DLCP_STORE", "tcp://[::1]:29500", {"DLCP_STORE='tcp://[::1]:29500'", "IPv4"}},
      {good, "DLCP_STORE", "file://relative/dir", {"DLCP_STORE='file://relative/dir'", "absolute"}},
      {good, "DLCP_STORE", "file://", {"DLCP_STORE='file://'"}},
      {good, "DLCP_STORE_SERVER", "maybe", {"DLCP_STORE_SERVER='maybe'"}},
      {good, "DLCP_STORE_TIMEOUT_MS", "0", {"DLCP_STORE_TIMEOUT_MS='0'", "out of range"}},
      {good, "DLCP_STORE_TIMEOUT_MS", "10s", {"DLCP_STORE_TIMEOUT_MS='10s'"}},
      {good, "DLCP_STORE_BIND_HOST", "a b", {"DLCP_STORE_BIND_HOST='a b'"}},
      {torchrun, "MASTER_ADDR", std::nullopt, {"DLCP_STORE", "MASTER_ADDR"}},
      {torchrun, "MASTER_PORT", std::nullopt, {"DLCP_STORE", "MASTER_PORT"}},
      {torchrun, "MASTER_PORT", "port", {"MASTER_PORT='port'"}},
      {torchrun, "MASTER_PORT", "65535", {"DLCP_STORE_PORT_OFFSET='1'", "MASTER_PORT=65535"}},
      {torchrun, "DLCP_STORE_PORT_OFFSET", "-1", {"DLCP_STORE_PORT_OFFSET='-1'"}},
      {torchrun, "RANK", "8", {"RANK='8'", "WORLD_SIZE=4"}},
  };
  for (const auto& c : cases) {
    auto environment = c.base;
    if (c.value) {
      environment[c.variable] = *c.value;
    } else {
      environment.erase(c.variable);
    }
    SCOPED_TRACE(c.variable + "=" + c.value.value_or("(unset)"));
    expect_error([&] { parse_rendezvous_environment(environment); }, ErrorCode::kInvalidArgument,
                 c.fragments);
  }
}

TEST(RendezvousEnvironmentTest, RanksMeetThroughAFileStore) {
  TemporaryDirectory directory;
  const std::string url = "file://" + directory.path() + "/rdv";
  auto rank0 =
      from_environment({{"DLCP_RANK", "0"}, {"DLCP_WORLD_SIZE", "2"}, {"DLCP_STORE", url}});
  auto rank1 =
      from_environment({{"DLCP_RANK", "1"}, {"DLCP_WORLD_SIZE", "2"}, {"DLCP_STORE", url}});
  EXPECT_EQ(rank1.rank, 1);
  rank0.store->set("rank0", "hello");
  EXPECT_EQ(rank1.store->get("rank0"), "hello");
  EXPECT_NE(rank0.describe.find(url), std::string::npos) << rank0.describe;
}

TEST(RendezvousEnvironmentTest, RankZeroServesATcpStoreTheOthersJoin) {
  const std::uint16_t port = unused_port();
  const std::string url = "tcp://127.0.0.1:" + std::to_string(port);
  constexpr int kWorld = 3;
  std::vector<RendezvousConfig> configs(kWorld);
  std::vector<std::thread> ranks;
  // Ranks 1 and 2 start first and wait for rank 0's server.
  for (int rank = kWorld - 1; rank >= 0; --rank) {
    ranks.emplace_back([&, rank] {
      configs[rank] = from_environment({{"DLCP_RANK", std::to_string(rank)},
                                        {"DLCP_WORLD_SIZE", std::to_string(kWorld)},
                                        {"DLCP_STORE", url},
                                        {"DLCP_STORE_TIMEOUT_MS", "5000"}});
      configs[rank].store->add("arrived", 1);
    });
    std::this_thread::sleep_for(20ms);
  }
  for (auto& rank : ranks) rank.join();
  auto* served = dynamic_cast<TcpStore*>(configs[0].store.get());
  ASSERT_NE(served, nullptr);
  EXPECT_TRUE(served->is_server());
  EXPECT_EQ(configs[2].store->get("arrived"), "3");
  EXPECT_EQ(configs[1].store->timeout(), 5000ms);
}

TEST(RendezvousEnvironmentTest, ExternalServerAndTheProcessEnvironment) {
  TcpStoreServer server(kLoopback, 0);
  const std::string url = "tcp://127.0.0.1:" + std::to_string(server.port());
  ::setenv("DLCP_RANK", "0", 1);
  ::setenv("DLCP_WORLD_SIZE", "2", 1);
  ::setenv("DLCP_STORE", url.c_str(), 1);
  ::setenv("DLCP_STORE_SERVER", "0", 1);
  auto config = from_environment();
  ::unsetenv("DLCP_RANK");
  ::unsetenv("DLCP_WORLD_SIZE");
  ::unsetenv("DLCP_STORE");
  ::unsetenv("DLCP_STORE_SERVER");
  auto* store = dynamic_cast<TcpStore*>(config.store.get());
  ASSERT_NE(store, nullptr);
  EXPECT_FALSE(store->is_server());
  store->set("via", "environment");
  EXPECT_EQ(TcpStore(kLoopback, server.port(), 5s).get("via"), "environment");
}

TEST(RendezvousEnvironmentTest, ConnectFailureNamesTheRendezvous) {
  const std::uint16_t port = unused_port();
  expect_error(
      [&] {
        from_environment({{"DLCP_RANK", "1"},
                          {"DLCP_WORLD_SIZE", "2"},
                          {"DLCP_STORE", "tcp://127.0.0.1:" + std::to_string(port)},
                          {"DLCP_STORE_TIMEOUT_MS", "100"}});
      },
      ErrorCode::kConnect, {"127.0.0.1:" + std::to_string(port), "rank 1 of 2"});
}

}  // namespace
}  // namespace dlcp
