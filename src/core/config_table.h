/* core/config_table.h -- every environment variable and Triton knob the
 * project reads, as rows of one table (docs/configuration.md). */
#ifndef CP_CORE_CONFIG_TABLE_H
#define CP_CORE_CONFIG_TABLE_H

#include <stddef.h>

typedef enum {
  CP_CFG_STRING, /* any text */
  CP_CFG_INT,    /* ASCII digits */
  CP_CFG_BOOL,   /* 0/1, on/off, true/false (any case) */
  CP_CFG_PATH,   /* a file or directory */
} cp_config_type;

/* Which table of the documentation lists the row (checked by a test). */
enum { CP_CFG_DOC_CUPTI = 1 };
/* Rank variables: "{rank}" and "{local_rank}" take the first one set, in
 * table order (C injection and Python sessions alike). */
enum { CP_CFG_RANK = 2, CP_CFG_LOCAL_RANK = 4 };

typedef struct {
  const char *name;    /* the environment variable */
  cp_config_type type;
  const char *def;     /* default, as documented ("" when none) */
  const char *knob;    /* triton.knobs.proton attribute, or NULL */
  const char *reader;  /* the file that reads it */
  unsigned docs;       /* CP_CFG_DOC_* and CP_CFG_*RANK bits */
  const char *doc;     /* one line */
} cp_config_row;

size_t cp_config_count(void);
const cp_config_row *cp_config_at(size_t i);
/* The row named `name`, or NULL. */
const cp_config_row *cp_config_find(const char *name);
/* getenv through the table: NULL when unset; a name missing from the table
 * is a programming error reported as NULL plus an error message. */
const char *cp_config_get(const char *name);
/* A boolean row's value: *out = default when unset; a value that is not
 * 0/1/on/off/true/false sets an error naming the variable and value and
 * returns CPROTON_EINVAL. */
int cp_config_bool(const char *name, int *out);
/* Where the value comes from: "environment" or "default". */
const char *cp_config_source(const char *name);

#endif
