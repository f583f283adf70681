/* options.c — the public options and the environment resolved into one pm_options.
 *
 * Shape: pm_options_default holds the fixed defaults; pm_options_resolve_jit checks a
 * jit's options and fills its settings from the host; pm_options_resolve checks one
 * compile's options and lays them over the jit's settings. Messages name the field, its
 * value and what it may be.
 */
/* strtol's errno, getenv: C11; nothing else. */
#include "codegen/options.h"

#include "codegen/codegen.h"
#include "frontend/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pm_options pm_options_default(void)
{
    return (pm_options){
        .vector_width = 1,
        .threads = 1,
        .opt_level = PM_OPT_TUNED,
        .fusion = 1,
        .overlap_threshold = PM_DEFAULT_OVERLAP_THRESHOLD,
        .group_limit = PM_DEFAULT_GROUP_LIMIT,
        .grouping = PM_DEFAULT_GROUPING,
        .dp_group_cap = PM_DP_CAPPED_GROUP_CAP,
        .dp_budget = PM_DP_CAPPED_BUDGET,
        .inline_limit = PM_DEFAULT_INLINE_LIMIT,
        .stream_outputs = -1,
        .prefetch_reads = -1,
        .cache_bytes = PM_DEFAULT_CACHE_BYTES,
        .merge_bodies = true,
        .dp_exports = true,
        .compile_threads = 1,
    };
}

/* A dump spec into bits; an unknown name is an error listing the valid ones. */
static pm_status dump_mask_of(const char *spec, const char *who, const char *source,
                              unsigned *mask, pm_error *err)
{
    char bad[40];
    if (!pm_dump_check(spec, bad, sizeof bad)) {
        char names[512];
        pm_dump_name_list(names, sizeof names);
        return pm_error_set(err, PM_ERR_ARGUMENT, "%s: %s names no phase \"%s\" (names: %s)",
                            who, source, bad, names);
    }
    *mask = pm_dump_parse(spec);
    return PM_OK;
}

/* PM_COMPILE_THREADS, or 0 when unset; a bad value is an error, not a silent default. */
static pm_status compile_threads_from_environment(int *out, pm_error *err)
{
    const char *env = getenv("PM_COMPILE_THREADS");
    *out = 0;
    if (!env || !*env)
        return PM_OK;
    char *end = NULL;
    long v = strtol(env, &end, 10);
    if (*end != '\0' || v < 1 || v > PM_MAX_COMPILE_THREADS)
        return pm_error_set(err, PM_ERR_ARGUMENT, "pm_jit_new: PM_COMPILE_THREADS = \"%.32s\" (1..64)",
                            env);
    *out = (int)v;
    return PM_OK;
}

static pm_status check_jit_options(const pm_jit_options *o, pm_error *err)
{
    if (o->threads < 0 || o->threads > PM_MAX_THREADS)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "pm_jit_new: threads = %d (0 = all cores, or 1..%d, PM_MAX_THREADS)",
                            o->threads, PM_MAX_THREADS);
    if (o->opt_level < PM_OPT_TUNED || o->opt_level > 3)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "pm_jit_new: opt_level = %d (PM_OPT_TUNED = -1, or 0..3)",
                            o->opt_level);
    if (o->compile_threads < 0 || o->compile_threads > PM_MAX_COMPILE_THREADS)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "pm_jit_new: compile_threads = %d (0 = PM_COMPILE_THREADS or the "
                            "cores up to 8, or 1..64)",
                            o->compile_threads);
    if (o->isolate_compiles != 0 && o->isolate_compiles != 1)
        return pm_error_set(err, PM_ERR_ARGUMENT, "pm_jit_new: isolate_compiles = %d (0 or 1)",
                            o->isolate_compiles);
    if (o->compile_seconds < 0 || o->compile_memory_bytes < 0)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "pm_jit_new: compile_seconds = %d, compile_memory_bytes = %lld (0 = "
                            "the default, or a positive limit)",
                            o->compile_seconds, (long long)o->compile_memory_bytes);
    return PM_OK;
}

