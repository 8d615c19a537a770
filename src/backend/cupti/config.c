/* backend/cupti/config.c -- defaults, the library search order, and the one
 * place the CUPTI backend and the injection entry point read environment
 * variables (see config.h and docs/cupti.md for the list).
 * Invariant: nothing else under src/backend/cupti reads the environment, and
 * every read goes through the configuration table (core/config_table.c).
 * Not a hot path: called at backend start and at injection. */
#include <dlfcn.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config_table.h"
#include "backend/cupti/config.h"
#include "core/error.h"
#include "core/session.h"
#include "cproton/cproton.h"

static void add_dir(cp_cupti_config *c, const char *dir, const char *sub) {
  if (!dir || !*dir || c->n_dirs == CP_CUPTI_MAX_DIRS)
    return;
  int n = snprintf(c->dirs[c->n_dirs], sizeof c->dirs[0], "%s%s%s", dir,
                   sub && *sub ? "/" : "", sub ? sub : "");
  if (n > 0 && (size_t)n < sizeof c->dirs[0])
    c->n_dirs++;
}

static void add_cuda_root(cp_cupti_config *c, const char *root) {
  add_dir(c, root, "extras/CUPTI/lib64");
  add_dir(c, root, "lib64");
  add_dir(c, root, "targets/x86_64-linux/lib");
}

