/* test_kernel_cache.c — the jit's kernel cache and the serving call (polymage.h, "The
 * kernel cache"; runtime/cache.h, runtime/serve.c):
 *  - estimate buckets: values <= 0, 1, powers of the ratio (2 and 2^(1/4)), the largest
 *    int64, the ratio's accepted range, monotonic over a range of sizes;
 *  - keys: a pipeline rebuilt in another (cluttered) context hits the same kernel, which
 *    outlives the first context; other options, other buckets and no estimates are other
 *    kernels; estimates in one bucket and value-only parameters share one; a pipeline
 *    without parameters has one kernel;
 *  - references: a hit is one more reference, kernels outlive the jit, budgets evict the
 *    least recently used kernel nobody holds and never a held one;
 *  - pm_jit_run: a synchronous first compile, hits, a fallback run with a background
 *    compile (the caller's context freed at once) picked up after pm_jit_wait_idle, the
 *    synchronous policy, a full queue, pm_jit_free with compiles queued;
 *  - one key asked for by two threads at once, or queued and then asked for: one compile;
 *  - first pm_jit_run calls at four sizes at once: one synchronous compile, the others
 *    wait for it and run it (their own buckets compiled in the background);
 *  - scratch: pm_jit_scratch_estimate from the largest run seen, scaled by the size
 *    parameters; idle scratch freed over max_scratch_bytes and after scratch_idle_ms;
 *  - policy errors and pm_jit_stats.
 * Every output is compared with the interpreter's.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */
#include "check.h"
#include "samples.h"

#include "runtime/cache.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- a small pipeline and its oracle ------------------------------------------------- */

/* blur(x, y) = (I(x-1, y) + I(x, y) + I(x+1, y)) * w over 1 <= x <= R-2, 0 <= y < C.
 * w is a float parameter: it sizes nothing, so its value is not part of a bucket. */
static pm_pipeline *build_blur(pm_ctx *ctx, int clutter)
{
    for (int i = 0; i < clutter; i++) /* other objects first: other ids, other addresses */
        pm_image(ctx, "unused", PM_U8, pm_param(ctx, PM_I32, "junk"));
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *w = pm_param(ctx, PM_F32, "w");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 1), pm_addi(R, -2), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *blur = pm_func_new(ctx, "blur", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(blur, pm_mul(pm_add(pm_add(pm_call(I, pm_addi(x, -1), y), pm_call(I, x, y)),
                                            pm_call(I, pm_addi(x, 1), y)),
                                     w));
    pm_pipeline *p = NULL;
    if (!CHECK_STATUS(pm_pipeline_new(ctx, "blur", 3, pm_exprs(R, C, w), 1,
                                      (pm_func *const[]){I}, 1, (pm_func *const[]){blur}, &p),
                      PM_OK))
        fprintf(stderr, "  blur: %s\n", pm_ctx_errmsg(ctx));
    return p;
}

typedef struct blur_case {
    pm_value params[3];
    pm_buffer in, want, got;
} blur_case;

static void blur_case_new(blur_case *c, pm_pipeline *p, int64_t rows, int64_t cols)
{
    c->params[0] = PM_I(rows);
    c->params[1] = PM_I(cols);
    c->params[2] = PM_F(1.0 / 3.0);
    c->in = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
    check_fill(&c->in, (unsigned)(rows * 1000 + cols), false);
    c->want = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 2, cols});
    c->got = check_buffer_new(PM_F32, 2, (int64_t[]){rows - 2, cols});
    CHECK_STATUS(pm_interpret(p, c->params, &c->in, &c->want), PM_OK);
}

static void blur_case_free(blur_case *c)
{
    check_buffer_free(&c->in);
    check_buffer_free(&c->want);
    check_buffer_free(&c->got);
}

/* Runs k on a fresh case of p and compares with the interpreter. */
static bool kernel_matches(pm_kernel *k, pm_pipeline *p, int64_t rows, int64_t cols)
{
    blur_case c;
    blur_case_new(&c, p, rows, cols);
    pm_error err;
    bool ok = CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK) &&
              CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
    blur_case_free(&c);
    return ok;
}

