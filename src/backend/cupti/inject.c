/* backend/cupti/inject.c -- InitializeInjection: profile an unmodified CUDA
 * program. Reads its settings through config.c (the one place that reads
 * the environment), starts one session on the cupti backend, and registers
 * an atexit handler that finalizes it.
 * Invariant: the exit handler runs before the driver's own teardown (it is
 * registered during cuInit, after libcuda's handlers, and atexit runs in
 * reverse order); after it, the backend makes no CUPTI call.
 * Not a hot path. Called by the CUDA driver. */
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/cupti/config.h"
#include "backend/cupti/cupti_backend.h"
#include "backend/cupti/inject.h"
#include "core/error.h"
#include "core/log.h"
#include "core/session.h"
#include "cproton/cproton.h"

static atomic_int initialized;
static int session_id = -1;
static char format[32]; /* CPROTON_FORMAT, kept for the exit handler */

static void at_exit(void) {
  if (session_id >= 0 &&
      cproton_session_finalize(session_id, format) != CPROTON_OK)
    cp_warn("injection: writing the profile failed: %s", cproton_last_error());
  session_id = -1;
  cp_cupti_backend_teardown();
}

/* The profile's directory must exist and be writable now: found out at
 * exit, the whole run's profile would be lost. */
static int check_directory(const cproton_session_options *o) {
  char path[PATH_MAX];
  if (cp_session_expand_name(o, path, sizeof path))
    return cp_error_set(CPROTON_EINVAL, "CPROTON_NAME='%s' is too long once "
                        "{pid} and {rank} are filled", o->name);
  char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(path, sizeof path, ".");
  else
    slash[slash == path] = '\0'; /* "/x" -> "/" */
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return cp_error_set(CPROTON_EINVAL, "CPROTON_NAME='%s': no directory "
                        "'%s'", o->name, path);
  if (access(path, W_OK | X_OK) != 0)
    return cp_error_set(CPROTON_EINVAL, "CPROTON_NAME='%s': directory '%s' "
                        "is not writable", o->name, path);
  return CPROTON_OK;
}

/* Every setting is checked here, at the program's start: a bad one is
 * reported once and this process is not profiled (docs/cupti.md). */
int InitializeInjection(void) {
  if (atomic_exchange(&initialized, 1))
    return 1;
  cp_inject_config c;
  int bad = cp_inject_config_from_env(&c);
  cproton_log_set_handler(NULL, NULL, (cproton_log_level)c.log_level);
  if (c.disabled)
    return 1;
  cproton_session_options o;
  cproton_session_options_init(&o);
  o.name = c.name;
  o.data = c.data;
  memcpy(format, c.format, sizeof format);
  o.context = c.context;
  o.backend = c.backend; /* CPROTON_BACKEND, from `cproton --backend` */
  o.mode = c.mode[0] ? c.mode : NULL;
  o.gzip = c.gzip;
  o.rank = c.rank;
  o.local_rank = c.local_rank;
  /* A process that never runs a kernel writes nothing: torchrun's agent
   * initialises CUDA (device_count) without a RANK, and its empty profile
   * used to land on rank 0's name after the worker had written it. */
  o.skip_if_no_kernels = 1;
  if (bad || check_directory(&o) ||
      cproton_session_start(&o, &session_id) != CPROTON_OK) {
    cp_warn("injection: not profiling this process: %s", cproton_last_error());
    session_id = -1;
    return 1;
  }
  /* The scopes here are NVTX ranges, which are per thread: a thread without
   * ranges does not inherit the initializing thread's (docs/cupti.md). */
  cp_session_threads_independent();
  char cupti[PATH_MAX];
  cp_cupti_backend_library_path(cupti, sizeof cupti);
  cp_inject_set_nvtx_path(cupti);
  atexit(at_exit);
  return 1;
}
