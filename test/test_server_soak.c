/* test_server_soak.c — the serving runtime under load: 4 threads serve 3 pipelines
 * (harris, unsharp_mask, bilateral_grid) at random sizes over several buckets through
 * one jit whose budget is small enough to force evictions, for a bounded time
 * (PM_SOAK_SECONDS, default 20; `make soak` runs longer). Each thread keeps its own
 * contexts and rebuilds its pipelines in fresh ones now and then, freeing the old
 * context right after a serving call (background compiles must have copied what they
 * need); a few calls go through pm_jit_compile / pm_kernel_free instead. Every third
 * output is compared with the interpreter's. No assertion depends on timing: the time
 * only bounds the loop. RSS after warm-up and at the end is printed, with the stats.
 */
/* clock_gettime: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "samples.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { NTHREADS = 4, NAPPS = 3, MAX_BUFFERS = 4 };

static const pm_sample_app *apps[NAPPS];
static pm_jit *jit;
static double deadline_s;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* xorshift: each thread its own sequence. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

typedef struct worker {
    int id;
    uint64_t seed;
    int runs, checked, failures, rebuilds;
} worker;

/* One serving call of app a at rows x cols with pipeline p; compared when `check`. */
static void serve_once(worker *w, const pm_sample_app *app, pm_pipeline *p, int64_t rows,
                       int64_t cols, bool check, bool via_compile)
{
    pm_value params[16];
    app->params(rows, cols, params);
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    pm_buffer in[MAX_BUFFERS], got[MAX_BUFFERS], want[MAX_BUFFERS];
    for (int k = 0; k < nin; k++) {
        in[k] = pm_sample_buffer(p, 0, k, params);
        app->fill_input(k, &in[k], params);
    }
    for (int k = 0; k < nout; k++)
        got[k] = pm_sample_buffer(p, 1, k, params);
    pm_error err;
    pm_status s;
    if (via_compile) {
        pm_kernel *kernel = pm_jit_compile(jit, p, params, NULL, &err);
        s = kernel ? pm_kernel_run(kernel, params, in, got, &err) : err.status;
        pm_kernel_free(kernel);
    } else {
        s = pm_jit_run(jit, p, NULL, params, in, got, &err);
    }
    w->runs++;
    if (s != PM_OK) {
        w->failures++;
        fprintf(stderr, "  thread %d: %s %lldx%lld: %s\n", w->id, app->name, (long long)rows,
                (long long)cols, err.message);
    } else if (check) {
        w->checked++;
        for (int k = 0; k < nout; k++)
            want[k] = pm_sample_buffer(p, 1, k, params);
        if (pm_interpret(p, params, in, want) != PM_OK) {
            w->failures++;
        } else {
            for (int k = 0; k < nout; k++)
                if (!(pm_sample_buffer_maxdiff(&want[k], &got[k]) <= app->tolerance)) {
                    w->failures++;
                    fprintf(stderr, "  thread %d: %s %lldx%lld: output %d differs by %g\n",
                            w->id, app->name, (long long)rows, (long long)cols, k,
                            pm_sample_buffer_maxdiff(&want[k], &got[k]));
                }
        }
        for (int k = 0; k < nout; k++)
            free(want[k].data);
    }
    for (int k = 0; k < nin; k++)
        free(in[k].data);
    for (int k = 0; k < nout; k++)
        free(got[k].data);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    /* Sizes around several buckets (ratio 2^(1/4)), a little jitter within them. */
    static const int64_t sizes[] = {72, 90, 110, 130, 160};
    pm_ctx *ctx[NAPPS];
    pm_pipeline *p[NAPPS];
    for (int a = 0; a < NAPPS; a++) {
        ctx[a] = pm_ctx_new();
        p[a] = apps[a]->build(ctx[a]);
        if (!p[a])
            w->failures++;
    }
    while (now_s() < deadline_s && w->failures == 0) {
        int a = (int)(next_random(&w->seed) % NAPPS);
        int64_t rows = sizes[next_random(&w->seed) % 5] + (int64_t)(next_random(&w->seed) % 3);
        int64_t cols = sizes[next_random(&w->seed) % 5] + (int64_t)(next_random(&w->seed) % 3);
        bool check = w->runs % 3 == 0;
        bool via_compile = next_random(&w->seed) % 10 == 0;
        serve_once(w, apps[a], p[a], rows, cols, check, via_compile);
        if (next_random(&w->seed) % 8 == 0) {
            /* A fresh context for this pipeline; the old one goes right away, maybe
             * while a background compile of its copy runs. */
            pm_ctx_free(ctx[a]);
            ctx[a] = pm_ctx_new();
            p[a] = apps[a]->build(ctx[a]);
            w->rebuilds++;
            if (!p[a]) {
                w->failures++;
                break;
            }
        }
    }
    for (int a = 0; a < NAPPS; a++)
        pm_ctx_free(ctx[a]);
    return NULL;
}