static bool served_matches(pm_jit *jit, pm_pipeline *p, int64_t rows, int64_t cols)
{
    blur_case c;
    blur_case_new(&c, p, rows, cols);
    pm_error err;
    bool ok = CHECK_STATUS(pm_jit_run(jit, p, NULL, c.params, &c.in, &c.got, &err), PM_OK) &&
              CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
    if (!ok)
        fprintf(stderr, "  pm_jit_run %lldx%lld: %s\n", (long long)rows, (long long)cols,
                err.message);
    blur_case_free(&c);
    return ok;
}

static pm_cache_stats stats_of(pm_jit *jit)
{
    pm_cache_stats s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(pm_jit_stats(jit, &s, sizeof s), PM_OK);
    return s;
}

static pm_jit *new_jit(void)
{
    pm_jit_options o = pm_jit_options_default();
    o.opt_level = 1; /* fast compiles; the cache does not care */
    pm_error err;
    pm_jit *jit = pm_jit_new(&o, &err);
    if (!CHECK(jit != NULL))
        fprintf(stderr, "  pm_jit_new: %s\n", err.message);
    return jit;
}

/* ---- buckets ------------------------------------------------------------------------- */

static void test_buckets(void)
{
    double quarter = pow(2.0, 0.25);
    CHECK(pm_cache_bucket(0, 2.0) == -1);
    CHECK(pm_cache_bucket(-1, 2.0) == -1);
    CHECK(pm_cache_bucket(INT64_MIN, quarter) == -1);
    CHECK(pm_cache_bucket(1, 2.0) == 0);
    CHECK(pm_cache_bucket(1, quarter) == 0);
    /* ratio 2: [1,2) [2,4) [4,8) ... */
    CHECK(pm_cache_bucket(2, 2.0) == 1);
    CHECK(pm_cache_bucket(3, 2.0) == 1);
    CHECK(pm_cache_bucket(4, 2.0) == 2);
    CHECK(pm_cache_bucket(1023, 2.0) == 9);
    CHECK(pm_cache_bucket(1024, 2.0) == 10);
    CHECK(pm_cache_bucket(INT64_MAX, 2.0) == 63); /* 2^63 - 1 rounds to 2^63 as a double */
    /* ratio 2^(1/4): the integer powers of 2 are exact boundaries */
    CHECK(pm_cache_bucket(2, quarter) == 4);
    CHECK(pm_cache_bucket(3, quarter) == 6);      /* 2^1.5 = 2.83 <= 3 < 2^1.75 = 3.36 */
    CHECK(pm_cache_bucket(4, quarter) == 8);
    CHECK(pm_cache_bucket(15, quarter) == 15);
    CHECK(pm_cache_bucket(16, quarter) == 16);
    CHECK(pm_cache_bucket(1024, quarter) == 40);
    CHECK(pm_cache_bucket(1023, quarter) == 39);
    CHECK(pm_cache_bucket(100, quarter) == pm_cache_bucket(105, quarter));
    CHECK(pm_cache_bucket(100, quarter) != pm_cache_bucket(130, quarter));
    CHECK(pm_cache_bucket(INT64_MAX, quarter) == 252);
    /* the accepted extremes */
    CHECK(pm_cache_bucket(2, PM_CACHE_RATIO_MAX) == 0);
    CHECK(pm_cache_bucket(1024, PM_CACHE_RATIO_MAX) == 1);
    CHECK(pm_cache_bucket(INT64_MAX, PM_CACHE_RATIO_MAX) == 6);
    CHECK(pm_cache_bucket(2, PM_CACHE_RATIO_MIN) == 69); /* 1.01^69 = 1.987, 1.01^70 = 2.007 */
    CHECK(pm_cache_bucket(INT64_MAX, PM_CACHE_RATIO_MIN) > 4000);
    /* monotonic, steps of at most one once buckets are wider than 1 (r^k (r - 1) >= 1
     * from v = 6 on), every bucket [r^k, r^(k+1)) */
    bool monotonic = true, bounded = true;
    int64_t prev = pm_cache_bucket(1, quarter);
    for (int64_t v = 2; v <= 200000; v++) {
        int64_t b = pm_cache_bucket(v, quarter);
        monotonic &= b >= prev && (v < 6 || b <= prev + 1);
        bounded &= pow(quarter, (double)b) <= (double)v * (1 + 1e-9) &&
                   (double)v < pow(quarter, (double)(b + 1)) * (1 + 1e-9);
        prev = b;
    }
    CHECK(monotonic);
    CHECK(bounded);
}

