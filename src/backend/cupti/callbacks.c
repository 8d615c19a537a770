/* backend/cupti/callbacks.c -- the handlers behind CUPTI's callback API:
 *   driver API, launch enter  -> capture the context into the correlation
 *                                ring (the kernel record arrives later)
 *   resource, graph nodes     -> remember/clone/forget capture contexts
 *   NVTX push/pop             -> cproton scopes
 * Invariant: a handler never calls back into CUPTI except to read a graph
 * node id, and never blocks a launch.
 * Hot path: on_launch runs inside every kernel launch of the program.
 * Called by CUPTI (through cupti_backend.c's subscription) and by unit tests. */
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExt.h>
#include <stdatomic.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/config.h"
#include "backend/cupti/graphtime.h"
#include "backend/cupti/lazy.h"
#include "core/clock.h"
#include "core/context.h"
#include "core/log.h"
#include "core/native.h"
#include "core/session.h"
#include "core/tmetric.h"

typedef void (*handler_fn)(cp_cupti_state *, CUpti_CallbackId, const void *);

static atomic_int nvtx_enabled = 1;

void cp_callbacks_set_nvtx(int enabled) {
  atomic_store(&nvtx_enabled, enabled);
}

/* ---- driver API: launches ------------------------------------------------ */

/* Set between a stream capture's begin and end on this thread: its
 * launches become graph nodes and get no record (the correlation ring may
 * overwrite them freely; exact PC sampling skips them). */
static _Thread_local int capturing;

int cp_callbacks_capturing(void) { return capturing; }

