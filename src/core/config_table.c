/* core/config_table.c -- the configuration table: one row per environment
 * variable or Triton knob (name, type, default, knob, reader, doc). Readers
 * elsewhere look their variable up here so that the list exists once;
 * `cproton --config` prints it and a test checks docs/cupti.md against it. */
#include "core/config_table.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "cproton/cproton.h"

#define CUPTI CP_CFG_DOC_CUPTI
#define R (CUPTI | CP_CFG_RANK)
#define L (CUPTI | CP_CFG_LOCAL_RANK)
static const cp_config_row rows[] = {
  {"CPROTON_NAME", CP_CFG_PATH, "proton", NULL, "inject", CUPTI,
   "output path without extension; {pid}, {rank}, {local_rank} replaced"},
  {"CPROTON_DATA", CP_CFG_STRING, "tree", NULL, "inject", CUPTI,
   "tree (.hatchet) or trace (.chrome_trace)"},
  {"CPROTON_CONTEXT", CP_CFG_STRING, "shadow", NULL, "inject", CUPTI,
   "shadow, or native: C/C++ call paths"},
  {"CPROTON_MODE", CP_CFG_STRING, "", NULL, "inject", CUPTI,
   "the backend's mode string"},
  {"CPROTON_BACKEND", CP_CFG_STRING, "cupti", NULL, "inject", CUPTI,
   "the session's backend; the cproton launcher exports it"},
  {"CPROTON_FORMAT", CP_CFG_STRING, "", NULL, "inject", CUPTI,
   "output format; empty: the data kind's default"},
  {"CPROTON_GZIP", CP_CFG_INT, "0", NULL, "inject", CUPTI,
   "non-zero: gzip the output"},
  {"RANK", CP_CFG_INT, "0", NULL, "cupti/config.c", R, "{rank}"},
  {"OMPI_COMM_WORLD_RANK", CP_CFG_INT, "0", NULL, "cupti/config.c", R,
   "{rank}"},
  {"SLURM_PROCID", CP_CFG_INT, "0", NULL, "cupti/config.c", R, "{rank}"},
  {"PMI_RANK", CP_CFG_INT, "0", NULL, "cupti/config.c", R, "{rank}"},
  {"LOCAL_RANK", CP_CFG_INT, "0", NULL, "cupti/config.c", R | L,
   "{rank} and {local_rank}"},
  {"OMPI_COMM_WORLD_LOCAL_RANK", CP_CFG_INT, "0", NULL, "cupti/config.c",
   L, "{local_rank}"},
  {"SLURM_LOCALID", CP_CFG_INT, "0", NULL, "cupti/config.c", L,
   "{local_rank}"},
  {"MPI_LOCALRANKID", CP_CFG_INT, "0", NULL, "cupti/config.c", L,
   "{local_rank}"},
  {"CPROTON_NVTX", CP_CFG_BOOL, "1", NULL, "cupti/config.c", CUPTI,
   "0: NVTX ranges do not become scopes"},
  {"TRITON_ENABLE_NVTX", CP_CFG_BOOL, "1", "enable_nvtx", "cupti/config.c",
   CUPTI, "Proton's switch: NVTX ranges become scopes"},
  {"CPROTON_DISABLE", CP_CFG_INT, "0", NULL, "inject", CUPTI,
   "1: load but do not profile"},
  {"TRITON_PROTON_DISABLE", CP_CFG_BOOL, "0", "disable", "inject", CUPTI,
   "Proton's switch: disables profiling"},
  {"CPROTON_LOG", CP_CFG_STRING, "warning", NULL,
   "cupti/config.c, python/_cproton.c", CUPTI,
   "debug, info, warning or error"},
  {"CPROTON_CUPTI_LIB", CP_CFG_PATH, "", NULL, "cupti/config.c", CUPTI,
   "libcupti file searched first"},
  {"TRITON_CUPTI_LIB_PATH", CP_CFG_PATH, "", "cupti_lib_dir",
   "cupti/config.c", 0, "directory searched for libcupti"},
  {"CUDA_HOME", CP_CFG_PATH, "", NULL, "cupti/config.c", CUPTI,
   "library search"},
  {"VIRTUAL_ENV", CP_CFG_PATH, "", NULL, "cupti/config.c", CUPTI,
   "library search"},
  {"CONDA_PREFIX", CP_CFG_PATH, "", NULL, "cupti/config.c", CUPTI,
   "library search"},
  {"CPROTON_CUPTI_LAZY", CP_CFG_BOOL, "1", NULL, "cupti/config.c", CUPTI,
   "lazy launch callbacks"},
  {"CPROTON_HOST_SYNCS", CP_CFG_BOOL, "0", NULL, "cupti/config.c", CUPTI,
   "host synchronizations as host_syncs/host_sync_ns (the advisor)"},
  {"CPROTON_CUPTI_ADAPTIVE", CP_CFG_INT, "0", NULL, "cupti/config.c", CUPTI,
   "N: adaptive mode, records delivered N at a time"},
  {"CPROTON_CUPTI_GRAPHS", CP_CFG_STRING, "node", NULL, "cupti/config.c",
   CUPTI, "graph, graph-only or node"},
  {"CPROTON_GRAPH_KERNEL_NAMES", CP_CFG_STRING, "hook", NULL,
   "cupti/config.c", CUPTI, "hook or kernel: kernel names inside graphs"},
  {"CPROTON_CUPTI_ABLATE", CP_CFG_STRING, "", NULL, "cupti/config.c", CUPTI,
   "measurement switch"},
  {"CPROTON_CUPTI_BUFFER_KB", CP_CFG_INT, "", NULL, "cupti/config.c", CUPTI,
   "activity buffer size, 64..65536 KiB"},
  {"CPROTON_PCS_WEIGHT", CP_CFG_STRING, "", NULL, "cupti/pcsampling.c", 0,
   "PC sampling weight"},
  {"CPROTON_INSTR_REDUCE_CHECK", CP_CFG_BOOL, "0", NULL,
   "instrumentation/runtime.c", 0, "check the device reduction"},
  {"CPROTON_PCS_SCRATCH_MB", CP_CFG_INT, "", NULL, "cupti/pcsampling_ctx.c", 0,
   "PC sampling scratch buffer, MiB"},
  {"CPROTON_PCS_HW_MB", CP_CFG_INT, "", NULL, "cupti/pcsampling_ctx.c", 0,
   "PC sampling hardware buffer, MiB"},
  {"CPROTON_PCS_SLEEP_MS", CP_CFG_INT, "", NULL, "cupti/pcsampling_ctx.c", 0,
   "PC sampling worker thread period, ms"},
  {"CPROTON_PROTON_VERSION", CP_CFG_STRING, "", NULL, "python/_compat.py", 0,
   "the Proton version the Python layer follows"},
  {"CPROTON_TENSOR_METRIC_WORDS", CP_CFG_INT, "65536", NULL,
   "python/metric.py", 0, "words of the tensor-metric buffer"},
  {"CPROTON_INJECTION_LIB", CP_CFG_PATH, "", NULL, "python/proton.py", 0,
   "libcproton.so the launcher injects"},
  {"NO_COLOR", CP_CFG_STRING, "", NULL, "tools/viewer", 0,
   "set: the viewer prints no colour"},
};
#undef CUPTI
#undef R
#undef L

