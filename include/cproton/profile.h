/* cproton/profile.h -- reading Hatchet tree profiles (Proton's and cproton's).
 * Included by <cproton/cproton.h>.
 *
 * A profile is the tree a session writes as `<name>.hatchet`: a JSON list
 * `[root_node, device_info]` (docs/formats.md, docs/viewer.md). Opening one
 * parses and validates the whole file into a compact, read-only object:
 *
 *   cproton_profile *p;
 *   if (cproton_profile_open("run.hatchet", &p) != CPROTON_OK) {
 *     fprintf(stderr, "%s\n", cproton_last_error());  // "run.hatchet:3:7: ..."
 *     return 1;
 *   }
 *   for (uint32_t i = 0; i < cproton_profile_node_count(p); i++) {
 *     cproton_metric_value v;
 *     if (cproton_profile_node_metric_by_name(p, i, "time (ns)", &v) == 0)
 *       printf("%s %f\n", cproton_profile_node_name(p, i), v.d);
 *   }
 *   cproton_profile_close(p);
 *
 * Nodes are numbered 0..n-1 in pre-order (the order they appear in the
 * file); node 0 is the root. Metric keys are numbered 0..k-1 in order of
 * first appearance in the file. Every string the accessors return is owned by
 * the profile and lives until cproton_profile_close().
 *
 * Threads: opening and closing are thread-safe; a profile is immutable after
 * opening, so any number of threads may call its accessors concurrently.
 * Accessors never fail on valid ids; out-of-range ids return the documented
 * "none" value (NULL, 0, CPROTON_PROFILE_NO_NODE) or CPROTON_EINVAL. */
#ifndef CPROTON_PROFILE_H
#define CPROTON_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "cproton/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed, read-only profile. Opaque. */
typedef struct cproton_profile cproton_profile;

/* "No node": the parent of the root, an invalid child index. */
#define CPROTON_PROFILE_NO_NODE UINT32_MAX

/* Limits the reader enforces (input beyond them fails with CPROTON_ELIMIT and
 * a message naming the position). */
#define CPROTON_PROFILE_MAX_STRING (1u << 20)   /* bytes in one JSON string */
#define CPROTON_PROFILE_MAX_BYTES (1ull << 36)  /* bytes in one file (64 GiB);
                                                   bounds endless streams */
#define CPROTON_PROFILE_MAX_DEPTH 100000u       /* nesting of nodes */
#define CPROTON_PROFILE_MAX_NODES 200000000u    /* nodes in one file */
#define CPROTON_PROFILE_MAX_METRIC_KEYS 65535u  /* distinct metric names */

/* The type a metric value was written with. */
typedef enum cproton_metric_kind {
  CPROTON_METRIC_NONE = 0,   /* absent (also JSON null) */
  CPROTON_METRIC_INT = 1,    /* an integer that fits int64 (JSON true = 1) */
  CPROTON_METRIC_DOUBLE = 2, /* any other number, incl. NaN/Infinity */
  CPROTON_METRIC_STRING = 3, /* e.g. device_id "0", device_type "CUDA" */
  CPROTON_METRIC_VECTOR = 4  /* an array of numbers (Proton 3.9's vector
                                metrics), e.g. "hist": [1, 2, 3] */
} cproton_metric_kind;

/* One metric value. `d` is always the numeric value (NaN for strings,
 * vectors and absent values); `i` is set for INT; `s` for STRING; `n` and
 * `v` for VECTOR: its elements as doubles (null elements are NaN). `s` and
 * `v` are owned by the profile. */
typedef struct cproton_metric_value {
  cproton_metric_kind kind;
  int64_t i;
  double d;
  const char *s;
  uint32_t n;
  const double *v;
} cproton_metric_value;

/* One entry of the device-info part: device_info[type][index]. Numbers that
 * are absent read as 0; `arch` is always a string ("90", "gfx942"). */
typedef struct cproton_device_info {
  const char *type;  /* "CUDA" or "HIP" */
  const char *index; /* device index as written, e.g. "0" */
  const char *arch;
  double clock_rate_khz;
  double memory_clock_rate_khz;
  double bus_width_bits;
  double num_sms;
} cproton_device_info;

/* Reads and parses the file at `path`.
 * Returns CPROTON_OK and sets *out; on failure *out is NULL and the code is
 * CPROTON_EIO (cannot read), CPROTON_EPARSE (bad JSON or schema),
 * CPROTON_ELIMIT (a limit above), CPROTON_ENOMEM or CPROTON_EINVAL (NULL
 * arguments). The message reads "<path>:<line>:<column>: <what>". The caller
 * owns *out and frees it with cproton_profile_close(). Memory: about 40 bytes
 * per node plus 16 per metric value plus the distinct strings. */
