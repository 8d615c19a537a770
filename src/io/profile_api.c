/* io/profile_api.c -- the public reading API of <cproton/profile.h>:
 * opening (file or buffer) and read-only accessors over the model.
 *
 * Invariant: an opened profile is immutable, so accessors take no lock and
 * any thread may call them; bad ids return the documented "none" values.
 * Not a hot path; called by tools (cproton-viewer), tests and bindings. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/grow.h"
#include "cproton/cproton.h"
#include "io/hatchet_read.h"
#include "io/hatchet_read_msgpack.h"

static int finish_open(cp_json_lexer *lx, cproton_profile *p,
                       cproton_profile **out) {
  int rc = cp_hatchet_read_document(lx, p);
  cp_hatchet_read_json_free(lx);
  if (rc) {
    cp_profile_model_free(p);
    return rc;
  }
  *out = p;
  return CPROTON_OK;
}

static int finish_msgpack(const void *buf, size_t len, cproton_profile *p,
                          cproton_profile **out) {
  int rc = cp_hatchet_read_msgpack(buf, len, p);
  if (rc) {
    cp_profile_model_free(p);
    return rc;
  }
  *out = p;
  return CPROTON_OK;
}

/* Reads the rest of `fd` sequentially (a pipe has no size and no pread)
 * into a buffer that starts with the sniffed byte `first`. */
static int slurp(int fd, unsigned char first, const char *name, char **buf_out,
                 size_t *len_out) {
  struct stat st;
  size_t cap = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0
                   ? (size_t)st.st_size + 1 : 1 << 16, len = 1;
  char *buf = malloc(cap);
  if (!buf)
    return cp_error_set(CPROTON_ENOMEM, "%s: out of memory", name);
  buf[0] = (char)first;
  for (;;) {
    if (len == cap) {
      void *b;
      if (cap >= CPROTON_PROFILE_MAX_BYTES || cp_grow(buf, &cap, len + 1, 1, 1, &b)) {
        free(buf);
        return cap < CPROTON_PROFILE_MAX_BYTES
                   ? cp_error_set(CPROTON_ENOMEM, "%s: out of memory", name)
                   : cp_error_set(CPROTON_ELIMIT, "%s: input longer than %llu "
                                  "bytes", name, CPROTON_PROFILE_MAX_BYTES);
      }
      buf = b;
    }
    ssize_t n = read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      free(buf);
      return cp_error_set(CPROTON_EIO, "%s: read failed at byte %zu: %s", name,
                          len, strerror(errno));
    }
    if (n == 0)
      break;
    len += (size_t)n;
  }
  *buf_out = buf, *len_out = len;
  return CPROTON_OK;
}

/* MessagePack profiles are read whole (they are compact; the JSON reader
 * streams). Frees `p` on failure; does not close `fd`. */
static int open_msgpack(int fd, unsigned char first, cproton_profile *p,
                        cproton_profile **out) {
  char *buf = NULL;
  size_t len = 0;
  int rc = slurp(fd, first, p->name, &buf, &len);
  if (rc) {
    cp_profile_model_free(p);
    return rc;
  }
  rc = finish_msgpack(buf, len, p, out);
  free(buf);
  return rc;
}

/* The format comes from the first byte, read with read() so that a pipe or
 * a FIFO is recognised as well as a file: 0 bytes read (n_first = 0) is an
 * empty input, which the JSON reader reports. */
static int read_first(int fd, const char *name, unsigned char *first,
                      size_t *n_first) {
  ssize_t n;
  while ((n = read(fd, first, 1)) < 0 && errno == EINTR)
    ;
  if (n < 0)
    return cp_error_set(CPROTON_EIO, "%s: read failed: %s", name,
                        strerror(errno));
  *n_first = (size_t)n;
  return CPROTON_OK;
}