/* <prefix>/lib/python3.X/site-packages/nvidia/cuda_cupti/lib, each X. */
static void add_site_packages(cp_cupti_config *c, const char *prefix) {
  char pattern[PATH_MAX];
  if (!prefix || !*prefix)
    return;
  snprintf(pattern, sizeof pattern,
           "%s/lib/python3*/site-packages/nvidia/cuda_cupti/lib", prefix);
  glob_t g;
  if (glob(pattern, GLOB_ONLYDIR | GLOB_NOSORT, NULL, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; i++)
      add_dir(c, g.gl_pathv[i], NULL);
  globfree(&g);
}

void cp_cupti_config_build(cp_cupti_config *c, const char *cupti_lib,
                           const char *cuda_home, const char *self_dir,
                           const char *venv, const char *conda) {
  memset(c, 0, sizeof *c);
  if (cupti_lib && *cupti_lib)
    snprintf(c->cupti_file, sizeof c->cupti_file, "%s", cupti_lib);
  add_cuda_root(c, cuda_home);
  add_cuda_root(c, "/usr/local/cuda");
  add_dir(c, self_dir, "../nvidia/cuda_cupti/lib");
  add_dir(c, self_dir, "../../nvidia/cuda_cupti/lib");
  add_site_packages(c, venv);
  add_site_packages(c, conda);
  c->ring_slots = 1u << 16;
  c->graph_nodes = 1u << 15;
  c->graph_max = 1u << 21;
  c->graph_op_names = 1;
  c->buffer_size = 4u << 20;
  c->n_buffers = 4;
  c->max_buffers = 64;
  c->nvtx = 1;
}

/* The directory of the shared object holding this code ("" if unknown). */
static void self_dir(char *out, size_t size) {
  Dl_info info;
  out[0] = '\0';
  if (dladdr((void *)cp_cupti_config_build, &info) && info.dli_fname) {
    snprintf(out, size, "%s", info.dli_fname);
    char *slash = strrchr(out, '/');
    if (slash)
      *slash = '\0';
    else
      out[0] = '\0';
  }
}

/* Proton's boolean environment values: "on", "true", "1" (any case) are
 * true, anything else false, unset gives `fallback`. */
static int bool_env(const char *var, int fallback) {
  const char *v = cp_config_get(var);
  if (!v)
    return fallback;
  return strcasecmp(v, "on") == 0 || strcasecmp(v, "true") == 0 ||
         strcmp(v, "1") == 0;
}

/* Puts `dir` first in the search order (Proton's TRITON_CUPTI_LIB_PATH). */
static void prepend_dir(cp_cupti_config *c, const char *dir) {
  if (!dir || !*dir || strlen(dir) >= sizeof c->dirs[0])
    return;
  size_t n = c->n_dirs < CP_CUPTI_MAX_DIRS ? c->n_dirs : CP_CUPTI_MAX_DIRS - 1;
  memmove(c->dirs[1], c->dirs[0], n * sizeof c->dirs[0]);
  snprintf(c->dirs[0], sizeof c->dirs[0], "%s", dir);
  c->n_dirs = n + 1;
}

int cp_cupti_config_nvtx_from_env(void) {
  const char *v = cp_config_get("CPROTON_NVTX");
  return bool_env("TRITON_ENABLE_NVTX", 1) && !(v && strcmp(v, "0") == 0);
}

/* "" or unset: the default; anything not in the list: -1 (the start fails
 * naming the variable). */
static int choice_env(const char *var, const char *const *names, int dflt) {
  const char *v = cp_config_get(var);
  if (!v || !*v)
    return dflt;
  for (int i = 0; names[i]; i++)
    if (strcmp(v, names[i]) == 0)
      return i;
  return -1;
}

void cp_cupti_config_graphs_from_env(cp_cupti_config *c) {
  static const char *const levels[] = {"node", "graph", "graph-only", NULL};
  static const char *const names[] = {"kernel", "hook", NULL};
  c->graph_level = choice_env("CPROTON_CUPTI_GRAPHS", levels, 0);
  c->graph_op_names = choice_env("CPROTON_GRAPH_KERNEL_NAMES", names, 1);
}

static const struct {
  const char *name;
  unsigned bit;
} ablations[] = {
    {"nocallback", CP_ABLATE_NO_CALLBACK}, {"nocapture", CP_ABLATE_NO_CAPTURE},
    {"noring", CP_ABLATE_NO_RING},         {"noactivity", CP_ABLATE_NO_ACTIVITY},
    {"norecords", CP_ABLATE_NO_RECORDS},   {"notimestamp", CP_ABLATE_NO_TIMESTAMP},
    {"nographs", CP_ABLATE_NO_GRAPH_CB},
};

/* The bit of the ablation named by list[0..n), 0 when none is. */
static unsigned ablation_bit(const char *list, size_t n) {
  for (size_t i = 0; i < sizeof ablations / sizeof *ablations; i++)
    if (strlen(ablations[i].name) == n && strncmp(list, ablations[i].name, n) == 0)
      return ablations[i].bit;
  return 0;
}

unsigned cp_cupti_config_ablate(const char *list) {
  unsigned bits = 0;
  while (list && *list) {
    size_t n = strcspn(list, ",");
    bits |= ablation_bit(list, n);
    list += n + (list[n] == ',');
  }
  return bits;
}

/* The first name of `list` that is no ablation, into bad; 1 if any. */
static int bad_ablation(const char *list, char *bad, size_t size) {
  while (list && *list) {
    size_t n = strcspn(list, ",");
    if (n && !ablation_bit(list, n)) {
      snprintf(bad, size, "CPROTON_CUPTI_ABLATE: '%.*s' is not one of nocallback, "
               "nocapture, noring, noactivity, norecords, notimestamp, nographs",
               (int)(n < 40 ? n : 40), list);
      return 1;
    }
    list += n + (list[n] == ',');
  }
  return 0;
}

/* Proton's boolean values, either way ("on"/"true"/"1", "off"/"false"/"0",
 * any case: the table's boolean reader); 1 if `var` is set to something
 * else. */
static int bad_bool(const char *var, char *bad, size_t size) {
  int on;
  if (cp_config_bool(var, &on) == CPROTON_OK)
    return 0;
  const char *v = cp_config_get(var);
  snprintf(bad, size, "%s='%.40s' is not on/true/1 or off/false/0", var,
           v ? v : "");
  return 1;
}

static int int_env(const char *var, int fallback);

void cp_cupti_config_from_env(cp_cupti_config *c) {
  char self[PATH_MAX];
  self_dir(self, sizeof self);
  cp_cupti_config_build(c, cp_config_get("CPROTON_CUPTI_LIB"), cp_config_get("CUDA_HOME"),
                        self, cp_config_get("VIRTUAL_ENV"), cp_config_get("CONDA_PREFIX"));
  prepend_dir(c, cp_config_get("TRITON_CUPTI_LIB_PATH"));
  c->nvtx = cp_cupti_config_nvtx_from_env();
  cp_cupti_config_graphs_from_env(c);
  c->lazy = bool_env("CPROTON_CUPTI_LAZY", 1); /* the default since 2026-11-26 (docs/cupti.md) */
  c->host_syncs = bool_env("CPROTON_HOST_SYNCS", 0);
  /* 0 or 1: off; not a number or above CP_ADAPTIVE_MAX (adaptive.h): the
   * backend's start fails with a message naming the variable */
  int n = int_env("CPROTON_CUPTI_ADAPTIVE", -1);
  const char *a = cp_config_get("CPROTON_CUPTI_ADAPTIVE");
  c->adaptive = n >= 2 ? (unsigned)n : n < 0 && a && *a ? UINT32_MAX : 0;
  c->ablate = cp_cupti_config_ablate(cp_config_get("CPROTON_CUPTI_ABLATE"));
  const char *kb_text = cp_config_get("CPROTON_CUPTI_BUFFER_KB");
  int kb = int_env("CPROTON_CUPTI_BUFFER_KB", 0);
  if (kb >= 64 && kb <= 65536)
    c->buffer_size = (size_t)kb << 10;
  else if (kb_text && *kb_text)
    snprintf(c->bad, sizeof c->bad, "CPROTON_CUPTI_BUFFER_KB='%.40s' is not "
             "a number of KiB in 64..65536", kb_text);
  if (!c->bad[0] && !bad_bool("CPROTON_CUPTI_LAZY", c->bad, sizeof c->bad) &&
      !bad_bool("CPROTON_HOST_SYNCS", c->bad, sizeof c->bad))
    bad_ablation(cp_config_get("CPROTON_CUPTI_ABLATE"), c->bad, sizeof c->bad);
}

/* Copies $var (or `fallback` when unset or empty) into out[size]; a value
 * that does not fit is refused, never cut. */
static int copy_env(char *out, size_t size, const char *var,
                    const char *fallback) {
  const char *v = cp_config_get(var);
  v = v && *v ? v : fallback;
  if (strlen(v) >= size)
    return cp_error_set(CPROTON_EINVAL, "%s is %zu bytes long; at most %zu "
                        "are accepted", var, strlen(v), size - 1);
  snprintf(out, size, "%s", v);
  return CPROTON_OK;
}

/* A non-negative number below 2^30 written in ASCII digits only (no sign,
 * no space: strtol would take " 5" or "+5"), else -1. */
static int parse_count(const char *v) {
  size_t n = v ? strspn(v, "0123456789") : 0;
  if (n == 0 || v[n] || n > 10)
    return -1;
  long x = strtol(v, NULL, 10);
  return x < (1 << 30) ? (int)x : -1;
}

static int int_env(const char *var, int fallback) {
  int v = parse_count(cp_config_get(var));
  return v >= 0 ? v : fallback;
}

/* A 0/1 switch: unset or empty is `*out` = 0; a number sets it (non-zero:
 * on); anything else is refused. */
static int switch_env(const char *var, int *out) {
  const char *v = cp_config_get(var);
  *out = 0;
  if (!v || !*v)
    return CPROTON_OK;
  int n = parse_count(v);
  if (n < 0)
    return cp_error_set(CPROTON_EINVAL, "%s='%.64s' is not 0 or 1", var, v);
  *out = n != 0;
  return CPROTON_OK;
}

/* Where launchers put a process's rank, most specific first: torchrun and
 * torch.distributed, Open MPI, Slurm, MPICH/Intel MPI (PMI). A lone
 * LOCAL_RANK is a rank too (one node). */
/* The value of the first variable with the rank `role` bit that holds a
 * rank, in the configuration table's order (the Python layer reads the same
 * rows). */
static int first_env(unsigned role, int fallback) {
  for (size_t i = 0; i < cp_config_count(); i++) {
    const cp_config_row *r = cp_config_at(i);
    int v = r->docs & role ? int_env(r->name, -1) : -1;
    if (v >= 0)
      return v;
  }
  return fallback;
}

/* CPROTON_LOG into c->log_level: warning when unset. */
static int log_env(cp_inject_config *c) {
  static const char *levels[] = {"debug", "info", "warning", "error"};
  const char *log = cp_config_get("CPROTON_LOG");
  c->log_level = CPROTON_LOG_WARN;
  for (int i = 0; log && *log && i < 4; i++)
    if (strcmp(log, levels[i]) == 0)
      return c->log_level = i, CPROTON_OK;
  return log && *log ? cp_error_set(CPROTON_EINVAL, "CPROTON_LOG='%.64s' is "
                                    "not debug, info, warning or error", log)
                     : CPROTON_OK;
}

/* The strings; then what can be checked without starting a session. */
static int strings_env(cp_inject_config *c) {
  int rc = copy_env(c->name, sizeof c->name, "CPROTON_NAME", "proton");
  if (!rc)
    rc = copy_env(c->data, sizeof c->data, "CPROTON_DATA", "tree");
  if (!rc)
    rc = copy_env(c->format, sizeof c->format, "CPROTON_FORMAT", "");
  if (!rc)
    rc = copy_env(c->context, sizeof c->context, "CPROTON_CONTEXT", "shadow");
  if (!rc)
    rc = copy_env(c->mode, sizeof c->mode, "CPROTON_MODE", "");
  if (!rc)
    rc = copy_env(c->backend, sizeof c->backend, "CPROTON_BACKEND", "cupti");
  if (rc)
    return rc;
  int trace = strcmp(c->data, "trace") == 0;
  if (!trace && strcmp(c->data, "tree") != 0)
    return cp_error_set(CPROTON_EINVAL, "CPROTON_DATA='%s' is not tree or "
                        "trace", c->data);
  if (cp_session_format_check(trace, c->format)) {
    char why[512]; /* the message is rewritten below: copy it first */
    snprintf(why, sizeof why, "%s", cp_error_message());
    return cp_error_set(CPROTON_EINVAL, "CPROTON_FORMAT: %s", why);
  }
  return CPROTON_OK;
}

int cp_inject_config_from_env(cp_inject_config *c) {
  memset(c, 0, sizeof *c);
  int off_rc = switch_env("CPROTON_DISABLE", &c->disabled);
  c->disabled |= bool_env("TRITON_PROTON_DISABLE", 0);
  int log_rc = log_env(c); /* the message is the last failure's */
  if (log_rc || off_rc)
    return log_rc ? log_rc : off_rc;
  c->rank = first_env(CP_CFG_RANK, -1);
  c->local_rank = first_env(CP_CFG_LOCAL_RANK, -1);
  int rc = switch_env("CPROTON_GZIP", &c->gzip);
  return rc ? rc : strings_env(c);
}

void cp_inject_set_nvtx_path(const char *cupti_path) {
  if (cupti_path && *cupti_path)
    setenv("NVTX_INJECTION64_PATH", cupti_path, 0);
}
