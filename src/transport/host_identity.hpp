// Which ranks share a host, as the local path needs it (local_path.hpp): the same running kernel
// (its boot id) and the same network namespace (its inode), because the abstract Unix socket that
// hands the segments over is only reachable within one network namespace.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "wire/control.hpp"

namespace dlcp::transport {

using HostIdentity = std::array<std::uint8_t, wire::kHostIdentityBytes>;

// 16 bytes of the boot id, then the namespace inode (8 bytes, little-endian); none where /proc
// does not say (the local path is then off).
std::optional<HostIdentity> read_host_identity();

// The same from given texts: the boot id as /proc/sys/kernel/random/boot_id prints it (a UUID)
// and the namespace's inode; none for a boot id that is not a UUID.
std::optional<HostIdentity> make_host_identity(const std::string& boot_id,
                                               std::uint64_t net_namespace_inode);

}  // namespace dlcp::transport
