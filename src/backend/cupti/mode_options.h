/* backend/cupti/mode_options.h -- the option loop both CUPTI mode families
 * share (pcs_mode.c, pm_mode.c): each family's options are a table of rows
 * {key, kind, range, refusal, setter}; the loop splits the text after the
 * family's name at the family's separators, finds each option's row,
 * checks a number against the row's range, and refuses anything else
 * through the family's own message function (what, and at which offset).
 * Pure; not a hot path (session start). */
#ifndef CP_BACKEND_CUPTI_MODE_OPTIONS_H
#define CP_BACKEND_CUPTI_MODE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  CP_MODE_FLAG,   /* "key" alone */
  CP_MODE_NUMBER, /* "key=N", digits only (at most 12), in [lo, hi] */
  CP_MODE_TEXT,   /* "key=text", read by the row's setter */
} cp_mode_opt_kind;

/* One option's value as the loop found it. */
typedef struct cp_mode_value {
  const char *mode; /* the whole mode string (messages, offsets) */
  const char *text; /* the value, `len` bytes, inside `mode` (NULL: flag) */
  size_t len;
  size_t at;       /* offset of the value (of the key for a flag) */
  uint64_t number; /* CP_MODE_NUMBER: the checked value */
} cp_mode_value;

typedef struct cp_mode_opt {
  const char *key;
  cp_mode_opt_kind kind;
  uint64_t lo, hi;     /* CP_MODE_NUMBER: the range */
  const char *refusal; /* CP_MODE_NUMBER: why a value is refused */
  /* Where the loop stores the value itself when `set` is NULL: the field
   * at `offset` of the family's options, an unsigned integer of `size`
   * bytes (1 for a flag, the number otherwise; CP_MODE_FIELD). */
  size_t offset, size;
  /* Stores the value in the family's options; 0 or the family's error. */
  int (*set)(void *opts, const cp_mode_value *v);
} cp_mode_opt;

/* The offset and size of field `f` of options type `T`, for a row. */
#define CP_MODE_FIELD(T, f) offsetof(T, f), sizeof(((T *)0)->f)

/* The family's refusal: an EINVAL naming `why` and offset `at`. */
typedef int (*cp_mode_bad_fn)(const char *mode, size_t at, const char *why);

/* Parses the options of `mode` that follow offset `from` (a separator or
 * the end), each field split at any byte of `seps`, with the `n` rows of
 * `table` into `opts`. A field that matches no row (a flag given a value,
 * a valued key given none, an empty field) is `bad(mode, offset, "unknown
 * option")`; a number out of its row's range is `bad(mode, offset of the
 * value, row's refusal)`. */
int cp_mode_options_parse(const char *mode, size_t from, const char *seps,
                          const cp_mode_opt *table, size_t n, void *opts,
                          cp_mode_bad_fn bad);

#endif
