/* backend_cupti_sync_test.c -- host synchronizations through the real
 * driver callbacks (backend/cupti/callbacks.c): a synchronizing call's
 * enter and exit add host_syncs and host_sync_ns to the calling context
 * (a scope, or ROOT outside scopes), the advisor's host_sync evidence;
 * cproton's own waits are not counted; the sync callbacks are in the table
 * under their own group, subscribed only with CPROTON_HOST_SYNCS=1. No GPU. */
#include <criterion/criterion.h>

#ifdef CPROTON_HAVE_CUPTI
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "backend/cupti/callbacks.h"
#include "backend/cupti/config.h"
#include "backend/cupti/features.h"
#include "core/context.h"
#include "core/session.h"
#include "cproton/cproton.h"
#include "testutil.h"

static cp_cupti_state st;

static void sync_call(CUpti_CallbackId cbid, const char *fn) {
  CUpti_CallbackData d = {.callbackSite = CUPTI_API_ENTER, .functionName = fn};
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
  struct timespec t = {0, 200000}; /* the host waits 0.2 ms */
  nanosleep(&t, NULL);
  d.callbackSite = CUPTI_API_EXIT;
  cp_callbacks_dispatch(&st, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &d);
}

static json_t *node(json_t *n, const char *name) {
  json_t *c;
  size_t i;
  json_array_foreach(json_object_get(n, "children"), i, c)
    if (!strcmp(json_string_value(json_object_get(json_object_get(c, "frame"), "name")), name))
      return c;
  return NULL;
}

static int64_t metric(json_t *n, const char *m) {
  return json_integer_value(json_object_get(json_object_get(n, "metrics"), m));
}

Test(cupti_sync, waits_land_on_the_calling_context) {
  cp_session_reset_all();
  memset(&st, 0, sizeof st);
  const char *path = cpt_tmp_path("sync_ctx");
  int sid = cpt_start_session(path, "none", NULL, NULL);
  cr_assert_geq(sid, 0, "%s", cproton_last_error());
  cproton_scope_enter("step", NULL);
  for (int i = 0; i < 3; i++)
    sync_call(CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, "cuStreamSynchronize");
  sync_call(CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, "cuMemcpyDtoH_v2");
  cp_context_own_calls_begin(); /* cproton's own wait (a flush): not counted */
  sync_call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize");
  cp_context_own_calls_end();
  cproton_scope_exit("step");
  sync_call(CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, "cuCtxSynchronize");
  cr_assert_eq(cproton_session_finalize(sid, NULL), CPROTON_OK, "%s",
               cproton_last_error());
  char full[512];
  snprintf(full, sizeof full, "%s.hatchet", path);
  json_t *j = cpt_load_json(full), *root = json_array_get(j, 0);
  json_t *step = node(root, "step");
  cr_assert_not_null(step);
  cr_assert_eq(metric(step, "host_syncs"), 4);
  cr_assert_geq(metric(step, "host_sync_ns"), 4 * 200000);
  cr_assert_eq(metric(root, "host_syncs"), 1, "outside scopes: on ROOT");
  json_decref(j);
  cp_session_reset_all();
}

Test(cupti_sync, table_lists_the_sync_calls) {
  size_t n, found = 0;
  const cp_callbacks_id *ids = cp_callbacks_list(&n);
  for (size_t i = 0; i < n; i++)
    if (ids[i].group == CP_CB_SYNC)
      found |= ids[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ? 1
               : ids[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize ? 2
               : ids[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize ? 4
               : ids[i].cbid == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2 ? 8 : 0;
  cr_assert_eq(found, 15);
}

/* Which sync callbacks the backend's feature rows subscribe. */
static int sync_cb_on;
static CUptiResult f_enable_cb(uint32_t on, CUpti_SubscriberHandle s,
                               CUpti_CallbackDomain d, CUpti_CallbackId id) {
  (void)s;
  if (d == CUPTI_CB_DOMAIN_DRIVER_API &&
      (id == CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize ||
       id == CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2))
    sync_cb_on += on ? 1 : -1;
  return CUPTI_SUCCESS;
}
static CUptiResult f_activity(CUpti_ActivityKind k) { return (void)k, CUPTI_SUCCESS; }
static CUptiResult f_flush(uint32_t flag) { return (void)flag, CUPTI_SUCCESS; }

static int sync_callbacks_with(const char *value) {
  cp_loader_api fake = {.cuptiEnableCallback = f_enable_cb,
                        .cuptiActivityEnable = f_activity,
                        .cuptiActivityDisable = f_activity,
                        .cuptiActivityFlushAll = f_flush};
  if (value)
    setenv("CPROTON_HOST_SYNCS", value, 1);
  else
    unsetenv("CPROTON_HOST_SYNCS");
  cp_cupti_config cfg;
  cp_cupti_config_from_env(&cfg);
  unsetenv("CPROTON_HOST_SYNCS");
  cr_assert_str_empty(cfg.bad);
  memset(&st, 0, sizeof st);
  cp_features_env env = {.api = &fake, .state = &st, .config = &cfg};
  sync_cb_on = 0;
  cr_assert_eq(cp_features_enable(&env), CPROTON_OK, "%s", cproton_last_error());
  int on = sync_cb_on;
  cp_features_disable(&env);
  cr_assert_eq(sync_cb_on, 0, "disable switches them off");
  return on;
}

/* Off by default: host_syncs would be metrics in every profile, which
 * Proton's files never hold (Proton 3.9's test_trace and
 * test_scope_exclusive failed on a GPU while they were always on). */
Test(cupti_sync, subscribed_only_on_request) {
  cr_assert_eq(sync_callbacks_with(NULL), 0, "default: no sync callbacks");
  cr_assert_eq(sync_callbacks_with("0"), 0);
  cr_assert_eq(sync_callbacks_with("1"), 2);
  cr_assert_eq(sync_callbacks_with("on"), 2);
}

Test(cupti_sync, a_bad_value_is_refused) {
  setenv("CPROTON_HOST_SYNCS", "maybe", 1);
  cp_cupti_config cfg;
  cp_cupti_config_from_env(&cfg);
  unsetenv("CPROTON_HOST_SYNCS");
  cr_assert(strstr(cfg.bad, "CPROTON_HOST_SYNCS='maybe'"), "%s", cfg.bad);
}

#else
Test(cupti_sync, needs_cupti_headers) { cr_skip_test("built without CUPTI headers"); }
#endif
