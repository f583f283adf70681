/* test_jit_e2e.c — every compiled variant equals the interpreter.
 *
 * For each sample app and each small test pipeline (integer wrap-around, casts, scaled
 * accesses, reductions, time-iterated stencils, data-dependent reads), at edge sizes
 * (1x1, smaller than a vector, odd, not divisible by anything, large) and with 1 and 2
 * threads: compile with pm_jit_compile, run, and compare with pm_interpret on the same
 * inputs. Outputs are pre-filled with a sentinel so "not written" must agree too.
 * Also: buffer and parameter errors are rejected with messages, a kernel runs from 4
 * threads at once, and the unsharp kernel's IR has <16 x float> and GOMP_parallel. */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pm_jit *jit;

/* Fills a buffer with a byte pattern that no computation is likely to produce. */
static void fill_sentinel(pm_buffer *b)
{
    memset(b->data, 0x5a, (size_t)check_buffer_count(b) * pm_type_size(b->type));
}

typedef struct run_set {
    int ninputs, noutputs;
    pm_buffer in[8], ref[8], got[8];
} run_set;

static bool make_buffers(pm_pipeline *p, const pm_value *params, run_set *rs, unsigned seed,
                         const pm_sample_app *app)
{
    rs->ninputs = pm_pipeline_ninputs(p);
    rs->noutputs = pm_pipeline_noutputs(p);
    for (int i = 0; i < rs->ninputs; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        if (!CHECK(pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext) == PM_OK))
            return false;
        rs->in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
        if (app)
            app->fill_input(i, &rs->in[i], params);
        else
            check_fill(&rs->in[i], seed + (unsigned)i, false);
    }
    for (int i = 0; i < rs->noutputs; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        if (!CHECK(pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext) == PM_OK))
            return false;
        pm_type t = pm_func_type(pm_pipeline_output(p, i));
        rs->ref[i] = check_buffer_new(t, nd, ext);
        rs->got[i] = check_buffer_new(t, nd, ext);
        fill_sentinel(&rs->ref[i]);
        fill_sentinel(&rs->got[i]);
    }
    return true;
}

static void free_buffers(run_set *rs)
{
    for (int i = 0; i < rs->ninputs; i++)
        check_buffer_free(&rs->in[i]);
    for (int i = 0; i < rs->noutputs; i++) {
        check_buffer_free(&rs->ref[i]);
        check_buffer_free(&rs->got[i]);
    }
}

/* Interprets and runs `k` on the same inputs; returns the largest difference. */
static double differential(pm_pipeline *p, pm_kernel *k, const pm_value *params, unsigned seed,
                           const pm_sample_app *app, const char *label)
{
    run_set rs;
    memset(&rs, 0, sizeof rs);
    double worst = INFINITY;
    if (getenv("PM_TEST_VERBOSE"))
        fprintf(stderr, "  %s\n", label);
    if (!make_buffers(p, params, &rs, seed, app))
        goto done;
    pm_ctx *ctx = NULL;
    (void)ctx;
    pm_status st = pm_interpret(p, params, rs.in, rs.ref);
    if (!CHECK(st == PM_OK)) {
        fprintf(stderr, "  %s: interpreter: %s\n", label, pm_status_name(st));
        goto done;
    }
    pm_error err;
    st = pm_kernel_run(k, params, rs.in, rs.got, &err);
    if (!CHECK(st == PM_OK)) {
        fprintf(stderr, "  %s: kernel: %s\n", label, err.message);
        goto done;
    }
    worst = 0;
    for (int i = 0; i < rs.noutputs; i++) {
        double d = check_buffer_maxdiff(&rs.ref[i], &rs.got[i]);
        if (d > worst)
            worst = d;
    }
done:
    free_buffers(&rs);
    return worst;
}

static pm_kernel *compile(pm_pipeline *p, const pm_value *estimates, int threads)
{
    pm_compile_options o = pm_compile_options_default();
    o.threads = threads;
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, estimates, &o, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile %s: %s\n", pm_pipeline_name(p), err.message);
    return k;
}

/* ---- the sample apps ------------------------------------------------------------------ */

