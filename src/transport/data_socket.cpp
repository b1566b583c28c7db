#include "transport/data_socket.hpp"

#include <netinet/ip.h>
#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

#include "common/net.hpp"
#include "dlcp/error.hpp"

namespace dlcp::transport {
namespace {

constexpr std::size_t kTosControlSpace = CMSG_SPACE(sizeof(int));
constexpr std::size_t kSendControlSpace = kTosControlSpace + CMSG_SPACE(sizeof(std::uint16_t));

void set_buffer(int fd, int forced, int capped, int bytes, const char* what) {
  if (::setsockopt(fd, SOL_SOCKET, forced, &bytes, sizeof(bytes)) == 0) return;
  net::set_int_option(fd, SOL_SOCKET, capped, bytes, what);
}

}  // namespace

DataSocket::DataSocket(std::uint32_t ipv4, int buffer_bytes, std::size_t batch,
                       std::size_t max_datagram)
    : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)),
      ipv4_(ipv4),
      batch_(batch),
      max_datagram_(max_datagram) {
  if (!fd_.valid()) throw Error(ErrorCode::kSystem, -1, net::errno_message("socket(UDP)", errno));
  set_buffer(fd_.get(), SO_SNDBUFFORCE, SO_SNDBUF, buffer_bytes, "SO_SNDBUF");
  set_buffer(fd_.get(), SO_RCVBUFFORCE, SO_RCVBUF, buffer_bytes, "SO_RCVBUF");
  net::set_int_option(fd_.get(), IPPROTO_IP, IP_RECVTOS, 1, "IP_RECVTOS");
  // Never fragment: a packet larger than the path MTU is an error, not a silent slowdown.
  net::set_int_option(fd_.get(), IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO, "IP_MTU_DISCOVER");
  const sockaddr_in address = net::make_sockaddr(ipv4, 0);
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw Error(ErrorCode::kSystem, -1,
                net::errno_message("cannot bind data socket to " + net::describe(ipv4, 0), errno));
  }
  port_ = ntohs(net::local_address(fd_.get()).sin_port);

  // UDP GSO is there when the kernel knows the option.
  int segment = 0;
  socklen_t segment_length = sizeof(segment);
  gso_enabled_ = ::getsockopt(fd_.get(), SOL_UDP, UDP_SEGMENT, &segment, &segment_length) == 0;

  send_headers_.resize(batch_);
  send_control_.resize(kSendControlSpace * batch_);
  pool_.resize(max_datagram_ * batch_);
  recv_headers_.resize(batch_);
  recv_iov_.resize(batch_);
  recv_control_.resize(kTosControlSpace * batch_);
  received_.resize(batch_);
}

std::size_t DataSocket::send_batch(std::span<const OutgoingDatagram> datagrams) {
  const std::size_t count = std::min(datagrams.size(), batch_);
  std::memset(send_control_.data(), 0, kSendControlSpace * count);
  for (std::size_t i = 0; i < count; ++i) {
    const OutgoingDatagram& datagram = datagrams[i];
    msghdr& header = send_headers_[i].msg_hdr;
    header = {};
    header.msg_name = const_cast<sockaddr_in*>(datagram.destination);
    header.msg_namelen = sizeof(sockaddr_in);
    header.msg_iov = const_cast<iovec*>(datagram.iov.data());
    header.msg_iovlen = datagram.iov.size();
    header.msg_control = &send_control_[kSendControlSpace * i];
    header.msg_controllen = datagram.segment_size > 0 ? kSendControlSpace : kTosControlSpace;
    cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
    cmsg->cmsg_level = IPPROTO_IP;
    cmsg->cmsg_type = IP_TOS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    const int tos = datagram.tos;
    std::memcpy(CMSG_DATA(cmsg), &tos, sizeof(tos));
    if (datagram.segment_size > 0) {
      cmsg = CMSG_NXTHDR(&header, cmsg);
      cmsg->cmsg_level = SOL_UDP;
      cmsg->cmsg_type = UDP_SEGMENT;
      cmsg->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
      std::memcpy(CMSG_DATA(cmsg), &datagram.segment_size, sizeof(std::uint16_t));
    }
  }
  const int sent = ::sendmmsg(fd_.get(), send_headers_.data(), static_cast<unsigned>(count), 0);
  if (sent >= 0) return static_cast<std::size_t>(sent);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS) return 0;
  // ECONNREFUSED reports an earlier ICMP port-unreachable: the peer's socket is gone. The
  // control channel is the authority on peer liveness, so treat it as a dropped batch.
  if (errno == ECONNREFUSED) return count;
  if ((errno == EINVAL || errno == EIO || errno == EOPNOTSUPP) && gso_enabled_ &&
      datagrams.front().segment_size > 0) {
    gso_enabled_ = false;  // the route's device cannot segment: one datagram per packet
    return 0;
  }
  throw Error(ErrorCode::kSystem, -1, net::errno_message("sendmmsg", errno));
}

