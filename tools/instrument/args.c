/* tools/instrument/args.c -- cproton-instrument's command line.
 *
 * Invariant: parsing never exits, prints or keeps state; every option value
 * is checked (names from fixed lists, unsigned 32-bit numbers, warp lists
 * 0..31) and a bad one gives a message naming the option and the value.
 * Not a hot path; called once by cproton_instrument.c (and by the fuzz
 * target tests/fuzz/instrument_cli_fuzz.c). */
#include "args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char ci_usage[] =
    "usage: cproton-instrument IN.ptx [-o OUT.ptx] [options]\n"
    "  -o FILE                 output (default: stdout; the table then goes to stderr)\n"
    "  --counter C             clock | clock64 (default) | globaltimer\n"
    "  --buffer B              shared (default) | global\n"
    "  --buffer-size N         record bytes per CTA (split in power-of-two segments)\n"
    "  --buffer-strategy S     circular (default: full segments wrap) | flush (global\n"
    "                          buffer sized to keep every record; see docs)\n"
    "  --granularity G         warp (default) | warpgroup | cta | warp_2|4|8 |\n"
    "                          warp_group_2|4|8 (Proton's: one unit per N warps/groups)\n"
    "  --sample-warps LIST     units that record, e.g. 0,2,5 (default: all)\n"
    "  --aggregate             sum per-scope totals in the kernel: no records, one\n"
    "                          slot of totals per CTA (tree profiles; see docs)\n"
    "  --num-warps N           warps per CTA when the kernel has no .reqntid/.maxntid\n"
    "  --existing-shared N     dynamic shared bytes the kernel already uses\n"
    "  --max-shared N          shared bytes per block (default 232448)\n"
    "  -q                      do not print the scope table\n";

static int pick(const char *v, const char *const *names, int n, int *out) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v, names[i])) {
      *out = i;
      return 0;
    }
  return -1;
}

static int parse_u32(const char *v, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 0);
  if (errno || end == v || *end || x > 0xffffffffu || v[0] == '-')
    return -1;
  *out = (uint32_t)x;
  return 0;
}

static int parse_list(const char *v, uint32_t *mask) {
  *mask = 0;
  for (const char *p = v; *p;) {
    char *end;
    if (*p < '0' || *p > '9')
      return -1;
    unsigned long u = strtoul(p, &end, 10);
    if (end == p || u > 31)
      return -1;
    *mask |= 1u << u;
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return -1;
  }
  return *mask ? 0 : -1;
}

/* One "--key value" option; returns 0 or -1 (unknown key or bad value). */
static int value_option(const char *k, const char *v, ci_args *a) {
  static const char *const counters[] = {"clock", "clock64", "globaltimer"};
  static const char *const buffers[] = {"shared", "global"};
  static const char *const strategies[] = {"circular", "flush"};
  static const char *const grans[] = {"warp",   "warpgroup", "cta",          "warp_2",       "warp_4",
                                       "warp_8", "warp_group_2", "warp_group_4", "warp_group_8"};
  int e = 0, x = 0;
  if (!strcmp(k, "-o")) {
    a->out = v;
  } else if (!strcmp(k, "--counter")) {
    if (!(e = pick(v, counters, 3, &x)))
      a->o.counter = (cproton_counter)x;
  } else if (!strcmp(k, "--buffer")) {
    if (!(e = pick(v, buffers, 2, &x)))
      a->o.buffer = (cproton_buffer_kind)x;
  } else if (!strcmp(k, "--buffer-strategy")) {
    if (!(e = pick(v, strategies, 2, &x)))
      a->o.strategy = (cproton_buffer_strategy)x;
  } else if (!strcmp(k, "--granularity")) {
    if (!(e = pick(v, grans, 9, &x)))
      a->o.granularity = (cproton_granularity)x;
  } else if (!strcmp(k, "--buffer-size")) {
    e = parse_u32(v, &a->o.buffer_size);
  } else if (!strcmp(k, "--sample-warps")) {
    e = parse_list(v, &a->o.sample_mask);
  } else if (!strcmp(k, "--num-warps")) {
    e = parse_u32(v, &a->o.num_warps);
  } else if (!strcmp(k, "--existing-shared")) {
    e = parse_u32(v, &a->o.existing_shared_bytes);
  } else if (!strcmp(k, "--max-shared")) {
    e = parse_u32(v, &a->o.max_shared_bytes);
  } else {
    e = -1;
  }
  return e;
}

static int bad(ci_args *a, const char *k, const char *v) {
  snprintf(a->err, sizeof a->err, "bad option '%.200s'%s%.200s", k,
           v ? " " : "", v ? v : "");
  return -1;
}

int ci_parse_args(int argc, char **argv, ci_args *a) {
  memset(a, 0, sizeof *a);
  cproton_ptx_options_init(&a->o);
  for (int i = 1; i < argc && argv; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!k)
      break;
    if (!strcmp(k, "-h") || !strcmp(k, "--help"))
      return 1;
    if (!strcmp(k, "-q")) {
      a->quiet = 1;
    } else if (!strcmp(k, "--aggregate")) {
      a->o.aggregate = 1;
    } else if (k[0] != '-' || !k[1]) { /* the input ("-" = stdin) */
      if (a->in) {
        snprintf(a->err, sizeof a->err, "more than one input file ('%.200s', '%.200s')",
                 a->in, k);
        return -1;
      }
      a->in = k;
    } else if (!v || value_option(k, v, a)) {
      return bad(a, k, v);
    } else {
      i++;
    }
  }
  if (!a->in) {
    snprintf(a->err, sizeof a->err, "no input file");
    return -1;
  }
  return 0;
}