static void test_app_sizes(const pm_sample_app *app, const int64_t (*sizes)[2], int nsizes)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "  %s: %s\n", app->name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    int np = pm_pipeline_nparams(p);
    pm_value est[16];
    app->params(app->quick_rows, app->quick_cols, est);
    for (int threads = 1; threads <= 2; threads++) {
        pm_kernel *k = compile(p, est, threads);
        if (!k)
            continue;
        for (int s = 0; s < nsizes; s++) {
            pm_value params[16];
            app->params(sizes[s][0], sizes[s][1], params);
            (void)np;
            char label[128];
            snprintf(label, sizeof label, "%s %lldx%lld threads=%d", app->name,
                     (long long)sizes[s][0], (long long)sizes[s][1], threads);
            double d = differential(p, k, params, 7, app, label);
            if (!CHECK(d <= app->tolerance))
                fprintf(stderr, "  %s: max diff %g > %g\n", label, d, app->tolerance);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

static void test_samples(void)
{
    /* Harris needs rows, cols >= 2 (R = rows - 2 >= 0); 3x3 has a 1-pixel interior-less
     * frame, 5x7 is smaller than a vector, odd and prime sizes, then large. */
    static const int64_t harris_sizes[][2] = {{3, 3}, {4, 4}, {5, 7}, {17, 15}, {37, 53},
                                              {101, 67}, {480, 640}};
    test_app_sizes(pm_sample_find("harris"), harris_sizes, 7);
    static const int64_t unsharp_sizes[][2] = {{1, 1}, {2, 3}, {5, 7}, {16, 16}, {33, 17},
                                               {101, 67}, {300, 400}};
    test_app_sizes(pm_sample_find("unsharp_mask"), unsharp_sizes, 7);
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    for (int i = 0; i < n; i++) {
        if (!strcmp(apps[i].name, "harris") || !strcmp(apps[i].name, "unsharp_mask"))
            continue;
        int64_t sizes[1][2] = {{apps[i].quick_rows, apps[i].quick_cols}};
        test_app_sizes(&apps[i], (const int64_t(*)[2])sizes, 1);
    }
}

/* ---- small pipelines of one feature each ---------------------------------------------- */

typedef pm_pipeline *(*pipeline_builder)(pm_ctx *ctx);

/* Runs a one-parameter-pair (R, C) pipeline at many sizes, 1 and 2 threads. */
static void test_builder(const char *name, pipeline_builder build, double tolerance)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[][2] = {{1, 1}, {1, 5}, {3, 2}, {7, 15}, {16, 17}, {33, 65},
                                       {129, 200}};
    pm_value est[2] = {PM_I(64), PM_I(64)};
    for (int threads = 1; threads <= 2; threads++) {
        pm_kernel *k = compile(p, est, threads);
        if (!k)
            continue;
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
            char label[128];
            snprintf(label, sizeof label, "%s %lldx%lld threads=%d", name,
                     (long long)sizes[s][0], (long long)sizes[s][1], threads);
            double d = differential(p, k, params, 11 + (unsigned)s, NULL, label);
            if (!CHECK(d <= tolerance))
                fprintf(stderr, "  %s: max diff %g > %g\n", label, d, tolerance);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

#define DOMAIN2(ctx, R, C, x, y, row, col)                                         \
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");       \
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");                          \
    pm_interval *row = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);         \
    pm_interval *col = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)

static pm_pipeline *finish(pm_ctx *ctx, const char *name, pm_expr *R, pm_expr *C, int nin,
                           pm_func *const *in, int nout, pm_func *const *out)
{
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, name, 2, pm_exprs(R, C), nin, in, nout, out, &p);
    return p;
}

