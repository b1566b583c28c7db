#include "thread_counter.hpp"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <fstream>
#include <string>

namespace {

std::atomic<std::uint64_t> g_threads_started{0};

using PthreadCreate = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

}  // namespace

// The executable's definition comes first in symbol lookup, so libstdc++'s std::thread reaches
// it; the C library's (or a sanitizer's) pthread_create is the next one.
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attributes,
                              void* (*start)(void*), void* argument) noexcept {
  static const auto next_create =
      reinterpret_cast<PthreadCreate>(::dlsym(RTLD_NEXT, "pthread_create"));
  g_threads_started.fetch_add(1, std::memory_order_relaxed);
  return next_create(thread, attributes, start, argument);
}

namespace dlcp::tools {

std::uint64_t threads_started_so_far() {
  return g_threads_started.load(std::memory_order_relaxed);
}

int threads_running() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  }
  return -1;
}

}  // namespace dlcp::tools