CPROTON_API int cproton_profile_open(const char *path, cproton_profile **out);

/* As cproton_profile_open() on the `len` bytes at `buf` (not NUL-terminated;
 * not kept). `name` labels messages (NULL reads "<buffer>"). */
CPROTON_API int cproton_profile_parse(const char *buf, size_t len,
                                      const char *name, cproton_profile **out);

/* Frees a profile and every string it returned. Accepts NULL. */
CPROTON_API void cproton_profile_close(cproton_profile *p);

/* The path or name given when opening (owned by the profile). */
CPROTON_API const char *cproton_profile_name(const cproton_profile *p);

/* ---- nodes ---------------------------------------------------------------- */

/* Number of nodes (>= 1 for an opened profile). */
CPROTON_API uint32_t cproton_profile_node_count(const cproton_profile *p);

/* frame.name of `node` (valid UTF-8); NULL for a bad id. */
CPROTON_API const char *cproton_profile_node_name(const cproton_profile *p,
                                                  uint32_t node);

/* frame.type of `node` ("function" in every known file); "" if absent. */
CPROTON_API const char *cproton_profile_node_type(const cproton_profile *p,
                                                  uint32_t node);

/* Parent id; CPROTON_PROFILE_NO_NODE for the root or a bad id. */
CPROTON_API uint32_t cproton_profile_node_parent(const cproton_profile *p,
                                                 uint32_t node);

/* Depth: 0 for the root. 0 for a bad id. */
CPROTON_API uint32_t cproton_profile_node_depth(const cproton_profile *p,
                                                uint32_t node);

/* Number of children, in file order. 0 for a bad id. */
CPROTON_API uint32_t cproton_profile_node_child_count(
    const cproton_profile *p, uint32_t node);

/* The i-th child's id; CPROTON_PROFILE_NO_NODE when out of range. */
CPROTON_API uint32_t cproton_profile_node_child(const cproton_profile *p,
                                                uint32_t node, uint32_t i);

/* ---- metrics -------------------------------------------------------------- */

/* Number of distinct metric keys in the file. */
CPROTON_API uint32_t cproton_profile_metric_count(const cproton_profile *p);

/* Name of metric key `key` (e.g. "time (ns)"); NULL for a bad id. */
CPROTON_API const char *cproton_profile_metric_name(const cproton_profile *p,
                                                    uint32_t key);

/* Looks a metric key up by exact name. Returns CPROTON_OK and sets *key_out,
 * or CPROTON_ENOTFOUND (message names the file) / CPROTON_EINVAL. */
CPROTON_API int cproton_profile_metric_find(const cproton_profile *p,
                                            const char *name,
                                            uint32_t *key_out);

/* Number of metrics `node` carries. */
CPROTON_API uint32_t cproton_profile_node_metric_count(
    const cproton_profile *p, uint32_t node);

/* The i-th metric of `node` in file order: its key and value. Returns
 * CPROTON_OK or CPROTON_EINVAL for bad ids. Either out pointer may be NULL. */
CPROTON_API int cproton_profile_node_metric_at(const cproton_profile *p,
                                               uint32_t node, uint32_t i,
                                               uint32_t *key_out,
                                               cproton_metric_value *out);

/* The value of metric `key` on `node`. Returns CPROTON_OK, or
 * CPROTON_ENOTFOUND when the node lacks it (then out->kind is NONE and
 * out->d NaN; no message is set, this is the common case), CPROTON_EINVAL for
 * bad ids. */
CPROTON_API int cproton_profile_node_metric(const cproton_profile *p,
                                            uint32_t node, uint32_t key,
                                            cproton_metric_value *out);

/* As cproton_profile_node_metric() with the key given by name. */
CPROTON_API int cproton_profile_node_metric_by_name(const cproton_profile *p,
                                                    uint32_t node,
                                                    const char *name,
                                                    cproton_metric_value *out);

/* ---- device info ---------------------------------------------------------- */

/* Number of devices described in the file's second element (0 if absent). */
CPROTON_API uint32_t cproton_profile_device_count(const cproton_profile *p);

/* Fills *out for device `i`. Returns CPROTON_OK or CPROTON_EINVAL. The
 * strings are owned by the profile. */
CPROTON_API int cproton_profile_device(const cproton_profile *p, uint32_t i,
                                       cproton_device_info *out);

#ifdef __cplusplus
}
#endif

#endif
