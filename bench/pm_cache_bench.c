/* pm_cache_bench.c — what the kernel cache costs, measured (not a test):
 *
 *   pm_cache_bench [APP] [--reps N]
 *
 * For one app (harris by default) at its quick size: the median of N pm_jit_compile
 * hits on the same pipeline object; of hits with the pipeline rebuilt in a fresh context
 * each time (the canonical form computed anew; building the pipeline is not timed); of
 * pm_jit_run hits next to pm_kernel_run on the same kernel (what the serving call adds);
 * then the latency of the first pm_jit_run at a new size bucket (served by a cached
 * kernel while its own compiles in the background) next to a synchronous compile; and
 * the first request of a "restarted" jit with a warm on-disk cache next to a cold one;
 * and a first compile in a helper process (isolate_compiles) next to one in this process.
 * Timings belong under the bench lock: flock /tmp/pm-bench.lock pm_cache_bench. */
#define _POSIX_C_SOURCE 200809L
#include "samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* What a compile in a helper process (isolate_compiles) costs next to one in this
 * process: the median of 5 first compiles each, every one in a fresh jit. */
static void isolated_compiles(const pm_sample_app *app, const pm_value *params)
{
    double t[2][5];
    for (int iso = 0; iso < 2; iso++)
        for (int r = 0; r < 5; r++) {
            pm_jit_options o = pm_jit_options_default();
            o.isolate_compiles = iso;
            pm_error err;
            pm_jit *j = pm_jit_new(&o, &err);
            pm_ctx *c = pm_ctx_new();
            pm_pipeline *q = app->build(c);
            double a = now_ns();
            pm_kernel *k = j ? pm_jit_compile(j, q, params, NULL, &err) : NULL;
            t[iso][r] = (now_ns() - a) / 1e6;
            if (!k)
                fprintf(stderr, "%s compile: %s\n", iso ? "isolated" : "in-process", err.message);
            pm_kernel_free(k);
            pm_ctx_free(c);
            pm_jit_free(j);
        }
    double here = median(t[0], 5), there = median(t[1], 5);
    printf("  compile in this process             %8.1f ms (median of 5, fresh jits)\n", here);
    printf("  compile in a helper process         %8.1f ms (+%.1f ms: spawn, libLLVM's load, "
           "the text, the reply)\n",
           there, there - here);
}