/* u8 and u16 arithmetic wraps; casts between widths; i8 negation and floor division. */
static pm_pipeline *build_wrap(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *a = pm_image(ctx, "a", PM_U8, R, C);
    pm_func *b = pm_image(ctx, "b", PM_U16, R, C);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {row, col};
    pm_func *sum8 = pm_func_new(ctx, "sum8", PM_U8, 2, xy, dom);
    pm_func_define_expr(sum8, pm_add(pm_muli(pm_call(a, x, y), 3), pm_addi(pm_call(a, x, y), 200)));
    pm_func *mix16 = pm_func_new(ctx, "mix16", PM_U16, 2, xy, dom);
    pm_func_define_expr(mix16, pm_sub(pm_mul(pm_call(b, x, y), pm_cast(PM_U16, pm_call(sum8, x, y))),
                                      pm_shr(pm_call(b, x, y), pm_int(ctx, 3))));
    pm_func *signed8 = pm_func_new(ctx, "signed8", PM_I8, 2, xy, dom);
    pm_expr *s = pm_cast(PM_I8, pm_call(mix16, x, y));
    pm_func_define_expr(signed8, pm_add(pm_neg(s), pm_divi(s, 4)));
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, xy, dom);
    pm_expr *w = pm_cast(PM_I32, pm_call(signed8, x, y));
    pm_func_define_expr(out, pm_add(pm_add(pm_modi(w, 7), pm_cdiv(w, pm_int(ctx, 3))),
                                    pm_absd(pm_call(sum8, x, y), pm_call(a, x, y))));
    return finish(ctx, "wrap", R, C, 2, (pm_func *const[]){a, b}, 2,
                  (pm_func *const[]){out, mix16});
}

/* Float to integer casts saturate; math functions; select; min/max/clamp. */
static pm_pipeline *build_float_int(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *f = pm_image(ctx, "f", PM_F32, R, C);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {row, col};
    pm_func *scaled = pm_func_new(ctx, "scaled", PM_F32, 2, xy, dom);
    pm_expr *v = pm_call(f, x, y);
    /* sqrt and floor are exact in IEEE arithmetic, so the u8 cast below cannot flip; exp
     * (which libm and LLVM may round differently by an ulp) only feeds the f64 output. */
    pm_func_define_expr(scaled, pm_add(pm_mulf(pm_sqrt(v), 600.0f), pm_floor(pm_mulf(v, 10))));
    pm_func *u8 = pm_func_new(ctx, "u8", PM_U8, 2, xy, dom);
    pm_func_define_expr(u8, pm_cast(PM_U8, pm_addf(pm_call(scaled, x, y), -100)));
    pm_func *mixed = pm_func_new(ctx, "mixed", PM_F64, 2, xy, dom);
    pm_expr *s = pm_call(scaled, x, y);
    pm_func_define_expr(mixed, pm_select(pm_gt(s, pm_float(ctx, 300)),
                                         pm_cast(PM_F64, pm_clamp(s, pm_float(ctx, 350), pm_float(ctx, 500))),
                                         pm_add(pm_exp(pm_f64(ctx, 0.5)), pm_cast(PM_F64, pm_call(u8, x, y)))));
    return finish(ctx, "float_int", R, C, 1, (pm_func *const[]){f}, 2,
                  (pm_func *const[]){u8, mixed});
}

/* Down- and up-sampling: scaled accesses 2x+1 and x/2, with boundary cases. */
static pm_pipeline *build_sampling(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    (void)row;
    pm_func *img = pm_image(ctx, "img", PM_F32, pm_muli(R, 2), pm_muli(C, 2));
    pm_expr *const xy[] = {x, y};
    pm_func *down = pm_func_new(ctx, "down", PM_F32, 2, xy, pm_intervals(row, col));
    pm_expr *sum = pm_add(pm_add(pm_call(img, pm_muli(x, 2), pm_muli(y, 2)),
                                 pm_call(img, pm_addi(pm_muli(x, 2), 1), pm_muli(y, 2))),
                          pm_add(pm_call(img, pm_muli(x, 2), pm_addi(pm_muli(y, 2), 1)),
                                 pm_call(img, pm_addi(pm_muli(x, 2), 1), pm_addi(pm_muli(y, 2), 1))));
    pm_func_define_expr(down, pm_mulf(sum, 0.25));
    pm_interval *row2 = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(R, 2), -1), 1);
    pm_interval *col2 = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(C, 2), -1), 1);
    pm_func *up = pm_func_new(ctx, "up", PM_F32, 2, xy, pm_intervals(row2, col2));
    pm_expr *even = pm_eq(pm_modi(x, 2), pm_int(ctx, 0));
    pm_define(up,
              pm_case_new(pm_and(even, pm_ge(x, pm_int(ctx, 2))),
                          pm_mulf(pm_add(pm_call(down, pm_divi(x, 2), pm_divi(y, 2)),
                                         pm_call(down, pm_addi(pm_divi(x, 2), -1), pm_divi(y, 2))), 0.5)),
              pm_case_new(pm_or(pm_not(even), pm_lt(x, pm_int(ctx, 2))),
                          pm_sub(pm_call(img, x, y), pm_call(down, pm_divi(x, 2), pm_divi(y, 2)))));
    return finish(ctx, "sampling", R, C, 1, (pm_func *const[]){img}, 2,
                  (pm_func *const[]){up, down});
}

