// The C API: translates handles and status codes; every C++ exception stops here.
#include "dlcp/c_api.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include "dlcp/communicator.hpp"
#include "dlcp/rendezvous.hpp"
#include "dlcp/store.hpp"

struct dlcp_comm {
  std::unique_ptr<dlcp::Store> store;  // kept: rank 0 may be serving it to the others
  std::unique_ptr<dlcp::Communicator> communicator;
};

struct dlcp_work {
  dlcp::Work work;
};

namespace {

thread_local std::string g_last_error;

dlcp_status status_of(dlcp::ErrorCode code) {
  switch (code) {
    case dlcp::ErrorCode::kInvalidArgument:
      return DLCP_ERR_INVALID_ARGUMENT;
    case dlcp::ErrorCode::kSystem:
      return DLCP_ERR_SYSTEM;
    case dlcp::ErrorCode::kConnect:
      return DLCP_ERR_CONNECT;
    case dlcp::ErrorCode::kPeerLost:
      return DLCP_ERR_PEER_LOST;
    case dlcp::ErrorCode::kDeadline:
      return DLCP_ERR_DEADLINE;
    case dlcp::ErrorCode::kAborted:
      return DLCP_ERR_ABORTED;
    case dlcp::ErrorCode::kProtocol:
      return DLCP_ERR_PROTOCOL;
  }
  return DLCP_ERR_INTERNAL;
}

template <class Fn>
dlcp_status guarded(Fn&& fn) {
  try {
    g_last_error.clear();
    fn();
    return DLCP_OK;
  } catch (const dlcp::Error& e) {
    g_last_error = e.what();
    return status_of(e.code());
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return DLCP_ERR_INTERNAL;
  } catch (...) {
    g_last_error = "unknown error";
    return DLCP_ERR_INTERNAL;
  }
}

void require(bool condition, const char* what) {
  if (!condition) throw dlcp::Error(dlcp::ErrorCode::kInvalidArgument, -1, what);
}

// std::stoi of an environment variable, refusing what it cannot read with Error(kInvalidArgument)
// naming the variable (its own exceptions would read as an internal error).
int environment_integer(const char* variable, const char* value) {
  try {
    return std::stoi(value);
  } catch (const std::logic_error&) {  // std::invalid_argument, std::out_of_range
    throw dlcp::Error(dlcp::ErrorCode::kInvalidArgument, -1,
                      std::string(variable) + "='" + value + "' is not an int");
  }
}

dlcp::CollectiveOptions to_options(const dlcp_collective_options* in) {
  dlcp::CollectiveOptions out;
  if (in == nullptr) return out;
  out.layer = in->layer;
  out.num_layers = in->num_layers;
  out.loss_budget = in->loss_budget;
  out.broadcast_loss_budget = in->broadcast_loss_budget;
  require(in->op == DLCP_OP_SUM || in->op == DLCP_OP_AVERAGE, "unknown reduce op");
  out.op = in->op == DLCP_OP_AVERAGE ? dlcp::ReduceOp::kAverage : dlcp::ReduceOp::kSum;
  switch (in->algorithm) {
    case DLCP_ALGO_DEFAULT:
      break;
    case DLCP_ALGO_RING:
      out.algorithm = dlcp::Algorithm::kRing;
      break;
    case DLCP_ALGO_TRANSPOSE:
      out.algorithm = dlcp::Algorithm::kTranspose;
      break;
    case DLCP_ALGO_PS:
      out.algorithm = dlcp::Algorithm::kParameterServer;
      break;
    default:
      require(false, "unknown algorithm");
  }
  out.aggregation =
      in->zero_fill != 0 ? dlcp::Aggregation::kZeroFill : dlcp::Aggregation::kUnbiased;
  out.deadline = std::chrono::milliseconds(in->deadline_ms);
  switch (in->wire) {
    case DLCP_WIRE_FP32:
      break;
    case DLCP_WIRE_BF16:
      out.wire = dlcp::WireDtype::kBfloat16;
      break;
    case DLCP_WIRE_FP16:
      out.wire = dlcp::WireDtype::kFloat16;
      break;
    default:
      require(false, "unknown wire dtype");
  }
  require((in->error_feedback == nullptr) == (in->error_feedback_count == 0),
          "error_feedback and error_feedback_count must be set together");
  if (in->error_feedback != nullptr) {
    out.error_feedback = std::span<float>(in->error_feedback, in->error_feedback_count);
  }
  out.hadamard_rotation = in->hadamard_rotation != 0;
  switch (in->topology) {
    case DLCP_TOPOLOGY_DEFAULT:
      break;
    case DLCP_TOPOLOGY_AUTO:
      out.topology = dlcp::Topology::kAuto;
      break;
    case DLCP_TOPOLOGY_FLAT:
      out.topology = dlcp::Topology::kFlat;
      break;
    case DLCP_TOPOLOGY_HIERARCHICAL:
      out.topology = dlcp::Topology::kHierarchical;
      break;
    default:
      require(false, "unknown topology");
  }
  out.validate();  // the ranges: layer, budgets, deadline
  return out;
}

dlcp::CommunicatorOptions communicator_options(dlcp_algorithm algorithm, int servers) {
  dlcp::CommunicatorOptions options;
  if (algorithm == DLCP_ALGO_TRANSPOSE) options.algorithm = dlcp::Algorithm::kTranspose;
  if (algorithm == DLCP_ALGO_PS) options.algorithm = dlcp::Algorithm::kParameterServer;
  options.servers = servers;
  return options;
}

dlcp_status submit(dlcp_work** work, const std::function<dlcp::Work()>& start) {
  return guarded([&] {
    require(work != nullptr, "work must not be NULL");
    *work = nullptr;
    auto handle = std::make_unique<dlcp_work>();
    handle->work = start();
    *work = handle.release();
  });
}

}  // namespace