int main(void)
{
    const char *env = getenv("PM_SOAK_SECONDS");
    double seconds = env ? atof(env) : 20.0;
    if (!(seconds > 0))
        seconds = 20.0;
    apps[0] = &pm_sample_harris;
    apps[1] = &pm_sample_unsharp_mask;
    apps[2] = &pm_sample_bilateral_grid;

    pm_jit_options o = pm_jit_options_default();
    o.opt_level = 1;
    o.threads = 2;
    pm_error err;
    jit = pm_jit_new(&o, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return check_finish("server_soak");
    }
    pm_cache_policy policy = pm_cache_policy_default();
    policy.max_kernels = 8;
    policy.max_code_bytes = 1 << 20;
    policy.max_queued = 4;
    policy.compile_threads = 2; /* two background compiles at once, next to the callers' */
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);

    double start = now_s();
    deadline_s = start + seconds;
    worker workers[NTHREADS];
    pthread_t tids[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (worker){.id = i, .seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)};
        CHECK(pthread_create(&tids[i], NULL, worker_main, &workers[i]) == 0);
    }
    /* RSS once the first quarter (warm-up) is over, and at the end: printed only. */
    while (now_s() < start + seconds / 4)
        nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 100 * 1000 * 1000}, NULL);
    long rss_warm = rss_kib();
    int runs = 0, checked = 0, failures = 0, rebuilds = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(tids[i], NULL);
        runs += workers[i].runs;
        checked += workers[i].checked;
        failures += workers[i].failures;
        rebuilds += workers[i].rebuilds;
    }
    pm_jit_wait_idle(jit);
    long rss_end = rss_kib();
    pm_cache_stats s;
    CHECK_STATUS(pm_jit_stats(jit, &s, sizeof s), PM_OK);
    printf("soak %.0f s: %d runs (%d checked against the interpreter), %d rebuilt contexts, "
           "%d failures\n",
           seconds, runs, checked, rebuilds, failures);
    printf("  hits %llu, misses %llu, fallback runs %llu, compiles %llu sync + %llu background "
           "(%llu failed, %llu not queued), evictions %llu\n",
           (unsigned long long)s.hits, (unsigned long long)s.misses,
           (unsigned long long)s.fallback_runs, (unsigned long long)s.sync_compiles,
           (unsigned long long)s.background_compiles, (unsigned long long)s.failed_compiles,
           (unsigned long long)s.queue_full, (unsigned long long)s.evictions);
    printf("  compile ms total %.0f, max %.0f; cached %d kernels, %lld code bytes; RSS %ld KiB "
           "after warm-up, %ld KiB at the end\n",
           s.compile_ms_total, s.compile_ms_max, s.kernels, (long long)s.code_bytes, rss_warm,
           rss_end);
    CHECK(failures == 0);
    CHECK(runs > 0 && checked > 0);
    CHECK(s.failed_compiles == 0);
    CHECK(s.hits + s.misses >= (uint64_t)runs);
    /* The budget holds once nothing is running (kernels are released). */
    CHECK(s.kernels <= policy.max_kernels);
    /* More kernels compiled than the budget keeps: some were evicted. */
    if (s.sync_compiles + s.background_compiles > (uint64_t)policy.max_kernels)
        CHECK(s.evictions > 0);
    pm_jit_free(jit);
    return check_finish("server_soak");
}
