/* compile.h — one kernel built for a jit: loaded from the disk cache, compiled in this
 * process or in a helper (runtime/isolate.h), and written to the disk cache.
 *
 * Promise: nothing here looks in the jit's kernel cache (runtime/serve.c does), and no
 * lock is held while compiling. A kernel built from the disk cache or a helper carries no
 * phase texts: a compile that keeps texts is done in this process.
 */
#ifndef PM_RUNTIME_COMPILE_H
#define PM_RUNTIME_COMPILE_H

#include "runtime/kernel.h"

/* Where a kernel may be found on disk and kept (runtime/disk_cache.h); owned strings. */
typedef struct pm_disk_request {
    char *dir;
    int64_t max_bytes;
    char *key;              /* the full key text                                        */
    size_t key_len;
    char *upgraded_key;     /* or NULL: a tiered family's upgrade, loaded first if there */
    size_t upgraded_key_len;
} pm_disk_request;

/* A new kernel (no lookup in the jit's cache) with one reference, counted in
 * live_kernels: loaded from the disk cache when `disk` is set and it holds a valid
 * object for the upgraded key (then k->upgraded) or the key, else compiled (and then
 * written there). Takes the lock briefly;
 * never called with it held. NULL and a message on failure. */
pm_kernel *pm_jit_build_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                               const pm_options *options, const pm_disk_request *disk,
                               pm_error *err);
/* Compiles p into relocatable objects (out->object malloc'd) without caching or keeping
 * a kernel: the compile helper's work (runtime/isolate_helper.c). */
pm_status pm_jit_compile_object(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *options, pm_disk_kernel *out,
                                pm_compile_stats *stats, pm_error *err);

#endif
