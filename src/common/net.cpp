#include "common/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "dlcp/error.hpp"

namespace dlcp::net {

std::uint32_t resolve_ipv4(const std::string& host) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, host.c_str(), &parsed) == 1) return ntohl(parsed.s_addr);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0 || found == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, -1,
                "cannot resolve host '" + host + "' to an IPv4 address: " + ::gai_strerror(rc));
  }
  const auto* address = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  const std::uint32_t ipv4 = ntohl(address->sin_addr.s_addr);
  ::freeaddrinfo(found);
  return ipv4;
}

sockaddr_in make_sockaddr(std::uint32_t ipv4, std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(ipv4);
  address.sin_port = htons(port);
  return address;
}

std::string describe(std::uint32_t ipv4, std::uint16_t port) {
  in_addr address{};
  address.s_addr = htonl(ipv4);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &address, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(port);
}

std::string describe(const sockaddr_in& address) {
  return describe(ntohl(address.sin_addr.s_addr), ntohs(address.sin_port));
}

std::string errno_message(const std::string& what, int error) {
  return what + ": " + std::strerror(error);
}

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw Error(ErrorCode::kSystem, -1, errno_message("fcntl(O_NONBLOCK)", errno));
  }
}

void set_int_option(int fd, int level, int name, int value, const char* what) {
  if (::setsockopt(fd, level, name, &value, sizeof(value)) != 0) {
    throw Error(ErrorCode::kSystem, -1,
                errno_message(std::string("setsockopt(") + what + ")", errno));
  }
}

sockaddr_in local_address(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    throw Error(ErrorCode::kSystem, -1, errno_message("getsockname", errno));
  }
  return address;
}

Fd listen_tcp(std::uint32_t ipv4, std::uint16_t port) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) throw Error(ErrorCode::kSystem, -1, errno_message("socket(TCP)", errno));
  set_int_option(fd.get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR");
  const sockaddr_in address = make_sockaddr(ipv4, port);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw Error(ErrorCode::kSystem, -1,
                errno_message("cannot bind control listener to " + describe(ipv4, port), errno));
  }
  if (::listen(fd.get(), 128) != 0) {
    throw Error(ErrorCode::kSystem, -1, errno_message("listen", errno));
  }
  return fd;
}

}  // namespace dlcp::net
