// Detecting what this host can take in from the kernel's link speeds, against a fake
// /sys/class/net written into a temporary directory.
#include "transport/link_rate.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace dlcp::transport {
namespace {

namespace fs = std::filesystem;

constexpr std::uint32_t kLoopbackIpv4 = 0x7f000001;  // 127.0.0.1

class FakeSysfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("dlcp-link-rate-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  // A hardware-backed device: sysfs links it to its bus device.
  void set_speed(const std::string& interface, const std::string& text) {
    set_virtual_speed(interface, text);
    fs::create_directories(root_ / interface / "device");
  }
  void set_virtual_speed(const std::string& interface, const std::string& text) {
    fs::create_directories(root_ / interface);
    std::ofstream(root_ / interface / "speed") << text << "\n";
  }

  fs::path root_;
};

TEST_F(FakeSysfs, SpeedInMegabitsBecomesBytesPerSecond) {
  set_speed("eth0", "25000");
  set_speed("eth1", "100");
  EXPECT_DOUBLE_EQ(*interface_rate("eth0", root_), 3.125e9);
  EXPECT_DOUBLE_EQ(*interface_rate("eth1", root_), 12.5e6);
}

TEST_F(FakeSysfs, NoSpeedIsNotGuessed) {
  set_speed("down", "-1");  // what a link without carrier reports
  set_speed("zero", "0");
  set_speed("words", "unknown");
  set_speed("suffix", "10G");
  fs::create_directories(root_ / "empty");
  std::ofstream(root_ / "empty" / "speed");
  for (const char* name : {"down", "zero", "words", "suffix", "empty", "absent"}) {
    EXPECT_FALSE(interface_rate(name, root_).has_value()) << name;
  }
}

TEST_F(FakeSysfs, VirtualDevicesSpeedsAreNotTrusted) {
  set_virtual_speed("veth0", "10000");  // a container's veth, whatever the host's NIC
  set_virtual_speed("tun0", "10");
  EXPECT_FALSE(interface_rate("veth0", root_).has_value());
  EXPECT_FALSE(interface_rate("tun0", root_).has_value());
}

TEST_F(FakeSysfs, DistinctLinksAreSummedOnce) {
  set_speed("eth0", "10000");
  set_speed("eth1", "40000");
  const std::vector<std::string> two_links{"eth0", "eth1", "eth0", "eth1"};
  EXPECT_DOUBLE_EQ(*links_rate(two_links, root_), 6.25e9);
  const std::vector<std::string> one_link{"eth0", "eth0"};
  EXPECT_DOUBLE_EQ(*links_rate(one_link, root_), 1.25e9);
}

TEST_F(FakeSysfs, OneUnknownLinkMakesTheSumUnknown) {
  set_speed("eth0", "10000");
  set_speed("eth1", "-1");
  const std::vector<std::string> links{"eth0", "eth1"};
  EXPECT_FALSE(links_rate(links, root_).has_value());
  EXPECT_FALSE(links_rate({}, root_).has_value());
}

TEST_F(FakeSysfs, AddressesAreMappedToTheirInterface) {
  const auto loopback = interface_of(kLoopbackIpv4);
  ASSERT_TRUE(loopback.has_value());
  set_speed(*loopback, "1000");
  const std::vector<std::uint32_t> addresses{kLoopbackIpv4, kLoopbackIpv4};
  EXPECT_DOUBLE_EQ(*detect_receive_rate(addresses, root_), 125e6);
}

TEST_F(FakeSysfs, WildcardOrForeignAddressDetectsNothing) {
  set_speed("lo", "1000");
  EXPECT_FALSE(interface_of(INADDR_ANY).has_value());
  const std::uint32_t documentation_only = 0xc0000201;  // 192.0.2.1, assigned to no host
  EXPECT_FALSE(interface_of(documentation_only).has_value());
  const std::vector<std::uint32_t> addresses{kLoopbackIpv4, documentation_only};
  EXPECT_FALSE(detect_receive_rate(addresses, root_).has_value());
}

TEST(LinkRate, RouteToAPeerNamesTheInterfaceItGoesThrough) {
  // What a wildcard-bound host learns from its peers' addresses: every 127/8 address is routed
  // through loopback, with 127.0.0.1 as the source.
  EXPECT_EQ(local_address_toward(kLoopbackIpv4), kLoopbackIpv4);
  const std::uint32_t other_loopback = 0x7f000002;  // 127.0.0.2
  EXPECT_EQ(local_address_toward(other_loopback), kLoopbackIpv4);
  EXPECT_EQ(interface_of(*local_address_toward(other_loopback)), "lo");
}

TEST(LinkRate, RealLoopbackReportsNoSpeed) {
  // Loopback is virtual and has no speed, so the transport falls back to max_rate.
  const auto loopback = interface_of(kLoopbackIpv4);
  ASSERT_TRUE(loopback.has_value());
  EXPECT_EQ(*loopback, "lo");
  EXPECT_FALSE(interface_rate(*loopback).has_value());
}

}  // namespace
}  // namespace dlcp::transport
