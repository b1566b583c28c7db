// Environment-driven rendezvous: which rank am I, how many are we, and which store do we meet in.
//
//   auto rdv = dlcp::from_environment();   // throws dlcp::Error(kInvalidArgument) naming the
//   rdv.store->set("rank" + ...);           // variable and value that is missing or wrong
//
// Variables (docs/rendezvous.md has the full story):
//   DLCP_RANK, DLCP_WORLD_SIZE      this rank and the world size (else torchrun's RANK, WORLD_SIZE)
//   DLCP_STORE                      tcp://host:port or file:///absolute/directory
//                                   (else torchrun's MASTER_ADDR and MASTER_PORT, see below)
//   DLCP_STORE_SERVER               1 (default): rank 0 serves a tcp store; 0: an external
//                                   `dlcp store-server` serves it
//   DLCP_STORE_BIND_HOST            where rank 0's server listens (default: the store's host)
//   DLCP_STORE_PORT_OFFSET          without DLCP_STORE the store is at MASTER_ADDR on
//                                   MASTER_PORT + this offset (default 1: torchrun's own store,
//                                   and torch.distributed's env:// store, hold MASTER_PORT)
//   DLCP_STORE_TIMEOUT_MS           connect and blocking-call timeout (default 300000)
// Variables set to the empty string count as unset.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "dlcp/store.hpp"

namespace dlcp {

using EnvironmentVariables = std::map<std::string, std::string>;

// What the environment asks for, before any socket or file is touched.
struct RendezvousSpec {
  enum class Kind { kTcp, kFile };

  int rank = 0;
  int world_size = 1;
  Kind kind = Kind::kTcp;
  std::string host;        // tcp: the server's host, as every rank dials it
  std::uint16_t port = 0;  // tcp: the server's port
  bool serve = false;      // tcp: this rank runs the server
  std::string bind_host;   // tcp: where the server listens when this rank serves it
  std::string directory;   // file: the shared directory
  std::chrono::milliseconds timeout{300000};
  std::string describe;  // one line for logs: rank, store, and which variables said so
};

struct RendezvousConfig {
  int rank = 0;
  int world_size = 1;
  std::unique_ptr<Store> store;
  std::string describe;
};

// Validates the variables; throws dlcp::Error(kInvalidArgument) whose message names the
// variable and its value for anything missing, malformed or contradictory.
RendezvousSpec parse_rendezvous_environment(const EnvironmentVariables& environment);

// Builds the store a spec describes: starts the server on the serving rank, then connects
// (retrying until spec.timeout), or opens the shared directory.
RendezvousConfig connect_rendezvous(const RendezvousSpec& spec);

// parse_rendezvous_environment + connect_rendezvous, on the given variables or on the process
// environment (getenv of the variables listed above).
RendezvousConfig from_environment(const EnvironmentVariables& environment);
RendezvousConfig from_environment();

}  // namespace dlcp
