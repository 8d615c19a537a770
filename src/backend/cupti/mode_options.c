/* backend/cupti/mode_options.c -- the CUPTI mode families' shared option
 * loop (contract in mode_options.h): the families differ only in their
 * tables, separators and messages. Pure; not a hot path. */
#include <string.h>

#include "backend/cupti/mode_options.h"
#include "core/check.h"

/* The value of p[0..n) in *out; 1 when it is a decimal in lo..hi: digits
 * only, at most 12 (no overflow). */
static int number(const char *p, size_t n, uint64_t lo, uint64_t hi,
                  uint64_t *out) {
  uint64_t v = 0;
  if (n == 0 || n > 12)
    return 0;
  for (size_t i = 0; i < n; i++) {
    if (p[i] < '0' || p[i] > '9')
      return 0;
    v = v * 10 + (uint64_t)(p[i] - '0');
  }
  *out = v;
  return v >= lo && v <= hi;
}

/* The row of `table` the field p[0..n) names, or NULL. */
static const cp_mode_opt *row_of(const char *p, size_t n,
                                 const cp_mode_opt *table, size_t rows) {
  const char *eq = memchr(p, '=', n);
  size_t key = eq ? (size_t)(eq - p) : n;
  for (size_t i = 0; i < rows; i++)
    if (strlen(table[i].key) == key && !strncmp(p, table[i].key, key) &&
        (table[i].kind == CP_MODE_FLAG) == !eq)
      return &table[i];
  return NULL;
}

/* A row without a setter: `value` into its field (unsigned, 1 to 8 bytes;
 * the row's range keeps it within the field). */
static void store(void *opts, const cp_mode_opt *row, uint64_t value) {
  unsigned char *field = (unsigned char *)opts + row->offset;
  uint8_t u8 = (uint8_t)value;
  uint16_t u16 = (uint16_t)value;
  uint32_t u32 = (uint32_t)value;
  switch (row->size) {
  case 1: memcpy(field, &u8, 1); break;
  case 2: memcpy(field, &u16, 2); break;
  case 4: memcpy(field, &u32, 4); break;
  default: memcpy(field, &value, 8); break;
  }
  CP_ASSERT(row->size == 1 || row->size == 2 || row->size == 4 || row->size == 8);
}

static int one(const char *mode, const char *p, size_t n,
               const cp_mode_opt *table, size_t rows, void *opts,
               cp_mode_bad_fn bad) {
  const cp_mode_opt *row = row_of(p, n, table, rows);
  if (!row)
    return bad(mode, (size_t)(p - mode), "unknown option");
  cp_mode_value v = {.mode = mode, .at = (size_t)(p - mode)};
  if (row->kind != CP_MODE_FLAG) {
    size_t key = strlen(row->key);
    v.text = p + key + 1;
    v.len = n - key - 1;
    v.at += key + 1;
  }
  if (row->kind == CP_MODE_NUMBER &&
      !number(v.text, v.len, row->lo, row->hi, &v.number))
    return bad(mode, v.at, row->refusal);
  if (row->set)
    return row->set(opts, &v);
  store(opts, row, row->kind == CP_MODE_FLAG ? 1 : v.number);
  return 0;
}

int cp_mode_options_parse(const char *mode, size_t from, const char *seps,
                          const cp_mode_opt *table, size_t n, void *opts,
                          cp_mode_bad_fn bad) {
  for (const char *p = mode + from; *p;) {
    p++; /* the separator */
    size_t len = strcspn(p, seps);
    int rc = one(mode, p, len, table, n, opts, bad);
    if (rc)
      return rc;
    p += len;
  }
  return 0;
}