/* ---- keys ---------------------------------------------------------------------------- */

static void test_keys(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pm_error err;
    pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
    pm_pipeline *pa = build_blur(a, 0), *pb = build_blur(b, 3);
    pm_value est[3] = {PM_I(100), PM_I(100), PM_F(0.5)};
    pm_kernel *ka = pm_jit_compile(jit, pa, est, NULL, &err);
    pm_kernel *kb = pm_jit_compile(jit, pb, est, NULL, &err);
    CHECK(ka != NULL && ka == kb); /* rebuilt in another context: the same kernel */
    pm_cache_stats s = stats_of(jit);
    CHECK(s.hits == 1 && s.misses == 1 && s.sync_compiles == 1 && s.kernels == 1);
    CHECK(s.code_bytes > 0);
    pm_ctx_free(a); /* the kernel does not need it */
    if (ka)
        kernel_matches(ka, pb, 37, 41);

    /* Same bucket (100 and 105), other value-only parameter: the same kernel. */
    pm_value near[3] = {PM_I(105), PM_I(103), PM_F(7.0)};
    pm_kernel *kn = pm_jit_compile(jit, pb, near, NULL, &err);
    CHECK(kn == ka);
    /* Other bucket, no estimates, other options: other kernels, each right. */
    pm_value far[3] = {PM_I(130), PM_I(100), PM_F(0.5)};
    pm_kernel *kf = pm_jit_compile(jit, pb, far, NULL, &err);
    pm_kernel *kg = pm_jit_compile(jit, pb, NULL, NULL, &err);
    pm_compile_options co = pm_compile_options_default();
    co.fusion = 0;
    pm_kernel *ko = pm_jit_compile(jit, pb, est, &co, &err);
    co = pm_compile_options_default();
    co.threads = 1;
    pm_kernel *kt = pm_jit_compile(jit, pb, est, &co, &err);
    pm_kernel *all[] = {ka, kf, kg, ko, kt};
    bool distinct = true;
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < i; j++)
            distinct &= all[i] != all[j];
    CHECK(distinct);
    for (int i = 1; i < 5; i++)
        if (CHECK(all[i] != NULL))
            kernel_matches(all[i], pb, 19, 23);
    /* "the model's default" written two ways is one key */
    co = pm_compile_options_default();
    co.overlap_threshold = -5.0;
    pm_kernel *kd = pm_jit_compile(jit, pb, est, &co, &err);
    CHECK(kd == ka);
    /* options resolved alike are one key: the default threshold and group limit written
     * out (0.2, 24) */
    co = pm_compile_options_default();
    co.overlap_threshold = 0.2;
    co.group_limit = 24;
    pm_kernel *kr = pm_jit_compile(jit, pb, est, &co, &err);
    CHECK(kr == ka);
    pm_kernel_free(kr);
    /* A generic kernel hits as generic. */
    pm_kernel *kg2 = pm_jit_compile(jit, pb, NULL, NULL, &err);
    CHECK(kg2 == kg);
    s = stats_of(jit);
    CHECK(s.kernels == 5 && s.sync_compiles == 5);
    CHECK(s.compile_ms_total >= s.compile_ms_max && s.compile_ms_max > 0);

    pm_kernel *frees[] = {ka, kb, kn, kf, kg, ko, kt, kd, kg2};
    for (size_t i = 0; i < sizeof frees / sizeof frees[0]; i++)
        pm_kernel_free(frees[i]);
    s = stats_of(jit);
    CHECK(s.kernels == 5 && s.evictions == 0); /* within the default budget: kept */
    pm_ctx_free(b);
    pm_jit_free(jit);
}

