/* tools/viewer/advise_out.c -- the advisor's output: text for people
 * (findings ranked by estimated time saved, each with kernel, call path,
 * evidence, diagnosis, suggestion and model) and the JSON interface of
 * docs/advisor.md, which bench/ and cproton.advise read.
 *
 * Invariant: the JSON is valid whatever the names hold (strings escaped,
 * non-finite numbers written as null); text never writes a raw control
 * character (vw_escape). Called by advise.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advise.h"
#include "viewer.h"

static void json_str(const char *s, FILE *out) {
  fputc('"', out);
  for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
    if (*c == '"' || *c == '\\')
      fprintf(out, "\\%c", *c);
    else if (*c < 0x20 || *c == 0x7f)
      fprintf(out, "\\u%04x", *c);
    else
      fputc(*c, out);
  }
  fputc('"', out);
}

static void json_num(double v, FILE *out) {
  if (isfinite(v))
    fprintf(out, "%.10g", v);
  else
    fputs("null", out);
}

/* The frames from the root to k's frame, root first, in *store (owned by
 * the caller, grown as needed); returns how many. */
static uint32_t path_of(const av_kernel *k, uint32_t **store, size_t *cap) {
  uint32_t n = 0;
  for (uint32_t i = k->node; i != CPROTON_PROFILE_NO_NODE && n < 1000000;
       i = cproton_profile_node_parent(k->p, i)) {
    if (n == *cap) {
      size_t c = *cap ? 2 * *cap : 64;
      uint32_t *s = realloc(*store, c * sizeof *s);
      if (!s)
        break;
      *store = s, *cap = c;
    }
    (*store)[n++] = i;
  }
  return n;
}

static double speedup(const av_finding *f) {
  return f->base > f->saving ? f->base / (f->base - f->saving) : NAN;
}

static void json_finding(const av_finding *f, const av_ctx *c, uint32_t **ps,
                         size_t *pcap, FILE *out) {
  const av_rule *r = &av_rules[f->rule];
  fputs("{\"rule\":", out), json_str(r->id, out);
  fputs(",\"kernel\":", out), json_str(f->k->name, out);
  fputs(",\"path\":[", out);
  uint32_t n = path_of(f->k, ps, pcap);
  for (uint32_t i = n; i-- > 0;) {
    json_str(cproton_profile_node_name(f->k->p, (*ps)[i]), out);
    fputs(i ? "," : "", out);
  }
  fputs("],\"time_ns\":", out), json_num(f->k->f[AF_TIME], out);
  fputs(",\"share\":", out);
  json_num(c->total_time > 0 ? f->k->f[AF_TIME] / c->total_time : NAN, out);
  fputs(",\"evidence\":{", out);
  for (int e = 0; e < f->n_ev; e++) {
    fputs(e ? "," : "", out), json_str(f->ev[e].name, out), fputc(':', out);
    if (f->ev[e].s)
      json_str(f->ev[e].s, out);
    else
      json_num(f->ev[e].v, out);
  }
  fputs("},\"diagnosis\":", out), json_str(f->diag, out);
  fputs(",\"suggestion\":", out), json_str(r->suggestion, out);
  fputs(",\"estimated_speedup\":", out), json_num(speedup(f), out);
  fputs(",\"estimated_saving_ns\":", out), json_num(round(f->saving), out);
  fputs(",\"model\":", out), json_str(r->model, out);
  fputc('}', out);
}

void av_print_json(const av_finding *const *f, size_t n, const int *unavail,
                   const av_ctx *c, FILE *out) {
  uint32_t *ps = NULL;
  size_t pcap = 0;
  fputs("{\"findings\":[", out);
  for (size_t i = 0; i < n; i++) {
    fputs(i ? ",\n" : "\n", out);
    json_finding(f[i], c, &ps, &pcap, out);
  }
  fputs("],\n\"unavailable\":[", out);
  int first = 1;
  for (int q = 0; q < av_n_rules; q++) {
    if (!unavail[q])
      continue;
    fputs(first ? "\n" : ",\n", out), first = 0;
    fputs("{\"rule\":", out), json_str(av_rules[q].id, out);
    fputs(",\"needs\":", out), json_str(av_rules[q].needs_txt, out);
    fputs(",\"mode\":", out), json_str(av_rules[q].mode, out);
    fputc('}', out);
  }
  fputs("]}\n", out);
  free(ps);
}

static void text_finding(size_t rank, const av_finding *f, const av_ctx *c,
                         uint32_t **ps, size_t *pcap, FILE *out) {
  static char *esc;
  static size_t esc_cap;
  const av_rule *r = &av_rules[f->rule];
  fprintf(out, "#%zu %s  %s\n", rank, r->id, vw_escape(f->k->name, &esc, &esc_cap));
  if (f->k->host)
    fprintf(out, "   saves ~%.3f ms of %.3f ms (%.2fx; GPU time with the idle "
            "launches after host synchronizations)\n", f->saving / 1e6,
            f->base / 1e6, speedup(f));
  else
    fprintf(out, "   saves ~%.3f ms of %.3f ms (%.2fx; the kernel is %.1f%% of "
            "kernel time)\n", f->saving / 1e6, f->base / 1e6, speedup(f),
            c->total_time > 0 ? 100 * f->k->f[AF_TIME] / c->total_time : 0.0);
  fputs("   path: ", out);
  uint32_t n = path_of(f->k, ps, pcap);
  for (uint32_t i = n; i-- > 0;)
    fprintf(out, "%s%s", vw_escape(cproton_profile_node_name(f->k->p, (*ps)[i]),
                                   &esc, &esc_cap), i ? " > " : "\n");
  fputs("   evidence:", out);
  for (int e = 0; e < f->n_ev; e++) {
    if (f->ev[e].s)
      fprintf(out, " %s=%s", f->ev[e].name, vw_escape(f->ev[e].s, &esc, &esc_cap));
    else
      fprintf(out, " %s=%.4g", f->ev[e].name, f->ev[e].v);
  }
  fprintf(out, "\n   diagnosis: %s\n", vw_escape(f->diag, &esc, &esc_cap));
  fprintf(out, "   try: %s\n   model: %s\n", r->suggestion, r->model);
}

void av_print_text(const av_finding *const *f, size_t n, const int *unavail,
                   const av_ctx *c, FILE *out) {
  uint32_t *ps = NULL;
  size_t pcap = 0;
  int n_un = 0;
  uint32_t n_k = 0;
  for (int q = 0; q < av_n_rules; q++)
    n_un += unavail[q] != 0;
  for (uint32_t i = 0; i < c->n_kernels; i++)
    n_k += !c->kernels[i].host && !c->kernels[i].dead; /* joins: one */
  fprintf(out, "%zu finding%s over %u kernel frame%s (%.3f ms of kernel "
          "time), sorted by estimated time saved; %d rule%s unavailable\n", n,
          n == 1 ? "" : "s", n_k, n_k == 1 ? "" : "s", c->total_time / 1e6, n_un,
          n_un == 1 ? "" : "s");
  for (size_t i = 0; i < n; i++)
    text_finding(i + 1, f[i], c, &ps, &pcap, out);
  if (n_un)
    fputs("unavailable (the profiles lack what they need):\n", out);
  for (int q = 0; q < av_n_rules; q++)
    if (unavail[q])
      fprintf(out, "  %s: needs %s; collect with %s\n", av_rules[q].id,
              av_rules[q].needs_txt, av_rules[q].mode);
  free(ps);
}
