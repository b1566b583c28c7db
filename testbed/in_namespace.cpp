#include "in_namespace.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>

namespace dlcp::testbed {

void run_in_namespace(const std::string& name, const std::function<void()>& work) {
  const std::string path = "/run/netns/" + name;
  std::exception_ptr failure;
  std::thread worker([&] {
    try {
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) {
        throw std::runtime_error("cannot open network namespace " + path + ": " +
                                 std::strerror(errno));
      }
      const int entered = ::setns(fd, CLONE_NEWNET);
      const int error = errno;
      ::close(fd);
      if (entered != 0) {
        throw std::runtime_error("cannot enter network namespace " + name + ": " +
                                 std::strerror(error));
      }
      work();
    } catch (...) {
      failure = std::current_exception();
    }
  });
  worker.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace dlcp::testbed