/* A pipeline without parameters has one kernel, however it is asked for. */
static void test_no_parameters(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 8));
    pm_expr *x = pm_var(ctx, "x");
    pm_func *out = pm_func_new(ctx, "plus1", PM_I32, 1, pm_exprs(x),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 7), 1)));
    pm_func_define_expr(out, pm_addi(pm_call(I, x), 1));
    pm_pipeline *p = NULL;
    pm_error err;
    if (CHECK_STATUS(pm_pipeline_new(ctx, "plus1", 0, NULL, 1, (pm_func *const[]){I}, 1,
                                     (pm_func *const[]){out}, &p),
                     PM_OK)) {
        pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
        int32_t in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8] = {0};
        pm_buffer bin = pm_buffer_dense(in, PM_I32, 1, (int64_t[]){8});
        pm_buffer bout = pm_buffer_dense(got, PM_I32, 1, (int64_t[]){8});
        pm_value none[1] = {PM_I(0)};
        CHECK_STATUS(pm_jit_run(jit, p, NULL, none, &bin, &bout, &err), PM_OK);
        CHECK_STATUS(pm_jit_run(jit, p, NULL, NULL, &bin, &bout, &err), PM_OK);
        CHECK(got[0] == 2 && got[7] == 9);
        pm_cache_stats s = stats_of(jit);
        CHECK(k != NULL && s.sync_compiles == 1 && s.hits == 2 && s.kernels == 1);
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* ---- references and eviction ------------------------------------------------------------ */

static void test_eviction(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pm_error err;
    pm_cache_policy policy = pm_cache_policy_default();
    policy.max_kernels = 1;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    pm_value e1[3] = {PM_I(16), PM_I(16), PM_F(1)}, e2[3] = {PM_I(64), PM_I(64), PM_F(1)};
    pm_value e3[3] = {PM_I(256), PM_I(256), PM_F(1)};
    pm_kernel *k1 = pm_jit_compile(jit, p, e1, NULL, &err);
    pm_kernel *k2 = pm_jit_compile(jit, p, e2, NULL, &err);
    if (!CHECK(k1 && k2 && k1 != k2)) {
        pm_kernel_free(k1);
        pm_kernel_free(k2);
        pm_ctx_free(ctx);
        pm_jit_free(jit);
        return;
    }
    /* Both held: over budget, nothing evicted. */
    pm_cache_stats s = stats_of(jit);
    CHECK(s.kernels == 2 && s.evictions == 0);
    /* k1 released: the least recently used, now free to go. */
    pm_kernel_free(k1);
    s = stats_of(jit);
    CHECK(s.kernels == 1 && s.evictions == 1);
    kernel_matches(k2, p, 30, 30);
    /* k1's key compiles again (a miss). */
    pm_kernel *k1b = pm_jit_compile(jit, p, e1, NULL, &err);
    s = stats_of(jit);
    CHECK(k1b != NULL && s.sync_compiles == 3);
    /* Two references to one kernel: one free leaves it usable. */
    pm_kernel *k1c = pm_jit_compile(jit, p, e1, NULL, &err);
    CHECK(k1c == k1b);
    pm_kernel_free(k1c);
    if (k1b)
        kernel_matches(k1b, p, 12, 9);
    pm_kernel_free(k1b);
    pm_kernel_free(k2);
    s = stats_of(jit);
    CHECK(s.kernels == 1); /* back within budget once released */

    /* A code budget of one byte: every kernel nobody holds leaves. */
    policy.max_kernels = 64;
    policy.max_code_bytes = 1;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    s = stats_of(jit);
    CHECK(s.kernels == 0 && s.code_bytes == 0);
    pm_kernel *k3 = pm_jit_compile(jit, p, e3, NULL, &err);
    s = stats_of(jit);
    CHECK(k3 != NULL && s.kernels == 1); /* held: stays over budget */
    /* The jit freed while k3 is held: k3 still runs, the last free releases all. */
    pm_jit_free(jit);
    if (k3)
        kernel_matches(k3, p, 40, 50);
    pm_kernel_free(k3);
    pm_ctx_free(ctx);
}

