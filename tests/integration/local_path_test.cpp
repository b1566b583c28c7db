// The local path (TransportOptions::local_path) between ranks of this host: point-to-point and
// every collective give what the UDP path gives, bit for bit; a job may mix both paths; a killed
// rank fails its peers and leaves no segment behind; another job cannot obtain the segments.
#include <sys/socket.h>
#include <sys/un.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "collectives_fixture.hpp"
#include "forked_ranks.hpp"
#include "transport/job_key.hpp"
#include "transport/local_handoff.hpp"

namespace dlcp::test {
namespace {

void local_on(TransportOptions& options) {
  options.local_path = true;
}

// Descriptors and mappings of local-path segments this process holds.
std::size_t segments_held() {
  std::size_t held = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const auto target = std::filesystem::read_symlink(entry.path(), error);
    if (!error && target.string().find("memfd:dlcp-local") != std::string::npos) ++held;
  }
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("memfd:dlcp-local") != std::string::npos) ++held;
  }
  return held;
}

std::set<std::string> dev_shm_files() {
  std::set<std::string> names;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
    names.insert(entry.path().filename().string());
  }
  return names;
}

// The socket inodes this process holds ("socket:[inode]" links in /proc/self/fd).
std::set<std::string> own_socket_inodes() {
  std::set<std::string> inodes;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code error;
    const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
    if (!error && target.rfind("socket:[", 0) == 0) {
      inodes.insert(target.substr(8, target.size() - 9));
    }
  }
  return inodes;
}

// The abstract local-path sockets this process listens on ("@dlcp-local-..." in /proc/net/unix,
// whose seventh column is the inode): other test processes running beside this one have theirs.
std::set<std::string> local_sockets() {
  const auto own = own_socket_inodes();
  std::set<std::string> names;
  std::ifstream table("/proc/net/unix");
  for (std::string line; std::getline(table, line);) {
    const auto at = line.find("@dlcp-local-");
    if (at == std::string::npos) continue;
    std::istringstream fields(line);
    std::string field;
    for (int i = 0; i < 7; ++i) fields >> field;
    if (own.contains(field)) names.insert(line.substr(at + 1));
  }
  return names;
}

// A connection to the abstract local-path socket `name`, as any process of this user could make.
Fd connect_local_socket(const std::string& name) {
  Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path + 1, name.data(), name.size());
  const auto length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  EXPECT_EQ(::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length), 0) << name;
  return fd;
}

// A local-path claim: rank, then a proof under `key` over the local transcript of `transcript`.
std::array<std::byte, 34> claim_of(std::uint16_t rank, const transport::JobKey& key,
                                   const std::vector<std::byte>& transcript) {
  std::array<std::byte, 34> claim{};
  std::memcpy(claim.data(), &rank, 2);
  const auto proof =
      key.proof(transport::HandshakeRole::kDialer, transport::local_transcript(transcript));
  std::memcpy(claim.data() + 2, proof.data(), proof.size());
  return claim;
}

// The answer on `fd` (bytes read, 0 once closed) and how many descriptors came with it (closed).
ssize_t read_answer(int fd, std::size_t& descriptors, int flags = 0) {
  std::array<std::byte, 64> answer{};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
  iovec io{answer.data(), answer.size()};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC | flags);
  descriptors = 0;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      ::close(received);
    }
    descriptors += count;
  }
  return n;
}

TEST(LocalPath, PointToPointGoesThroughSharedMemoryInBothOrders) {
  auto world = make_world(2, local_on);
  const auto values = make_values(1 << 20, 11);
  std::vector<float> early(values.size(), -1.0f);
  std::vector<float> late(values.size(), -1.0f);
  auto posted = world[1]->recv(0, 1, early, {});
  auto sent_first = world[0]->send(1, 1, values, {});
  auto sent_second = world[0]->send(1, 2, values, {});
  std::this_thread::sleep_for(20ms);
  auto received_late = world[1]->recv(0, 2, late, {});
  const MessageResult a = posted.get();
  const MessageResult b = received_late.get();
  sent_first.get();
  const MessageResult sent = sent_second.get();
  EXPECT_TRUE(bit_equal(early, values));
  EXPECT_TRUE(bit_equal(late, values));
  EXPECT_EQ(a.stats.completion, Completion::kComplete);
  EXPECT_EQ(b.stats.packets, (values.size() + kTestStride - 1) / kTestStride);
  EXPECT_EQ(b.stats.packets_received, b.stats.packets);
  EXPECT_EQ(sent.stats.packets_sent, b.stats.packets);
  const TransportCounters sender = world[0]->counters();
  const TransportCounters receiver = world[1]->counters();
  EXPECT_EQ(sender.local_messages_sent, 2u);
  EXPECT_EQ(receiver.local_messages_received, 2u);
  EXPECT_EQ(sender.local_bytes_sent, 2 * values.size() * sizeof(float));
  EXPECT_EQ(sender.datagrams_sent, 0u) << "nothing went over UDP";
  EXPECT_EQ(receiver.datagrams_received, 0u);
  EXPECT_EQ(receiver.settled_complete, 2u);
}

