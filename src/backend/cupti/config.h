/* backend/cupti/config.h -- the CUPTI backend's configuration and the one
 * place where it and the injection entry point read the environment
 * (cp_cupti_config_*).
 *
 * Library search order (first that loads wins; docs/cupti.md):
 *   1. $CPROTON_CUPTI_LIB             a file path to libcupti.so*,
 *      then $TRITON_CUPTI_LIB_PATH    a directory (Proton's variable)
 *   2. $CUDA_HOME/{extras/CUPTI/lib64, lib64, targets/x86_64-linux/lib}
 *   3. /usr/local/cuda/{extras/CUPTI/lib64, lib64, targets/x86_64-linux/lib}
 *   4. Python's nvidia packages: <site-packages>/nvidia/cuda_cupti/lib, with
 *      site-packages found next to libcproton.so (an installed wheel),
 *      under $VIRTUAL_ENV and under $CONDA_PREFIX
 *   5. the dynamic linker's own search ("libcupti.so")
 * In each directory the names libcupti.so, libcupti.so.13, libcupti.so.12
 * are tried. The driver is "libcuda.so.1" from the linker's search. */
#ifndef CP_BACKEND_CUPTI_CONFIG_H
#define CP_BACKEND_CUPTI_CONFIG_H

#include <limits.h>
#include <stddef.h>

#define CP_CUPTI_MAX_DIRS 16

typedef struct cp_cupti_config {
  char cupti_file[PATH_MAX];                  /* "" or an explicit file */
  char dirs[CP_CUPTI_MAX_DIRS][PATH_MAX / 4]; /* directories, in order */
  size_t n_dirs;
  size_t ring_slots;  /* correlation ring capacity */
  size_t graph_nodes; /* graph-node table: initial slots */
  size_t graph_max;   /* graph-node table: most slots (it grows) */
  int graph_op_names; /* inside graphs, kernels under an op take its name
                         (1, Proton 3.9) or keep theirs (0, Proton 3.6):
                         CPROTON_GRAPH_KERNEL_NAMES, read at each start */
  int graph_level;    /* CPROTON_CUPTI_GRAPHS: 0 "node"; 1 "graph", one
                         record per graph launch (CUDA events, graphtime.c)
                         beside kernel records of kernels outside graphs;
                         2 "graph-only", no kernel records at all */
  size_t buffer_size; /* bytes per activity buffer */
  size_t n_buffers;   /* buffers allocated at start */
  size_t max_buffers; /* the pool's limit */
  int nvtx;           /* NVTX ranges become scopes */
  int lazy;           /* CPROTON_CUPTI_LAZY=1: lazy launch callbacks (lazy.h) */
  int host_syncs;     /* CPROTON_HOST_SYNCS=1: synchronizing driver calls
                         become host_syncs/host_sync_ns metrics (off: they
                         are metrics Proton's files never hold) */
  unsigned adaptive;  /* CPROTON_CUPTI_ADAPTIVE=N (>= 2): batches of N
                         repeated records (adaptive.h); 0: off */
  unsigned ablate;    /* CPROTON_CUPTI_ABLATE: cp_cupti_ablate bits */
  char bad[192];      /* "" or the first CPROTON_CUPTI_* setting refused by
                         cp_cupti_config_from_env: the backend's start fails
                         with it (settings checked at start, never ignored) */
} cp_cupti_config;

/* Ablation switches for measuring what each part of the launch path costs
 * (bench/realworld.py; docs/benchmarks.md). CPROTON_CUPTI_ABLATE is a comma
 * list of these names; a profile made with any of them is incomplete. */
typedef enum cp_cupti_ablate {
  CP_ABLATE_NO_CALLBACK = 1, /* "nocallback": launch callbacks never enabled */
  CP_ABLATE_NO_CAPTURE = 2,  /* "nocapture": the callback returns at once */
  CP_ABLATE_NO_RING = 4,     /* "noring": capture, but store nothing */
  CP_ABLATE_NO_ACTIVITY = 8, /* "noactivity": no kernel activity records */
  CP_ABLATE_NO_RECORDS = 16, /* "norecords": buffers recycled unread */
  CP_ABLATE_NO_TIMESTAMP = 32, /* "notimestamp": CUPTI's own clock (no
                                  timestamp callback) */
  CP_ABLATE_NO_GRAPH_CB = 64   /* "nographs": graph-node resource and
                                  stream-capture callbacks off (replays lose
                                  their capture path) */
} cp_cupti_ablate;

