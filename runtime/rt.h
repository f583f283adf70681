/* rt.h — functions that JIT-compiled kernels call back into, and their per-run state.
 *
 * Promise: a pm_run_ctx lives for one pm_kernel_run call and belongs to that call (the
 * entry and the GOMP_parallel workers it starts); pm_rt_buffer hands out 64-byte-aligned
 * scratch memory by slot number, reused across the kernel's runs (a run checks out a
 * whole set of slots from the kernel's pool, so concurrent runs never share memory).
 * The JIT binds these symbols by address (runtime/jit_engine.c), so they work although
 * libpolymage is a static library whose symbols the process does not export.
 *
 * For the code generator (codegen/), the calls a kernel may make:
 *   void   *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes, const char *who);
 *   int32_t pm_rt_threads(pm_run_ctx *rt);
 *   void    pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why);
 * A slot is used by one thread at a time. Simplest: allocate every scratchpad in the
 * entry, before GOMP_parallel, one slot per (buffer, thread) pair when each worker needs
 * its own; the thread count is pm_options.threads (resolved before codegen), the same
 * number pm_rt_threads returns at run time.
 */
#ifndef PM_RUNTIME_RT_H
#define PM_RUNTIME_RT_H

#include <stdint.h>

typedef struct pm_run_ctx pm_run_ctx;

/* Readable bytes every slot has past the `bytes` asked for: a 32-bit gather of 8- or
 * 16-bit elements (codegen/llvm/access.c) reads up to 3 bytes past the last one. */
#define PM_RT_BUFFER_TAIL 8

/* At least `bytes` bytes (and PM_RT_BUFFER_TAIL more that may be read), 64-byte
 * aligned, for slot `slot` during this run; contents undefined. The same slot asked
 * again in one run returns the same memory when it is big enough (else new memory:
 * earlier pointers for that slot become invalid). `who` is a message constant of the
 * module naming what the memory is for ("g's buffer"), valid as long as the kernel.
 * NULL when out of memory or slot is out of range (the kernel then returns nonzero and
 * pm_kernel_run reports the cause recorded here, naming `who`). */
void *pm_rt_buffer(pm_run_ctx *rt, int32_t slot, int64_t bytes, const char *who);

/* The number of threads this run should use for GOMP_parallel (>= 1): the thread count
 * of the compile options, 0 ("all cores") already resolved. */
int32_t pm_rt_threads(pm_run_ctx *rt);

/* Records why the kernel is about to return `status` (a pm_status) before writing
 * anything: `why` is a message constant of the module ("g: its buffer needs more than
 * 2^63 bytes at these parameter values"), valid as long as the kernel. The first story
 * wins. */
void pm_rt_fail(pm_run_ctx *rt, int32_t status, const char *why);

/* ---- runtime side (runtime/kernel.c); kernels never touch the fields ------------- */

struct pm_scratch_set;

struct pm_run_ctx {
    struct pm_scratch_set *scratch; /* checked out for this run                       */
    int32_t threads;
    /* The first failed pm_rt_buffer call, for the error message (0 = none). Written
     * once, by whichever thread fails first (atomic flag). */
    int failed;
    int32_t failed_slot;
    int64_t failed_bytes;
    const char *failed_who; /* pm_rt_buffer's `who`, or NULL                             */
    int32_t failed_status;  /* pm_rt_fail: the status and message constant (or NULL)  */
    const char *failed_why;
};

#endif
