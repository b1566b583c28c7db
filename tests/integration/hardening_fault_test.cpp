// Faults while collectives run: a control connection cut in the middle (through a TCP proxy
// between two ranks), a peer that stops reading (the proxy stops forwarding; a rank process
// stopped with SIGSTOP), a rank process killed with SIGKILL, and 50-90% loss in bursts. Every
// rank must either finish with correct results or fail, within the configured deadline, with an
// error that names a peer and the cause. Times to error are printed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "forked_ranks.hpp"
#include "hardening_fixture.hpp"

namespace dlcp::test {
namespace {

constexpr int kWorld = 3;
constexpr auto kDeadline = 4s;  // per transfer
// Scheduling slack on a loaded two-core machine, on top of the deadline.
constexpr double kSlackSeconds = 4.0;

double deadline_seconds() {
  return std::chrono::duration<double>(kDeadline).count();
}

// Forwards TCP connections from its own port to a target, and can cut or freeze them.
class ControlProxy {
 public:
  explicit ControlProxy(std::function<sockaddr_in()> target) : target_(std::move(target)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<const sockaddr*>(&address), sizeof(address));
    ::listen(listener_, 8);
    socklen_t length = sizeof(address);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~ControlProxy() {
    stopping_.store(true);
    thread_.join();
    for (const auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    ::close(listener_);
  }

  std::uint16_t port() const { return port_; }
  // Resets every forwarded connection at once (both ends see the connection fail).
  void cut() { cut_.store(true); }
  // Stops reading and forwarding, keeping the connections open: a peer that stopped reading.
  void stall() { stalled_.store(true); }
  std::size_t forwarded() const { return forwarded_.load(); }

 private:
  void run() {
    std::vector<std::byte> buffer(1 << 16);
    while (!stopping_.load()) {
      if (cut_.load() && !pairs_.empty()) {
        for (const auto& [a, b] : pairs_) {
          reset(a);
          reset(b);
        }
        pairs_.clear();
      }
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      if (!stalled_.load()) {
        for (const auto& [a, b] : pairs_) {
          fds.push_back({a, POLLIN, 0});
          fds.push_back({b, POLLIN, 0});
        }
      }
      if (::poll(fds.data(), fds.size(), 10) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int client = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const sockaddr_in address = target_();
        if (client >= 0 && server >= 0 &&
            ::connect(server, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
          pairs_.emplace_back(client, server);
        }
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const auto& pair = pairs_[(i - 1) / 2];
        const int from = fds[i].fd;
        const int to = from == pair.first ? pair.second : pair.first;
        const ssize_t n = ::recv(from, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (n > 0) {
          ::send(to, buffer.data(), static_cast<std::size_t>(n), MSG_NOSIGNAL);
          forwarded_.fetch_add(static_cast<std::size_t>(n));
        } else if (n == 0) {
          ::shutdown(to, SHUT_WR);
        }
      }
    }
  }

  static void reset(int fd) {
    const linger hard{1, 0};  // close with RST, as a middlebox dropping the connection would
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    ::close(fd);
  }

  std::function<sockaddr_in()> target_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::vector<std::pair<int, int>> pairs_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<bool> stalled_{false};
  std::atomic<std::size_t> forwarded_{0};
  std::thread thread_;
};

// One rank's view of a shared store in which one key (a peer's address) reads differently.
class RedirectingStore final : public Store {
 public:
  RedirectingStore(Store& inner, std::string key, std::string value)
      : inner_(inner), key_(std::move(key)), value_(std::move(value)) {
    set_timeout(inner.timeout());
  }
  void set(const std::string& key, const std::string& value) override { inner_.set(key, value); }
  std::string get(const std::string& key) override {
    return key == key_ ? value_ : inner_.get(key);
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return inner_.add(key, delta);
  }
  bool check(const std::vector<std::string>& keys) override { return inner_.check(keys); }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    inner_.wait(keys, timeout);
  }
  using Store::wait;

 private:
  Store& inner_;
  std::string key_;
  std::string value_;
};

sockaddr_in parse_address(const std::string& text) {
  const auto colon = text.rfind(':');
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(std::stoul(text.substr(colon + 1))));
  ::inet_pton(AF_INET, text.substr(0, colon).c_str(), &address.sin_addr);
  return address;
}

struct RankOutcome {
  std::optional<Error> error;
  Clock::time_point when{};
  int completed = 0;
};

// Ranks 0..2 as threads, looping all-reduces until one fails; rank 1 reaches rank 0 through
// `proxy`. fault() runs once every rank has completed a few all-reduces.
std::vector<RankOutcome> run_with_proxy_fault(const std::function<void(ControlProxy&)>& fault,
                                              Clock::time_point& fault_time) {
  HashStore store;
  store.set_timeout(20s);
  CommunicatorOptions options = communicator_options(Algorithm::kRing);
  const std::string address_key = options.store_prefix + "/address/0";
  ControlProxy proxy([&] { return parse_address(store.get(address_key)); });
  std::vector<RankOutcome> outcomes(kWorld);
  std::atomic<int> started{0};
  std::atomic<bool> faulted{false};
  std::thread injector([&] {
    while (started.load() < kWorld) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(100ms);
    fault_time = Clock::now();
    fault(proxy);
    faulted.store(true);
  });
  run_per_rank(kWorld, [&](int rank) {
    RankOutcome& outcome = outcomes[static_cast<std::size_t>(rank)];
    try {
      RedirectingStore view(store, rank == 1 ? address_key : "",
                            "127.0.0.1:" + std::to_string(proxy.port()));
      auto comm = Communicator::create(view, rank, kWorld, options);
      // Bounded: a run that never fails is reported by the caller, not waited for forever.
      for (int i = 0; i < 2000; ++i) {
        auto values = exact_input(256 * 1024, rank, i);
        comm->allreduce(values, {.deadline = kDeadline}).wait();
        if (!bit_equal(values, exact_sum(256 * 1024, kWorld, i))) {
          ADD_FAILURE() << "rank " << rank << ": wrong result in all-reduce " << i;
        }
        if (++outcome.completed == 3) started.fetch_add(1);
        if (faulted.load() && seconds_since(fault_time) > deadline_seconds() + kSlackSeconds) {
          break;
        }
      }
    } catch (const Error& e) {
      outcome.error = e;
      outcome.when = Clock::now();
      if (outcome.completed < 3) started.fetch_add(1);
    }
  });
  injector.join();
  return outcomes;
}

void expect_named_failures_within_deadline(const std::vector<RankOutcome>& outcomes,
                                           Clock::time_point fault_time, const char* name) {
  for (int rank = 0; rank < kWorld; ++rank) {
    const RankOutcome& outcome = outcomes[static_cast<std::size_t>(rank)];
    ASSERT_TRUE(outcome.error.has_value())
        << "rank " << rank << " never failed (" << outcome.completed << " all-reduces)";
    const double seconds = std::chrono::duration<double>(outcome.when - fault_time).count();
    std::printf("[%s] rank %d: %.2f s after the fault: %s: %s\n", name, rank, seconds,
                to_string(outcome.error->code()), outcome.error->what());
    EXPECT_LT(seconds, deadline_seconds() + kSlackSeconds) << "rank " << rank;
    const std::string what = outcome.error->what();
    EXPECT_NE(what.find("rank "), std::string::npos) << "no peer named: " << what;
  }
}

TEST(Fault, ControlConnectionCutMidCollectiveFailsEveryRankNamingThePeer) {
  Clock::time_point cut_time;
  const auto outcomes = run_with_proxy_fault([](ControlProxy& proxy) { proxy.cut(); }, cut_time);
  expect_named_failures_within_deadline(outcomes, cut_time, "cut");
  // The two ends of the cut connection name each other and the cause, long before a deadline.
  for (const int rank : {0, 1}) {
    const auto& outcome = outcomes[static_cast<std::size_t>(rank)];
    ASSERT_TRUE(outcome.error.has_value());
    const std::string what = outcome.error->what();
    EXPECT_NE(what.find("rank " + std::to_string(1 - rank)), std::string::npos) << what;
    EXPECT_TRUE(what.find("reset") != std::string::npos ||
                what.find("closed the control connection") != std::string::npos)
        << what;
    EXPECT_LT(std::chrono::duration<double>(outcome.when - cut_time).count(), 2.0) << what;
  }
}

TEST(Fault, PeerThatStopsReadingFailsEveryRankWithinTheDeadline) {
  Clock::time_point stall_time;
  const auto outcomes =
      run_with_proxy_fault([](ControlProxy& proxy) { proxy.stall(); }, stall_time);
  expect_named_failures_within_deadline(outcomes, stall_time, "stall");
  // Whoever failed first blames one of the two ranks behind the frozen connection.
  bool blamed = false;
  for (const auto& outcome : outcomes) {
    const std::string what = outcome.error ? outcome.error->what() : "";
    blamed = blamed || what.find("did not settle") != std::string::npos ||
             what.find("was not settled") != std::string::npos;
  }
  EXPECT_TRUE(blamed) << "no rank reported a missed deadline";
}

// --- Rank processes: SIGKILL and SIGSTOP mid-collective. -----------------------------------------

void signal_rank_mid_collective(Algorithm algorithm, int signal) {
  constexpr int kVictim = 2;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("dlcp-fault-" + std::to_string(::getpid()) + "-" + std::to_string(signal));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::vector<pid_t> children = fork_ranks(kWorld, dir, [&](int rank) {
    FileStore store((dir / "store").string());
    store.set_timeout(20s);
    CommunicatorOptions options = communicator_options(algorithm);
    options.store_prefix = "fault";
    auto comm = Communicator::create(store, rank, kWorld, options);
    for (int i = 0;; ++i) {
      auto values = exact_input(256 * 1024, rank, i);
      comm->allreduce(values, {.deadline = kDeadline}).wait();
      if (!bit_equal(values, exact_sum(256 * 1024, kWorld, i))) ::_exit(5);
      if (i == 3) mark_rank_ready(dir, rank);
    }
  });
  const bool ready = eventually([&] { return all_ranks_ready(dir, kWorld); }, 30s);
  int naming_the_victim = 0;
  const auto signalled = Clock::now();
  ::kill(children[kVictim], ready ? signal : SIGKILL);
  for (int rank = 0; rank < kWorld; ++rank) {
    if (rank == kVictim) continue;
    int status = 0;
    // Bounded wait: a survivor that hangs is killed and reported.
    const bool exited = eventually(
        [&] { return ::waitpid(children[static_cast<std::size_t>(rank)], &status, WNOHANG) > 0; },
        std::chrono::duration_cast<Clock::duration>(kDeadline + 15s));
    if (!exited) {
      ::kill(children[static_cast<std::size_t>(rank)], SIGKILL);
      ::waitpid(children[static_cast<std::size_t>(rank)], &status, 0);
      ADD_FAILURE() << "rank " << rank << " hung after rank " << kVictim << " was signalled";
      continue;
    }
    ASSERT_TRUE(ready) << "the ranks never got going";
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == kRankFailedWithError)
        << "rank " << rank << " ended with status " << status << " (5 = wrong result)";
    const RankReport report = read_rank_report(dir, rank);
    ASSERT_TRUE(report.failed) << "rank " << rank << " left no error";
    const double seconds = std::chrono::duration<double>(
                               Clock::time_point(Clock::duration(report.when_ns)) - signalled)
                               .count();
    std::printf("[%s, %s] rank %d failed %.2f s after the signal: %s\n", to_string(algorithm),
                signal == SIGKILL ? "SIGKILL" : "SIGSTOP", rank, seconds, report.what.c_str());
    EXPECT_LT(seconds, deadline_seconds() + kSlackSeconds) << "rank " << rank;
    // A survivor names the peer it was waiting for: the victim, or (in a ring, when its own
    // deadline comes first) the neighbour that was itself waiting for the victim.
    EXPECT_NE(report.what.find("rank "), std::string::npos) << report.what;
    if (report.what.find("rank " + std::to_string(kVictim)) != std::string::npos) {
      ++naming_the_victim;
    }
  }
  EXPECT_GE(naming_the_victim, 1) << "no survivor named the stopped or killed rank";
  ::kill(children[kVictim], SIGKILL);
  ::waitpid(children[kVictim], nullptr, 0);
  std::filesystem::remove_all(dir);
}

TEST(Fault, RankKilledMidTransposeAllReduceIsNamedBySurvivors) {
  signal_rank_mid_collective(Algorithm::kTranspose, SIGKILL);
}

TEST(Fault, RankStoppedMidRingAllReduceIsNamedWithinTheDeadline) {
  signal_rank_mid_collective(Algorithm::kRing, SIGSTOP);
}

TEST(Fault, RankStoppedMidTransposeAllReduceIsNamedWithinTheDeadline) {
  signal_rank_mid_collective(Algorithm::kTranspose, SIGSTOP);
}

// --- Loss bursts.
// ---------------------------------------------------------------------------------

struct LossCase {
  const char* name;
  Algorithm algorithm;
  double drop;
  double budget;
};

class LossBurst : public testing::TestWithParam<LossCase> {};

TEST_P(LossBurst, CompletesCorrectlyOrFailsByNameWithinTheDeadline) {
  const LossCase c = GetParam();
  constexpr std::size_t kFloats = 256 * 1024;
  constexpr int kIterations = 3;
  CommunicatorWorld world(kWorld, communicator_options(c.algorithm),
                          [&](TransportOptions& options, int rank) {
                            options.inject.drop_rate = c.drop;
                            options.inject.mean_burst_length = 50;  // long bursts
                            options.inject.seed = 7 + static_cast<std::uint64_t>(rank);
                          });
  std::vector<std::optional<Error>> errors(kWorld);
  std::vector<double> seconds(kWorld, 0);
  std::vector<std::vector<std::vector<float>>> results(kWorld);
  std::vector<double> delivered(kWorld, 1.0);
  world.each([&](int rank, Communicator& comm) {
    for (int i = 0; i < kIterations; ++i) {
      auto values = exact_input(kFloats, rank, i);
      const auto start = Clock::now();
      try {
        const CollectiveResult r =
            comm.allreduce(values, {.loss_budget = c.budget, .deadline = kDeadline}).wait();
        delivered[rank] = std::min(delivered[rank], r.delivered_fraction);
        results[rank].push_back(values);
      } catch (const Error& e) {
        errors[rank] = e;
        seconds[rank] = seconds_since(start);
        return;
      }
    }
  });
  int failed = 0;
  for (int rank = 0; rank < kWorld; ++rank) {
    if (!errors[rank]) continue;
    ++failed;
    std::printf("[%s] rank %d failed after %.2f s: %s\n", c.name, rank, seconds[rank],
                errors[rank]->what());
    EXPECT_LT(seconds[rank], deadline_seconds() + kSlackSeconds);
    EXPECT_NE(std::string(errors[rank]->what()).find("rank "), std::string::npos);
  }
  if (failed > 0) {
    EXPECT_EQ(failed, kWorld) << "some ranks failed, others went on";
    return;
  }
  const auto counters = world.total_counters();
  std::printf("[%s] all %d all-reduces completed; min delivered %.4f; injected drops %llu\n",
              c.name, kIterations, *std::min_element(delivered.begin(), delivered.end()),
              static_cast<unsigned long long>(counters.injected_drops));
  for (int i = 0; i < kIterations; ++i) {
    for (int rank = 0; rank < kWorld; ++rank) {
      const auto& result = results[rank][static_cast<std::size_t>(i)];
      if (c.budget == 0) {
        EXPECT_TRUE(bit_equal(result, exact_sum(kFloats, kWorld, i))) << "rank " << rank;
      } else {
        EXPECT_TRUE(bit_equal(result, results[0][static_cast<std::size_t>(i)]))
            << "rank " << rank << " differs from rank 0";
        EXPECT_GE(delivered[rank], 1.0 - c.budget);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Bursts, LossBurst,
    testing::Values(LossCase{"Ring50pctExact", Algorithm::kRing, 0.5, 0.0},
                    LossCase{"Transpose50pctExact", Algorithm::kTranspose, 0.5, 0.0},
                    LossCase{"Ring50pctBudget5pct", Algorithm::kRing, 0.5, 0.05},
                    LossCase{"Ring90pctExact", Algorithm::kRing, 0.9, 0.0},
                    LossCase{"Transpose90pctExact", Algorithm::kTranspose, 0.9, 0.0}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

}  // namespace
}  // namespace dlcp::test