/* Parses a CPROTON_CUPTI_ABLATE value (NULL: 0); unknown names are
 * ignored. Pure. */
unsigned cp_cupti_config_ablate(const char *list);

/* CPROTON_CUPTI_BUFFER_KB (activity buffer size, 64..65536 KiB; default
 * 4096) is read by cp_cupti_config_from_env. */

/* Fills `c` with the defaults and the search order above, given the values
 * of the inputs (each may be NULL): $CPROTON_CUPTI_LIB, $CUDA_HOME, the
 * directory holding libcproton.so, $VIRTUAL_ENV, $CONDA_PREFIX. Pure. */
void cp_cupti_config_build(cp_cupti_config *c, const char *cupti_lib,
                           const char *cuda_home, const char *self_dir,
                           const char *venv, const char *conda);

/* cp_cupti_config_build with the values read from the environment, and
 * the NVTX switch below. Not a hot path (backend start). */
void cp_cupti_config_from_env(cp_cupti_config *c);

/* Whether NVTX ranges become scopes: TRITON_ENABLE_NVTX (Proton's knob
 * triton.knobs.proton.enable_nvtx; on/true/1, default on) and not
 * CPROTON_NVTX=0. Read at every backend start, as Proton does. */
int cp_cupti_config_nvtx_from_env(void);

/* Reads, at every start, CPROTON_CUPTI_GRAPHS ("node", the default,
 * "graph" or "graph-only": graph_level 0, 1, 2) and CPROTON_GRAPH_KERNEL_NAMES ("hook", the
 * default, or "kernel": graph_op_names); an unknown value sets the field to
 * -1, and the backend's start fails naming the variable. */
void cp_cupti_config_graphs_from_env(cp_cupti_config *c);

/* What the injection entry point (InitializeInjection) starts. */
typedef struct cp_inject_config {
  char name[PATH_MAX]; /* CPROTON_NAME, default "proton" */
  char data[16];       /* CPROTON_DATA: tree | trace */
  char format[32];     /* CPROTON_FORMAT: "" (the data's default), perfetto... */
  char context[16];    /* CPROTON_CONTEXT: shadow */
  char backend[32];    /* CPROTON_BACKEND: cupti (the launcher exports it) */
  char mode[1025];     /* CPROTON_MODE: "" or pcsampling[:options]; the
                          mode parser's limit is 1 KiB */
  int gzip;            /* CPROTON_GZIP=1 */
  int rank;            /* RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK,
                          LOCAL_RANK (the first set); else -1 */
  int local_rank;      /* LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
                          SLURM_LOCALID, MPI_LOCALRANKID; else -1 */
  int disabled;        /* CPROTON_DISABLE=1 or TRITON_PROTON_DISABLE=on/true/1:
                          load but do nothing */
  int log_level;       /* CPROTON_LOG=debug|info|warning|error (warning) */
} cp_inject_config;

/* Reads the injection settings from the environment and checks each one,
 * so that a bad setting is refused when the program starts rather than
 * losing the profile at exit: a value longer than its field (never cut),
 * CPROTON_DATA other than tree/trace, a CPROTON_FORMAT unknown or not for
 * that data, CPROTON_GZIP / CPROTON_DISABLE not a number, an unknown
 * CPROTON_LOG level. CPROTON_CONTEXT and CPROTON_MODE are checked by the
 * session's start, the output directory by the injection (inject.c).
 * Errors: EINVAL, the message naming the variable and its value; `c` is
 * filled as far as it could be (log_level and disabled always). */
int cp_inject_config_from_env(cp_inject_config *c);

/* Sets NVTX_INJECTION64_PATH to `cupti_path` unless the user set it, so
 * that NVTX ranges reach CUPTI (and cproton's scopes). At injection and at
 * every backend start with NVTX on (as Proton does): it changes the process
 * environment, which NVTX reads at the program's first NVTX call. */
void cp_inject_set_nvtx_path(const char *cupti_path);

#endif