TEST(LocalPath, ContributionCountsAreWrittenPerPacketAsOverUdp) {
  for (const bool local : {true, false}) {
    auto world = make_world(2, [&](TransportOptions& o) { o.local_path = local; });
    const auto values = make_values(10 * kTestStride + 3, 5);
    std::vector<std::uint16_t> counts(11);
    for (std::size_t i = 0; i < counts.size(); ++i)
      counts[i] = static_cast<std::uint16_t>(1 + i % 2);
    std::vector<std::uint16_t> got_counts(11, 77);
    std::vector<float> got(values.size());
    auto received = world[1]->recv(0, 3, got, {}, got_counts);
    world[0]->send(1, 3, values, {}, counts).get();
    received.get();
    EXPECT_EQ(got_counts, counts) << "local " << local;
    EXPECT_TRUE(bit_equal(got, values)) << "local " << local;
    EXPECT_EQ(world[0]->counters().local_messages_sent, local ? 1u : 0u);
  }
}

// Every collective on non-integer inputs, where the order of additions shows: the local path
// must give the UDP path's results bit for bit.
std::vector<std::vector<float>> every_collective(bool local, Algorithm algorithm, int workers,
                                                 int servers) {
  std::mutex mutex;
  std::vector<std::vector<float>> results(static_cast<std::size_t>(workers));
  std::vector<std::uint64_t> local_messages(static_cast<std::size_t>(workers));
  run_communicators(
      workers + servers, communicator_options(algorithm, servers),
      [&](Communicator& comm) {
        const int rank = comm.rank();
        std::vector<float> out;
        const std::size_t n = 100'003;
        auto values = make_values(n, 100 + static_cast<std::uint64_t>(rank));
        comm.allreduce(values, {.op = ReduceOp::kAverage}).wait();
        out.insert(out.end(), values.begin(), values.end());
        auto narrow = make_values(n, 200 + static_cast<std::uint64_t>(rank));
        comm.allreduce(narrow, {.wire = WireDtype::kBfloat16}).wait();
        out.insert(out.end(), narrow.begin(), narrow.end());
        auto root = make_values(5000, 300 + static_cast<std::uint64_t>(rank));
        comm.broadcast(root, 1).wait();
        out.insert(out.end(), root.begin(), root.end());
        const auto mine = make_values(777, 400 + static_cast<std::uint64_t>(rank));
        std::vector<float> gathered(777 * static_cast<std::size_t>(workers));
        comm.allgather(mine, gathered).wait();
        out.insert(out.end(), gathered.begin(), gathered.end());
        const auto input = make_values(1001 * static_cast<std::size_t>(workers),
                                       500 + static_cast<std::uint64_t>(rank));
        std::vector<float> shard(1001);
        comm.reduce_scatter(input, shard).wait();
        out.insert(out.end(), shard.begin(), shard.end());
        std::vector<float> from_left(3000);
        const int right = (rank + 1) % workers;
        const int left = (rank + workers - 1) % workers;
        auto received = comm.recv(from_left, left, 9);
        comm.send(make_values(3000, 600 + static_cast<std::uint64_t>(rank)), right, 9).wait();
        received.wait();
        out.insert(out.end(), from_left.begin(), from_left.end());
        comm.barrier();
        std::lock_guard lock(mutex);
        results[static_cast<std::size_t>(rank)] = std::move(out);
        local_messages[static_cast<std::size_t>(rank)] = comm.counters().local_messages_received;
      },
      [&](TransportOptions& options, int) { options.local_path = local; });
  for (const auto count : local_messages) {
    if (local) {
      EXPECT_GT(count, 0u);
    } else {
      EXPECT_EQ(count, 0u);
    }
  }
  return results;
}

struct CollectiveCase {
  Algorithm algorithm;
  int workers;
  int servers;
};

