// What this host can take in when RateControlOptions::receive_rate is left at 0: the link speed
// of the network devices its data sockets are bound to, as the kernel reports it in
// /sys/class/net/<interface>/speed (Mbit/s).
//
// Only devices backed by hardware (with a `device` entry in sysfs) count. Virtual devices report
// made-up speeds: a veth says 10 Gbit/s whatever the NIC behind a container's host is, a tun
// 10 Mbit/s; trusting them would cap every sender far below the real link. Loopback and those
// devices detect nothing, and the caller falls back to max_rate, which keeps the fair share out
// of the way rather than guessing. A host bound to the wildcard address takes in its peers'
// packets on whichever interfaces the routes to them go through (routes are taken to be
// symmetric), so for it the interfaces come from those routes, learnt as peers join.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <span>
#include <string>

namespace dlcp::transport {

inline const std::filesystem::path kSysfsNet = "/sys/class/net";

// The interface that owns `ipv4` (host byte order), or none (wildcard, not a local address).
std::optional<std::string> interface_of(std::uint32_t ipv4);

// Bytes/s of `interface` from `<sysfs_net>/<interface>/speed`; none for a virtual device (no
// `<sysfs_net>/<interface>/device`), and when the file is missing, unreadable, not a number, or
// reports no speed (-1, 0, as for a link that is down).
std::optional<double> interface_rate(const std::string& interface,
                                     const std::filesystem::path& sysfs_net = kSysfsNet);

// The sum of the rates of the distinct `interfaces` (a name may repeat: several sockets on one
// link); none if any rate is not known, since a partial sum would offer senders less than the
// host can take.
std::optional<double> links_rate(std::span<const std::string> interfaces,
                                 const std::filesystem::path& sysfs_net = kSysfsNet);

// links_rate of the interfaces owning `addresses`; none if one of them owns none.
std::optional<double> detect_receive_rate(std::span<const std::uint32_t> addresses,
                                          const std::filesystem::path& sysfs_net = kSysfsNet);

// The local address the kernel's routes pick to reach `peer_ipv4` (host byte order), whose
// interface (interface_of) the peer's packets come in through to a wildcard bind; none when no
// route leads there.
std::optional<std::uint32_t> local_address_toward(std::uint32_t peer_ipv4);

// What this host offers its senders in total: `configured` (RateControlOptions::receive_rate)
// when set, else the speed of the links its data sockets are bound to, else `fallback`
// (max_rate). With a wildcard bind the links are those the routes to the peers go through, learnt
// as each joins.
class ReceiveRate {
 public:
  ReceiveRate(double configured, double fallback, std::span<const std::uint32_t> data_addresses);
  double bytes_per_s() const { return rate_; }
  // A peer joined with these data addresses; true when the rate changed.
  bool learn(std::span<const sockaddr_in> peer_addresses);

 private:
  double rate_ = 0;
  double fallback_ = 0;
  bool by_route_ = false;
  std::set<std::string> links_;
  bool unknown_ = false;  // a peer with no route, or through no known interface
};

}  // namespace dlcp::transport
