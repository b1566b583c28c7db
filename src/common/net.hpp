// Small helpers around BSD sockets: address resolution, descriptions, socket options.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

#include "common/fd.hpp"

namespace dlcp::net {

// Resolves a host name or dotted quad to an IPv4 address (host byte order). Throws
// dlcp::Error(kInvalidArgument) naming the host when it cannot be resolved.
std::uint32_t resolve_ipv4(const std::string& host);
sockaddr_in make_sockaddr(std::uint32_t ipv4, std::uint16_t port);
std::string describe(std::uint32_t ipv4, std::uint16_t port);
std::string describe(const sockaddr_in& address);
// "<what>: <strerror(errno)>"
std::string errno_message(const std::string& what, int error);

// Throws dlcp::Error(kSystem) with errno's text when a socket call fails.
void set_nonblocking(int fd);
void set_int_option(int fd, int level, int name, int value, const char* what);
sockaddr_in local_address(int fd);

// Creates a TCP listener on host:port (port 0 = ephemeral).
Fd listen_tcp(std::uint32_t ipv4, std::uint16_t port);

}  // namespace dlcp::net
