/* core/phase.c -- the phases of one session slot (core/phase.h).
 *
 * Invariant: `live` is sorted by number and its last entry is the current
 * phase; stores move between `live` and `spare` only, so a pointer to a
 * store stays valid for the life of the process. Callers serialise every
 * call except cp_phases_complete's reads of the atomics (session.c holds
 * its table lock, and its slot lock while records may be delivered).
 * Not a hot path: record delivery does one short scan of `live`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/check.h"
#include "core/error.h"
#include "core/grow.h"
#include "core/phase.h"

static int grow(cp_phase **arr, size_t *cap, size_t need) {
  void *a;
  if (cp_grow(*arr, cap, need, sizeof **arr, 4, &a))
    return cp_error_set(CPROTON_ENOMEM, "out of memory for a phase");
  *arr = a;
  return CPROTON_OK;
}

/* Stores for a new phase: a spare pair, or new ones. */
static int take_stores(cp_phases *ps, cp_phase *out) {
  if (ps->n_spare) {
    const cp_phase *spare = &ps->spare[--ps->n_spare];
    out->data = spare->data;
    out->trace = spare->trace;
    return CPROTON_OK;
  }
  out->data = cp_data_new();
  out->trace = out->data ? cp_trace_new() : NULL;
  if (out->trace)
    return CPROTON_OK;
  cp_data_free(out->data);
  return cp_error_set(CPROTON_ENOMEM, "out of memory for a phase");
}

/* Resets the stores of live[i] and moves them to the spare list. */
static void retire(cp_phases *ps, size_t i) {
  cp_phase p = ps->live[i];
  cp_data_reset(p.data);
  cp_trace_clear(p.trace);
  /* grow() cannot fail here: spare has room for every pair ever made. */
  CP_ASSERT(ps->n_spare < ps->cap_spare);
  ps->spare[ps->n_spare++] = p;
  memmove(&ps->live[i], &ps->live[i + 1],
          (ps->n_live - i - 1) * sizeof *ps->live);
  ps->n_live--;
}

/* Keeps room in `spare` for every store pair, so retire never allocates. */
static int reserve_spare(cp_phases *ps) {
  return grow(&ps->spare, &ps->cap_spare, ps->n_live + ps->n_spare + 1);
}

int cp_phases_begin(cp_phases *ps, uint32_t epoch) {
  while (ps->n_live)
    retire(ps, 0);
  cp_phase p = {.number = 0, .start_epoch = epoch, .end_epoch = UINT32_MAX};
  int rc = reserve_spare(ps);
  if (!rc)
    rc = grow(&ps->live, &ps->cap_live, 1);
  if (!rc)
    rc = take_stores(ps, &p);
  if (rc)
    return rc;
  ps->live[ps->n_live++] = p;
  ps->current = 0;
  ps->flushed_through = -1;
  atomic_store(&ps->max_delivered, 0);
  atomic_store(&ps->late, 0);
  ps->n_parts = ps->n_failed = 0;
  return CPROTON_OK;
}

cp_phase *cp_phases_current(cp_phases *ps) {
  CP_ASSERT(ps->n_live > 0 && ps->live[ps->n_live - 1].number == ps->current);
  return &ps->live[ps->n_live - 1];
}

cp_phase *cp_phases_find(cp_phases *ps, uint32_t number) {
  for (size_t i = 0; i < ps->n_live; i++)
    if (ps->live[i].number == number)
      return &ps->live[i];
  return NULL;
}

cp_phase *cp_phases_at_epoch(cp_phases *ps, uint32_t epoch) {
  for (size_t i = ps->n_live; i-- > 0;) {
    cp_phase *p = &ps->live[i];
    /* the current phase (end UINT32_MAX) also takes UINT32_MAX: records
     * a backend could not attribute go to what is current now */
    if (p->start_epoch <= epoch &&
        (epoch < p->end_epoch || p->end_epoch == UINT32_MAX))
      return p;
  }
  return NULL;
}

int cp_phases_advance(cp_phases *ps, uint32_t epoch, uint32_t *number_out) {
  cp_phase p = {.number = ps->current + 1, .start_epoch = epoch,
                .end_epoch = UINT32_MAX};
  int rc = reserve_spare(ps);
  if (!rc)
    rc = grow(&ps->live, &ps->cap_live, ps->n_live + 1);
  if (!rc)
    rc = take_stores(ps, &p);
  if (rc)
    return rc;
  cp_phases_current(ps)->end_epoch = epoch;
  CP_ASSERT(ps->n_live < ps->cap_live); /* grown above */
  ps->live[ps->n_live++] = p;
  ps->current = p.number;
  if (number_out)
    *number_out = p.number;
  return CPROTON_OK;
}

void cp_phases_clear(cp_phases *ps, uint32_t number, int up_to) {
  for (size_t i = 0; i < ps->n_live;) {
    cp_phase *p = &ps->live[i];
    int hit = up_to ? p->number <= number : p->number == number;
    if (hit && p->number == ps->current) {
      cp_data_reset(p->data); /* the current phase keeps recording */
      cp_trace_clear(p->trace);
      i++;
    } else if (hit) {
      retire(ps, i);
    } else {
      i++;
    }
  }
}

int cp_phases_complete(const cp_phases *ps, uint32_t number) {
  if (number >= ps->current)
    return 0;
  return (int64_t)number <= ps->flushed_through ||
         number < atomic_load(&ps->max_delivered);
}

void cp_phases_flushed(cp_phases *ps, uint32_t current_at_start) {
  int64_t done = (int64_t)current_at_start - 1;
  if (done > ps->flushed_through)
    ps->flushed_through = done;
}

void cp_phases_note_part(cp_phases *ps, uint32_t number, int ok) {
  ps->n_parts++;
  if (ok)
    return;
  if (ps->n_failed < CP_PHASES_FAILED_KEPT)
    ps->failed[ps->n_failed] = number;
  ps->n_failed++;
}

void cp_phases_failed_list(const cp_phases *ps, char *out, size_t size) {
  size_t n = 0;
  out[0] = '\0';
  for (uint32_t k = 0; k < ps->n_failed && k < CP_PHASES_FAILED_KEPT; k++)
    if (n < size)
      n += (size_t)snprintf(out + n, size - n, "%s%u", k ? ", " : "",
                            ps->failed[k]);
  if (ps->n_failed > CP_PHASES_FAILED_KEPT && n < size)
    snprintf(out + n, size - n, ", ...");
}

void cp_phases_trim(cp_phases *ps) {
  for (size_t i = 0; i < ps->n_live; i++) /* the reset current phase */
    cp_data_trim(ps->live[i].data);
  for (size_t i = 0; i < ps->n_spare; i++)
    cp_data_trim(ps->spare[i].data);
}

void cp_phases_free(cp_phases *ps) {
  for (size_t i = 0; i < ps->n_live; i++)
    cp_data_free(ps->live[i].data), cp_trace_free(ps->live[i].trace);
  for (size_t i = 0; i < ps->n_spare; i++)
    cp_data_free(ps->spare[i].data), cp_trace_free(ps->spare[i].trace);
  free(ps->live);
  free(ps->spare);
  memset(ps, 0, sizeof *ps);
}
