// Tools for tests that play an attacker or a broken peer on loopback: find a transport's data
// socket (from /proc), send arbitrary datagrams to it, and craft data packets with the wire
// encoder that look exactly like a real sender's.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "transport_fixture.hpp"
#include "wire/data_header.hpp"

namespace dlcp::test {

// Inodes of every socket this process has open, from /proc/self/fd.
inline std::set<std::uint64_t> own_socket_inodes() {
  std::set<std::uint64_t> inodes;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return inodes;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string path = std::string("/proc/self/fd/") + entry->d_name;
    std::array<char, 128> target{};
    const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
    if (n <= 0) continue;
    const std::string link(target.data(), static_cast<std::size_t>(n));
    if (link.rfind("socket:[", 0) == 0) inodes.insert(std::stoull(link.substr(8)));
  }
  ::closedir(dir);
  return inodes;
}

struct UdpSocketInfo {
  std::uint64_t inode = 0;
  std::uint16_t port = 0;
  std::uint64_t drops = 0;  // datagrams the kernel dropped at this socket (buffer full)
  std::uint32_t ipv4 = 0;   // local address, host byte order
};

// IPv4 UDP sockets of the whole system, from /proc/net/udp.
inline std::vector<UdpSocketInfo> udp_sockets() {
  std::vector<UdpSocketInfo> sockets;
  std::ifstream table("/proc/net/udp");
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode, refs,
        pointer, drops;
    fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
        timeout >> inode >> refs >> pointer >> drops;
    const auto colon = local.find(':');
    if (colon == std::string::npos || drops.empty()) continue;
    // The address is the raw network-order word printed in hex.
    const auto raw = static_cast<std::uint32_t>(std::stoul(local.substr(0, colon), nullptr, 16));
    sockets.push_back({std::stoull(inode),
                       static_cast<std::uint16_t>(std::stoul(local.substr(colon + 1), nullptr, 16)),
                       std::stoull(drops), ntohl(raw)});
  }
  return sockets;
}

inline std::optional<UdpSocketInfo> udp_socket(std::uint64_t inode) {
  for (const auto& socket : udp_sockets()) {
    if (socket.inode == inode) return socket;
  }
  return std::nullopt;
}

// Creates a transport and finds its (single) data socket: the one UDP socket of this process
// that did not exist before.
inline std::unique_ptr<Transport> create_and_find_data_socket(const TransportOptions& options,
                                                              UdpSocketInfo& data_socket) {
  const auto before = own_socket_inodes();
  auto transport = Transport::create(options);
  std::vector<UdpSocketInfo> fresh;
  for (const std::uint64_t inode : own_socket_inodes()) {
    if (before.contains(inode)) continue;
    if (auto socket = udp_socket(inode)) fresh.push_back(*socket);
  }
  if (fresh.size() != 1) {
    ADD_FAILURE() << "expected exactly one new UDP socket, found " << fresh.size();
    return transport;
  }
  data_socket = fresh.front();
  return transport;
}

// A plain UDP socket on loopback that sends whatever it is given to one port.
class Injector {
 public:
  explicit Injector(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) {
    destination_.sin_family = AF_INET;
    destination_.sin_port = htons(port);
    destination_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  ~Injector() { ::close(fd_); }
  Injector(const Injector&) = delete;
  Injector& operator=(const Injector&) = delete;

  bool ok() const { return fd_ >= 0; }
  void send(std::span<const std::byte> bytes) {
    const ssize_t n =
        ::sendto(fd_, bytes.data(), bytes.size(), 0,
                 reinterpret_cast<const sockaddr*>(&destination_), sizeof(destination_));
    if (n != static_cast<ssize_t>(bytes.size())) ++failures_;
  }
  int failures() const { return failures_; }

 private:
  int fd_;
  sockaddr_in destination_{};
  int failures_ = 0;
};

// A data packet with header h (payload_bytes is set from the payload) and payload.
inline std::vector<std::byte> data_packet(wire::DataHeader h, std::span<const float> payload) {
  h.payload_bytes = static_cast<std::uint16_t>(payload.size() * wire::kFloatBytes);
  std::vector<std::byte> bytes(wire::kDataHeaderBytes + payload.size() * wire::kFloatBytes);
  wire::encode_data_header(h, bytes);
  wire::store_floats(payload, std::span<std::byte>(bytes).subspan(wire::kDataHeaderBytes));
  return bytes;
}

// The header the real sender would put on packet seq of a message of `total` floats.
inline wire::DataHeader valid_header(std::uint64_t token, std::uint16_t from, std::uint16_t to,
                                     std::uint64_t id, std::uint32_t total, std::uint32_t seq,
                                     std::size_t stride = kTestStride) {
  wire::DataHeader h;
  h.job_token = token;
  h.src_rank = from;
  h.dst_rank = to;
  h.message_id = id;
  h.total_floats = total;
  h.stride_floats = static_cast<std::uint16_t>(stride);
  h.seq = seq;
  h.priority_class = 0;
  return h;
}

// The values packet seq of `values` carries.
inline std::span<const float> packet_values(const std::vector<float>& values, std::uint32_t seq,
                                            std::size_t stride = kTestStride) {
  const std::size_t first = std::size_t{seq} * stride;
  return std::span<const float>(values).subspan(first, std::min(stride, values.size() - first));
}

}  // namespace dlcp::test
