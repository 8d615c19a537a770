/* backend/cupti/records.h -- turning CUPTI activity records into kernel
 * records delivered to sessions (cp_records_*). Pure: needs the CUPTI
 * headers for the record layouts, never libcupti itself, so unit tests feed
 * it synthetic buffers. */
#ifndef CP_BACKEND_CUPTI_RECORDS_H
#define CP_BACKEND_CUPTI_RECORDS_H

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/cupti/graphtime.h"
#include "backend/cupti/state.h"

/* The kernel name a graph launch's record takes in graph-level mode. */
#define CP_RECORDS_GRAPH_NAME "<cuda graph>"

/* Walks a buffer: stores the next record in `*rec` and returns 1, returns 0
 * at the end, a negative value on a malformed buffer (cupti_backend.c wraps
 * cuptiActivityGetNextRecord; tests walk their own layout). */
typedef int (*cp_records_next_fn)(uint8_t *buf, size_t valid,
                                  CUpti_Activity **rec);

/* Handles every record of a completed buffer. Returns how many records were
 * seen. Runs on CUPTI's thread (or a thread calling flush); not the launch
 * path, but per record: no formatting except first-time device warnings. */
size_t cp_records_process(cp_cupti_state *st, uint8_t *buf, size_t valid,
                          cp_records_next_fn next);

/* Handles one record; kinds without a handler are ignored. */
void cp_records_handle(cp_cupti_state *st, const CUpti_Activity *rec);

/* Graph-level mode: delivers one timed graph launch (`state` is the
 * cp_cupti_state; a cp_graphtime_deliver_fn). */
void cp_records_graph_launch(void *state, const cp_graph_launch *l);

/* Registers device `id` with the core the first time it is seen (ids
 * below 64; larger ids are described every time they appear, which never
 * happens on real systems). */
void cp_records_note_device(cp_cupti_state *st, uint32_t id);

#endif
