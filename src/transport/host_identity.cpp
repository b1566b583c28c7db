#include "transport/host_identity.hpp"

#include <sys/stat.h>

#include <fstream>

namespace dlcp::transport {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<HostIdentity> make_host_identity(const std::string& boot_id,
                                               std::uint64_t net_namespace_inode) {
  HostIdentity identity{};
  std::size_t nibbles = 0;
  for (const char c : boot_id) {
    if (c == '-' || c == '\n') continue;
    const int digit = hex_digit(c);
    if (digit < 0 || nibbles >= 32) return std::nullopt;
    identity[nibbles / 2] = static_cast<std::uint8_t>(identity[nibbles / 2] << 4 | digit);
    ++nibbles;
  }
  if (nibbles != 32) return std::nullopt;
  for (std::size_t i = 0; i < 8; ++i) {
    identity[16 + i] = static_cast<std::uint8_t>(net_namespace_inode >> (8 * i));
  }
  return identity;
}

std::optional<HostIdentity> read_host_identity() {
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!std::getline(file, boot_id)) return std::nullopt;
  struct stat net {};
  if (::stat("/proc/self/ns/net", &net) != 0) return std::nullopt;
  return make_host_identity(boot_id, static_cast<std::uint64_t>(net.st_ino));
}

}  // namespace dlcp::transport
