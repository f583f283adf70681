/* jit.c — the public pm_jit_* calls that make a jit, free it and compile or run with it,
 * and the options they take: each call's options are resolved here, at the API
 * boundary, then handed to the cache and serving (runtime/serve.c), which builds kernels
 * through runtime/compile.c.
 */
/* strdup, sysconf: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "runtime/kernel.h"
#include "runtime/host_target.h"
#include "runtime/isolate.h"
#include "runtime/serve.h"
#include "runtime/versioned.h"

#include "codegen/options.h"
#include "frontend/ir.h"
#include "frontend/error.h"

#include <sodium.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *pm_version(void)
{
    return PM_VERSION;
}

pm_jit_options pm_jit_options_default(void)
{
    return (pm_jit_options){.size = sizeof(pm_jit_options), .threads = 0,
                            .opt_level = PM_OPT_TUNED, .dump = NULL,
                            .compile_threads = 0, .isolate_compiles = 0,
                            .compile_seconds = 0, .compile_memory_bytes = 0};
}

pm_compile_options pm_compile_options_default(void)
{
    return (pm_compile_options){.size = sizeof(pm_compile_options), .vector_width = 0,
                                .threads = 0, .opt_level = PM_OPT_JIT, .dump = NULL,
                                .fusion = 1, .tile_size = {0}, .overlap_threshold = -1.0,
                                .group_limit = 0, .keep = NULL, .stream_outputs = -1,
                                .prefetch_reads = -1};
}

static pm_status jit_options_read(const pm_jit_options *given, pm_jit_options *out, pm_error *err)
{
    *out = pm_jit_options_default();
    if (!given)
        return PM_OK;
    return pm_versioned_read(PM_V_JIT_OPTIONS, out, given, "pm_jit_new", err);
}

static pm_status compile_options_read(const pm_compile_options *given, const char *who,
                                      pm_compile_options *out, pm_error *err)
{
    *out = pm_compile_options_default();
    if (!given)
        return PM_OK;
    return pm_versioned_read(PM_V_COMPILE_OPTIONS, out, given, who, err);
}

static int number_of_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}


/* ---- the jit -------------------------------------------------------------------------- */

pm_jit *pm_jit_new(const pm_jit_options *options, pm_error *error)
{
    pm_error_clear(error);
    pm_jit_options o;
    if (jit_options_read(options, &o, error) != PM_OK)
        return NULL;
    pm_host_facts host = {.cores = number_of_cores(), .l2_bytes = pm_host_l2_bytes()};
    pm_jit_settings settings;
    if (pm_options_resolve_jit(&o, &host, &settings, error) != PM_OK)
        return NULL;
    char *helper = NULL;
    if (settings.isolate_compiles && pm_isolate_find_helper(&helper, error) != PM_OK)
        return NULL;
    pm_jit *jit = calloc(1, sizeof *jit);
    if (!jit) {
        free(helper);
        pm_error_set(error, PM_ERR_NOMEM, "pm_jit_new: out of memory");
        return NULL;
    }
    jit->helper = helper;
    jit->settings = settings;
    bool lock_ok = pthread_mutex_init(&jit->lock, NULL) == 0;
    bool changed_ok = pthread_cond_init(&jit->changed, NULL) == 0;
    bool work_ok = pthread_cond_init(&jit->work, NULL) == 0;
    jit->policy = pm_cache_policy_default();
    pm_status dir_status = PM_OK;
    if (jit->policy.disk_dir && *jit->policy.disk_dir) /* PM_CACHE_DIR: refused, not ignored */
        dir_status = pm_disk_folder_check(jit->policy.disk_dir, "pm_jit_new", "PM_CACHE_DIR",
                                          &jit->disk_dir, error);
    jit->policy.disk_dir = jit->disk_dir;
    if (dir_status != PM_OK) {
        /* the message is the folder's */
    } else if (!lock_ok || !changed_ok || !work_ok || sodium_init() < 0) {
        pm_error_set(error, PM_ERR_NOMEM, "pm_jit_new: out of memory");
    } else {
        jit->engine = pm_engine_new(o.opt_level, error);
    }
    if (jit->engine)
        jit->settings.host.vector_width = pm_engine_vector_width(jit->engine);
    char env[4096];
    if (jit->engine) {
        pm_cache_environment(pm_engine_triple(jit->engine), pm_engine_cpu_name(jit->engine),
                             pm_engine_cpu_features(jit->engine), env, sizeof env);
        if (!(jit->environment = strdup(env)))
            pm_error_set(error, PM_ERR_NOMEM, "pm_jit_new: out of memory");
    }
    if (!jit->environment) {
        pm_engine_free(jit->engine);
        free(jit->disk_dir);
        free(jit->helper);
        if (work_ok)
            pthread_cond_destroy(&jit->work);
        if (changed_ok)
            pthread_cond_destroy(&jit->changed);
        if (lock_ok)
            pthread_mutex_destroy(&jit->lock);
        free(jit);
        return NULL;
    }
    return jit;
}


