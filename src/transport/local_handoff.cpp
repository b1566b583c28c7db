#include "transport/local_handoff.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <thread>

#include "common/net.hpp"
#include "dlcp/error.hpp"
#include "transport/acceptor.hpp"

namespace dlcp::transport {
namespace {

constexpr char kLocalLabel[] = "dlcp local path v1";
constexpr std::size_t kMinPendingLocal = 16;
// The descriptors each side hands over: its segment and its eventfd.
constexpr std::size_t kHandedFds = 2;
constexpr std::size_t kRankBytes = 2;
constexpr std::size_t kClaimBytes = kRankBytes + wire::kProofBytes;

sockaddr_un abstract_address(const std::string& name, socklen_t& length) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  // Abstract namespace: a leading NUL, no file anywhere.
  const std::size_t bytes = std::min(name.size(), sizeof(address.sun_path) - 1);
  std::memcpy(address.sun_path + 1, name.data(), bytes);
  length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + bytes);
  return address;
}

bool same_user(int fd) {
  ucred credentials{};
  socklen_t length = sizeof(credentials);
  return ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 &&
         credentials.uid == ::geteuid();
}

// One message with `fds` attached; false unless the whole message went.
bool send_with_fds(int fd, std::span<const std::byte> bytes, std::span<const int> fds) {
  iovec io{const_cast<std::byte*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kHandedFds)> control{};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  const ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
  return n == static_cast<ssize_t>(bytes.size());
}

// One message into `out` and the descriptors it carried (every one received is owned, so none
// leaks whatever the peer attached). Returns the bytes read, 0 at the end, -1 with errno.
ssize_t receive_with_fds(int fd, std::span<std::byte> out, std::vector<Fd>& fds) {
  iovec io{out.data(), out.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 8)> control{};
  msghdr message{};
  message.msg_iov = &io;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  const ssize_t n = ::recvmsg(fd, &message, MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      fds.emplace_back(received);
    }
  }
  if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    errno = EMSGSIZE;
    return -1;
  }
  return n;
}

bool is_eventfd(int fd) {
  std::array<char, 64> target{};
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), target.data(), target.size() - 1);
  return n > 0 && std::string(target.data(), static_cast<std::size_t>(n)) == "anon_inode:[eventfd]";
}

// The peer's two descriptors into `link`; why not, or empty.
std::string take_peer_fds(std::vector<Fd>& fds, LocalLink& link) {
  if (fds.size() != kHandedFds) {
    return "sent " + std::to_string(fds.size()) + " descriptors, not " + std::to_string(kHandedFds);
  }
  if (!is_eventfd(fds[1].get())) return "sent a wake-up descriptor that is not an eventfd";
  std::string problem;
  link.incoming = open_segment(std::move(fds[0]), kLocalRingBytes, problem);
  if (!link.incoming.mapping.valid()) return problem;
  link.peer_wake = std::move(fds[1]);
  return {};
}

int remaining_ms(TimePoint deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

}  // namespace

LocalLink new_local_link() {
  LocalLink link;
  link.outgoing = create_segment();
  link.wake = create_wake_fd();
  return link;
}

std::vector<std::byte> local_transcript(std::span<const std::byte> control_transcript) {
  std::vector<std::byte> transcript(control_transcript.begin(), control_transcript.end());
  for (const char c : std::string_view(kLocalLabel)) transcript.push_back(std::byte(c));
  return transcript;
}

void dial_local(int peer, int our_rank, const std::string& name, const JobKey& key,
                std::span<const std::byte> control_transcript, LocalLink& link,
                TimePoint deadline) {
  const std::string where = "rank " + std::to_string(peer) + "'s local-path socket";
  Fd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid())
    throw Error(ErrorCode::kSystem, peer, net::errno_message("socket(AF_UNIX)", errno));
  socklen_t length = 0;
  const sockaddr_un address = abstract_address(name, length);
  while (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0) {
    // The listener has it bound since before its Hello left, so only a full backlog retries.
    if (errno != EAGAIN || SteadyClock::now() >= deadline) {
      throw Error(ErrorCode::kConnect, peer, net::errno_message("connecting to " + where, errno));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!same_user(fd.get())) {
    throw Error(ErrorCode::kProtocol, peer, where + " belongs to another user");
  }
  // A zero timeout would mean none: at least a millisecond.
  const int left_ms = std::max(remaining_ms(deadline), 1);
  const timeval timeout{left_ms / 1000, (left_ms % 1000) * 1000};
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));

  const std::vector<std::byte> transcript = local_transcript(control_transcript);
  std::array<std::byte, kClaimBytes> claim{};
  const auto rank = static_cast<std::uint16_t>(our_rank);
  std::memcpy(claim.data(), &rank, kRankBytes);
  const Proof ours = key.proof(HandshakeRole::kDialer, transcript);
  std::memcpy(claim.data() + kRankBytes, ours.data(), ours.size());
  if (!send_with_fds(fd.get(), claim, {})) {
    throw Error(ErrorCode::kConnect, peer, net::errno_message("sending to " + where, errno));
  }
  std::array<std::byte, wire::kProofBytes + 1> answer{};
  std::vector<Fd> fds;
  const ssize_t n = receive_with_fds(fd.get(), answer, fds);
  if (n != static_cast<ssize_t>(wire::kProofBytes)) {
    throw Error(ErrorCode::kConnect, peer,
                n < 0 ? net::errno_message("waiting for " + where, errno)
                      : where + " refused us or answered " + std::to_string(n) +
                            " bytes (another job, or a stale run?)");
  }
  Proof theirs{};
  std::memcpy(theirs.data(), answer.data(), theirs.size());
  if (!key.verify(HandshakeRole::kListener, transcript, theirs)) {
    throw Error(ErrorCode::kProtocol, peer, where + " does not hold this job's secret");
  }
  if (const std::string problem = take_peer_fds(fds, link); !problem.empty()) {
    throw Error(ErrorCode::kProtocol, peer, where + " " + problem);
  }
  const std::array<int, kHandedFds> handed{link.outgoing.fd.get(), link.wake.get()};
  const std::array<std::byte, 1> done{std::byte{1}};
  if (!send_with_fds(fd.get(), done, handed)) {
    throw Error(ErrorCode::kConnect, peer,
                net::errno_message("handing segments to " + where, errno));
  }
}

