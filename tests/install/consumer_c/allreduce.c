/* Two ranks (processes forked from this one, meeting through a file store in a fresh directory)
 * all-reduce a buffer through the installed libdlcp's C API; exits 0 only if both hold the sum. */
#define _GNU_SOURCE
#include <dlcp/c_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { kCount = 100000 };

static int run_rank(int rank, const char* store) {
  char rank_text[16];
  snprintf(rank_text, sizeof rank_text, "%d", rank);
  setenv("DLCP_RANK", rank_text, 1);
  setenv("DLCP_WORLD_SIZE", "2", 1);
  setenv("DLCP_STORE", store, 1);
  dlcp_comm* comm = NULL;
  if (dlcp_comm_create_from_env(&comm) != DLCP_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, dlcp_last_error());
    return 1;
  }
  float* values = malloc(kCount * sizeof(float));
  for (int i = 0; i < kCount; ++i) values[i] = (float)(rank + 1);
  dlcp_collective_options options;
  dlcp_collective_options_init(&options);
  dlcp_work* work = NULL;
  dlcp_result result;
  int failed = dlcp_allreduce(comm, values, kCount, &options, &work) != DLCP_OK ||
               dlcp_work_wait(work, &result) != DLCP_OK;
  if (failed) fprintf(stderr, "rank %d: %s\n", rank, dlcp_last_error());
  for (int i = 0; !failed && i < kCount; ++i) failed = values[i] != 3.0f;
  dlcp_work_free(work);
  dlcp_comm_destroy(comm);
  free(values);
  return failed;
}

int main(void) {
  char directory[] = "/tmp/dlcp-consumer-c-XXXXXX";
  if (mkdtemp(directory) == NULL) return 1;
  char store[128];
  snprintf(store, sizeof store, "file://%s", directory);
  pid_t child = fork();
  if (child == 0) _exit(run_rank(1, store));
  int failed = run_rank(0, store);
  int status = 0;
  waitpid(child, &status, 0);
  failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  char command[160];
  snprintf(command, sizeof command, "rm -rf '%s'", directory);
  if (system(command) != 0) failed = 1;
  printf("dlcp C consumer: %s\n", failed ? "FAILED" : "all-reduce exact on 2 ranks");
  return failed;
}