extern "C" {

const char* dlcp_last_error(void) {
  return g_last_error.c_str();
}

void dlcp_collective_options_init(dlcp_collective_options* options) {
  if (options == nullptr) return;
  *options = {};
  options->num_layers = 1;
  options->deadline_ms = 30000;
}

dlcp_status dlcp_comm_create_from_env(dlcp_comm** comm) {
  return guarded([&] {
    require(comm != nullptr, "comm must not be NULL");
    *comm = nullptr;
    auto rendezvous = dlcp::from_environment();
    const char* algorithm = std::getenv("DLCP_ALGORITHM");
    const char* servers = std::getenv("DLCP_SERVERS");
    const char* bind_host = std::getenv("DLCP_BIND_HOST");
    const char* topology = std::getenv("DLCP_TOPOLOGY");
    const char* host_id = std::getenv("DLCP_HOST_ID");
    dlcp::CommunicatorOptions options;
    if (algorithm != nullptr && *algorithm != '\0') {
      options.algorithm = dlcp::parse_algorithm(algorithm);
    }
    if (servers != nullptr && *servers != '\0') {
      options.servers = environment_integer("DLCP_SERVERS", servers);
    }
    if (bind_host != nullptr && *bind_host != '\0') options.transport.bind_host = bind_host;
    if (topology != nullptr && *topology != '\0') options.topology = dlcp::parse_topology(topology);
    if (host_id != nullptr) options.host_id = host_id;
    auto handle = std::make_unique<dlcp_comm>();
    handle->communicator = dlcp::Communicator::create(*rendezvous.store, rendezvous.rank,
                                                      rendezvous.world_size, options);
    handle->store = std::move(rendezvous.store);
    *comm = handle.release();
  });
}

dlcp_status dlcp_comm_create_tcp(const char* store_host, uint16_t store_port, int is_store_server,
                                 int rank, int world_size, dlcp_algorithm algorithm, int servers,
                                 dlcp_comm** comm) {
  return guarded([&] {
    require(comm != nullptr, "comm must not be NULL");
    require(store_host != nullptr, "store_host must not be NULL");
    *comm = nullptr;
    auto handle = std::make_unique<dlcp_comm>();
    handle->store = dlcp::TcpStore::serve_or_connect(store_host, store_port, is_store_server != 0);
    handle->communicator = dlcp::Communicator::create(*handle->store, rank, world_size,
                                                      communicator_options(algorithm, servers));
    *comm = handle.release();
  });
}

void dlcp_comm_destroy(dlcp_comm* comm) {
  try {
    delete comm;
  } catch (...) {
    // Destruction must not throw through C.
  }
}

int dlcp_comm_rank(const dlcp_comm* comm) {
  return comm == nullptr ? -1 : comm->communicator->rank();
}
int dlcp_comm_size(const dlcp_comm* comm) {
  return comm == nullptr ? -1 : comm->communicator->size();
}
int dlcp_comm_is_server(const dlcp_comm* comm) {
  return comm != nullptr && comm->communicator->is_server() ? 1 : 0;
}

dlcp_status dlcp_comm_serve(dlcp_comm* comm) {
  return guarded([&] {
    require(comm != nullptr, "comm must not be NULL");
    comm->communicator->serve();
  });
}

dlcp_status dlcp_allreduce(dlcp_comm* comm, float* values, size_t count,
                           const dlcp_collective_options* options, dlcp_work** work) {
  return submit(work, [&] {
    require(comm != nullptr && (values != nullptr || count == 0), "comm and values are required");
    return comm->communicator->allreduce(std::span<float>(values, count), to_options(options));
  });
}

dlcp_status dlcp_broadcast(dlcp_comm* comm, float* values, size_t count, int root,
                           const dlcp_collective_options* options, dlcp_work** work) {
  return submit(work, [&] {
    require(comm != nullptr && (values != nullptr || count == 0), "comm and values are required");
    return comm->communicator->broadcast(std::span<float>(values, count), root,
                                         to_options(options));
  });
}

dlcp_status dlcp_allgather(dlcp_comm* comm, const float* input, size_t count, float* output,
                           const dlcp_collective_options* options, dlcp_work** work) {
  return submit(work, [&] {
    require(comm != nullptr && (count == 0 || (input != nullptr && output != nullptr)),
            "comm, input and output are required");
    const auto size = static_cast<std::size_t>(comm->communicator->size());
    return comm->communicator->allgather(std::span<const float>(input, count),
                                         std::span<float>(output, count * size),
                                         to_options(options));
  });
}

dlcp_status dlcp_reduce_scatter(dlcp_comm* comm, const float* input, size_t count, float* output,
                                const dlcp_collective_options* options, dlcp_work** work) {
  return submit(work, [&] {
    require(comm != nullptr && (count == 0 || (input != nullptr && output != nullptr)),
            "comm, input and output are required");
    const auto size = static_cast<std::size_t>(comm->communicator->size());
    return comm->communicator->reduce_scatter(std::span<const float>(input, count * size),
                                              std::span<float>(output, count), to_options(options));
  });
}

dlcp_status dlcp_barrier(dlcp_comm* comm) {
  return guarded([&] {
    require(comm != nullptr, "comm must not be NULL");
    comm->communicator->barrier();
  });
}

int dlcp_work_ready(const dlcp_work* work) {
  return work != nullptr && work->work.ready() ? 1 : 0;
}

dlcp_status dlcp_work_wait(dlcp_work* work, dlcp_result* result) {
  return guarded([&] {
    require(work != nullptr && work->work.valid(), "work must be a started collective");
    const dlcp::CollectiveResult r = work->work.wait();
    if (result != nullptr) {
      result->entries = r.entries;
      result->contributions_expected = r.contributions_expected;
      result->contributions_received = r.contributions_received;
      result->delivered_fraction = r.delivered_fraction;
      result->broadcast_entries_missing = r.broadcast_entries_missing;
      result->seconds = r.seconds;
    }
  });
}

void dlcp_work_free(dlcp_work* work) {
  delete work;
}

}  // extern "C"