void pm_jit_free(pm_jit *jit)
{
    if (!jit)
        return;
    pm_kernel *dropped = pm_jit_stop_serving(jit);
    /* Kernels point into the engine: while some live, the last one's release frees. */
    pthread_mutex_lock(&jit->lock);
    jit->freed = true;
    bool last = jit->live_kernels == 0;
    pthread_mutex_unlock(&jit->lock);
    if (dropped)
        pm_jit_drop_kernels(jit, dropped); /* frees the jit when they were the last */
    else if (last)
        pm_jit_destroy(jit);
}

/* ---- compile ---------------------------------------------------------------------- */

/* The options of one compile, every "the jit's" and "from the host" resolved and checked;
 * PM_ERR_ARGUMENT naming `name` and the field otherwise. */
static pm_status resolve_options(const pm_jit *jit, const char *name,
                                 const pm_compile_options *o, pm_options *out, pm_error *err)
{
    pm_compile_options c;
    pm_status s = compile_options_read(o, name, &c, err);
    return s == PM_OK ? pm_options_resolve(&jit->settings, &c, name, out, err) : s;
}


pm_kernel *pm_jit_compile(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                          const pm_compile_options *options, pm_error *error)
{
    pm_error_clear(error);
    if (!jit) {
        pm_error_set(error, PM_ERR_MISUSE, "pm_jit_compile: the jit is NULL");
        return NULL;
    }
    if (!p) {
        pm_error_set(error, PM_ERR_MISUSE, "pm_jit_compile: the pipeline is NULL");
        return NULL;
    }
    pm_options resolved;
    if (resolve_options(jit, p->name, options, &resolved, error) != PM_OK)
        return NULL;
    return pm_jit_get_kernel(jit, p, estimates, &resolved, NULL, error);
}

/* The parameter values are there when the pipeline has parameters, and the options
 * resolve: what pm_jit_run and pm_jit_scratch_estimate ask before the cache. */
static pm_status values_and_options(pm_jit *jit, pm_pipeline *p, const pm_compile_options *options,
                                    const pm_value *params, pm_options *resolved,
                                    pm_error *error)
{
    if (!params && p->nparams > 0)
        return pm_error_set(error, PM_ERR_ARGUMENT, "%s: the parameter values are NULL",
                            p->name);
    if (resolve_options(jit, p->name, options, resolved, error) != PM_OK)
        return error ? error->status : PM_ERR_ARGUMENT;
    return PM_OK;
}

pm_status pm_jit_run(pm_jit *jit, pm_pipeline *p, const pm_compile_options *options,
                     const pm_value *params, const pm_buffer *inputs, pm_buffer *outputs,
                     pm_error *error)
{
    pm_error_clear(error);
    if (!jit)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_jit_run: the jit is NULL");
    if (!p)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_jit_run: the pipeline is NULL");
    pm_options resolved;
    pm_status s = values_and_options(jit, p, options, params, &resolved, error);
    return s != PM_OK ? s : pm_serve_run(jit, p, &resolved, params, inputs, outputs, error);
}

pm_status pm_jit_scratch_estimate(pm_jit *jit, pm_pipeline *p, const pm_compile_options *options,
                                  const pm_value *params, int64_t *bytes, pm_error *error)
{
    pm_error_clear(error);
    if (bytes)
        *bytes = -1;
    if (!jit || !p || !bytes)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_jit_scratch_estimate: the %s is NULL",
                            !jit ? "jit" : !p ? "pipeline" : "result");
    pm_options resolved;
    pm_status s = values_and_options(jit, p, options, params, &resolved, error);
    return s != PM_OK ? s : pm_serve_scratch_estimate(jit, p, &resolved, params, bytes, error);
}