/* A histogram of a u8 image and a data-dependent lookup through it. */
static pm_pipeline *build_histogram(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *img = pm_image(ctx, "img", PM_U8, R, C);
    pm_expr *bin = pm_var(ctx, "bin");
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, pm_exprs(bin), pm_intervals(bins),
                                     2, pm_exprs(x, y), pm_intervals(row, col),
                                     PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_call(img, x, y)), pm_int(ctx, 1));
    pm_func *maxv = pm_reduction_new(ctx, "maxv", PM_U8, 1, pm_exprs(bin),
                                     pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)),
                                     2, pm_exprs(x, y), pm_intervals(row, col), PM_REDUCE_MAX,
                                     pm_int(ctx, 7));
    pm_reduction_define(maxv, 1, pm_exprs(pm_modi(pm_add(x, y), 4)), pm_call(img, x, y));
    pm_func *lookup = pm_func_new(ctx, "lookup", PM_I32, 2, pm_exprs(x, y), pm_intervals(row, col));
    pm_func_define_expr(lookup, pm_add(pm_call(hist, pm_call(img, x, y)),
                                       pm_cast(PM_I32, pm_call(maxv, pm_modi(x, 4)))));
    return finish(ctx, "histogram", R, C, 1, (pm_func *const[]){img}, 3,
                  (pm_func *const[]){lookup, hist, maxv});
}

/* A time-iterated 1-D stencil over rows: f(t, y) from f(t-1, y-1 .. y+1). */
static pm_pipeline *build_iterated(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, t, y, steps, col);
    pm_func *img = pm_image(ctx, "img", PM_F32, C);
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 2, pm_exprs(t, y), pm_intervals(steps, col));
    pm_expr *interior = pm_and(pm_ge(t, pm_int(ctx, 1)),
                               pm_between(y, pm_int(ctx, 1), pm_addi(C, -2)));
    pm_expr *edge = pm_and(pm_ge(t, pm_int(ctx, 1)),
                           pm_or(pm_eq(y, pm_int(ctx, 0)), pm_eq(y, pm_addi(C, -1))));
    pm_define(f,
              pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(img, y)),
              pm_case_new(interior, pm_mulf(pm_add(pm_add(pm_call(f, pm_addi(t, -1), pm_addi(y, -1)),
                                                          pm_call(f, pm_addi(t, -1), y)),
                                                   pm_call(f, pm_addi(t, -1), pm_addi(y, 1))),
                                            1.0 / 3)),
              pm_case_new(edge, pm_call(f, pm_addi(t, -1), y)));
    return finish(ctx, "iterated", R, C, 1, (pm_func *const[]){img}, 1, (pm_func *const[]){f});
}

/* ---- errors, threads, IR ---------------------------------------------------------------- */

