#include "transport/link_rate.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <memory>
#include <set>
#include <system_error>
#include <utility>
#include <vector>

#include "common/fd.hpp"

namespace dlcp::transport {

std::optional<std::string> interface_of(std::uint32_t ipv4) {
  if (ipv4 == INADDR_ANY) return std::nullopt;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  const std::unique_ptr<ifaddrs, decltype(&::freeifaddrs)> owner(list, &::freeifaddrs);
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    if (ntohl(address->sin_addr.s_addr) == ipv4) return std::string(entry->ifa_name);
  }
  return std::nullopt;
}

std::optional<double> interface_rate(const std::string& interface,
                                     const std::filesystem::path& sysfs_net) {
  std::error_code ignored;
  if (!std::filesystem::exists(sysfs_net / interface / "device", ignored)) return std::nullopt;
  // Reading `speed` of a device without one fails with EINVAL; the stream then reads nothing.
  std::ifstream file(sysfs_net / interface / "speed");
  std::string text;
  if (!(file >> text)) return std::nullopt;
  long long mbit_per_s = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), mbit_per_s);
  if (error != std::errc{} || end != text.data() + text.size() || mbit_per_s <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(mbit_per_s) * 1e6 / 8.0;
}

std::optional<double> links_rate(std::span<const std::string> interfaces,
                                 const std::filesystem::path& sysfs_net) {
  const std::set<std::string> distinct(interfaces.begin(), interfaces.end());
  if (distinct.empty()) return std::nullopt;
  double total = 0;
  for (const auto& name : distinct) {
    const auto rate = interface_rate(name, sysfs_net);
    if (!rate) return std::nullopt;
    total += *rate;
  }
  return total;
}

std::optional<double> detect_receive_rate(std::span<const std::uint32_t> addresses,
                                          const std::filesystem::path& sysfs_net) {
  std::vector<std::string> interfaces;
  for (const std::uint32_t ipv4 : addresses) {
    auto name = interface_of(ipv4);
    if (!name) return std::nullopt;
    interfaces.push_back(std::move(*name));
  }
  return links_rate(interfaces, sysfs_net);
}

std::optional<std::uint32_t> local_address_toward(std::uint32_t peer_ipv4) {
  // connect() on a UDP socket sends nothing: it picks the route and, with it, a source address.
  const Fd probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!probe.valid()) return std::nullopt;
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_port = htons(9);  // any port: nothing is sent
  peer.sin_addr.s_addr = htonl(peer_ipv4);
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&peer), sizeof(peer)) != 0) {
    return std::nullopt;
  }
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  if (::getsockname(probe.get(), reinterpret_cast<sockaddr*>(&local), &length) != 0) {
    return std::nullopt;
  }
  const std::uint32_t address = ntohl(local.sin_addr.s_addr);
  if (address == INADDR_ANY) return std::nullopt;
  return address;
}

ReceiveRate::ReceiveRate(double configured, double fallback,
                         std::span<const std::uint32_t> data_addresses)
    : fallback_(fallback) {
  const bool wildcard =
      std::find(data_addresses.begin(), data_addresses.end(), INADDR_ANY) != data_addresses.end();
  if (configured > 0) {
    rate_ = configured;
  } else if (wildcard) {
    by_route_ = true;
    rate_ = fallback;  // until the first peer joins
  } else {
    rate_ = detect_receive_rate(data_addresses).value_or(fallback);
  }
}

bool ReceiveRate::learn(std::span<const sockaddr_in> peer_addresses) {
  if (!by_route_) return false;
  for (const auto& address : peer_addresses) {
    const std::uint32_t ipv4 = ntohl(address.sin_addr.s_addr);
    const auto local = local_address_toward(ipv4);
    // A peer on this host is reached through loopback, whatever interface owns its address.
    if (local == ipv4) continue;
    auto link = local ? interface_of(*local) : std::nullopt;
    if (link) {
      links_.insert(std::move(*link));
    } else {
      unknown_ = true;
    }
  }
  const std::vector<std::string> links(links_.begin(), links_.end());
  const auto rate = unknown_ ? std::nullopt : links_rate(links);
  const double before = rate_;
  rate_ = rate.value_or(fallback_);
  return rate_ != before;
}

}  // namespace dlcp::transport
