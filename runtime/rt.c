/* rt.c — see rt.h. */
#include "runtime/rt.h"

#include "runtime/scratch.h"

#include <stdbool.h>

void *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes, const char *who)
{
    void *p = pm_scratch_set_get(rt->scratch, slot, bytes);
    if (!p) {
        /* Several worker threads may fail at once; keep the first story. */
        int expected = 0;
        if (__atomic_compare_exchange_n(&rt->failed, &expected, 1, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            rt->failed_slot = slot;
            rt->failed_bytes = bytes;
            rt->failed_who = who;
            rt->failed_status = 6; /* PM_ERR_NOMEM */
        }
    }
    return p;
}

int32_t pm_rt_threads(pm_run_ctx *rt)
{
    return rt->threads;
}

void pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why)
{
    int expected = 0;
    if (__atomic_compare_exchange_n(&rt->failed, &expected, 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        rt->failed_slot = -1;
        rt->failed_status = status;
        rt->failed_why = why;
    }
}
