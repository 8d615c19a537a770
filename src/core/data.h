/* core/data.h -- one session's measurements, keyed by context node
 * (cp_data_*).
 *
 * A cp_data records which context nodes the session saw (touched) and the
 * metrics measured on them: kernel metrics as fixed fields, everything else
 * as a small list of named values folded by Proton's suffix rules. */
#ifndef CP_CORE_DATA_H
#define CP_CORE_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "core/cct.h"
#include "core/metric.h"

typedef struct cp_data cp_data;

typedef enum cp_device_type { CP_DEVICE_CUDA = 0, CP_DEVICE_HIP = 1 } cp_device_type;

typedef struct cp_flex_metric {
  uint32_t name;     /* strtab id, as the user gave it */
  uint32_t out_name; /* written name: the "(exc)"/"(pty)" suffix removed */
  cp_metric_rule rule;
  cp_value value;
} cp_flex_metric;

typedef struct cp_node_metrics {
  uint64_t time_ns; /* kernel time, sum of durations */
  uint64_t count;   /* kernel launches */
  uint32_t device_id;
  cp_device_type device_type;
  int has_kernel;
  size_t n_flex;
  cp_flex_metric *flex;
} cp_node_metrics;

/* A new, empty store; NULL when out of memory. */
cp_data *cp_data_new(void);

/* Frees the store; NULL is fine. No other thread may use it. */
void cp_data_free(cp_data *d);

/* Forgets every measurement but keeps the chunk tables, so threads that
 * still hold `d` (a touch racing a finalize) never see freed memory. */
void cp_data_reset(cp_data *d);

/* Like cp_data_reset, and frees the chunk tables too. No other thread may
 * use `d` meanwhile (core/session.c calls it when nothing records). */
void cp_data_trim(cp_data *d);

/* Marks `n` as seen. Hot path: lock-free, allocates only the first time a
 * range of 4096 node ids is touched. Errors: ENOMEM. */
int cp_data_touch(cp_data *d, const cp_node *n);

/* Adds `count` kernel executions (1, or a batch whose durations sum to
 * `duration_ns`) to `n`. Called from the backends' record processing
 * (CUPTI's thread). Errors: ENOMEM. */
int cp_data_add_kernel(cp_data *d, const cp_node *n, uint64_t duration_ns,
                       uint32_t count, uint32_t device_id,
                       cp_device_type type);

/* Folds a named metric into `n`. Errors: ENOMEM, ESTATE (kind change). */
int cp_data_add_metric(cp_data *d, const cp_node *n, uint32_t name,
                       cp_value v);

/* Convenience: `name` as a string (interned). */
int cp_data_add_metric_str(cp_data *d, const cp_node *n, const char *name,
                           cp_value v);

/* Whether `n` was touched. Thread-safe. */
int cp_data_touched(const cp_data *d, const cp_node *n);

/* The metrics of `n`, or NULL. The caller must hold cp_data_lock() while it
 * reads them (writers use it). */
const cp_node_metrics *cp_data_metrics(const cp_data *d, const cp_node *n);

void cp_data_lock(cp_data *d);
void cp_data_unlock(cp_data *d);

#endif
