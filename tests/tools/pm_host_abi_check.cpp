// pm_host_abi_check.cpp -- src/backend/cupti/pm_host_abi.h's C declarations
// of CUPTI's profiler host parameter structs against CUDA's own C++-only
// cupti_profiler_host.h: the same offset for every field, the same struct
// size CUPTI checks (offset of the last field + its size), the same
// profiler-type values. Our half is pm_host_abi_ours.c (our header declares
// the host functions with our struct types, so both cannot share one
// translation unit). Prints each difference; exits 1 on any.
#include <cstddef>
#include <cstdio>

#include <cupti_profiler_host.h>

#include "pm_host_abi_fields.h"

extern "C" const size_t pm_host_abi_ours[PM_HOST_ABI_N];

#define OFF(ours, theirs, field) offsetof(theirs, field),
#define SIZE(ours, theirs, last) theirs##_STRUCT_SIZE,
static const size_t cuda[] = {
    PM_HOST_ABI_FIELDS(OFF) PM_HOST_ABI_SIZES(SIZE) CUPTI_PROFILER_TYPE_RANGE_PROFILER,
    CUPTI_PROFILER_TYPE_PM_SAMPLING};

#define NAME(ours, theirs, field) #ours "." #field,
#define SNAME(ours, theirs, last) "sizeof " #ours,
static const char *const names[PM_HOST_ABI_N] = {
    PM_HOST_ABI_FIELDS(NAME) PM_HOST_ABI_SIZES(SNAME) "CP_PM_PROFILER_RANGE",
    "CP_PM_PROFILER_PM_SAMPLING"};

static_assert(sizeof cuda / sizeof *cuda == PM_HOST_ABI_N, "PM_HOST_ABI_N");
static_assert(sizeof names / sizeof *names == PM_HOST_ABI_N, "PM_HOST_ABI_N");
static_assert(sizeof(CUpti_ProfilerType) == sizeof(int), "enum size");

int main() {
  int bad = 0;
  for (int i = 0; i < PM_HOST_ABI_N; i++)
    if (pm_host_abi_ours[i] != cuda[i]) {
      std::printf("FAIL %s: ours %zu, CUDA's %zu\n", names[i], pm_host_abi_ours[i], cuda[i]);
      bad = 1;
    }
  if (!bad)
    std::printf("pm_host_abi.h: %d offsets, sizes and values equal CUDA's\n", PM_HOST_ABI_N);
  return bad;
}