size_t cp_config_count(void) { return sizeof rows / sizeof rows[0]; }

const cp_config_row *cp_config_at(size_t i) {
  return i < cp_config_count() ? &rows[i] : NULL;
}

const cp_config_row *cp_config_find(const char *name) {
  for (size_t i = 0; name && i < cp_config_count(); i++)
    if (strcmp(rows[i].name, name) == 0)
      return &rows[i];
  return NULL;
}

const char *cp_config_get(const char *name) {
  if (!cp_config_find(name)) {
    cp_error_set(CPROTON_EINVAL, "%s is not in the configuration table",
                 name ? name : "(null)");
    return NULL;
  }
  return getenv(name);
}

static int bool_word(const char *v, int *out) {
  static const struct { const char *word; int value; } words[] = {
      {"1", 1}, {"on", 1}, {"true", 1}, {"0", 0}, {"off", 0}, {"false", 0}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(v, words[i].word) == 0) {
      *out = words[i].value;
      return 1;
    }
  return 0;
}

int cp_config_bool(const char *name, int *out) {
  const cp_config_row *r = cp_config_find(name);
  if (!r || r->type != CP_CFG_BOOL)
    return cp_error_set(CPROTON_EINVAL, "%s is not a boolean setting",
                        name ? name : "(null)");
  const char *v = getenv(name);
  if (!v || !*v)
    v = r->def;
  if (!bool_word(v, out))
    return cp_error_set(CPROTON_EINVAL, "%s='%s': expected 0/1, on/off or "
                        "true/false", name, v);
  return CPROTON_OK;
}

const char *cp_config_source(const char *name) {
  return getenv(name) ? "environment" : "default";
}

static const char *roles(unsigned docs) {
  static const char *const names[] = {"", "rank", "local_rank",
                                      "rank,local_rank"};
  return names[(docs / CP_CFG_RANK) & 3];
}

const char *cproton_config_get(const char *name) { return cp_config_get(name); }

int cproton_config_row(size_t i, const char *fields[7]) {
  static const char *const types[] = {"string", "int", "bool", "path"};
  const cp_config_row *r = cp_config_at(i);
  if (!r)
    return cp_error_set(CPROTON_ENOTFOUND, "no configuration row %zu", i);
  const char *f[7] = {r->name, types[r->type], r->def, r->knob ? r->knob : "",
                      r->reader, r->doc, roles(r->docs)};
  memcpy(fields, f, sizeof f);
  return CPROTON_OK;
}
