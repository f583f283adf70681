/* kernel.c — running, inspecting and freeing a compiled kernel, and its lifetime: its
 * references, the cache's eviction of them, and the jit's memory freed with its last
 * kernel (see kernel.h).
 *
 * A run: check every argument against the signature (before any code runs), copy the
 * buffer descriptions with their strides filled in (the entry never sees a 0 stride),
 * check a scratch set out of the kernel's pool, call the entry, give the set back.
 * Nothing is shared between runs but the pool's lock, so runs from several threads at
 * once are safe.
 */
/* clock_gettime: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/kernel.h"
#include "runtime/versioned.h"

#include "frontend/error.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Buffer descriptions up to this many are copied on the stack (no malloc per run). */
enum { LOCAL_BUFFERS = 16 };

static void fill_strides(pm_buffer *dst, const pm_buffer *src, int n)
{
    for (int i = 0; i < n; i++) {
        dst[i] = src[i];
        pm_buffer_strides(&src[i], dst[i].stride);
    }
}

static pm_status run_failed(const pm_kernel *k, const pm_run_ctx *rt, int32_t code,
                            pm_error *err)
{
    const char *name = k->sig->name;
    if (rt->failed && rt->failed_why) {
        pm_status st = rt->failed_status > PM_OK && rt->failed_status <= PM_ERR_INTERNAL
                           ? (pm_status)rt->failed_status : PM_ERR_INTERNAL;
        return pm_error_set(err, st, "%s: %s", name, rt->failed_why);
    }
    if (rt->failed) {
        if (rt->failed_slot < 0 || rt->failed_slot >= pm_scratch_pool_nslots(k->pool) ||
            rt->failed_bytes < 0)
            return pm_error_set(err, PM_ERR_INTERNAL,
                                "%s: the kernel asked for scratch slot %d (%lld bytes) but has "
                                "%d slots",
                                name, (int)rt->failed_slot, (long long)rt->failed_bytes,
                                pm_scratch_pool_nslots(k->pool));
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory for %s (%lld bytes)", name,
                            rt->failed_who ? rt->failed_who : "an intermediate buffer",
                            (long long)rt->failed_bytes);
    }
    return pm_error_set(err, PM_ERR_INTERNAL, "%s: the kernel returned %d", name, (int)code);
}

pm_status pm_kernel_run(pm_kernel *k, const pm_value *params, const pm_buffer *inputs,
                        pm_buffer *outputs, pm_error *error)
{
    return pm_kernel_run_measured(k, params, inputs, outputs, NULL, error);
}

pm_status pm_kernel_run_measured(pm_kernel *k, const pm_value *params, const pm_buffer *inputs,
                                 pm_buffer *outputs, int64_t *scratch_bytes, pm_error *error)
{
    if (scratch_bytes)
        *scratch_bytes = 0;
    pm_error_clear(error);
    if (!k)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_kernel_run: the kernel is NULL");
    const pm_signature *sig = k->sig;
    char msg[sizeof error->message];
    pm_status s = pm_signature_check(sig, params, inputs, outputs, msg, sizeof msg);
    if (s != PM_OK)
        return pm_error_set(error, s, "%s", msg);

    pm_buffer local_in[LOCAL_BUFFERS], local_out[LOCAL_BUFFERS];
    pm_buffer *in = local_in, *out = local_out;
    if (sig->ninputs > LOCAL_BUFFERS)
        in = malloc((size_t)sig->ninputs * sizeof *in);
    if (sig->noutputs > LOCAL_BUFFERS)
        out = malloc((size_t)sig->noutputs * sizeof *out);
    pm_run_ctx rt = {.scratch = NULL, .threads = k->threads};
    if (!in || !out)
        s = pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", sig->name);
    if (s == PM_OK && !(rt.scratch = pm_scratch_pool_checkout(k->pool)))
        s = pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", sig->name);

    if (s == PM_OK) {
        fill_strides(in, inputs, sig->ninputs);
        fill_strides(out, outputs, sig->noutputs);
        int32_t code = k->entry(params, in, out, &rt);
        if (code != 0)
            s = run_failed(k, &rt, code, error);
        if (scratch_bytes)
            *scratch_bytes = pm_scratch_set_bytes(rt.scratch);
    }

    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    atomic_store(&k->last_run_ns, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec);
    pm_scratch_pool_return(k->pool, rt.scratch);
    if (in != local_in)
        free(in);
    if (out != local_out)
        free(out);
    return s;
}

pm_status pm_kernel_run_window(pm_kernel *k, const pm_value *params, const int64_t *offset,
                               const pm_buffer *inputs, pm_buffer *outputs, pm_error *error)
{
    pm_error_clear(error);
    if (!k)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_kernel_run_window: the kernel is NULL");
    const pm_signature *sig = k->sig;
    int nd = sig->window_dims, nbase = sig->nparams - 2 * nd;
    if (nd == 0)
        return pm_error_set(error, PM_ERR_ARGUMENT, "%s: not a kernel of a window form "
                            "(pm_pipeline_window)", sig->name);
    if ((nbase > 0 && !params) || !offset || !outputs || sig->noutputs < 1)
        return pm_error_set(error, PM_ERR_ARGUMENT, "%s: pm_kernel_run_window: %s is NULL",
                            sig->name, !offset ? "offset" : !outputs ? "outputs" : "params");
    if (outputs[0].ndims != nd)
        return pm_error_set(error, PM_ERR_ARGUMENT, "%s: output buffer %s has %d dimensions, "
                            "not %d", sig->name, sig->buffers[sig->ninputs].name,
                            outputs[0].ndims, nd);
    pm_value local[64], *all = local;
    if (sig->nparams > 64 && !(all = malloc(sizeof *all * (size_t)sig->nparams)))
        return pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", sig->name);
    if (nbase > 0)
        memcpy(all, params, sizeof *all * (size_t)nbase);
    for (int d = 0; d < nd; d++) {
        all[nbase + 2 * d] = PM_I(offset[d]);
        all[nbase + 2 * d + 1] = PM_I(outputs[0].extent[d]);
    }
    pm_status s = pm_kernel_run(k, all, inputs, outputs, error);
    if (all != local)
        free(all);
    return s;
}