std::string algorithm_name(const testing::TestParamInfo<CollectiveCase>& param) {
  return to_string(param.param.algorithm);
}

class LocalPathCollectives : public testing::TestWithParam<CollectiveCase> {};

TEST_P(LocalPathCollectives, GiveTheUdpPathsResultsBitForBit) {
  const auto c = GetParam();
  const auto over_udp = every_collective(false, c.algorithm, c.workers, c.servers);
  const auto over_local = every_collective(true, c.algorithm, c.workers, c.servers);
  for (int rank = 0; rank < c.workers; ++rank) {
    const auto r = static_cast<std::size_t>(rank);
    ASSERT_EQ(over_local[r].size(), over_udp[r].size());
    EXPECT_TRUE(bit_equal(over_local[r], over_udp[r])) << "rank " << rank;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LocalPathCollectives,
                         testing::Values(CollectiveCase{Algorithm::kRing, 4, 0},
                                         CollectiveCase{Algorithm::kTranspose, 3, 0},
                                         CollectiveCase{Algorithm::kParameterServer, 3, 1}),
                         algorithm_name);

TEST(LocalPath, AJobMayMixLocalAndUdpPeers) {
  // Rank 2 opts out: its pairs go over UDP, the pair 0-1 through shared memory.
  constexpr int kWorld = 3;
  std::vector<TransportCounters> counters(kWorld);
  run_communicators(
      kWorld, communicator_options(Algorithm::kRing),
      [&](Communicator& comm) {
        auto values = exact_input(200'000, comm.rank());
        comm.allreduce(values).wait();
        EXPECT_TRUE(bit_equal(values, exact_sum(200'000, kWorld)));
        counters[static_cast<std::size_t>(comm.rank())] = comm.counters();
      },
      [](TransportOptions& options, int rank) { options.local_path = rank != 2; });
  EXPECT_GT(counters[0].local_messages_sent + counters[0].local_messages_received, 0u);
  EXPECT_GT(counters[0].datagrams_sent + counters[0].datagrams_received, 0u);
  EXPECT_EQ(counters[2].local_messages_sent + counters[2].local_messages_received, 0u);
}

// Rank 1 is killed while rank 0 waits for it: rank 0 fails naming rank 1, and once it closed its
// transport holds no segment; nothing appears in /dev/shm.
TEST(LocalPath, AKilledRankFailsItsPeerAndLeavesNoSegment) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("dlcp-local-kill-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto shm_before = dev_shm_files();
  const std::uint64_t token = random_job_token();
  const std::vector<pid_t> children = fork_ranks(2, dir, [&](int rank) {
    auto options = test_options(rank, 2, token);
    options.local_path = true;
    auto transport = Transport::create(options);
    if (rank == 0) {
      std::ofstream((dir / "port0").string()) << transport->control_port();
      transport->connect(1, kLoopback, 0);
      std::vector<float> buffer(1 << 20);
      auto pending = transport->recv(1, 1, buffer, {.deadline = 20s});
      if (segments_held() == 0) {
        throw Error(ErrorCode::kSystem, -1, "no segment is held while the peer lives");
      }
      mark_rank_ready(dir, rank);
      try {
        pending.get();
        throw Error(ErrorCode::kSystem, -1, "the receive from a killed rank succeeded");
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kPeerLost || e.peer() != 1 ||
            std::string(e.what()).find("rank 1") == std::string::npos) {
          throw Error(ErrorCode::kSystem, -1, std::string("unexpected error: ") + e.what());
        }
      }
      transport.reset();
      if (const auto held = segments_held(); held != 0) {
        throw Error(ErrorCode::kSystem, -1,
                    std::to_string(held) + " segment descriptors or mappings left");
      }
      return;
    }
    std::uint16_t port = 0;
    while (!(std::ifstream((dir / "port0").string()) >> port)) std::this_thread::sleep_for(5ms);
    transport->connect(0, kLoopback, port);
    mark_rank_ready(dir, rank);
    for (;;) std::this_thread::sleep_for(1s);
  });
  const auto started = Clock::now();
  while (!all_ranks_ready(dir, 2) && Clock::now() - started < 20s)
    std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(all_ranks_ready(dir, 2));
  ::kill(children[1], SIGKILL);
  int status = 0;
  ::waitpid(children[1], &status, 0);
  ::waitpid(children[0], &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << read_rank_report(dir, 0).what;
  EXPECT_EQ(dev_shm_files(), shm_before);
  std::filesystem::remove_all(dir);
}

// What another job (another token and secret) gets from a local-path socket: nothing.
TEST(LocalPath, AnotherJobCannotObtainTheSegments) {
  const auto before = local_sockets();
  auto world = make_world(2, [](TransportOptions& o) {
    o.local_path = true;
    o.job_secret = std::vector<std::uint8_t>(32, 0x5A);
  });
  std::set<std::string> ours;
  for (const auto& name : local_sockets()) {
    if (!before.contains(name)) ours.insert(name);
  }
  ASSERT_EQ(ours.size(), 2u);
  const transport::JobKey other_key(std::vector<std::uint8_t>(32, 0x33), 7);
  for (const auto& name : ours) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      Fd fd = connect_local_socket(name);
      // A claim for rank 1 (or 0) with a proof under another key, then garbage.
      const auto claim = claim_of(static_cast<std::uint16_t>(attempt % 2), other_key,
                                  std::vector<std::byte>(64, std::byte{1}));
      const std::size_t bytes = attempt == 2 ? 5 : claim.size();
      ASSERT_EQ(::send(fd.get(), claim.data(), bytes, MSG_NOSIGNAL), static_cast<ssize_t>(bytes));
      timeval timeout{5, 0};
      ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
      std::size_t descriptors = 0;
      EXPECT_EQ(read_answer(fd.get(), descriptors), 0) << "closed without an answer";
      EXPECT_EQ(descriptors, 0u) << "no descriptor was passed";
    }
  }
  // The job itself is unharmed, and counted the refusals.
  const auto values = make_values(10'000, 3);
  std::vector<float> got(values.size());
  auto received = world[1]->recv(0, 1, got, {});
  world[0]->send(1, 1, values, {}).get();
  received.get();
  EXPECT_TRUE(bit_equal(got, values));
  std::uint64_t refused = 0;
  for (const auto& transport : world) refused += transport->counters().rejected;
  EXPECT_EQ(refused, 6u);
}

// A connection during the exchange's window, when the listener does expect a rank: only the job
// key's proof over that connection's transcript obtains the descriptors.
TEST(LocalPath, TheListenerHandsDescriptorsOnlyForTheRightProof) {
  const std::vector<std::uint8_t> secret(32, 0x5A);
  const transport::JobKey key(secret, 1);
  const transport::JobKey other_key(std::vector<std::uint8_t>(32, 0x33), 1);
  const std::vector<std::byte> transcript(80, std::byte{9});
  transport::Poller poller;
  transport::LocalLink link = transport::new_local_link();
  transport::LocalAcceptor acceptor(key, poller, [&](int rank, std::vector<std::byte>& out) {
    if (rank != 1) return static_cast<transport::LocalLink*>(nullptr);
    out = transcript;
    return &link;
  });
  auto attempt = [&](const transport::JobKey& prover, std::uint16_t rank, std::size_t& fds) {
    Fd fd = connect_local_socket(acceptor.name());
    const auto claim = claim_of(rank, prover, transcript);
    EXPECT_EQ(::send(fd.get(), claim.data(), claim.size(), MSG_NOSIGNAL), 34);
    // The listener's side, as its I/O thread would run it.
    for (int i = 0; i < 3; ++i) {
      for (const std::uint64_t tag : poller.wait(std::chrono::milliseconds(20))) {
        if ((tag & transport::epoll_tag::kMask) == transport::epoll_tag::kLocalListener) {
          acceptor.accept(SteadyClock::now());
        } else if ((tag & transport::epoll_tag::kMask) == transport::epoll_tag::kLocalPending) {
          acceptor.on_readable(tag & ~transport::epoll_tag::kMask);
        }
      }
    }
    return read_answer(fd.get(), fds, MSG_DONTWAIT);
  };
  std::size_t fds = 0;
  EXPECT_EQ(attempt(other_key, 1, fds), 0) << "another job's proof: closed";
  EXPECT_EQ(fds, 0u);
  EXPECT_EQ(attempt(key, 0, fds), 0) << "a rank not expected: closed";
  EXPECT_EQ(fds, 0u);
  EXPECT_EQ(attempt(key, 1, fds), 32) << "the job's proof: the listener's proof";
  EXPECT_EQ(fds, 2u);
  EXPECT_EQ(acceptor.rejects().get(wire::RejectReason::kBadAuth), 1u);
  EXPECT_EQ(acceptor.rejects().get(wire::RejectReason::kBadSourceRank), 1u);
}

}  // namespace
}  // namespace dlcp::test