pm_status pm_options_resolve_jit(const pm_jit_options *given, const pm_host_facts *host,
                                 pm_jit_settings *out, pm_error *err)
{
    pm_status s = check_jit_options(given, err);
    int env_threads = 0;
    if (s == PM_OK && given->compile_threads == 0)
        s = compile_threads_from_environment(&env_threads, err);
    *out = (pm_jit_settings){.host = *host};
    if (s == PM_OK && given->dump) {
        out->has_dump = true;
        s = dump_mask_of(given->dump, "pm_jit_new", "dump", &out->dump_mask, err);
    }
    if (s != PM_OK)
        return s;
    int cores = host->cores >= 1 ? host->cores : 1;
    out->threads = given->threads ? given->threads : cores;
    out->opt_level = given->opt_level;
    out->compile_threads = given->compile_threads ? given->compile_threads
                           : env_threads          ? env_threads
                           : cores < 8            ? cores
                                                  : 8;
    out->isolate_compiles = given->isolate_compiles == 1;
    out->compile_seconds = given->compile_seconds ? given->compile_seconds
                                                  : PM_DEFAULT_COMPILE_SECONDS;
    out->compile_memory_bytes = given->compile_memory_bytes ? given->compile_memory_bytes
                                                            : PM_DEFAULT_COMPILE_MEMORY;
    return PM_OK;
}

static pm_status check_compile_options(const pm_compile_options *c, const char *who,
                                       pm_error *err)
{
    int w = c->vector_width;
    if (w < 0 || w > 64 || (w & (w - 1)) != 0)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: vector_width = %d (0 = from the host, or a power of two up to 64)",
                            who, w);
    if (c->threads < 0 || c->threads > PM_MAX_THREADS)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: threads = %d (0 = the jit's, or 1..%d, PM_MAX_THREADS)", who,
                            c->threads, PM_MAX_THREADS);
    if (c->opt_level < PM_OPT_JIT || c->opt_level > 3)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: opt_level = %d (PM_OPT_JIT = -2, PM_OPT_TUNED = -1, or 0..3)",
                            who, c->opt_level);
    if (c->fusion != 0 && c->fusion != 1)
        return pm_error_set(err, PM_ERR_ARGUMENT, "%s: fusion = %d (0 or 1)", who, c->fusion);
    if (c->stream_outputs < -1 || c->stream_outputs > 1)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: stream_outputs = %d (-1 = from the model, 0 = never, 1 = always)",
                            who, c->stream_outputs);
    if (c->prefetch_reads < -1 || c->prefetch_reads > 1)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: prefetch_reads = %d (-1 = from the model, 0 = never, 1 = always)",
                            who, c->prefetch_reads);
    for (int d = 0; d < PM_MAX_DIMS; d++)
        if (c->tile_size[d] < 0 || c->tile_size[d] > (1 << 20))
            return pm_error_set(err, PM_ERR_ARGUMENT,
                                "%s: tile_size[%d] = %d (0 = from the model, or 1..%d)", who, d,
                                c->tile_size[d], 1 << 20);
    if (c->group_limit < 0)
        return pm_error_set(err, PM_ERR_ARGUMENT, "%s: group_limit = %d (0 = default, or a count)",
                            who, c->group_limit);
    if (c->grouping < PM_GROUPING_DEFAULT || c->grouping > PM_GROUPING_DP)
        return pm_error_set(err, PM_ERR_ARGUMENT,
                            "%s: grouping = %d (0 = default, 1 = greedy, 2 = capped DP, 3 = DP)",
                            who, c->grouping);
    if (c->dp_budget < 0)
        return pm_error_set(err, PM_ERR_ARGUMENT, "%s: dp_budget = %d (0 = default, or a count)",
                            who, c->dp_budget);
    if (!(c->overlap_threshold == c->overlap_threshold)) /* NaN */
        return pm_error_set(err, PM_ERR_ARGUMENT, "%s: overlap_threshold is not a number", who);
    return PM_OK;
}

/* The phases to print and to keep: the compile's dump, else the jit's, else PM_DUMP. */
static pm_status resolve_texts(const pm_jit_settings *jit, const pm_compile_options *c,
                               const char *who, pm_options *out, pm_error *err)
{
    pm_status s;
    if (c->dump)
        s = dump_mask_of(c->dump, who, "dump", &out->dump_mask, err);
    else if (jit->has_dump)
        out->dump_mask = jit->dump_mask, s = PM_OK;
    else
        s = dump_mask_of(getenv("PM_DUMP"), who, "PM_DUMP", &out->dump_mask, err);
    unsigned keep = 0;
    if (s == PM_OK)
        s = dump_mask_of(c->keep, who, "keep", &keep, err);
    out->keep_mask = out->dump_mask | keep;
    return s;
}

