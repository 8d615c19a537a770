/* testutil.h -- helpers shared by the unit tests: temp paths, whole-file
 * reads, JSON comparison with jansson, and the captured log. */
#ifndef CP_TESTUTIL_H
#define CP_TESTUTIL_H

#include <jansson.h>
#include <stddef.h>

#include "cproton/cproton.h"

/* A fresh path under a per-process temporary folder: <dir>/<stem>. The
 * string is static per call site index `slot` (0..15). */
const char *cpt_tmp_path(const char *stem);

/* Reads a whole file; NULL on error. Caller frees. */
char *cpt_read_file(const char *path, size_t *size_out);

/* Loads a JSON file with jansson; NULL (and a message on stderr) on error. */
json_t *cpt_load_json(const char *path);

/* A hatchet profile's tree as sorted lines, one per node with a count:
 * "/a/b/k=COUNT", or with `with_time` "/a/b/k count=COUNT time=NS"; a new
 * string to free. Profiles compare this way whatever their sibling order. */
char *cpt_profile_lines(json_t *profile, int with_time);

/* Parses JSON text; NULL on error. */
json_t *cpt_parse_json(const char *text);

/* Whether the JSON file `path` equals the JSON text `expected` (key order
 * aside); *got_out and *want_out receive both, compact and key-sorted (NULL
 * where unreadable), for the failure message. Caller frees both. */
int cpt_json_file_matches(const char *path, const char *expected,
                          char **got_out, char **want_out);

/* Starts a session named `name` on `backend` with `data` and `mode` (NULL:
 * the defaults). Returns its id, or -1 with cproton_last_error() set. */
int cpt_start_session(const char *name, const char *backend, const char *data,
                      const char *mode);

struct cproton_ptx_options;
/* The PTX fixture tests/data/ptx/<name>.ptx (the test fails when it is
 * missing); *n its size. Caller frees. */
char *cpt_ptx_fixture(const char *name, size_t *n);

/* Instruments fixture `fx` with `o` and compares the text with the golden
 * file tests/data/instrument/<fx>.<variant>.ptx (CPROTON_UPDATE_GOLDEN=1
 * rewrites it first). */
void cpt_ptx_golden(const char *fx, const char *variant, const struct cproton_ptx_options *o);

struct cp_launch_site;
/* Captures into *site the launch site of a kernel launched inside scope
 * `name` (entered and left around the capture), as a launch callback would. */
void cpt_capture_in(const char *name, struct cp_launch_site *site);

/* What the library logged since cpt_log_capture (log_capture.c): every
 * message at or above its level, one per line (what fits), the warnings (and
 * errors) counted, and the last of them. cp_log calls the handler under
 * its lock, so messages from several threads do not interleave. */
typedef struct cpt_log {
  char all[8192];
  char last_warning[2048];
  _Atomic int n_warnings; /* a backend's thread may warn */
} cpt_log;
extern cpt_log cpt_logged;

/* Clears cpt_logged and sends every message at `min` and above to it. */
void cpt_log_capture(cproton_log_level min);

/* The default handler again (warnings to stderr). */
void cpt_log_release(void);

#endif