LocalAcceptor::LocalAcceptor(const JobKey& key, Poller& poller, Expected expected)
    : key_(key), poller_(poller), expected_(std::move(expected)) {
  listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listener_.valid()) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("socket(AF_UNIX)", errno));
  }
  // A random name: nobody can squat it in advance, and two jobs never collide.
  const Nonce random = random_nonce();
  name_ = "dlcp-local-" + to_hex(std::span(random.data(), 16));
  socklen_t length = 0;
  const sockaddr_un address = abstract_address(name_, length);
  if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), length) != 0 ||
      ::listen(listener_.get(), 64) != 0) {
    throw Error(ErrorCode::kSystem, -1, net::errno_message("binding the local-path socket", errno));
  }
  poller_.watch(listener_.get(), epoll_tag::kLocalListener);
}

LocalAcceptor::~LocalAcceptor() {
  for (auto& [id, pending] : pending_) poller_.unwatch(pending.fd.get());
  poller_.unwatch(listener_.get());
}

void LocalAcceptor::drop(std::uint64_t id, wire::RejectReason reason) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return;
  rejects_.add(reason);
  poller_.unwatch(it->second.fd.get());
  pending_.erase(it);
}

void LocalAcceptor::accept(TimePoint now) {
  for (;;) {
    Fd fd(::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;
    if (!same_user(fd.get())) {
      rejects_.add(wire::RejectReason::kBadAuth);
      continue;
    }
    if (pending_.size() >= kMinPendingLocal) {
      auto oldest = std::min_element(pending_.begin(), pending_.end(), [](auto& a, auto& b) {
        return a.second.accepted < b.second.accepted;
      });
      drop(oldest->first, wire::RejectReason::kHandshakeLimit);
    }
    const std::uint64_t id = next_id_++;
    poller_.watch(fd.get(), epoll_tag::kLocalPending | id);
    pending_.emplace(id, Pending{std::move(fd), now, -1});
  }
}

std::optional<int> LocalAcceptor::on_readable(std::uint64_t id) {
  const auto it = pending_.find(id);
  if (it == pending_.end()) return std::nullopt;
  Pending& pending = it->second;
  std::array<std::byte, kClaimBytes + 1> frame{};
  std::vector<Fd> fds;
  const ssize_t n = receive_with_fds(pending.fd.get(), frame, fds);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
  std::vector<std::byte> transcript;
  if (pending.rank < 0) {
    // The claim: a rank we expect and its proof, with no descriptors.
    if (n != static_cast<ssize_t>(kClaimBytes) || !fds.empty()) {
      drop(id, wire::RejectReason::kBadControlLength);
      return std::nullopt;
    }
    std::uint16_t rank = 0;
    std::memcpy(&rank, frame.data(), kRankBytes);
    LocalLink* link = expected_(rank, transcript);
    if (link == nullptr) {
      drop(id, wire::RejectReason::kBadSourceRank);
      return std::nullopt;
    }
    transcript = local_transcript(transcript);
    Proof proof{};
    std::memcpy(proof.data(), frame.data() + kRankBytes, proof.size());
    if (!key_.verify(HandshakeRole::kDialer, transcript, proof)) {
      drop(id, wire::RejectReason::kBadAuth);
      return std::nullopt;
    }
    const Proof ours = key_.proof(HandshakeRole::kListener, transcript);
    const std::array<int, kHandedFds> handed{link->outgoing.fd.get(), link->wake.get()};
    if (!send_with_fds(pending.fd.get(), std::as_bytes(std::span(ours)), handed)) {
      drop(id, wire::RejectReason::kHandshakeLimit);
      return std::nullopt;
    }
    pending.rank = rank;
    return std::nullopt;
  }
  LocalLink* link = expected_(pending.rank, transcript);
  if (n != 1 || link == nullptr || !take_peer_fds(fds, *link).empty()) {
    drop(id, wire::RejectReason::kBadControlField);
    return std::nullopt;
  }
  const int rank = pending.rank;
  poller_.unwatch(pending.fd.get());
  pending_.erase(it);
  return rank;
}

void LocalAcceptor::expire(TimePoint now) {
  std::vector<std::uint64_t> late;
  for (const auto& [id, pending] : pending_) {
    if (now - pending.accepted > kHandshakeTimeout) late.push_back(id);
  }
  for (const auto id : late) drop(id, wire::RejectReason::kHandshakeLimit);
}

}  // namespace dlcp::transport
