// run_store_server: the body of `dlcp store-server`.
#include <csignal>
#include <cstdio>

#include "dlcp/store.hpp"

namespace dlcp {

int run_store_server(const std::string& host, std::uint16_t port) {
  // Block the signals before the server thread starts, so that it inherits the mask and
  // sigwait below is the only place they are delivered.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  TcpStoreServer server(host, port);
  std::printf("dlcp store server listening on %s\n", server.address().c_str());
  std::fflush(stdout);
  int received = 0;
  while (sigwait(&signals, &received) != 0) {
  }
  server.stop();
  return 0;
}

}  // namespace dlcp
