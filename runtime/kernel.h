/* kernel.h — what a pm_jit and a pm_kernel hold (runtime-internal; the public API is in
 * polymage.h: pm_jit_* in runtime/jit.c, pm_kernel_* in runtime/kernel.c).
 *
 * Promise: a kernel owns everything it needs to check and run its arguments (its
 * signature, its machine code, its scratch pool, its phase texts) and keeps no pointer
 * into the pipeline or its context. It keeps its jit alive: the jit's memory is released
 * by whichever comes last, pm_jit_free or the last pm_kernel_free.
 */
#ifndef PM_RUNTIME_KERNEL_H
#define PM_RUNTIME_KERNEL_H

#include "polymage.h"

#include "codegen/codegen.h"
#include "frontend/signature.h"
#include "runtime/jit_engine.h"
#include "runtime/rt.h"
#include "runtime/scratch.h"

#include <pthread.h>
#include <stdbool.h>

struct pm_jit {
    pm_engine *engine;
    int threads;            /* resolved: >= 1                                        */
    int opt_level;          /* 0..3                                                   */
    char *dump;             /* copy of options.dump, or NULL (= PM_DUMP at compile)    */
    /* Guards the fields below, and serializes compiles (the pipeline's context and
     * LLVM's target setup are not shared-thread safe; compiles are rare).           */
    pthread_mutex_t lock;
    int live_kernels;
    bool freed;             /* pm_jit_free was called; the last kernel frees the jit   */
};

typedef int32_t (*pm_kernel_entry)(const pm_value *params, const pm_buffer *inputs,
                                   pm_buffer *outputs, pm_run_ctx *rt);


struct pm_kernel {
    pm_jit *jit;
    pm_signature *sig;      /* owned; sig->name names the kernel in messages           */
    pm_engine_code *code;   /* owned; the machine code                                 */
    pm_kernel_entry entry;  /* inside code                                             */
    int threads;            /* passed to the entry through pm_rt_threads               */
    pm_scratch_pool *pool;  /* owned; sets of codegen's nslots slots                    */
    char *text[PM_NPHASES]; /* owned, malloc'd, NULL when not kept (pm_phase order)     */
    double compile_ms;
};

/* Frees what a kernel owns except its jit link (for failed compiles and pm_kernel_free). */
void pm_kernel_release(pm_kernel *k);
/* Called by pm_kernel_free: one kernel fewer; frees the jit if it was freed already. */
void pm_jit_kernel_gone(pm_jit *jit);

#endif
