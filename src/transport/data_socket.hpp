// One UDP data socket (one path): non-blocking, large buffers, per-packet TOS on send, and TOS
// (for ECN CE marks) on receive. Batches go through sendmmsg/recvmmsg.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/fd.hpp"

namespace dlcp::transport {

// One sendmmsg entry: one datagram, or with UDP GSO several datagrams the kernel cuts apart.
// `iov` holds header, payload (and MAC trailer) of each packet in turn, sent without copying them
// together. With segment_size > 0 every packet but the last must be exactly segment_size bytes.
struct OutgoingDatagram {
  const sockaddr_in* destination = nullptr;
  std::span<const iovec> iov;
  std::uint16_t segment_size = 0;
  std::uint8_t tos = 0;
};

// One received datagram in the socket's receive pool.
struct IncomingDatagram {
  std::span<const std::byte> bytes;
  std::uint8_t tos = 0;
};

class DataSocket {
 public:
  // Binds to ipv4:0. buffer_bytes is applied with SO_{SND,RCV}BUFFORCE when permitted (root),
  // otherwise with the capped SO_{SND,RCV}BUF.
  DataSocket(std::uint32_t ipv4, int buffer_bytes, std::size_t batch, std::size_t max_datagram);

  int fd() const { return fd_.get(); }
  std::uint32_t ipv4() const { return ipv4_; }
  std::uint16_t port() const { return port_; }

  // Sends as many of the entries as the kernel takes; returns how many (0 when the socket
  // buffer is full). Throws dlcp::Error(kSystem) on other errors. A kernel or device that refuses
  // GSO turns gso_enabled() off and the entries count as not sent, so the caller resends them.
  std::size_t send_batch(std::span<const OutgoingDatagram> datagrams);
  bool gso_enabled() const { return gso_enabled_; }

  // Receives up to one batch; the spans stay valid until the next call. Empty when nothing waits.
  std::span<const IncomingDatagram> receive_batch();

  // Zero-copy receive of large datagrams, in three steps on the datagram at the head of the
  // queue: peek its first header.size() bytes and learn its full size (nothing when no datagram
  // waits; an empty datagram is size 0), then either receive it with the payload landing directly
  // in `payload`, or discard it.
  std::optional<std::size_t> peek(std::span<std::byte> header);
  // Returns the datagram's size; `tos` receives its TOS byte.
  std::size_t receive_into(std::span<std::byte> header, std::span<std::byte> payload,
                           std::uint8_t& tos);
  void discard();

 private:
  Fd fd_;
  std::uint32_t ipv4_ = 0;
  std::uint16_t port_ = 0;
  bool gso_enabled_ = false;
  std::size_t batch_;
  std::size_t max_datagram_;
  // Send scratch, reused across calls (no allocation per batch).
  std::vector<mmsghdr> send_headers_;
  std::vector<std::byte> send_control_;
  // Receive pool.
  std::vector<std::byte> pool_;
  std::vector<mmsghdr> recv_headers_;
  std::vector<iovec> recv_iov_;
  std::vector<std::byte> recv_control_;
  std::vector<IncomingDatagram> received_;
};

}  // namespace dlcp::transport
