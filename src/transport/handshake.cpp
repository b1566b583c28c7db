#include "transport/handshake.hpp"

#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <thread>
#include <variant>
#include <vector>

#include "common/net.hpp"
#include "dlcp/error.hpp"

namespace dlcp::transport {
namespace {

int remaining_ms(TimePoint deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// One non-blocking connect attempt; true when connected.
bool try_connect(int fd, const sockaddr_in& address, TimePoint deadline, int& error) {
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) return true;
  if (errno != EINPROGRESS) {
    error = errno;
    return false;
  }
  pollfd waiter{fd, POLLOUT, 0};
  if (::poll(&waiter, 1, remaining_ms(deadline)) <= 0) {
    error = ETIMEDOUT;
    return false;
  }
  socklen_t length = sizeof(error);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
  return error == 0;
}

void write_all(int fd, const std::vector<std::byte>& bytes, TimePoint deadline, int peer) {
  std::size_t offset = 0;
  while (offset < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + offset, bytes.size() - offset, MSG_NOSIGNAL);
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd waiter{fd, POLLOUT, 0};
      if (::poll(&waiter, 1, remaining_ms(deadline)) <= 0) {
        throw Error(ErrorCode::kConnect, peer,
                    "timed out sending handshake to rank " + std::to_string(peer));
      }
      continue;
    }
    throw Error(
        ErrorCode::kConnect, peer,
        net::errno_message("handshake send to rank " + std::to_string(peer) + " failed", errno));
  }
}

void read_exact(int fd, std::byte* out, std::size_t size, TimePoint deadline, int peer) {
  std::size_t offset = 0;
  while (offset < size) {
    const ssize_t n = ::recv(fd, out + offset, size - offset, 0);
    if (n > 0) {
      offset += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0) {
      throw Error(ErrorCode::kConnect, peer,
                  "rank " + std::to_string(peer) +
                      " closed the connection during the handshake (wrong job token, rank or job "
                      "secret?)");
    }
    if (errno == EAGAIN || errno == EINTR) {
      pollfd waiter{fd, POLLIN, 0};
      if (::poll(&waiter, 1, remaining_ms(deadline)) <= 0) {
        throw Error(ErrorCode::kConnect, peer,
                    "timed out waiting for the handshake reply of rank " + std::to_string(peer));
      }
      continue;
    }
    throw Error(ErrorCode::kConnect, peer,
                net::errno_message(
                    "handshake receive from rank " + std::to_string(peer) + " failed", errno));
  }
}

// Reads one whole control frame of at most kMaxHandshakeFrameBytes and decodes it.
wire::ControlMessage read_frame(int fd, TimePoint deadline, int peer, const std::string& where) {
  std::byte prefix[wire::kControlLengthPrefixBytes];
  read_exact(fd, prefix, sizeof(prefix), deadline, peer);
  const auto length = wire::decode_control_length(prefix);
  if (!length || *length > kMaxHandshakeFrameBytes) {
    throw Error(ErrorCode::kProtocol, peer, where + " answered with an invalid frame");
  }
  std::vector<std::byte> body(*length);
  read_exact(fd, body.data(), body.size(), deadline, peer);
  auto message = wire::decode_control_body(body);
  if (!message) {
    throw Error(ErrorCode::kProtocol, peer,
                where + " answered with an invalid frame (" +
                    std::string(wire::to_string(message.error())) + ")");
  }
  return std::move(*message);
}

}  // namespace