std::span<const IncomingDatagram> DataSocket::receive_batch() {
  for (std::size_t i = 0; i < batch_; ++i) {
    recv_iov_[i] = {&pool_[i * max_datagram_], max_datagram_};
    msghdr& header = recv_headers_[i].msg_hdr;
    header = {};
    header.msg_iov = &recv_iov_[i];
    header.msg_iovlen = 1;
    header.msg_control = &recv_control_[kTosControlSpace * i];
    header.msg_controllen = kTosControlSpace;
  }
  const int got = ::recvmmsg(fd_.get(), recv_headers_.data(), static_cast<unsigned>(batch_),
                             MSG_DONTWAIT, nullptr);
  if (got <= 0) {
    if (got == 0 || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED) return {};
    throw Error(ErrorCode::kSystem, -1, net::errno_message("recvmmsg", errno));
  }
  for (int i = 0; i < got; ++i) {
    msghdr& header = recv_headers_[i].msg_hdr;
    std::uint8_t tos = 0;
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr;
         cmsg = CMSG_NXTHDR(&header, cmsg)) {
      if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS) {
        std::memcpy(&tos, CMSG_DATA(cmsg), 1);
      }
    }
    // A datagram longer than the pool slot is truncated (MSG_TRUNC); keep the true length out of
    // reach so the decoder sees a length mismatch rather than a partial packet.
    const bool truncated = (header.msg_flags & MSG_TRUNC) != 0;
    const std::size_t length = truncated ? 0 : recv_headers_[i].msg_len;
    received_[i] = {std::span<const std::byte>(&pool_[i * max_datagram_], length), tos};
  }
  return std::span<const IncomingDatagram>(received_.data(), static_cast<std::size_t>(got));
}

std::optional<std::size_t> DataSocket::peek(std::span<std::byte> header) {
  // MSG_TRUNC makes a datagram socket return the datagram's full length.
  const ssize_t n =
      ::recv(fd_.get(), header.data(), header.size(), MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  if (n >= 0) return static_cast<std::size_t>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNREFUSED || errno == EINTR) {
    return std::nullopt;
  }
  throw Error(ErrorCode::kSystem, -1, net::errno_message("recv(MSG_PEEK)", errno));
}

std::size_t DataSocket::receive_into(std::span<std::byte> header, std::span<std::byte> payload,
                                     std::uint8_t& tos) {
  iovec iov[2] = {{header.data(), header.size()}, {payload.data(), payload.size()}};
  alignas(cmsghdr) std::byte control[kTosControlSpace];
  msghdr message{};
  message.msg_iov = iov;
  message.msg_iovlen = 2;
  message.msg_control = control;
  message.msg_controllen = sizeof(control);
  const ssize_t n = ::recvmsg(fd_.get(), &message, MSG_DONTWAIT | MSG_TRUNC);
  if (n < 0) throw Error(ErrorCode::kSystem, -1, net::errno_message("recvmsg", errno));
  tos = 0;
  for (cmsghdr* cmsg = CMSG_FIRSTHDR(&message); cmsg != nullptr;
       cmsg = CMSG_NXTHDR(&message, cmsg)) {
    if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS)
      std::memcpy(&tos, CMSG_DATA(cmsg), 1);
  }
  return static_cast<std::size_t>(n);
}

void DataSocket::discard() {
  std::byte ignored;
  [[maybe_unused]] const ssize_t n = ::recv(fd_.get(), &ignored, 0, MSG_DONTWAIT | MSG_TRUNC);
}

}  // namespace dlcp::transport