/* ---- a kernel's lifetime: references, eviction, release ------------------------------ */

pm_kernel *pm_kernel_begin(pm_jit *jit, const pm_options *options, const char *name,
                           pm_error *error)
{
    pm_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    k->threads = options->threads;
    k->refs = 1;
    pthread_mutex_lock(&jit->lock);
    bool freed = jit->freed;
    if (!freed)
        jit->live_kernels++;
    pthread_mutex_unlock(&jit->lock);
    if (freed) { /* a compile racing pm_jit_free */
        free(k);
        pm_error_set(error, PM_ERR_MISUSE, "pm_jit_compile: the jit was freed");
        return NULL;
    }
    k->jit = jit;
    return k;
}

void pm_kernel_release(pm_kernel *k)
{
    if (!k)
        return;
    pm_engine_code_free(k->code);
    pm_scratch_pool_free(k->pool);
    pm_signature_free(k->sig);
    for (int i = 0; i < PM_NPHASES; i++)
        free(k->text[i]);
    free(k);
}

pm_kernel *pm_jit_evict_locked(pm_jit *jit)
{
    pm_kernel *dropped = NULL;
    pm_cache_entry *e;
    while ((e = pm_cache_victim(&jit->cache, jit->policy.max_kernels,
                                jit->policy.max_code_bytes)) != NULL) {
        pm_kernel *k = pm_cache_entry_remove(&jit->cache, e);
        jit->stats.evictions++;
        if (--k->refs == 0) { /* always: victims are held by the cache alone */
            k->next_dropped = dropped;
            dropped = k;
        }
    }
    return dropped;
}

void pm_jit_drop_kernels(pm_jit *jit, pm_kernel *list)
{
    int n = 0;
    while (list) {
        pm_kernel *next = list->next_dropped;
        pm_kernel_release(list); /* machine code out of the engine: the jit is alive */
        list = next;
        n++;
    }
    pthread_mutex_lock(&jit->lock);
    jit->live_kernels -= n;
    bool destroy = jit->freed && jit->live_kernels == 0;
    pthread_mutex_unlock(&jit->lock);
    if (destroy)
        pm_jit_destroy(jit);
}

void pm_jit_destroy(pm_jit *jit)
{
    /* Entries left (failed background compiles) hold no kernel. */
    for (size_t i = 0; i < jit->cache.table_size; i++)
        while (jit->cache.table[i]) {
            pm_cache_family *f = jit->cache.table[i];
            if (f->entries)
                pm_cache_entry_remove(&jit->cache, f->entries);
            else
                pm_cache_family_drop_if_empty(&jit->cache, f);
        }
    pm_cache_free(&jit->cache);
    pm_engine_free(jit->engine);
    free(jit->environment);
    free(jit->disk_dir);
    free(jit->helper);
    pthread_cond_destroy(&jit->work);
    pthread_cond_destroy(&jit->changed);
    pthread_mutex_destroy(&jit->lock);
    free(jit);
}

void pm_kernel_free(pm_kernel *k)
{
    if (!k)
        return;
    pm_jit *jit = k->jit;
    pthread_mutex_lock(&jit->lock);
    pm_kernel *dropped = NULL;
    if (--k->refs == 0) {
        k->next_dropped = NULL; /* not cached: the cache would hold a reference */
        dropped = k;
    } else {
        /* Held kernels are never evicted: this release may let the cache shrink. */
        dropped = pm_jit_evict_locked(jit);
    }
    pthread_mutex_unlock(&jit->lock);
    if (dropped)
        pm_jit_drop_kernels(jit, dropped);
}

const char *pm_kernel_dump(const pm_kernel *k, const char *phase)
{
    if (!k || !phase || strpbrk(phase, ", ") || strcmp(phase, "all") == 0)
        return NULL;
    /* one name: a text's, or a step's (the first text its decisions show in) */
    unsigned bits = pm_dump_parse(phase);
    for (int i = 0; i < PM_NPHASES; i++)
        if (bits & PM_DUMP_BIT(i))
            return k->text[i];
    return NULL;
}

double pm_kernel_compile_ms(const pm_kernel *k)
{
    return k ? k->compile_ms : 0.0;
}

pm_status pm_kernel_compile_stats(const pm_kernel *k, pm_compile_stats *stats, size_t size)
{
    if (!k || !stats)
        return PM_ERR_MISUSE;
    return pm_versioned_write(PM_V_COMPILE_STATS, stats, &k->stats, size,
                              "pm_kernel_compile_stats", NULL);
}