std::string check_hello(const wire::Hello& hello, const wire::Hello& ours) {
  if (hello.job_token != ours.job_token) return "job token mismatch (another job or a stale run)";
  if (hello.world_size != ours.world_size) {
    return "world size mismatch: peer says " + std::to_string(hello.world_size) + ", we have " +
           std::to_string(ours.world_size);
  }
  if (hello.rank >= ours.world_size || hello.rank == ours.rank) {
    return "invalid peer rank " + std::to_string(hello.rank);
  }
  if (hello.data_sockets.empty()) return "peer announced no data sockets";
  if ((hello.features & wire::hello_features::kPairSeq) == 0) {
    return "the peer sends data packets of format version 1 (an older dlcp, without pair_seq); "
           "every rank must run the same dlcp version";
  }
  if ((hello.features & wire::hello_features::kSharedBandMarks) == 0) {
    return "the peer sends rate reports without shared-band marks (an older dlcp); every rank "
           "must run the same dlcp version";
  }
  if ((hello.features & wire::hello_features::kWireDtypes) == 0) {
    return "the peer sends data packets of format version 2 (an older dlcp, float32 only); every "
           "rank must run the same dlcp version";
  }
  if ((hello.features & wire::hello_features::kParity) == 0) {
    return "the peer sends no parity packets (an older dlcp); every rank must run the same dlcp "
           "version";
  }
  const bool peer_mac = (hello.features & wire::hello_features::kPacketMac) != 0;
  if (peer_mac != ((ours.features & wire::hello_features::kPacketMac) != 0)) {
    return std::string("packet MAC setting differs: the peer has it ") + (peer_mac ? "on" : "off") +
           ", we have it " + (peer_mac ? "off" : "on");
  }
  return {};
}

DialResult dial_peer(int peer, std::uint32_t ipv4, std::uint16_t port, const wire::Hello& ours,
                     const JobKey& key, TimePoint deadline) {
  const sockaddr_in address = net::make_sockaddr(ipv4, port);
  const std::string where = "rank " + std::to_string(peer) + " at " + net::describe(ipv4, port);
  int last_error = 0;
  for (;;) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid())
      throw Error(ErrorCode::kSystem, peer, net::errno_message("socket(TCP)", errno));
    if (try_connect(fd.get(), address, deadline, last_error)) {
      net::set_int_option(fd.get(), IPPROTO_TCP, TCP_NODELAY, 1, "TCP_NODELAY");
      std::vector<std::byte> frame;
      wire::encode_control(ours, frame);
      write_all(fd.get(), frame, deadline, peer);
      auto message = read_frame(fd.get(), deadline, peer, where);
      if (!std::holds_alternative<wire::Hello>(message)) {
        throw Error(ErrorCode::kProtocol, peer,
                    where + " answered the handshake with something else");
      }
      auto& hello = std::get<wire::Hello>(message);
      if (hello.rank != peer) {
        throw Error(
            ErrorCode::kProtocol, peer,
            where + " is rank " + std::to_string(hello.rank) + ", not " + std::to_string(peer));
      }
      const std::string problem = check_hello(hello, ours);
      if (!problem.empty()) throw Error(ErrorCode::kProtocol, peer, where + ": " + problem);

      std::vector<std::byte> transcript = handshake_transcript(ours, hello);
      frame.clear();
      wire::encode_control(wire::Authenticate{key.proof(HandshakeRole::kDialer, transcript)},
                           frame);
      write_all(fd.get(), frame, deadline, peer);
      const auto answer = read_frame(fd.get(), deadline, peer, where);
      const auto* proof = std::get_if<wire::Authenticate>(&answer);
      if (proof == nullptr) {
        throw Error(ErrorCode::kProtocol, peer,
                    where + " did not authenticate (it sent another frame instead)");
      }
      if (!key.verify(HandshakeRole::kListener, transcript, proof->proof)) {
        throw Error(ErrorCode::kProtocol, peer,
                    where + " failed authentication: it does not hold this job's secret");
      }
      return {std::move(fd), std::move(hello), std::move(transcript)};
    }
    if (SteadyClock::now() >= deadline) break;
    // The peer may not be listening yet: retry until the deadline.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw Error(ErrorCode::kConnect, peer,
              net::errno_message("could not connect to " + where + " before the connect timeout",
                                 last_error));
}

}  // namespace dlcp::transport