/* The grouping's search and its cap and budget (after the group limit). */
static void resolve_grouping(const pm_compile_options *c, pm_options *out)
{
    out->grouping = c->grouping ? c->grouping : PM_DEFAULT_GROUPING;
    bool capped = out->grouping == PM_GROUPING_DP_CAPPED || out->grouping == PM_GROUPING_TIERED;
    out->dp_group_cap = capped && out->group_limit > PM_DP_CAPPED_GROUP_CAP ? PM_DP_CAPPED_GROUP_CAP
                                                                           : out->group_limit;
    out->dp_budget = c->dp_budget > 0 ? c->dp_budget
                     : capped         ? PM_DP_CAPPED_BUDGET
                                      : PM_DP_FULL_BUDGET;
}

pm_status pm_options_resolve(const pm_jit_settings *jit, const pm_compile_options *given,
                             const char *who, pm_options *out, pm_error *err)
{
    pm_status s = check_compile_options(given, who, err);
    if (s != PM_OK)
        return s;
    const pm_compile_options *c = given;
    *out = pm_options_default();
    out->vector_width = c->vector_width ? c->vector_width : jit->host.vector_width;
    out->threads = c->threads ? c->threads : jit->threads;
    out->opt_level = c->opt_level == PM_OPT_JIT ? jit->opt_level : c->opt_level;
    out->fusion = c->fusion;
    for (int d = 0; d < PM_MAX_DIMS; d++)
        out->tile_size[d] = c->tile_size[d];
    if (c->overlap_threshold >= 0)
        out->overlap_threshold = c->overlap_threshold;
    if (c->group_limit > 0)
        out->group_limit = c->group_limit;
    resolve_grouping(c, out);
    out->stream_outputs = c->stream_outputs;
    out->prefetch_reads = c->prefetch_reads;
    if (jit->host.l2_bytes > 0)
        out->cache_bytes = jit->host.l2_bytes / 2;
    out->compile_threads = jit->compile_threads;
    out->timed = getenv("PM_TIME") != NULL;
    out->isl_abort = getenv("PM_ISL_ABORT") != NULL;
    return resolve_texts(jit, c, who, out, err);
}

pm_options pm_options_upgraded(const pm_options *o)
{
    pm_options up = *o;
    if (o->grouping == PM_GROUPING_TIERED) {
        up.grouping = PM_GROUPING_DP;
        up.dp_group_cap = o->group_limit;
        up.dp_budget = PM_DP_FULL_BUDGET;
        /* merged stage bodies save the first compile ~100 ms on local Laplacian and cost
         * its kernel up to ~2-3% at 2 threads (docs/benchmarks-history.md): the upgrade,
         * compiled in the background, keeps each body's constants */
        up.merge_bodies = false;
    }
    return up;
}

int pm_options_key(const pm_options *o, char *buf, size_t size)
{
    /* The doubles bit for bit: one key per value, never two for a rounding. */
    uint64_t threshold_bits, inline_bits;
    memcpy(&threshold_bits, &o->overlap_threshold, sizeof threshold_bits);
    memcpy(&inline_bits, &o->inline_limit, sizeof inline_bits);
    int n = snprintf(buf, size,
                     "w%d t%d o%d f%d g%d gr%d gc%d gb%ld s%d p%d d%u k%u c%lld th%016llx "
                     "il%016llx m%d x%d tiles",
                     o->vector_width, o->threads, o->opt_level, o->fusion, o->group_limit,
                     o->grouping, o->dp_group_cap, o->dp_budget,
                     o->stream_outputs, o->prefetch_reads, o->dump_mask, o->keep_mask,
                     (long long)o->cache_bytes, (unsigned long long)threshold_bits,
                     (unsigned long long)inline_bits, (int)o->merge_bodies, (int)o->dp_exports);
    for (int d = 0; d < PM_MAX_DIMS && n >= 0 && (size_t)n < size; d++)
        n += snprintf(buf + n, size - (size_t)n, " %d", o->tile_size[d]);
    return n >= 0 && (size_t)n < size ? n : -1;
}