static int is_graph_launch(CUpti_CallbackId cbid) {
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

/* Graph-level mode: the launch's stream, as the driver resolves it (a
 * _ptsz launch's NULL stream is the thread's default stream). */
/* cuGraphLaunch's (and _ptsz's) parameters as CUPTI hands them, laid out
 * as cuGraphLaunch_params of generated_cuda_meta.h (which does not build
 * beside cuda.h's current names). */
typedef struct graph_launch_params {
  CUgraphExec exec;
  CUstream stream;
} graph_launch_params;

static void *graph_stream(CUpti_CallbackId cbid, const CUpti_CallbackData *d) {
  const graph_launch_params *p = d->functionParams;
  void *s = p ? (void *)p->stream : NULL;
  return !s && cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz
             ? (void *)0x2 /* CU_STREAM_PER_THREAD */
             : s;
}

/* Graph-level mode's events around a graph launch (graphtime.c): a launch
 * on a capturing thread is captured, not run, and gets none. */
static int graph_timed(cp_cupti_state *st, CUpti_CallbackId cbid,
                       const CUpti_CallbackData *d,
                       const cp_launch_site *site) {
  if (!st->graph_level || !st->gtime || !is_graph_launch(cbid))
    return 0;
  if (d->callbackSite == CUPTI_API_ENTER) {
    if (!capturing)
      cp_graphtime_enter(st->gtime, d->context, graph_stream(cbid, d), site,
                         d->correlationId);
  } else {
    const CUresult *ret = d->functionReturnValue;
    cp_graphtime_exit(st->gtime, graph_stream(cbid, d),
                      !ret || *ret == CUDA_SUCCESS);
  }
  return 1;
}

static void on_launch(cp_cupti_state *st, CUpti_CallbackId cbid,
                      const void *data) {
  const CUpti_CallbackData *d = data;
  void (*bracket)(void *, uint32_t, const char *, const cp_launch_site *,
                  int) =
      atomic_load_explicit(&st->hooks.launch_bracket, memory_order_relaxed);
  if (d->callbackSite != CUPTI_API_ENTER) {
    graph_timed(st, cbid, d, NULL);
    if (bracket)
      bracket(d->context, d->correlationId, d->symbolName, NULL, 0);
    cp_lazy_exited(st, d->correlationId); /* lazy mode switches off here */
    return;
  }
  if (st->ablate & (CP_ABLATE_NO_CAPTURE | CP_ABLATE_NO_RING)) {
    if (!(st->ablate & CP_ABLATE_NO_CAPTURE)) {
      cp_launch_site site;
      cp_session_capture(&site);
    }
    return;
  }
  /* lazy mode: the generation is read before the capture (lazy.c) */
  uint64_t gen = cp_context_generation();
  cp_launch_site site;
  cp_session_capture(&site);
  /* graph-level mode: a graph launch's record is its events' (no ring
   * entry: CUPTI's records of its kernels are dropped) */
  unsigned flags = (capturing ? CP_CORR_CAPTURED : 0) |
                   (is_graph_launch(cbid) ? CP_CORR_GRAPH : 0);
  if (!graph_timed(st, cbid, d, &site)) {
    if (cp_corr_put(st->corr, d->correlationId, &site, flags) ==
        CP_CORR_COLLISION)
      atomic_fetch_add_explicit(&st->stats.collisions, 1,
                                memory_order_relaxed);
    /* not for a timed graph launch: lazy mode would switch its callback
     * off, and its events need every enter and exit */
    cp_lazy_launched(st, cbid, d->correlationId, gen, &site);
  }
  /* PC sampling: one relaxed load per launch when off */
  void (*ctx_hook)(void *) =
      atomic_load_explicit(&st->hooks.launch_context, memory_order_relaxed);
  if (ctx_hook)
    ctx_hook(d->context);
  if (bracket)
    bracket(d->context, d->correlationId, d->symbolName, &site, 1);
}

/* A capture begins when its begin call returns successfully (a failed
 * begin captures nothing: its thread's launches still get records) and
 * ends when the end call is entered. */
static void on_capture(cp_cupti_state *st, CUpti_CallbackId cbid,
                       const void *data) {
  const CUpti_CallbackData *d = data;
  int begin = cbid != CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture &&
              cbid != CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz;
  const CUresult *ret = d->functionReturnValue;
  if (begin && d->callbackSite == CUPTI_API_EXIT)
    capturing = !ret || *ret == CUDA_SUCCESS;
  else if (!begin && d->callbackSite == CUPTI_API_ENTER)
    capturing = 0;
}

/* ---- driver domain: host synchronizations --------------------------------- */

/* A call that blocks the host until the GPU is done (cuStreamSynchronize,
 * cuCtxSynchronize, cuEventSynchronize, synchronous copies to the host:
 * `.item()`, `torch.cuda.synchronize()`): its wait is added to the calling
 * context as host_sync_ns and host_syncs, the advisor's host_sync evidence
 * (docs/advisor.md). Not a launch path; nested calls are not expected. */
static _Thread_local uint64_t sync_enter_ns;

static void on_sync(cp_cupti_state *st, CUpti_CallbackId cbid,
                    const void *data) {
  (void)st, (void)cbid;
  const CUpti_CallbackData *d = data;
  if (cp_context_own_calls())
    return; /* cproton's own wait (a flush, a decoder thread) */
  if (d->callbackSite == CUPTI_API_ENTER) {
    sync_enter_ns = cp_clock_now_ns();
    return;
  }
  uint64_t now = cp_clock_now_ns();
  uint64_t ns = sync_enter_ns && now > sync_enter_ns ? now - sync_enter_ns : 0;
  sync_enter_ns = 0;
  cp_launch_site site;
  cp_session_capture(&site);
  for (int k = 0; k < CP_CONTEXT_KINDS; k++)
    site.is_op[k] = 1; /* the calling context itself, not a kernel below */
  cp_session_deliver_metric(&site, NULL, "host_sync_ns",
                            (cp_value){.kind = CP_VALUE_INT, .u.i = (int64_t)ns});
  cp_session_deliver_metric(&site, NULL, "host_syncs",
                            (cp_value){.kind = CP_VALUE_INT, .u.i = 1});
}

/* ---- resource domain: modules and contexts (PC sampling) ------------------ */

static void on_module(cp_cupti_state *st, CUpti_CallbackId cbid,
                      const void *data) {
  const CUpti_ModuleResourceData *m =
      ((const CUpti_ResourceData *)data)->resourceDescriptor;
  if (m && m->pCubin && m->cubinSize && st->hooks.module_loaded)
    st->hooks.module_loaded(m->pCubin, m->cubinSize);
}

static void on_context(cp_cupti_state *st, CUpti_CallbackId cbid,
                       const void *data) {
  void (*ctx_hook)(void *) = atomic_load(&st->hooks.launch_context);
  if (ctx_hook)
    ctx_hook(((const CUpti_ResourceData *)data)->context);
}

/* ---- resource domain: graph nodes --------------------------------------- */

static int node_id(cp_cupti_state *st, CUgraphNode node, uint64_t *id) {
  return node && st->hooks.graph_node_id &&
         st->hooks.graph_node_id(node, id) == 0;
}

/* Keeps `site` (NULL: none) as node `id`'s capture context; a full table
 * is counted. */
static void remember(cp_cupti_state *st, uint64_t id,
                     const cp_launch_site *site, atomic_ullong *counter) {
  atomic_ullong *c = cp_graph_put(st->graphs, id, site) ? counter
                                                         : &st->stats.graph_full;
  atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* Kernel nodes only: other nodes (copies, memsets) launch no kernels. A node
 * made while no session is active (deactivated during capture) is kept
 * without a capture context, so that its replays are known, not lost. The
 * copy kernel of a captured tensor metric comes with its thread's tag
 * (cproton_tensor_metric_tag): its node is tagged with the slot. */
static void on_node_created(cp_cupti_state *st, CUpti_CallbackId cbid,
                            const void *data) {
  const CUpti_GraphData *g =
      ((const CUpti_ResourceData *)data)->resourceDescriptor;
  uint64_t id;
  if (!g || g->nodeType != CU_GRAPH_NODE_TYPE_KERNEL ||
      !node_id(st, g->node, &id))
    return;
  cp_launch_site site;
  cp_session_capture(&site);
  remember(st, id, site.sessions ? &site : NULL, &st->stats.graph_nodes);
  uint32_t slot = cp_tmetric_tag_take();
  if (slot != CPROTON_TENSOR_METRIC_NONE)
    cp_graph_tag(st->graphs, id, slot);
}

/* Instantiation clones nodes (after a CREATED for the clone, whose context
 * is the instantiation's): the clone takes the original's capture context,
 * or none when the original was built before profiling began. */
static void on_node_cloned(cp_cupti_state *st, CUpti_CallbackId cbid,
                           const void *data) {
  const CUpti_GraphData *g =
      ((const CUpti_ResourceData *)data)->resourceDescriptor;
  uint64_t from, to;
  if (!g || !node_id(st, g->originalNode, &from) || !node_id(st, g->node, &to))
    return;
  int rc = cp_graph_clone(st->graphs, from, to);
  atomic_ullong *c = rc > 0 ? &st->stats.graph_clones
                            : rc < 0 ? &st->stats.graph_full : NULL;
  if (c)
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

/* A destroyed node's entry lives on until a flush that began after the
 * destroy completes (graph.h): programs destroy graphs right after their
 * last replay, before the records of that replay are read. */
static void on_node_destroyed(cp_cupti_state *st, CUpti_CallbackId cbid,
                              const void *data) {
  const CUpti_GraphData *g =
      ((const CUpti_ResourceData *)data)->resourceDescriptor;
  uint64_t id;
  if (g && node_id(st, g->node, &id))
    cp_graph_kill(st->graphs, id);
}

/* ---- NVTX: ranges become scopes ------------------------------------------ */

static void on_push(cp_cupti_state *st, CUpti_CallbackId cbid,
                    const void *data) {
  const CUpti_NvtxData *d = data;
  const char *msg = NULL;
  if (!atomic_load_explicit(&nvtx_enabled, memory_order_relaxed) ||
      !d->functionParams)
    return;
  if (cbid == CUPTI_CBID_NVTX_nvtxRangePushA) {
    msg = ((const nvtxRangePushA_params *)d->functionParams)->message;
  } else {
    const nvtxEventAttributes_t *a =
        ((const nvtxRangePushEx_params *)d->functionParams)->eventAttrib;
    if (a && a->messageType == NVTX_MESSAGE_TYPE_ASCII)
      msg = a->message.ascii;
  }
  cproton_scope_enter(msg && *msg ? msg : "<nvtx range>", NULL);
}

static void on_pop(cp_cupti_state *st, CUpti_CallbackId cbid,
                   const void *data) {
  if (atomic_load_explicit(&nvtx_enabled, memory_order_relaxed) &&
      cproton_scope_exit(NULL) != CPROTON_OK)
    atomic_fetch_add_explicit(&st->stats.nvtx_unmatched, 1,
                              memory_order_relaxed);
}

/* ---- the table --------------------------------------------------------------
 */

#define DRIVER(name) CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_##name
#define RESOURCE(name) CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_##name
#define NVTX(name) CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_##name

#define K CP_CB_KERNELS
#define G CP_CB_GRAPHS
#define GN CP_CB_NODES
#define N CP_CB_NVTX
#define P CP_CB_PCS
#define S CP_CB_SYNC

static const struct {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  handler_fn fn;
  cp_callbacks_group group;
} table[] = {
    {DRIVER(cuLaunch), on_launch, K},
    {DRIVER(cuLaunchGrid), on_launch, K},
    {DRIVER(cuLaunchGridAsync), on_launch, K},
    {DRIVER(cuLaunchKernel), on_launch, K},
    {DRIVER(cuLaunchKernel_ptsz), on_launch, K},
    {DRIVER(cuLaunchKernelEx), on_launch, K},
    {DRIVER(cuLaunchKernelEx_ptsz), on_launch, K},
    {DRIVER(cuLaunchCooperativeKernel), on_launch, K},
    {DRIVER(cuLaunchCooperativeKernel_ptsz), on_launch, K},
    {DRIVER(cuLaunchCooperativeKernelMultiDevice), on_launch, K},
    {DRIVER(cuGraphLaunch), on_launch, K},
    {DRIVER(cuGraphLaunch_ptsz), on_launch, K},
    {RESOURCE(GRAPHNODE_CREATED), on_node_created, GN},
    {RESOURCE(GRAPHNODE_CLONED), on_node_cloned, GN},
    {RESOURCE(GRAPHNODE_DESTROY_STARTING), on_node_destroyed, GN},
    {NVTX(nvtxRangePushA), on_push, N},
    {NVTX(nvtxRangePushEx), on_push, N},
    {NVTX(nvtxRangePop), on_pop, N},
    {RESOURCE(MODULE_LOADED), on_module, P},
    {DRIVER(cuStreamBeginCapture), on_capture, G},
    {DRIVER(cuStreamBeginCapture_ptsz), on_capture, G},
    {DRIVER(cuStreamBeginCapture_v2), on_capture, G},
    {DRIVER(cuStreamBeginCapture_v2_ptsz), on_capture, G},
    {DRIVER(cuStreamBeginCaptureToGraph), on_capture, G},
    {DRIVER(cuStreamBeginCaptureToGraph_ptsz), on_capture, G},
    {DRIVER(cuStreamEndCapture), on_capture, G},
    {DRIVER(cuStreamEndCapture_ptsz), on_capture, G},
    {RESOURCE(CONTEXT_CREATED), on_context, P},
    {DRIVER(cuStreamSynchronize), on_sync, S},
    {DRIVER(cuStreamSynchronize_ptsz), on_sync, S},
    {DRIVER(cuCtxSynchronize), on_sync, S},
    {DRIVER(cuCtxSynchronize_v2), on_sync, S},
    {DRIVER(cuEventSynchronize), on_sync, S},
    {DRIVER(cuMemcpyDtoH_v2), on_sync, S},
    {DRIVER(cuMemcpyDtoH_v2_ptds), on_sync, S},
};
#define N_TABLE (sizeof table / sizeof *table)

const cp_callbacks_id *cp_callbacks_list(size_t *n_out) {
  static cp_callbacks_id ids[N_TABLE];
  for (size_t i = 0; i < N_TABLE; i++)
    ids[i] = (cp_callbacks_id){table[i].domain, table[i].cbid, table[i].group};
  *n_out = N_TABLE;
  return ids;
}

/* Launches are by far the most frequent callbacks: test them first. */
void CUPTIAPI cp_callbacks_dispatch(void *user, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data) {
  cp_cupti_state *st = user;
  /* native stacks: frames from here inwards are ours (core/native.h) */
  cp_native_floor(__builtin_return_address(0));
  for (size_t i = 0; i < N_TABLE; i++)
    if (table[i].cbid == cbid && table[i].domain == domain) {
      table[i].fn(st, cbid, data);
      return;
    }
}
