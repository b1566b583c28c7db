#include "tap_device.hpp"

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "in_namespace.hpp"

namespace dlcp::testbed {

int open_tap(const std::string& netns, const std::string& interface) {
  if (interface.empty() || interface.size() >= IFNAMSIZ) {
    throw std::runtime_error("TAP device name '" + interface + "' must be 1-15 characters");
  }
  int fd = -1;
  run_in_namespace(netns, [&] {
    fd = ::open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      const int error = errno;
      throw std::runtime_error(
          error == ENOENT || error == ENODEV || error == ENXIO
              ? std::string("the long link needs TAP devices, but /dev/net/tun is missing (load "
                            "the tun module, or create it with `mknod /dev/net/tun c 10 200`)")
              : "cannot open /dev/net/tun for the long link: " + std::string(std::strerror(error)) +
                    (error == EACCES || error == EPERM ? " (it needs root)" : ""));
    }
    ifreq request{};
    request.ifr_flags = IFF_TAP | IFF_NO_PI;
    std::memcpy(request.ifr_name, interface.c_str(), interface.size());
    if (::ioctl(fd, TUNSETIFF, &request) != 0) {
      const int error = errno;
      ::close(fd);
      fd = -1;
      throw std::runtime_error("cannot create TAP device " + interface + " in " + netns + ": " +
                               std::strerror(error) +
                               (error == EPERM ? " (it needs root: CAP_NET_ADMIN)" : ""));
    }
  });
  return fd;
}

}  // namespace dlcp::testbed