static int open_fd(int fd, cproton_profile *p, cproton_profile **out) {
  unsigned char first = 0;
  size_t n_first = 0;
  int rc = read_first(fd, p->name, &first, &n_first);
  if (rc) {
    cp_profile_model_free(p);
    return rc;
  }
  if (n_first && cp_hatchet_read_msgpack_sniff(&first, 1))
    return open_msgpack(fd, first, p, out);
  cp_json_lexer lx;
  rc = cp_hatchet_read_json_init_fd(&lx, fd, p->name, (const char *)&first,
                                    n_first);
  if (rc) {
    cp_profile_model_free(p);
    return rc;
  }
  return finish_open(&lx, p, out);
}

int cproton_profile_open(const char *path, cproton_profile **out) {
  if (!out || !path)
    return cp_error_set(CPROTON_EINVAL, "cproton_profile_open: NULL argument");
  *out = NULL;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cp_error_set(CPROTON_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
  cproton_profile *p = cp_profile_model_new(path);
  int rc = p ? open_fd(fd, p, out)
             : cp_error_set(CPROTON_ENOMEM, "%s: out of memory", path);
  close(fd);
  return rc;
}

int cproton_profile_parse(const char *buf, size_t len, const char *name,
                          cproton_profile **out) {
  if (!out || (!buf && len))
    return cp_error_set(CPROTON_EINVAL, "cproton_profile_parse: NULL argument");
  *out = NULL;
  cproton_profile *p = cp_profile_model_new(name);
  if (!p)
    return cp_error_set(CPROTON_ENOMEM, "out of memory");
  if (cp_hatchet_read_msgpack_sniff(buf, len))
    return finish_msgpack(buf, len, p, out);
  cp_json_lexer lx;
  cp_hatchet_read_json_init_mem(&lx, buf ? buf : "", len, p->name);
  return finish_open(&lx, p, out);
}

void cproton_profile_close(cproton_profile *p) { cp_profile_model_free(p); }

const char *cproton_profile_name(const cproton_profile *p) {
  return p ? p->name : NULL;
}

static int bad_node(const cproton_profile *p, uint32_t node) {
  return !p || node >= p->n_nodes;
}

uint32_t cproton_profile_node_count(const cproton_profile *p) {
  return p ? p->n_nodes : 0;
}

const char *cproton_profile_node_name(const cproton_profile *p,
                                      uint32_t node) {
  return bad_node(p, node) ? NULL : cp_profile_model_str(p, p->nodes[node].name);
}

const char *cproton_profile_node_type(const cproton_profile *p,
                                      uint32_t node) {
  return bad_node(p, node) ? NULL : cp_profile_model_str(p, p->nodes[node].type);
}

uint32_t cproton_profile_node_parent(const cproton_profile *p, uint32_t node) {
  return bad_node(p, node) ? CPROTON_PROFILE_NO_NODE : p->nodes[node].parent;
}

uint32_t cproton_profile_node_depth(const cproton_profile *p, uint32_t node) {
  return bad_node(p, node) ? 0 : p->nodes[node].depth;
}

uint32_t cproton_profile_node_child_count(const cproton_profile *p,
                                          uint32_t node) {
  return bad_node(p, node) ? 0 : p->nodes[node].n_children;
}

uint32_t cproton_profile_node_child(const cproton_profile *p, uint32_t node,
                                    uint32_t i) {
  if (bad_node(p, node) || i >= p->nodes[node].n_children)
    return CPROTON_PROFILE_NO_NODE;
  return p->children[p->nodes[node].child_off + i];
}

uint32_t cproton_profile_metric_count(const cproton_profile *p) {
  return p ? p->n_keys : 0;
}

const char *cproton_profile_metric_name(const cproton_profile *p,
                                        uint32_t key) {
  return !p || key >= p->n_keys ? NULL : cp_profile_model_str(p, p->keys[key]);
}

int cproton_profile_metric_find(const cproton_profile *p, const char *name,
                                uint32_t *key_out) {
  if (!p || !name || !key_out)
    return cp_error_set(CPROTON_EINVAL, "cproton_profile_metric_find: NULL");
  for (uint32_t k = 0; k < p->n_keys; k++) {
    if (!strcmp(cp_profile_model_str(p, p->keys[k]), name)) {
      *key_out = k;
      return CPROTON_OK;
    }
  }
  return cp_error_set(CPROTON_ENOTFOUND, "%s: no metric named \"%.200s\"",
                      p->name, name);
}

uint32_t cproton_profile_node_metric_count(const cproton_profile *p,
                                           uint32_t node) {
  return bad_node(p, node) ? 0 : p->nodes[node].n_metrics;
}

static void fill_value(const cproton_profile *p, const cp_profile_metric *m,
                       cproton_metric_value *out) {
  memset(out, 0, sizeof *out);
  out->kind = (cproton_metric_kind)m->kind;
  out->d = NAN;
  if (m->kind == CPROTON_METRIC_INT) {
    out->i = m->v.i;
    out->d = (double)m->v.i;
  } else if (m->kind == CPROTON_METRIC_DOUBLE) {
    out->d = m->v.d;
  } else if (m->kind == CPROTON_METRIC_STRING) {
    out->s = cp_profile_model_str(p, m->v.s);
  } else if (m->kind == CPROTON_METRIC_VECTOR) {
    static const double no_values[1];
    out->n = m->v.vec.n;
    /* a profile whose only vectors are empty has no value array at all */
    out->v = p->vec ? p->vec + m->v.vec.off : no_values;
  }
}

int cproton_profile_node_metric_at(const cproton_profile *p, uint32_t node,
                                   uint32_t i, uint32_t *key_out,
                                   cproton_metric_value *out) {
  if (bad_node(p, node) || i >= p->nodes[node].n_metrics)
    return cp_error_set(CPROTON_EINVAL, "bad node or metric index");
  const cp_profile_metric *m = &p->metrics[p->nodes[node].metric_off + i];
  if (key_out)
    *key_out = m->key;
  if (out)
    fill_value(p, m, out);
  return CPROTON_OK;
}

int cproton_profile_node_metric(const cproton_profile *p, uint32_t node,
                                uint32_t key, cproton_metric_value *out) {
  if (!out || bad_node(p, node) || key >= p->n_keys)
    return cp_error_set(CPROTON_EINVAL, "bad node or metric key");
  const cp_profile_node *n = &p->nodes[node];
  for (uint32_t i = 0; i < n->n_metrics; i++) {
    if (p->metrics[n->metric_off + i].key == key) {
      fill_value(p, &p->metrics[n->metric_off + i], out);
      return CPROTON_OK;
    }
  }
  memset(out, 0, sizeof *out);
  out->d = NAN;
  return CPROTON_ENOTFOUND;
}

int cproton_profile_node_metric_by_name(const cproton_profile *p,
                                        uint32_t node, const char *name,
                                        cproton_metric_value *out) {
  if (!out || !name || bad_node(p, node))
    return cp_error_set(CPROTON_EINVAL, "bad node or NULL argument");
  const cp_profile_node *n = &p->nodes[node];
  for (uint32_t i = 0; i < n->n_metrics; i++) {
    const cp_profile_metric *m = &p->metrics[n->metric_off + i];
    if (!strcmp(cp_profile_model_str(p, p->keys[m->key]), name)) {
      fill_value(p, m, out);
      return CPROTON_OK;
    }
  }
  memset(out, 0, sizeof *out);
  out->d = NAN;
  return CPROTON_ENOTFOUND;
}

uint32_t cproton_profile_device_count(const cproton_profile *p) {
  return p ? p->n_devices : 0;
}

int cproton_profile_device(const cproton_profile *p, uint32_t i,
                           cproton_device_info *out) {
  if (!p || !out || i >= p->n_devices)
    return cp_error_set(CPROTON_EINVAL, "bad device index");
  const cp_profile_device *d = &p->devices[i];
  out->type = cp_profile_model_str(p, d->type);
  out->index = cp_profile_model_str(p, d->index);
  out->arch = cp_profile_model_str(p, d->arch);
  out->clock_rate_khz = d->clock_rate;
  out->memory_clock_rate_khz = d->memory_clock_rate;
  out->bus_width_bits = d->bus_width;
  out->num_sms = d->num_sms;
  return CPROTON_OK;
}
