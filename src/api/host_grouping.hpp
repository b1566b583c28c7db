// Which workers share a host, learnt once at rendezvous through the store: every worker publishes
// its host id (CommunicatorOptions::host_id, else the identity the local path uses: the kernel's
// boot id and network namespace) and reads everyone's. Independent of the transport's local
// path, so hierarchical collectives group ranks alike whether that path is on or not.
#pragma once

#include <string>

#include "collectives/host_layout.hpp"
#include "dlcp/store.hpp"

namespace dlcp::api {

// The kernel's boot id and network namespace in hex, or the host name where /proc does not say.
std::string detected_host_id();

// Collective over the workers 0 .. workers-1: publishes `host_id` (detected_host_id() if empty)
// under `prefix` and returns the layout of every worker's.
collectives::HostLayout learn_host_layout(Store& store, const std::string& prefix, int rank,
                                          int workers, const std::string& host_id);

}  // namespace dlcp::api