/* ---- the serving call ---------------------------------------------------------------- */

static void test_serving(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    /* First call: no kernel of the pipeline, a synchronous compile. */
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    served_matches(jit, p, 70, 70);
    pm_cache_stats s = stats_of(jit);
    CHECK(s.sync_compiles == 1 && s.misses == 1 && s.hits == 0);
    served_matches(jit, p, 72, 71); /* same bucket: 2^(24/4) = 64 <= 70..72 < 2^(25/4) = 76.1 */
    s = stats_of(jit);
    CHECK(s.hits == 1);

    /* A new bucket from a pipeline in a context freed right after the call: served by
     * the 70 x 70 kernel now, its own kernel compiled in the background. */
    pm_ctx *tmp = pm_ctx_new();
    pm_pipeline *q = build_blur(tmp, 2);
    served_matches(jit, q, 300, 200);
    pm_ctx_free(tmp);
    s = stats_of(jit);
    CHECK(s.fallback_runs == 1 && s.misses == 2);
    CHECK(s.queued + s.compiling + (int)s.background_compiles == 1);
    pm_jit_wait_idle(jit);
    s = stats_of(jit);
    CHECK(s.background_compiles == 1 && s.queued == 0 && s.compiling == 0 && s.kernels == 2);
    served_matches(jit, p, 300, 200);
    s = stats_of(jit);
    CHECK(s.hits == 2 && s.fallback_runs == 1 && s.sync_compiles == 1);

    /* pm_jit_compile of a key the background compiled: a hit. */
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(300), PM_I(200), PM_F(0)}, NULL, &err);
    s = stats_of(jit);
    CHECK(k != NULL && s.hits == 3 && s.sync_compiles == 1);
    pm_kernel_free(k);

    /* A full queue: served, nothing queued. */
    pm_cache_policy policy = pm_cache_policy_default();
    policy.max_queued = 0;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    served_matches(jit, p, 20, 500);
    s = stats_of(jit);
    CHECK(s.queue_full == 1 && s.fallback_runs == 2 && s.queued == 0 && s.kernels == 2);

    /* The synchronous policy: a new bucket compiles in the caller. */
    policy = pm_cache_policy_default();
    policy.background = 0;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    served_matches(jit, p, 500, 20);
    s = stats_of(jit);
    CHECK(s.sync_compiles == 2 && s.fallback_runs == 2 && s.kernels == 3);

    /* Bad arguments are values. */
    blur_case c;
    blur_case_new(&c, p, 10, 10);
    CHECK_STATUS(pm_jit_run(NULL, p, NULL, c.params, &c.in, &c.got, &err), PM_ERR_MISUSE);
    CHECK_STATUS(pm_jit_run(jit, NULL, NULL, c.params, &c.in, &c.got, &err), PM_ERR_MISUSE);
    CHECK_STATUS(pm_jit_run(jit, p, NULL, NULL, &c.in, &c.got, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur");
    pm_compile_options bad = pm_compile_options_default();
    bad.vector_width = 3;
    CHECK_STATUS(pm_jit_run(jit, p, &bad, c.params, &c.in, &c.got, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "vector_width");
    pm_buffer wrong = c.got;
    wrong.extent[0] = 3;
    CHECK_STATUS(pm_jit_run(jit, p, NULL, c.params, &c.in, &wrong, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur");
    blur_case_free(&c);

    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* Two threads ask for one key at once, each with its own context: whichever comes
 * second waits for the first one's compile or hits its result; one compile either way. */
typedef struct same_key_thread {
    pm_jit *jit;
    pm_kernel *kernel;
} same_key_thread;

static void *compile_same_key(void *arg)
{
    same_key_thread *t = arg;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    pm_error err;
    t->kernel = p ? pm_jit_compile(t->jit, p, (pm_value[]){PM_I(200), PM_I(200), PM_F(1)}, NULL,
                                   &err)
                  : NULL;
    pm_ctx_free(ctx);
    return NULL;
}

static void test_same_key_at_once(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    same_key_thread t[2] = {{.jit = jit}, {.jit = jit}};
    pthread_t tid[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&tid[i], NULL, compile_same_key, &t[i]) == 0);
    for (int i = 0; i < 2; i++)
        pthread_join(tid[i], NULL);
    pm_cache_stats s = stats_of(jit);
    CHECK(t[0].kernel != NULL && t[0].kernel == t[1].kernel);
    CHECK(s.sync_compiles == 1 && s.hits == 1 && s.misses == 1);
    pm_kernel_free(t[0].kernel);
    pm_kernel_free(t[1].kernel);

    /* A key queued for the background, then asked for by pm_jit_compile: compiled once,
     * by the compile thread or by the caller taking it out of the queue. */
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    served_matches(jit, p, 600, 40); /* 200 x 200's kernel serves; 600 x 40 is queued */
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(600), PM_I(40), PM_F(1)}, NULL, &err);
    pm_jit_wait_idle(jit);
    s = stats_of(jit);
    CHECK(k != NULL && s.sync_compiles + s.background_compiles == 2 && s.kernels == 2);
    if (k)
        kernel_matches(k, p, 600, 40);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* Four threads' first pm_jit_run calls at four sizes (four buckets) at once, each with its
 * own context: one compiles the pipeline's first kernel, the others wait for it (or find
 * it) and run it, their own buckets queued: one synchronous compile, not four. */
typedef struct first_size_thread {
    pm_jit *jit;
    pthread_barrier_t *start;
    int64_t rows, cols;
    bool ok;
} first_size_thread;

static void *serve_first_size(void *arg)
{
    first_size_thread *t = arg;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    pthread_barrier_wait(t->start);
    t->ok = p && served_matches(t->jit, p, t->rows, t->cols);
    pm_ctx_free(ctx);
    return NULL;
}

static void test_first_sizes_at_once(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 4);
    static const int64_t sizes[4][2] = {{70, 70}, {300, 200}, {20, 500}, {500, 20}};
    first_size_thread t[4];
    pthread_t tid[4];
    for (int i = 0; i < 4; i++) {
        t[i] = (first_size_thread){jit, &start, sizes[i][0], sizes[i][1], false};
        CHECK(pthread_create(&tid[i], NULL, serve_first_size, &t[i]) == 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        CHECK(t[i].ok);
    }
    pthread_barrier_destroy(&start);
    pm_cache_stats s = stats_of(jit);
    if (!CHECK(s.sync_compiles == 1 && s.misses == 4 && s.fallback_runs == 3 &&
               s.shared_compile_waits <= 3))
        fprintf(stderr, "  4 first sizes at once: %llu synchronous compiles, %llu fallback "
                "runs, %llu waits\n", (unsigned long long)s.sync_compiles,
                (unsigned long long)s.fallback_runs, (unsigned long long)s.shared_compile_waits);
    pm_jit_wait_idle(jit);
    s = stats_of(jit);
    CHECK(s.background_compiles == 3 && s.kernels == 4 && s.sync_compiles == 1);
    pm_jit_free(jit);
}

/* pm_jit_free with compiles queued and one running: cancels and waits (no leak, no
 * hang; ASan checks the rest). */
static void test_free_while_compiling(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx, 0);
    served_matches(jit, p, 32, 32);
    for (int i = 0; i < 6; i++)
        served_matches(jit, p, 50 + 40 * i, 32);
    pm_cache_stats s = stats_of(jit);
    CHECK(s.fallback_runs == 6);
    CHECK(s.queued + s.compiling + (int)s.background_compiles == 6);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* ---- policy ---------------------------------------------------------------------------- */

static void test_policy(void)
{
    pm_jit *jit = new_jit();
    if (!jit)
        return;
    pm_error err;
    pm_cache_policy p = pm_cache_policy_default();
    CHECK(p.size == sizeof p && fabs(p.bucket_ratio - pow(2.0, 0.25)) < 1e-12);
    p.bucket_ratio = 1.0;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "bucket_ratio");
    p.bucket_ratio = NAN;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    p.bucket_ratio = 2048;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    p = pm_cache_policy_default();
    p.compile_threads = 0;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "compile_threads");
    p = pm_cache_policy_default();
    p.max_kernels = -1;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "max_kernels");
    p = pm_cache_policy_default();
    p.background = 2;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_STATUS(pm_jit_set_policy(jit, NULL, &err), PM_ERR_MISUSE);
    CHECK_STATUS(pm_jit_set_policy(NULL, &p, &err), PM_ERR_MISUSE);
    p.size = 0;
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "size");

    /* An older caller's shorter struct (the first release's, before disk_dir): the
     * fields it lacks keep their defaults. A size between releases is refused. */
    p = pm_cache_policy_default();
    p.bucket_ratio = 2.0;
    p.max_kernels = 3;
    p.disk_dir = "/proc/never/read";
    p.disk_max_bytes = 12345;
    p.size = offsetof(pm_cache_policy, max_code_bytes);
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "pm_cache_policy.size = 24 is not the size of any version");
    p.size = offsetof(pm_cache_policy, disk_dir);
    CHECK_STATUS(pm_jit_set_policy(jit, &p, &err), PM_OK);
    pm_cache_policy got;
    CHECK_STATUS(pm_jit_get_policy(jit, &got, sizeof got), PM_OK);
    CHECK(got.bucket_ratio == 2.0 && got.max_kernels == 3);
    CHECK(got.disk_max_bytes == pm_cache_policy_default().disk_max_bytes);
    CHECK(got.size == sizeof got);

    CHECK_STATUS(pm_jit_stats(NULL, &(pm_cache_stats){0}, sizeof(pm_cache_stats)),
                 PM_ERR_MISUSE);
    pm_cache_stats s = stats_of(jit);
    CHECK(s.hits == 0 && s.kernels == 0 && s.compile_ms_total == 0);
    pm_jit_free(jit);
}