static void test_errors(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_harris.build(ctx);
    pm_value params[2];
    pm_sample_harris.params(20, 30, params);
    pm_kernel *k = compile(p, params, 1);
    if (!k) {
        pm_ctx_free(ctx);
        return;
    }
    float *in = calloc(20 * 30, sizeof(float)), *out = calloc(20 * 30, sizeof(float));
    pm_buffer bin = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){20, 30});
    pm_buffer bout = pm_buffer_dense(out, PM_F32, 2, (int64_t[]){20, 30});
    pm_error err;
    CHECK_STATUS(pm_kernel_run(k, params, &bin, &bout, &err), PM_OK);

    pm_buffer wrong = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){20, 29});
    CHECK_STATUS(pm_kernel_run(k, params, &wrong, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "I");
    CHECK_CONTAINS(err.message, "f32[20][30]");

    pm_buffer wrong_type = pm_buffer_dense(in, PM_U8, 2, (int64_t[]){20, 30});
    CHECK_STATUS(pm_kernel_run(k, params, &wrong_type, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "u8");

    pm_buffer no_data = pm_buffer_dense(NULL, PM_F32, 2, (int64_t[]){20, 30});
    CHECK_STATUS(pm_kernel_run(k, params, &bin, &no_data, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "harris");

    pm_value bad[2] = {PM_I(-10), PM_I(28)};
    CHECK_STATUS(pm_kernel_run(k, bad, &bin, &bout, &err), PM_ERR_ARGUMENT);
    pm_value huge[2] = {PM_I(1LL << 40), PM_I(28)};
    CHECK_STATUS(pm_kernel_run(k, huge, &bin, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "R");

    CHECK_STATUS(pm_kernel_run(NULL, params, &bin, &bout, &err), PM_ERR_MISUSE);
    CHECK_STATUS(pm_kernel_run(k, params, NULL, &bout, &err), PM_ERR_ARGUMENT);
    CHECK(pm_jit_compile(jit, NULL, NULL, NULL, &err) == NULL);
    CHECK(err.status != PM_OK);
    pm_kernel_free(k);
    free(in);
    free(out);
    pm_ctx_free(ctx);
}

typedef struct concurrent_job {
    pm_kernel *k;
    pm_value params[2];
    pm_buffer in, out;
    pm_status status;
} concurrent_job;

static void *run_job(void *arg)
{
    concurrent_job *job = arg;
    pm_error err;
    for (int i = 0; i < 5 && job->status == PM_OK; i++)
        job->status = pm_kernel_run(job->k, job->params, &job->in, &job->out, &err);
    return NULL;
}

static void test_concurrent_runs(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_harris.build(ctx);
    pm_value est[2];
    pm_sample_harris.params(200, 200, est);
    pm_kernel *k = compile(p, est, 2);
    if (!k) {
        pm_ctx_free(ctx);
        return;
    }
    concurrent_job jobs[4];
    pthread_t threads[4];
    for (int t = 0; t < 4; t++) {
        int64_t rows = 60 + 37 * t, cols = 90 + 11 * t; /* different sizes share scratch pools */
        concurrent_job *j = &jobs[t];
        pm_sample_harris.params(rows, cols, j->params);
        j->k = k;
        j->in = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
        j->out = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
        pm_sample_harris.fill_input(0, &j->in, j->params);
        j->status = PM_OK;
        pthread_create(&threads[t], NULL, run_job, j);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        concurrent_job *j = &jobs[t];
        CHECK_STATUS(j->status, PM_OK);
        pm_buffer ref = check_buffer_new(PM_F32, 2, j->out.extent);
        CHECK_STATUS(pm_interpret(p, j->params, &j->in, &ref), PM_OK);
        double d = check_buffer_maxdiff(&ref, &j->out);
        if (!CHECK(d <= pm_sample_harris.tolerance))
            fprintf(stderr, "  concurrent run %d: max diff %g\n", t, d);
        check_buffer_free(&ref);
        check_buffer_free(&j->in);
        check_buffer_free(&j->out);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

static void test_unsharp_ir(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_unsharp_mask.build(ctx);
    pm_value est[4];
    pm_sample_unsharp_mask.params(2048, 2048, est);
    pm_compile_options o = pm_compile_options_default();
    o.vector_width = 16; /* 16 lanes of f32: AVX-512 (the default on this host) */
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
    if (CHECK(k != NULL)) {
        const char *ir = pm_kernel_dump(k, "llvm");
        CHECK(ir != NULL);
        CHECK_CONTAINS(ir, "<16 x float>");
        CHECK_CONTAINS(ir, "GOMP_parallel");
        CHECK(pm_kernel_compile_ms(k) > 0);
        pm_kernel_free(k);
    } else {
        fprintf(stderr, "  unsharp compile: %s\n", err.message);
    }
    pm_ctx_free(ctx);
}

int main(void)
{
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return check_finish("jit_e2e");
    }
    test_samples();
    test_builder("wrap", build_wrap, 0);
    test_builder("float_int", build_float_int, 1e-3);
    test_builder("sampling", build_sampling, 1e-5);
    test_builder("histogram", build_histogram, 0);
    test_builder("iterated", build_iterated, 1e-5);
    test_errors();
    test_concurrent_runs();
    test_unsharp_ir();
    pm_jit_free(jit);
    return check_finish("jit_e2e");
}
