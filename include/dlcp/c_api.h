/* The dlcp C API: a stable, C-callable surface over the C++ communicator, for frameworks and
 * languages other than C++ and Python.
 *
 *   dlcp_comm* comm = NULL;
 *   if (dlcp_comm_create_from_env(&comm) != DLCP_OK) fprintf(stderr, "%s\n", dlcp_last_error());
 *   dlcp_collective_options o;
 *   dlcp_collective_options_init(&o);
 *   o.loss_budget = 0.05;
 *   dlcp_work* work = NULL;
 *   dlcp_allreduce(comm, grads, count, &o, &work);
 *   dlcp_result r;
 *   dlcp_work_wait(work, &r);          // DLCP_OK, or an error code with dlcp_last_error()
 *   dlcp_work_free(work);
 *   dlcp_comm_destroy(comm);
 *
 * Every function returns a dlcp_status; on failure dlcp_last_error() (per thread) says what
 * failed. No function throws or aborts on bad input. */
#ifndef DLCP_C_API_H
#define DLCP_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  DLCP_OK = 0,
  DLCP_ERR_INVALID_ARGUMENT = 1,
  DLCP_ERR_SYSTEM = 2,
  DLCP_ERR_CONNECT = 3,
  DLCP_ERR_PEER_LOST = 4,
  DLCP_ERR_DEADLINE = 5,
  DLCP_ERR_ABORTED = 6,
  DLCP_ERR_PROTOCOL = 7,
  DLCP_ERR_INTERNAL = 8,
} dlcp_status;

typedef enum {
  DLCP_ALGO_DEFAULT = 0,
  DLCP_ALGO_RING = 1,
  DLCP_ALGO_TRANSPOSE = 2,
  DLCP_ALGO_PS = 3
} dlcp_algorithm;
typedef enum { DLCP_OP_SUM = 0, DLCP_OP_AVERAGE = 1 } dlcp_reduce_op;
/* Flat or by host (dlcp::Topology); DLCP_TOPOLOGY_DEFAULT = the communicator's. */
typedef enum {
  DLCP_TOPOLOGY_DEFAULT = 0,
  DLCP_TOPOLOGY_AUTO = 1,
  DLCP_TOPOLOGY_FLAT = 2,
  DLCP_TOPOLOGY_HIERARCHICAL = 3
} dlcp_topology;
/* How an all-reduce's values travel (dlcp::WireDtype): the 16-bit ones halve the bytes. */
typedef enum { DLCP_WIRE_FP32 = 0, DLCP_WIRE_BF16 = 1, DLCP_WIRE_FP16 = 2 } dlcp_wire_dtype;

typedef struct dlcp_comm dlcp_comm;
typedef struct dlcp_work dlcp_work;

typedef struct {
  int layer; /* 0 = nearest the input */
  int num_layers;
  double loss_budget;           /* reduce side, 0 = reliable */
  double broadcast_loss_budget; /* 0 = loss-free broadcast side (bit-identical replicas) */
  dlcp_reduce_op op;
  dlcp_algorithm algorithm; /* DLCP_ALGO_DEFAULT = the communicator's */
  int zero_fill;            /* 1 = the biased zero-fill rule instead of unbiased */
  int64_t deadline_ms;
  dlcp_wire_dtype wire; /* all-reduce and reduce-scatter only */
  /* 16-bit wire: a buffer of `count` floats, zero at first and kept per tensor, that carries each
   * call's rounding error into the next (error feedback); NULL = off. All-reduce and
   * reduce-scatter only. */
  float* error_feedback;
  size_t error_feedback_count;
  int hadamard_rotation; /* 1 = rotate before the all-reduce (reduce-scatter) and back after */
  dlcp_topology topology;
} dlcp_collective_options;

typedef struct {
  uint64_t entries;
  uint64_t contributions_expected;
  uint64_t contributions_received;
  double delivered_fraction;
  uint64_t broadcast_entries_missing;
  double seconds;
} dlcp_result;

/* Message of the last failed call on this thread ("" if none). Valid until the next call. */
const char* dlcp_last_error(void);

void dlcp_collective_options_init(dlcp_collective_options* options);

/* Joins the job described by DLCP_RANK / DLCP_WORLD_SIZE / DLCP_STORE (or torchrun's RANK /
 * WORLD_SIZE / MASTER_ADDR / MASTER_PORT); DLCP_ALGORITHM (ring, tar, ps), DLCP_SERVERS,
 * DLCP_BIND_HOST, DLCP_TOPOLOGY (auto, flat, hierarchical) and DLCP_HOST_ID (ranks with equal ids
 * form a host; default: detected) are optional. */
dlcp_status dlcp_comm_create_from_env(dlcp_comm** comm);
/* Joins through a TCP store at host:port that rank 0 serves (is_store_server = 1 there). */
dlcp_status dlcp_comm_create_tcp(const char* store_host, uint16_t store_port, int is_store_server,
                                 int rank, int world_size, dlcp_algorithm algorithm, int servers,
                                 dlcp_comm** comm);
void dlcp_comm_destroy(dlcp_comm* comm);

int dlcp_comm_rank(const dlcp_comm* comm);
int dlcp_comm_size(const dlcp_comm* comm);
int dlcp_comm_is_server(const dlcp_comm* comm);
/* Parameter-server ranks: serves until every worker is done. */
dlcp_status dlcp_comm_serve(dlcp_comm* comm);

/* Asynchronous collectives; buffers must stay alive until the work is waited for. */
dlcp_status dlcp_allreduce(dlcp_comm* comm, float* values, size_t count,
                           const dlcp_collective_options* options, dlcp_work** work);
dlcp_status dlcp_broadcast(dlcp_comm* comm, float* values, size_t count, int root,
                           const dlcp_collective_options* options, dlcp_work** work);
dlcp_status dlcp_allgather(dlcp_comm* comm, const float* input, size_t count, float* output,
                           const dlcp_collective_options* options, dlcp_work** work);
/* output (count floats) = this rank's shard of the reduction of every worker's input (count x
 * dlcp_comm_size floats, shard r at r * count). The options apply as for all-reduce; the
 * error_feedback buffer then holds count x dlcp_comm_size floats. */
dlcp_status dlcp_reduce_scatter(dlcp_comm* comm, const float* input, size_t count, float* output,
                                const dlcp_collective_options* options, dlcp_work** work);
dlcp_status dlcp_barrier(dlcp_comm* comm);

/* 1 when done (wait will not block), 0 otherwise. */
int dlcp_work_ready(const dlcp_work* work);
/* Waits; result may be NULL. */
dlcp_status dlcp_work_wait(dlcp_work* work, dlcp_result* result);
void dlcp_work_free(dlcp_work* work);

#ifdef __cplusplus
}
#endif

#endif /* DLCP_C_API_H */