/* ---- scratch kept between runs ---------------------------------------------------------- */

/* Runs the sample app at rows x cols through pm_jit_run; true when it ran. */
static bool run_sample(pm_jit *jit, const pm_sample_app *app, pm_pipeline *p, int64_t rows,
                       int64_t cols)
{
    pm_value params[16];
    pm_buffer in[8], out[4];
    int ni = pm_pipeline_ninputs(p), no = pm_pipeline_noutputs(p);
    if (!CHECK(pm_pipeline_nparams(p) <= 16 && ni <= 8 && no <= 4))
        return false;
    app->params(rows, cols, params);
    for (int i = 0; i < ni; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_input(i, &in[i], params);
    }
    for (int i = 0; i < no; i++)
        out[i] = pm_sample_buffer(p, 1, i, params);
    pm_error err;
    bool ok = CHECK_STATUS(pm_jit_run(jit, p, NULL, params, in, out, &err), PM_OK);
    for (int i = 0; i < ni; i++)
        free(in[i].data);
    for (int i = 0; i < no; i++)
        free(out[i].data);
    return ok;
}

static void test_scratch(void)
{
    const pm_sample_app *app = pm_sample_find("harris");
    pm_jit *jit = new_jit();
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app && jit ? app->build(ctx) : NULL;
    if (!CHECK(p != NULL)) {
        pm_jit_free(jit);
        pm_ctx_free(ctx);
        return;
    }
    pm_value small[16], big[16];
    app->params(64, 64, small);
    app->params(128, 128, big);
    int64_t est = 0, est_big = 0;
    pm_error err;
    CHECK_STATUS(pm_jit_scratch_estimate(jit, p, NULL, small, &est, &err), PM_OK);
    CHECK(est == -1); /* no run seen */
    CHECK_STATUS(pm_jit_scratch_estimate(jit, p, NULL, small, NULL, &err), PM_ERR_MISUSE);
    CHECK_CONTAINS(err.message, "pm_jit_scratch_estimate: the result is NULL");
    CHECK_STATUS(pm_jit_scratch_estimate(jit, p, NULL, NULL, &est, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "the parameter values are NULL");
    run_sample(jit, app, p, 64, 64);
    pm_cache_stats s = stats_of(jit);
    CHECK(s.scratch_bytes > 0 && s.scratch_released == 0);
    CHECK_STATUS(pm_jit_scratch_estimate(jit, p, NULL, small, &est, &err), PM_OK);
    CHECK(est == s.scratch_bytes); /* one kernel, one run */
    CHECK_STATUS(pm_jit_scratch_estimate(jit, p, NULL, big, &est_big, &err), PM_OK);
    if (!CHECK(est_big >= 3 * est && est_big <= 5 * est)) /* four times the pixels */
        fprintf(stderr, "  scratch estimate: %lld at 64 x 64, %lld at 128 x 128\n",
                (long long)est, (long long)est_big);

    /* no scratch budget: the idle sets go at once, and after each run */
    pm_cache_policy policy = pm_cache_policy_default();
    CHECK(policy.max_scratch_bytes == (int64_t)1 << 30 && policy.scratch_idle_ms == 5000 &&
          policy.background_nice == 10);
    policy.max_scratch_bytes = 0;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    pm_cache_stats after = stats_of(jit);
    CHECK(after.scratch_bytes == 0 && after.scratch_released == (uint64_t)s.scratch_bytes);
    run_sample(jit, app, p, 64, 64);
    after = stats_of(jit);
    CHECK(after.scratch_bytes == 0 && after.scratch_released == 2 * (uint64_t)s.scratch_bytes);

    /* idle: freed by the jit's own thread some time after scratch_idle_ms */
    policy.max_scratch_bytes = (int64_t)1 << 30;
    policy.scratch_idle_ms = 100;
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK);
    run_sample(jit, app, p, 64, 64);
    CHECK(stats_of(jit).scratch_bytes > 0);
    for (int tries = 0; tries < 300 && stats_of(jit).scratch_bytes > 0; tries++)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    CHECK(stats_of(jit).scratch_bytes == 0);
    run_sample(jit, app, p, 64, 64); /* runs again with fresh sets */
    CHECK(stats_of(jit).scratch_bytes > 0);

    /* the policy's new fields, out of range */
    pm_cache_policy bad = pm_cache_policy_default();
    bad.max_scratch_bytes = -1;
    CHECK_STATUS(pm_jit_set_policy(jit, &bad, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "max_scratch_bytes");
    bad = pm_cache_policy_default();
    bad.scratch_idle_ms = -1;
    CHECK_STATUS(pm_jit_set_policy(jit, &bad, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "scratch_idle_ms");
    bad = pm_cache_policy_default();
    bad.background_nice = 20;
    CHECK_STATUS(pm_jit_set_policy(jit, &bad, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "background_nice");
    pm_jit_free(jit);
    pm_ctx_free(ctx);
}

int main(void)
{
    test_buckets();
    test_policy();
    test_keys();
    test_no_parameters();
    test_eviction();
    test_serving();
    test_same_key_at_once();
    test_first_sizes_at_once();
    test_free_while_compiling();
    test_scratch();
    return check_finish("kernel_cache");
}
