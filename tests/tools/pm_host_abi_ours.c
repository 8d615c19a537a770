/* pm_host_abi_ours.c -- the C half of pm_host_abi_check: the offsets and
 * sizes of src/backend/cupti/pm_host_abi.h's structs, in the order of
 * pm_host_abi_fields.h, for the C++ half to compare with CUDA's. */
#include <stddef.h>

#include "backend/cupti/pm_host_abi.h"
#include "pm_host_abi_fields.h"

#define OFF(ours, theirs, field) offsetof(ours, field),
#define SIZE(ours, theirs, last) CP_PM_STRUCT_SIZE(ours, last),
const size_t pm_host_abi_ours[] = {
    PM_HOST_ABI_FIELDS(OFF) PM_HOST_ABI_SIZES(SIZE) CP_PM_PROFILER_RANGE,
    CP_PM_PROFILER_PM_SAMPLING};
_Static_assert(sizeof pm_host_abi_ours / sizeof *pm_host_abi_ours ==
                   PM_HOST_ABI_N,
               "PM_HOST_ABI_N");
