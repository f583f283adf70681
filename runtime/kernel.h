/* kernel.h — what a pm_jit and a pm_kernel hold, and a kernel's lifetime (runtime-internal;
 * the public API is in polymage.h: pm_jit_* in runtime/jit.c and runtime/serve.c,
 * pm_kernel_* in runtime/kernel.c).
 *
 * Promise: a kernel owns everything it needs to check and run its arguments (its
 * signature, its machine code, its scratch pool, its phase texts) and keeps no pointer
 * into the pipeline or its context. Kernels are reference-counted under the jit's lock
 * (the callers' references and the cache's own); the machine code goes with the last
 * reference. Every kernel alive, from the start of its compile, counts in
 * live_kernels and keeps its jit alive: the jit's memory is released by whichever comes
 * last, pm_jit_free or the last kernel's release.
 */
#ifndef PM_RUNTIME_KERNEL_H
#define PM_RUNTIME_KERNEL_H

#include "polymage.h"

#include "codegen/codegen.h"
#include "frontend/signature.h"
#include "runtime/cache.h"
#include "runtime/disk_cache.h"
#include "runtime/jit_engine.h"
#include "runtime/rt.h"
#include "runtime/scratch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct pm_serve_job;

struct pm_jit {
    pm_engine *engine;
    pm_jit_settings settings; /* the jit's options, resolved (codegen/options.h)      */
    char *environment;      /* the jit-wide part of cache keys (pm_cache_environment)  */
    char *helper;           /* the compile helper's path when compiles are isolated,
                               else NULL (runtime/isolate.h)                            */
    /* Guards everything below. Held only for table work, never during a compile or a
     * run: compiles of different pipelines (contexts) proceed in parallel.            */
    pthread_mutex_t lock;
    pthread_cond_t changed; /* an entry left COMPILING, or a background compile ended  */
    pthread_cond_t work;    /* a job was queued, or shutdown                            */
    int live_kernels;
    bool freed;             /* pm_jit_free was called; the last kernel frees the jit   */
    bool shutdown;          /* pm_jit_free began: nothing is queued or cached any more */
    pm_cache cache;
    pm_cache_policy policy;
    pm_cache_stats stats;   /* counters; kernels, code_bytes, queued, compiling are
                               filled from the cache and the queue when read          */
    char *disk_dir;         /* the policy's disk_dir, copied; NULL = no disk cache     */
    struct pm_serve_job *queue_head, *queue_tail;
    int queued, compiling_background;
    int nworkers;
    pthread_t workers[64];
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
    pm_compile_stats stats; /* where compile_ms went (pm_kernel_compile_stats)          */
    size_t code_bytes;      /* object code linked for it                                */
    bool from_disk;         /* loaded from the disk cache (no phase texts), not compiled */
    bool disk_written;      /* compiled and written to the disk cache                    */
    bool disk_rejected;     /* the disk cache had an invalid file for its key            */
    bool disk_untrusted;    /* ... or something at its name that was not read            */
    bool isolated;          /* compiled in a helper process                              */
    bool upgraded;          /* a tiered family's kernel of the full DP (serve.c)         */
    _Atomic int64_t last_run_ns; /* CLOCK_MONOTONIC at the end of its last run, 0 = none:
                                    idle scratch is released by it (serve.c)            */
    _Atomic double scratch_volume; /* the largest run seen: the product of its size
                                      parameters, 0 = none (written under jit->lock)   */
    int64_t scratch_seen;   /* under jit->lock: the bytes that run's scratch set held     */
    /* Under jit->lock: */
    int refs;               /* callers' references + 1 while cached                     */
    pm_cache_entry *cache_entry; /* its entry while cached, else NULL                   */
    pm_kernel *next_dropped;     /* links kernels released together                     */
};

/* pm_kernel_run that also tells the bytes of scratch the run's set held at its end (0
 * when it did not run): what a run at these parameters needs, or more (a set keeps what
 * an earlier, larger run grew). scratch_bytes may be NULL. */
pm_status pm_kernel_run_measured(pm_kernel *k, const pm_value *params, const pm_buffer *inputs,
                                 pm_buffer *outputs, int64_t *scratch_bytes, pm_error *error);
/* Frees what a kernel owns except its jit link. */
void pm_kernel_release(pm_kernel *k);

/* A new kernel with one reference, counted in live_kernels (the jit now waits for it);
 * NULL when the jit is being freed or memory is out. */
pm_kernel *pm_kernel_begin(pm_jit *jit, const pm_options *options, const char *name,
                           pm_error *error);
/* With the lock held: takes kernels out of the cache while it is over budget, returns
 * those nobody holds any more (linked by next_dropped) for pm_jit_drop_kernels. */
pm_kernel *pm_jit_evict_locked(pm_jit *jit);
/* Without the lock: frees the kernels of the list, then frees the jit if it was freed
 * and they were its last. */
void pm_jit_drop_kernels(pm_jit *jit, pm_kernel *list);
/* Frees the jit itself (its engine, remaining cache entries): the last step. */
void pm_jit_destroy(pm_jit *jit);

#endif