int main(int argc, char **argv)
{
    const char *name = "harris";
    int reps = 2001;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else
            name = argv[i];
    }
    const pm_sample_app *app = pm_sample_find(name);
    if (!app || reps < 1) {
        fprintf(stderr, "usage: pm_cache_bench [APP] [--reps N]\n");
        return 2;
    }
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!jit) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return 1;
    }
    double *t = malloc(sizeof *t * (size_t)reps);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    pm_value params[16];
    app->params(app->quick_rows, app->quick_cols, params);
    double t0 = now_ns();
    pm_kernel *k = pm_jit_compile(jit, p, params, NULL, &err);
    double compile_ms = (now_ns() - t0) / 1e6;
    if (!k || !t || !p) {
        fprintf(stderr, "%s: %s\n", app->name, err.message);
        return 1;
    }

    /* Hits on the same pipeline object. */
    for (int i = 0; i < reps; i++) {
        double a = now_ns();
        pm_kernel *h = pm_jit_compile(jit, p, params, NULL, &err);
        t[i] = now_ns() - a;
        pm_kernel_free(h);
    }
    double same_ns = median(t, reps);

    /* Hits with the pipeline rebuilt in a fresh context (the build is not timed). */
    int rebuilt_reps = reps < 201 ? reps : 201;
    for (int i = 0; i < rebuilt_reps; i++) {
        pm_ctx *c2 = pm_ctx_new();
        pm_pipeline *q = app->build(c2);
        double a = now_ns();
        pm_kernel *h = pm_jit_compile(jit, q, params, NULL, &err);
        t[i] = now_ns() - a;
        if (h != k)
            fprintf(stderr, "rebuilt pipeline missed the cache\n");
        pm_kernel_free(h);
        pm_ctx_free(c2);
    }
    double rebuilt_us = median(t, rebuilt_reps) / 1e3;

    /* pm_jit_run hit next to pm_kernel_run, on a 1 x 1-ish size to see the overhead. */
    pm_buffer in[4], out[4];
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    for (int i = 0; i < nin; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_input(i, &in[i], params);
    }
    for (int i = 0; i < nout; i++)
        out[i] = pm_sample_buffer(p, 1, i, params);
    int run_reps = reps < 501 ? reps : 501;
    double *u = malloc(sizeof *u * (size_t)run_reps);
    for (int i = 0; i < run_reps && u; i++) {
        double a = now_ns();
        pm_kernel_run(k, params, in, out, &err);
        double b = now_ns();
        pm_jit_run(jit, p, NULL, params, in, out, &err);
        t[i] = now_ns() - b;
        u[i] = b - a;
    }
    double run_us = u ? median(u, run_reps) / 1e3 : 0, serve_us = median(t, run_reps) / 1e3;

    /* The first request at a new bucket: served at once by the cached kernel. */
    pm_value bigger[16];
    app->params(app->quick_rows * 2, app->quick_cols * 2, bigger);
    pm_buffer in2[4], out2[4];
    for (int i = 0; i < nin; i++) {
        in2[i] = pm_sample_buffer(p, 0, i, bigger);
        app->fill_input(i, &in2[i], bigger);
    }
    for (int i = 0; i < nout; i++) {
        out2[i] = pm_sample_buffer(p, 1, i, bigger);
        /* touched, so the first run pays no page faults of the caller's memory */
        memset(out2[i].data, 1, (size_t)pm_sample_buffer_count(&out2[i]) *
                                    pm_type_size(out2[i].type));
    }
    double a = now_ns();
    pm_status s = pm_jit_run(jit, p, NULL, bigger, in2, out2, &err);
    double first_ms = (now_ns() - a) / 1e6;
    pm_jit_wait_idle(jit);
    a = now_ns();
    pm_jit_run(jit, p, NULL, bigger, in2, out2, &err);
    double second_ms = (now_ns() - a) / 1e6;

    /* Where the first request's time goes: the same fallback with nothing queued (no
     * copy, no compile thread beside it), first at a new size, then warmed. */
    pm_cache_policy policy = pm_cache_policy_default();
    policy.max_queued = 0;
    pm_jit_set_policy(jit, &policy, &err);
    pm_value third[16];
    app->params(app->quick_rows * 3, app->quick_cols * 3, third);
    pm_buffer in3[4], out3[4];
    for (int i = 0; i < nin; i++) {
        in3[i] = pm_sample_buffer(p, 0, i, third);
        app->fill_input(i, &in3[i], third);
    }
    for (int i = 0; i < nout; i++) {
        out3[i] = pm_sample_buffer(p, 1, i, third);
        memset(out3[i].data, 1, (size_t)pm_sample_buffer_count(&out3[i]) *
                                    pm_type_size(out3[i].type));
    }
    a = now_ns();
    pm_jit_run(jit, p, NULL, third, in3, out3, &err);
    double fallback_first_ms = (now_ns() - a) / 1e6;
    a = now_ns();
    pm_jit_run(jit, p, NULL, third, in3, out3, &err);
    double fallback_again_ms = (now_ns() - a) / 1e6;
    for (int i = 0; i < nin; i++)
        free(in3[i].data);
    for (int i = 0; i < nout; i++)
        free(out3[i].data);

    pm_cache_stats st;
    pm_jit_stats(jit, &st, sizeof st);

    printf("%s at %lldx%lld (pm_cache_bench, %d reps)\n", app->name, (long long)app->quick_rows,
           (long long)app->quick_cols, reps);
    printf("  first compile                     %10.1f ms\n", compile_ms);
    printf("  pm_jit_compile hit, same pipeline %10.3f us (median)\n", same_ns / 1e3);
    printf("  pm_jit_compile hit, rebuilt       %10.3f us (median, canonical form included)\n",
           rebuilt_us);
    printf("  pm_kernel_run                     %10.3f us (median)\n", run_us);
    printf("  pm_jit_run hit                    %10.3f us (median)\n", serve_us);
    printf("  first pm_jit_run at 2x the size   %10.3f ms (%s; background compile %.1f ms)\n",
           first_ms, s == PM_OK ? "ok" : err.message, st.compile_ms_max);
    printf("  the same once compiled            %10.3f ms\n", second_ms);
    printf("  fallback at 3x, nothing queued    %10.3f ms first, %.3f ms again\n",
           fallback_first_ms, fallback_again_ms);
    printf("  stats: hits %llu, misses %llu, fallback runs %llu, sync %llu, background %llu\n",
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.fallback_runs, (unsigned long long)st.sync_compiles,
           (unsigned long long)st.background_compiles);
    for (int i = 0; i < nin; i++)
        free(in2[i].data);
    for (int i = 0; i < nout; i++)
        free(out2[i].data);
    free(t);
    free(u);
    pm_kernel_free(k);
    pm_jit_free(jit);

    /* A restart with a warm disk cache: jit A compiles into a fresh folder, jit B (a new
     * engine, as in a new process) loads the kernel; both first requests timed. */
    char folder[] = "/tmp/pm_cache_bench_XXXXXX";
    if (mkdtemp(folder)) {
        double ms[2] = {0, 0};
        pm_cache_stats ds[2];
        for (int i = 0; i < 2; i++) {
            pm_jit *j = pm_jit_new(NULL, &err);
            pm_cache_policy policy = pm_cache_policy_default();
            policy.disk_dir = folder;
            pm_jit_set_policy(j, &policy, &err);
            pm_ctx *c = pm_ctx_new();
            pm_pipeline *q = app->build(c);
            a = now_ns();
            pm_status rs = pm_jit_run(j, q, NULL, params, in, out, &err);
            ms[i] = (now_ns() - a) / 1e6;
            if (rs != PM_OK)
                fprintf(stderr, "disk run: %s\n", err.message);
            pm_jit_stats(j, &ds[i], sizeof ds[i]);
            pm_ctx_free(c);
            pm_jit_free(j);
        }
        printf("  first request, cold (compile+write) %8.1f ms (disk writes %llu)\n", ms[0],
               (unsigned long long)ds[0].disk_writes);
        printf("  first request after a restart       %8.1f ms (disk hits %llu, compiles %llu)\n",
               ms[1], (unsigned long long)ds[1].disk_hits,
               (unsigned long long)ds[1].sync_compiles);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf %s", folder);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", folder);
    }
    isolated_compiles(app, params);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    for (int i = 0; i < nout; i++)
        free(out[i].data);
    pm_ctx_free(ctx);
    return 0;
}
