/* test_compiled.c — compiled code gives the interpreter's answer, through pm_jit_compile.
 *
 * The one differential suite (it joins test_codegen_run, test_jit_e2e and the result
 * checks of test_runtime_kernel): every sample app and hand-written pipelines of one
 * feature each (integer wrap-around, floor and C division also by zero, saturating casts,
 * shifts, case pieces, sampling, gathers, steps, reductions and histograms, time
 * iteration, scans), at edge sizes (1x1, smaller than a vector, odd, not divisible by the
 * vector width, large), vector widths 1, 8 and 16 and the host's, 1 to 8 threads, kernels
 * run from 4 threads at once. Output buffers start with the same garbage on both sides,
 * so points covered by no case must stay untouched. Integers compare exactly, floats
 * within each pipeline's stated tolerance. The public API's contract (errors, options,
 * dumps, lifetimes) is test_api_contract.c; random pipelines are test/fuzz/.
 * PM_TEST_ONLY=name runs one group, PM_TEST_VERBOSE=1 prints labels and dumps.
 */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS and MAP_NORESERVE */
#include "check.h"
#include "samples.h"

#include "frontend/flat.h"  /* pm_func_flat_range */
#include "runtime/kernel.h" /* k->pool: the scratch sets concurrent runs made */

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- kernels by (pipeline, width, threads), through pm_jit_compile ------------------ */

static pm_jit *jit;

static pm_kernel *compile_with(pm_pipeline *p, const pm_value *estimates, int width, int threads)
{
    pm_compile_options o = pm_compile_options_default();
    o.vector_width = width;
    o.threads = threads;
    if (getenv("PM_TEST_VERBOSE"))
        o.dump = "domains,ast";
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, estimates, &o, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile %s W=%d threads=%d: %s\n", pm_pipeline_name(p), width,
                threads, err.message);
    return k;
}

/* Kernels are valid for every size: compile once per (pipeline, width, threads) and
 * reuse across sizes. Cleared before the pipeline's context is freed. */
typedef struct cached {
    pm_pipeline *p;
    int width, threads;
    pm_kernel *k;
} cached;
static cached cache[16];
static int ncached;

static pm_kernel *kernel_get(pm_pipeline *p, int width, int threads)
{
    for (int i = 0; i < ncached; i++)
        if (cache[i].p == p && cache[i].width == width && cache[i].threads == threads)
            return cache[i].k;
    if (ncached == 16)
        return NULL;
    cached *c = &cache[ncached++];
    *c = (cached){p, width, threads, compile_with(p, NULL, width, threads)};
    return c->k;
}

static void kernel_cache_clear(void)
{
    for (int i = 0; i < ncached; i++)
        pm_kernel_free(cache[i].k);
    ncached = 0;
}

/* Runs p compiled and interpreted at params; returns the largest output difference. */
static double compare(pm_pipeline *p, const pm_value *params, int width, int threads,
                      const pm_sample_app *app)
{
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    pm_buffer in[8], want[8], got[8];
    for (int i = 0; i < nin; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext);
        in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
        if (app && app->fill_input)
            app->fill_input(i, &in[i], params);
        else
            check_fill(&in[i], 17u + (unsigned)i, false);
    }
    for (int i = 0; i < nout; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext);
        pm_type t = pm_func_type(pm_pipeline_output(p, i));
        want[i] = check_buffer_new(t, nd, ext);
        got[i] = check_buffer_new(t, nd, ext);
        check_fill(&want[i], 99u, false);
        check_fill(&got[i], 99u, false);
    }
    double diff = INFINITY;
    pm_status st = pm_interpret(p, params, in, want);
    pm_kernel *k = NULL;
    pm_error err;
    if (CHECK_STATUS(st, PM_OK) && (k = kernel_get(p, width, threads)) != NULL) {
        if (CHECK_STATUS(pm_kernel_run(k, params, in, got, &err), PM_OK)) {
            diff = 0;
            for (int i = 0; i < nout; i++) {
                double d = check_buffer_maxdiff(&want[i], &got[i]);
                if (d > diff)
                    diff = d;
            }
        }
    } else if (st != PM_OK) {
        fprintf(stderr, "  interpreter: %s\n", "(see the pipeline's context)");
    }
    for (int i = 0; i < nin; i++)
        check_buffer_free(&in[i]);
    for (int i = 0; i < nout; i++) {
        check_buffer_free(&want[i]);
        check_buffer_free(&got[i]);
    }
    return diff;
}

#define CHECK_SAME(p, params, width, threads, tol)                                       \
    do {                                                                                 \
        double d_ = compare((p), (params), (width), (threads), NULL);                   \
        if (!CHECK(d_ <= (tol)))                                                         \
            fprintf(stderr, "  %s W=%d threads=%d: max diff %g\n", pm_pipeline_name(p),  \
                    (width), (threads), d_);                                             \
    } while (0)

/* ---- the samples ------------------------------------------------------------------------ */

static void test_samples_widths(void)
{
    int n = 0;
    const pm_sample_app *apps = pm_sample_apps(&n);
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {17, 33}, {40, 61}};
    for (int a = 0; a < n; a++) {
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = apps[a].build(ctx);
        for (int s = 0; p && s < 4; s++) {
            pm_value params[16];
            apps[a].params(sizes[s][0], sizes[s][1], params);
            for (int w = 0; w < 2; w++) {
                int width = w ? 16 : 1, threads = w ? 2 : 1;
                if (getenv("PM_TEST_VERBOSE"))
                    fprintf(stderr, "%s %lldx%lld W=%d\n", apps[a].name, (long long)sizes[s][0],
                            (long long)sizes[s][1], width);
                double d = compare(p, params, width, threads, &apps[a]);
                if (!CHECK(d <= apps[a].tolerance))
                    fprintf(stderr, "  %s %lldx%lld W=%d threads=%d: max diff %g\n", apps[a].name,
                            (long long)sizes[s][0], (long long)sizes[s][1], width, threads, d);
            }
        }
        kernel_cache_clear();
    pm_ctx_free(ctx);
    }
}


/* ---- hand-written pipelines, one feature each ------------------------------------------ */

static pm_pipeline *finish(pm_ctx *ctx, const char *name, int np, pm_expr *const *params, int ni,
                           pm_func *const *inputs, int no, pm_func *const *outputs)
{
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, name, np, params, ni, inputs, no, outputs, &p);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(ctx));
    return p;
}

/* u8 wrap-around, floor and C division/modulo (also by zero and negative), saturating
 * casts, shifts and bitwise operations. */
static void test_integers(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_func *J = pm_image(ctx, "J", PM_I16, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {rows, cols};
    pm_expr *i = pm_call(I, x, y), *j = pm_call(J, x, y);

    pm_func *wrap = pm_func_new(ctx, "wrap", PM_U8, 2, xy, dom);
    pm_func_define_expr(wrap, pm_add(pm_muli(i, 3), pm_addi(i, 200)));
    pm_func *divs = pm_func_new(ctx, "divs", PM_I32, 2, xy, dom);
    pm_expr *v = pm_sub(pm_cast(PM_I32, j), pm_int(ctx, 7));
    pm_expr *z = pm_addi(pm_modi(pm_cast(PM_I32, i), 5), -2); /* -2..2, zero included */
    pm_func_define_expr(divs, pm_add(pm_add(pm_divi(v, 7), pm_muli(pm_modi(v, 7), 1000)),
                                     pm_add(pm_muli(pm_div(v, z), 3), pm_mul(pm_mod(v, z), pm_int(ctx, 100000)))));
    pm_func *cdivs = pm_func_new(ctx, "cdivs", PM_I16, 2, xy, dom);
    pm_expr *j1 = pm_sub(j, pm_cast(PM_I16, pm_modi(pm_cast(PM_I32, i), 3)));
    pm_func_define_expr(cdivs, pm_add(pm_cdiv(j, pm_cast(PM_I16, z)), pm_muli(pm_cmod(j, j1), 3)));
    pm_func *sat = pm_func_new(ctx, "sat", PM_U8, 2, xy, dom);
    pm_func_define_expr(sat, pm_cast(PM_U8, pm_mulf(pm_cast(PM_F32, j), 1.7)));
    pm_func *sat8 = pm_func_new(ctx, "sat8", PM_I8, 2, xy, dom);
    pm_func_define_expr(sat8, pm_cast(PM_I8, pm_mulf(pm_cast(PM_F32, j), -0.01)));
    pm_func *bits = pm_func_new(ctx, "bits", PM_U16, 2, xy, dom);
    pm_expr *u = pm_cast(PM_U16, j);
    pm_func_define_expr(bits, pm_bxor(pm_bor(pm_shl(u, pm_cast(PM_U16, pm_modi(pm_cast(PM_I32, i), 19))),
                                             pm_shr(u, pm_const(ctx, PM_U16, 3))),
                                      pm_absd(u, pm_cast(PM_U16, i))));
    pm_func *narrow = pm_func_new(ctx, "narrow", PM_I8, 2, xy, dom);
    pm_func_define_expr(narrow, pm_cast(PM_I8, pm_add(pm_cast(PM_I32, j), pm_abs(pm_cast(PM_I32, j)))));
    pm_pipeline *p = finish(ctx, "integers", 2, pm_exprs(R, C), 2, (pm_func *const[]){I, J}, 7,
                            (pm_func *const[]){wrap, divs, cdivs, sat, sat8, bits, narrow});
    static const int64_t sizes[][2] = {{1, 1}, {2, 7}, {9, 31}, {33, 100}};
    for (int s = 0; p && s < 4; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 0);
        CHECK_SAME(p, params, 16, 2, 0);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* Case pieces: an affine boundary case and its interior, plus a data-dependent case
 * that leaves some points unwritten. */
static void test_cases(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {rows, cols};
    pm_expr *edge = pm_or(pm_or(pm_eq(x, pm_int(ctx, 0)), pm_eq(y, pm_int(ctx, 0))),
                          pm_or(pm_eq(x, pm_addi(R, -1)), pm_eq(y, pm_addi(C, -1))));
    pm_func *f = pm_func_new(ctx, "smooth", PM_F32, 2, xy, dom);
    pm_expr *avg = pm_mulf(pm_add(pm_add(pm_call(I, pm_addi(x, -1), y), pm_call(I, pm_addi(x, 1), y)),
                                  pm_add(pm_call(I, x, pm_addi(y, -1)), pm_call(I, x, pm_addi(y, 1)))),
                           0.25);
    pm_define(f, pm_case_new(edge, pm_call(I, x, y)), pm_case_new(pm_not(edge), avg));
    pm_func *g = pm_func_new(ctx, "bright", PM_F32, 2, xy, dom);
    pm_define(g, pm_case_new(pm_and(pm_gt(pm_call(f, x, y), pm_float(ctx, 0.5)), pm_ge(x, pm_int(ctx, 1))),
                             pm_mulf(pm_call(f, x, y), 2)));
    /* a clamped (min/max) affine read and a select */
    pm_func *h = pm_func_new(ctx, "left", PM_F32, 2, xy, dom);
    pm_func_define_expr(h, pm_select(pm_gt(y, pm_int(ctx, 0)),
                                     pm_call(f, x, pm_max(pm_addi(y, -1), pm_int(ctx, 0))),
                                     pm_float(ctx, -1)));
    pm_pipeline *p = finish(ctx, "cases", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 3,
                            (pm_func *const[]){f, g, h});
    static const int64_t sizes[][2] = {{1, 1}, {2, 2}, {3, 17}, {20, 47}, {64, 130}};
    for (int s = 0; p && s < 5; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 1e-6);
        CHECK_SAME(p, params, 16, 2, 1e-6);
        CHECK_SAME(p, params, 8, 1, 1e-6);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* Stride-2 reads (downsampling), x/2 reads (upsampling), table look-ups (gathers), one
 * of them clamped, and an interval with a step. */
static void test_sampling(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_muli(R, 2), pm_muli(C, 2));
    pm_func *K = pm_image(ctx, "K", PM_U8, R, C);
    pm_func *lut = pm_image(ctx, "lut", PM_F32, pm_int(ctx, 256));
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_expr *const xy[] = {x, y};
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_interval *rows2 = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(R, 2), -1), 1);
    pm_interval *cols2 = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(C, 2), -1), 1);
    pm_func *down = pm_func_new(ctx, "down", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(down, pm_add(pm_call(I, pm_muli(x, 2), pm_muli(y, 2)),
                                     pm_call(I, pm_addi(pm_muli(x, 2), 1), pm_addi(pm_muli(y, 2), 1))));
    pm_func *up = pm_func_new(ctx, "up", PM_F32, 2, xy, pm_intervals(rows2, cols2));
    pm_func_define_expr(up, pm_sub(pm_call(I, x, y), pm_call(down, pm_divi(x, 2), pm_divi(y, 2))));
    pm_func *look = pm_func_new(ctx, "look", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_expr *k = pm_cast(PM_I32, pm_call(K, x, y));
    pm_func_define_expr(look, pm_add(pm_call(lut, k), pm_call(lut, pm_addi(k, 100))));
    /* odd columns only: y = 1, 3, ..., 2C-1 */
    pm_interval *odd = pm_interval_new(pm_int(ctx, 1), pm_addi(pm_muli(C, 2), -1), 2);
    pm_func *odds = pm_func_new(ctx, "odds", PM_F32, 2, xy, pm_intervals(rows, odd));
    pm_func_define_expr(odds, pm_mulf(pm_call(I, x, y), 3));
    pm_func *pick = pm_func_new(ctx, "pick", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(pick, pm_call(odds, x, pm_addi(pm_muli(y, 2), 1)));
    pm_pipeline *p = finish(ctx, "sampling", 2, pm_exprs(R, C), 3, (pm_func *const[]){I, K, lut}, 4,
                            (pm_func *const[]){up, look, odds, pick});
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {5, 19}, {31, 40}};
    for (int s = 0; p && s < 4; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 1e-6);
        CHECK_SAME(p, params, 16, 2, 1e-6);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* Reductions: a histogram with a data-dependent index, one whose index can leave the
 * variable domain (skipped), and a row-sum with an affine index. */
static void test_reductions(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y"), *v = pm_var(ctx, "v");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_interval *half = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 127), 1);
    pm_expr *const xy[] = {x, y};
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, (pm_expr *const[]){v}, pm_intervals(bins),
                                     2, xy, pm_intervals(rows, cols), PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_cast(PM_I32, pm_call(I, x, y))), pm_int(ctx, 1));
    pm_func *low = pm_reduction_new(ctx, "low", PM_U8, 1, (pm_expr *const[]){v}, pm_intervals(half),
                                    2, xy, pm_intervals(rows, cols), PM_REDUCE_MAX, pm_const(ctx, PM_U8, 7));
    pm_reduction_define(low, 1, pm_exprs(pm_cast(PM_I32, pm_call(I, x, y))), pm_call(I, x, y));
    pm_func *rowsum = pm_reduction_new(ctx, "rowsum", PM_F32, 1, (pm_expr *const[]){v}, pm_intervals(rows),
                                       2, xy, pm_intervals(rows, cols), PM_REDUCE_SUM, pm_float(ctx, 0.5));
    pm_reduction_define(rowsum, 1, pm_exprs(x), pm_cast(PM_F32, pm_call(I, x, y)));
    pm_pipeline *p = finish(ctx, "reductions", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 3,
                            (pm_func *const[]){hist, low, rowsum});
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {40, 70}};
    for (int s = 0; p && s < 3; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 1e-3);
        CHECK_SAME(p, params, 16, 2, 1e-3);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* A time-iterated stencil: f(t, x) reads f(t-1, ...), so t runs in order and only x is
 * parallel and vectorized. */
static void test_time_iterated(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *T = pm_param(ctx, PM_I32, "T"), *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_F32, N);
    pm_expr *t = pm_var(ctx, "t"), *x = pm_var(ctx, "x");
    pm_interval *steps = pm_interval_new(pm_int(ctx, 0), T, 1);
    pm_interval *cells = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *f = pm_func_new(ctx, "heat", PM_F32, 2, (pm_expr *const[]){t, x}, pm_intervals(steps, cells));
    pm_expr *inside = pm_and(pm_gt(x, pm_int(ctx, 0)), pm_lt(x, pm_addi(N, -1)));
    pm_expr *later = pm_gt(t, pm_int(ctx, 0));
    pm_expr *tm1 = pm_addi(t, -1);
    pm_expr *step = pm_mulf(pm_add(pm_add(pm_call(f, tm1, pm_addi(x, -1)), pm_call(f, tm1, x)),
                                   pm_call(f, tm1, pm_addi(x, 1))), 1.0 / 3);
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_and(later, inside), step),
              pm_case_new(pm_and(later, pm_not(inside)), pm_call(f, tm1, x)));
    pm_pipeline *p = finish(ctx, "heat", 2, pm_exprs(T, N), 1, (pm_func *const[]){I}, 1,
                            (pm_func *const[]){f});
    static const int64_t sizes[][2] = {{0, 1}, {1, 2}, {5, 33}, {20, 100}};
    for (int s = 0; p && s < 4; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 1e-5);
        CHECK_SAME(p, params, 16, 2, 1e-5);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* A scan along the innermost dimension: rows are parallel, columns are not, and not
 * vectorized; with one row isl drops the row loop, and the column loop below the
 * parallel mark must still run in order. */
static void test_scan(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_I32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *f = pm_func_new(ctx, "scan", PM_I32, 2, (pm_expr *const[]){x, y}, pm_intervals(rows, cols));
    pm_define(f, pm_case_new(pm_eq(y, pm_int(ctx, 0)), pm_call(I, x, y)),
              pm_case_new(pm_gt(y, pm_int(ctx, 0)), pm_add(pm_call(f, x, pm_addi(y, -1)), pm_call(I, x, y))));
    pm_pipeline *p = finish(ctx, "scan", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 1,
                            (pm_func *const[]){f});
    static const int64_t sizes[][2] = {{1, 1}, {1, 5000}, {3, 77}, {64, 300}};
    for (int s = 0; p && s < 4; s++) {
        pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
        CHECK_SAME(p, params, 1, 1, 0);
        CHECK_SAME(p, params, 16, 2, 0);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* ---- regressions found by the fuzzer ------------------------------------------------ */

/* A stage whose domain is empty at every size (x in [2, 0]) between two others: the
 * schedule used to drop every stage before it (fuzz, an early seed 18). */
static void test_empty_stage(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R");
    pm_expr *x = pm_var(ctx, "x");
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_func *fa = pm_func_new(ctx, "fa", PM_I32, 1, pm_exprs(x), pm_intervals(all));
    pm_func_define_expr(fa, pm_addi(x, 1));
    pm_func *fb = pm_func_new(ctx, "fb", PM_I32, 1, pm_exprs(x),
                              pm_intervals(pm_interval_new(pm_int(ctx, 2), pm_int(ctx, 0), 1)));
    pm_func_define_expr(fb, pm_addi(x, 2));
    pm_func *fc = pm_func_new(ctx, "fc", PM_I32, 1, pm_exprs(x), pm_intervals(all));
    pm_func_define_expr(fc, pm_add(pm_call(fa, x), pm_int(ctx, 3)));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "empty_stage", 1, &R, 0, NULL, 3,
                                 (pm_func *const[]){fa, fb, fc}, &p), PM_OK);
    for (int s = 1; p && s < 40; s += 13) {
        pm_value params[1] = {PM_I(s)};
        CHECK_SAME(p, params, 1, 1, 0);
        CHECK_SAME(p, params, 16, 2, 0);
    }
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

/* One kernel (W=16, 2 threads) run from 4 threads at once, each with its own buffers;
 * the scratch pool grows a set per concurrent run. */
typedef struct concurrent_job {
    pm_kernel *k;
    const pm_value *params;
    pm_buffer *in;
    pm_buffer out;
    pm_status result;
} concurrent_job;

static void *concurrent_run(void *arg)
{
    concurrent_job *j = arg;
    pm_error err;
    for (int i = 0; i < 5 && j->result == PM_OK; i++)
        j->result = pm_kernel_run(j->k, j->params, j->in, &j->out, &err);
    return NULL;
}

static void test_concurrent(void)
{
    pm_ctx *ctx = pm_ctx_new();
    const pm_sample_app *app = &pm_sample_unsharp_mask;
    pm_pipeline *p = app->build(ctx);
    pm_value params[4];
    app->params(37, 70, params);
    int nd;
    int64_t ext[PM_MAX_DIMS];
    pm_pipeline_buffer_shape(p, 0, 0, params, &nd, ext);
    pm_buffer in = check_buffer_new(PM_F32, nd, ext);
    app->fill_input(0, &in, params);
    pm_pipeline_buffer_shape(p, 1, 0, params, &nd, ext);
    pm_buffer want = check_buffer_new(PM_F32, nd, ext);
    CHECK_STATUS(pm_interpret(p, params, &in, &want), PM_OK);
    pm_kernel *k = compile_with(p, NULL, 16, 2);
    if (k) {
        concurrent_job jobs[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = (concurrent_job){k, params, &in, check_buffer_new(PM_F32, nd, ext), PM_OK};
            pthread_create(&th[i], NULL, concurrent_run, &jobs[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK(jobs[i].result == PM_OK);
            CHECK(check_buffer_maxdiff(&want, &jobs[i].out) <= app->tolerance);
            check_buffer_free(&jobs[i].out);
        }
        CHECK(pm_scratch_pool_nsets(k->pool) >= 1);
        pm_kernel_free(k);
    }
    check_buffer_free(&want);
    check_buffer_free(&in);
    pm_ctx_free(ctx);
}

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

static void test_samples_sizes(void)
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

/* The pipeline `build` makes in ctx, or NULL (a failed check; ctx freed). */
static pm_pipeline *built(pm_ctx *ctx, const char *name, pipeline_builder build)
{
    pm_pipeline *p = build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
    }
    return p;
}

/* Runs a one-parameter-pair (R, C) pipeline at many sizes, 1 and 2 threads. */
static void test_builder(const char *name, pipeline_builder build, double tolerance)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = built(ctx, name, build);
    if (!p)
        return;
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

static pm_pipeline *finish_rc(pm_ctx *ctx, const char *name, pm_expr *R, pm_expr *C, int nin,
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
    return finish_rc(ctx, "wrap", R, C, 2, (pm_func *const[]){a, b}, 2,
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
    return finish_rc(ctx, "float_int", R, C, 1, (pm_func *const[]){f}, 2,
                  (pm_func *const[]){u8, mixed});
}

/* ---- float -> integer casts at the edges of every integer type ------------------------- */

static const pm_type cast_targets[7] = {PM_I8, PM_U8, PM_I16, PM_U16, PM_I32, PM_U32, PM_I64};

/* One input of type `from`, seven outputs: the input cast to each integer type. */
static pm_pipeline *build_casts(pm_ctx *ctx, pm_type from)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *in = pm_image(ctx, "v", from, R, C);
    pm_func *out[7];
    for (int t = 0; t < 7; t++) {
        char name[16];
        snprintf(name, sizeof name, "to%d", t);
        out[t] = pm_func_new(ctx, name, cast_targets[t], 2, (pm_expr *const[]){x, y},
                             pm_intervals(row, col));
        pm_func_define_expr(out[t], pm_cast(cast_targets[t], pm_call(in, x, y)));
    }
    return finish_rc(ctx, from == PM_F32 ? "casts_f32" : "casts_f64", R, C, 1,
                     (pm_func *const[]){in}, 7, out);
}

/* The rule, written out: NaN -> 0; else truncate toward zero and saturate. */
static int64_t cast_expected(pm_type t, double v)
{
    if (isnan(v))
        return 0;
    double lo, hi; /* hi: one past the largest value */
    switch (t) {
    case PM_I8: lo = -128; hi = 128; break;
    case PM_U8: lo = 0; hi = 256; break;
    case PM_I16: lo = -32768; hi = 32768; break;
    case PM_U16: lo = 0; hi = 65536; break;
    case PM_I32: lo = -2147483648.0; hi = 2147483648.0; break;
    case PM_U32: lo = 0; hi = 4294967296.0; break;
    default: lo = -0x1p63; hi = 0x1p63; break;
    }
    if (v >= hi)
        return t == PM_I64 ? INT64_MAX : (int64_t)hi - 1;
    if (v <= lo)
        return t == PM_I64 ? INT64_MIN : (int64_t)lo;
    return (int64_t)trunc(v);
}

/* Every edge of every target, in vector lanes and in scalar tails: NaN, infinities,
 * each type's ends and the floats around them (2^31 - 128 is the largest f32 below
 * 2^31), halves on both sides of zero. Compiled, interpreted and the written-out rule
 * agree exactly. */
static void test_float_casts(void)
{
    static const double edges[] = {
        NAN, INFINITY, -INFINITY, 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 127.9, 128.0,
        -128.9, -129.0, 255.5, 256.0, 32767.5, 32768.0, -32768.9, -32769.0, 65535.9, 65536.0,
        2147483520.0, 2147483647.0, 2147483648.0, -2147483648.0, -2147483904.0, 4294967040.0,
        4294967295.5, 4294967296.0, 0x1p62, 0x1p63, -0x1p63, -0x1p64, 1e30, -1e30, 3e38,
        -3.4e38, 1e300, -1e300, 1234.75, -98765.25};
    const int nedges = (int)(sizeof edges / sizeof edges[0]);
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {2, 37}, {5, 64}};
    for (int f = 0; f < 2; f++) {
        pm_type from = f ? PM_F64 : PM_F32;
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = build_casts(ctx, from);
        for (int w = 0; p && w < 2; w++) {
            pm_kernel *k = compile_with(p, NULL, w ? 16 : 1, w ? 2 : 1);
            for (size_t s = 0; k && s < sizeof sizes / sizeof sizes[0]; s++) {
                pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
                int64_t ext[2] = {sizes[s][0], sizes[s][1]};
                pm_buffer in = check_buffer_new(from, 2, ext), want[7], got[7];
                int64_t n = ext[0] * ext[1];
                for (int64_t i = 0; i < n; i++) {
                    double v = edges[(i * 7 + (int64_t)s) % nedges];
                    if (from == PM_F32)
                        ((float *)in.data)[i] = (float)v;
                    else
                        ((double *)in.data)[i] = v;
                }
                for (int t = 0; t < 7; t++) {
                    want[t] = check_buffer_new(cast_targets[t], 2, ext);
                    got[t] = check_buffer_new(cast_targets[t], 2, ext);
                }
                pm_error err;
                if (CHECK_STATUS(pm_interpret(p, params, &in, want), PM_OK) &&
                    CHECK_STATUS(pm_kernel_run(k, params, &in, got, &err), PM_OK)) {
                    int bad = 0;
                    for (int t = 0; t < 7; t++)
                        for (int64_t i = 0; i < n && bad < 4; i++) {
                            double v = from == PM_F32 ? ((float *)in.data)[i] : ((double *)in.data)[i];
                            int64_t e = cast_expected(cast_targets[t], v);
                            int64_t gi = check_int_element(&got[t], i), wi = check_int_element(&want[t], i);
                            if (!CHECK(gi == e && wi == e)) {
                                bad++;
                                fprintf(stderr, "  cast %s %.17g -> %s: compiled %lld, interpreted "
                                        "%lld, expected %lld (W=%d)\n", f ? "f64" : "f32", v,
                                        pm_type_name(cast_targets[t]), (long long)gi,
                                        (long long)wi, (long long)e, w ? 16 : 1);
                            }
                        }
                }
                check_buffer_free(&in);
                for (int t = 0; t < 7; t++) {
                    check_buffer_free(&want[t]);
                    check_buffer_free(&got[t]);
                }
            }
            pm_kernel_free(k);
        }
        pm_ctx_free(ctx);
    }
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
    return finish_rc(ctx, "sampling", R, C, 1, (pm_func *const[]){img}, 2,
                  (pm_func *const[]){up, down});
}

/* Cases that split the innermost dimension by residue (poly.c merges them into one
 * statement where every read stays in bounds): an even/odd up-sampling, three residues
 * mod 3 reading it, and an even/odd pair whose odd read would leave the image on the
 * union's last even point, so that point keeps its own case's statement. */
static pm_pipeline *build_parity(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *img = pm_image(ctx, "img", PM_F32, R, C);
    pm_expr *const xy[] = {x, y};
    pm_interval *col2 = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(C, 2), -1), 1);
    pm_expr *even = pm_eq(pm_modi(y, 2), pm_int(ctx, 0)), *odd = pm_eq(pm_modi(y, 2), pm_int(ctx, 1));
    pm_func *up = pm_func_new(ctx, "up", PM_F32, 2, xy, pm_intervals(row, col2));
    pm_define(up, pm_case_new(even, pm_mulf(pm_call(img, x, pm_divi(y, 2)), 2)),
              pm_case_new(odd, pm_addf(pm_call(img, x, pm_divi(y, 2)), -1)));
    pm_func *thirds = pm_func_new(ctx, "thirds", PM_F32, 2, xy, pm_intervals(row, col));
    pm_define(thirds,
              pm_case_new(pm_eq(pm_modi(y, 3), pm_int(ctx, 0)), pm_call(up, x, pm_muli(y, 2))),
              pm_case_new(pm_eq(pm_modi(y, 3), pm_int(ctx, 1)),
                          pm_mulf(pm_call(up, x, pm_addi(pm_muli(y, 2), 1)), 3)),
              pm_case_new(pm_eq(pm_modi(y, 3), pm_int(ctx, 2)), pm_float(ctx, 7)));
    pm_func *edge = pm_func_new(ctx, "edge", PM_F32, 2, xy, pm_intervals(row, col2));
    pm_expr *last = pm_addi(pm_muli(C, 2), -1);
    pm_define(edge, pm_case_new(even, pm_call(img, x, pm_divi(y, 2))),
              pm_case_new(pm_and(odd, pm_lt(y, last)), pm_call(img, x, pm_addi(pm_divi(y, 2), 1))),
              pm_case_new(pm_eq(y, last), pm_float(ctx, 0)));
    return finish_rc(ctx, "parity", R, C, 1, (pm_func *const[]){img}, 2,
                     (pm_func *const[]){thirds, edge});
}

/* parity's merges as the AST shows them: up and thirds one statement each, edge one
 * statement but for its last even point. */
static void test_parity_merge(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_parity(ctx);
    pm_compile_options o = pm_compile_options_default();
    o.dump = "ast";
    pm_error err;
    pm_value est[2] = {PM_I(64), PM_I(64)};
    pm_kernel *k = p ? pm_jit_compile(jit, p, est, &o, &err) : NULL;
    const char *ast = k ? pm_kernel_dump(k, "ast") : NULL;
    if (!CHECK(ast && strstr(ast, "up_c0_1(") && strstr(ast, "thirds_c0_2(") &&
               strstr(ast, "edge_c0_1(") && strstr(ast, "edge_c0(c0, 2 * C - 2)") &&
               !strstr(ast, "edge_c1(")))
        fprintf(stderr, "  parity: merged statements not as expected:\n%s\n", ast ? ast : "(none)");
    pm_kernel_free(k);
    pm_ctx_free(ctx);
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
    return finish_rc(ctx, "histogram", R, C, 1, (pm_func *const[]){img}, 3,
                  (pm_func *const[]){lookup, hist, maxv});
}

/* Reads k elements apart along the vector's dimension (access.c: strided loads for
 * 2 <= k <= 8, a gather beyond): f32 and u8 rows read at k = 2..9 from offsets 0..2,
 * and a read in one case of an inlined function that would leave the image on the last
 * columns of small pictures (evaluated at every lane, it takes the guarded load: loads
 * where every lane's element is inside, a gather of clamped indices where not). */
static pm_pipeline *build_strides(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_expr *wide = pm_addi(pm_muli(C, 9), 8);
    pm_func *img = pm_image(ctx, "img", PM_F32, R, wide);
    pm_func *bytes = pm_image(ctx, "bytes", PM_U8, R, wide);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {row, col};
    pm_expr *fsum = NULL, *isum = NULL;
    for (int k = 2; k <= 9; k++) {
        pm_expr *at = pm_addi(pm_muli(y, k), k % 3);
        pm_expr *f = pm_mulf(pm_call(img, x, at), (double)k);
        pm_expr *i = pm_mul(pm_cast(PM_I32, pm_call(bytes, x, at)), pm_int(ctx, k));
        fsum = fsum ? pm_add(fsum, f) : f;
        isum = isum ? pm_add(isum, i) : i;
    }
    pm_func *fstride = pm_func_new(ctx, "fstride", PM_F32, 2, xy, dom);
    pm_func_define_expr(fstride, fsum);
    pm_func *istride = pm_func_new(ctx, "istride", PM_I32, 2, xy, dom);
    pm_func_define_expr(istride, isum);
    /* 8y + 30 passes the row's end (9C + 7) at the last columns when C < 15 */
    pm_func *edge = pm_func_new(ctx, "edge", PM_F32, 2, xy, dom);
    pm_expr *inside = pm_lt(pm_addi(pm_muli(y, 8), 30), wide);
    pm_define(edge, pm_case_new(inside, pm_call(img, x, pm_addi(pm_muli(y, 8), 30))),
              pm_case_new(pm_not(inside), pm_float(ctx, -1)));
    pm_func *edged = pm_func_new(ctx, "edged", PM_F32, 2, xy, dom);
    pm_func_define_expr(edged, pm_addf(pm_call(edge, x, y), 1));
    return finish_rc(ctx, "strides", R, C, 2, (pm_func *const[]){img, bytes}, 3,
                     (pm_func *const[]){fstride, istride, edged});
}

/* The pipeline `build` makes, compiled at vector widths 16, 8 and 4 and 1 and 2 threads
 * for 64 x 64, against the interpreter at sizes from 1 x 1 to wider than two vectors of
 * every width (float results within 1e-4). */
static void test_widths(const char *name, pipeline_builder build, unsigned seed)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = built(ctx, name, build);
    if (!p)
        return;
    static const int64_t sizes[][2] = {{1, 1}, {1, 2}, {2, 3}, {3, 14}, {5, 16}, {4, 33}, {19, 70}};
    static const int widths[] = {16, 8, 4};
    pm_value est[2] = {PM_I(64), PM_I(64)};
    for (int w = 0; w < 3; w++)
        for (int threads = 1; threads <= 2; threads++) {
            pm_kernel *k = compile_with(p, est, widths[w], threads);
            for (size_t s = 0; k && s < sizeof sizes / sizeof sizes[0]; s++) {
                pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
                char label[128];
                snprintf(label, sizeof label, "%s %lldx%lld W=%d threads=%d", name,
                         (long long)sizes[s][0], (long long)sizes[s][1], widths[w], threads);
                double d = differential(p, k, params, seed + (unsigned)s, NULL, label);
                if (!CHECK(d <= 1e-4))
                    fprintf(stderr, "  %s: max diff %g\n", label, d);
            }
            pm_kernel_free(k);
        }
    pm_ctx_free(ctx);
}

/* The strided reads (strides above the width gather). */
static void test_strides(void) { test_widths("strides", build_strides, 5); }

/* Reads of a function of 6 levels at data-dependent levels (access.c: from a tile
 * scratchpad, every level's row loaded and each lane's picked): contiguous and
 * up-sampled (y/2) rows. */
static pm_pipeline *build_levels(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *img = pm_image(ctx, "img", PM_F32, R, C);
    pm_expr *k = pm_var(ctx, "k");
    pm_func *lev = pm_func_new(ctx, "lev", PM_F32, 3, pm_exprs(k, x, y),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 5), 1), row, col));
    pm_func_define_expr(lev, pm_add(pm_mul(pm_call(img, x, y), pm_cast(PM_F32, pm_addi(k, 1))),
                                    pm_cast(PM_F32, pm_muli(k, 3))));
    pm_expr *at = pm_clamp(pm_cast(PM_I32, pm_mulf(pm_call(img, x, y), 6)), pm_int(ctx, 0), pm_int(ctx, 5));
    pm_expr *const xy[] = {x, y};
    pm_func *half = pm_func_new(ctx, "half", PM_F32, 3, pm_exprs(k, x, y),
                                pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 5), 1), row,
                                             pm_interval_new(pm_int(ctx, 0), pm_divi(pm_addi(C, -1), 2), 1)));
    pm_func_define_expr(half, pm_sub(pm_call(img, x, pm_muli(y, 2)), pm_cast(PM_F32, k)));
    pm_expr *up = pm_min(pm_addi(at, 1), pm_int(ctx, 5));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy, pm_intervals(row, col));
    pm_func_define_expr(out, pm_add(pm_add(pm_call(lev, at, x, y), pm_mulf(pm_call(half, at, x, pm_divi(y, 2)), 0.5)),
                                    pm_mulf(pm_call(lev, up, x, y), 0.25)));
    return finish_rc(ctx, "levels", R, C, 1, (pm_func *const[]){img}, 1, (pm_func *const[]){out});
}

static void test_levels(void) { test_widths("levels", build_levels, 9); }

/* A histogram of 12 bins per cell over a 4 x 4 window, cells along the vector's
 * dimension (vector.c's private block: each lane's row of bins in registers, stored by
 * rows after the window), every bin used. */
static pm_pipeline *build_bin_rows(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *img = pm_image(ctx, "img", PM_U8, pm_muli(R, 4), pm_muli(C, 4));
    pm_expr *gx = pm_var(ctx, "gx"), *gy = pm_var(ctx, "gy"), *z = pm_var(ctx, "z");
    pm_expr *rx = pm_var(ctx, "rx"), *ry = pm_var(ctx, "ry"), *ri = pm_var(ctx, "ri"),
            *rj = pm_var(ctx, "rj");
    pm_interval *cx = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cy = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_interval *win = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *hist = pm_reduction_new(
        ctx, "hist", PM_I32, 3, pm_exprs(gx, gy, z),
        pm_intervals(cx, cy, pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 11), 1)), 4,
        pm_exprs(rx, ry, ri, rj), pm_intervals(cx, cy, win, win), PM_REDUCE_SUM, NULL);
    pm_expr *p = pm_cast(PM_I32, pm_call(img, pm_add(pm_muli(rx, 4), ri), pm_add(pm_muli(ry, 4), rj)));
    pm_reduction_define(hist, 3, pm_exprs(rx, ry, pm_modi(p, 12)), pm_addi(p, 1));
    return finish_rc(ctx, "bin_rows", R, C, 1, (pm_func *const[]){img}, 1, (pm_func *const[]){hist});
}
static void test_bin_rows(void) { test_builder("bin_rows", build_bin_rows, 0); }

/* Lookup tables flat outside a range of their domain (frontend/flat.h), read at
 * data-dependent indices in every zone and outside the domain (access.c's small tables:
 * the entries in between permuted by lane): u8 from a float curve, i16 from integer
 * arithmetic, f32 from a decreasing index, u8 whose loads end at the domain's end (the
 * window moved down), and one table not flat (gathered). flat_tables_funcs keeps the
 * tables for test_flat_ranges. */
static pm_func *flat_tables_funcs[5];
static pm_pipeline *build_flat_tables(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *img = pm_image(ctx, "img", PM_I16, R, C);
    pm_expr *v = pm_var(ctx, "v");
#define TABLE(name, type, lo, hi) \
    pm_func_new(ctx, name, type, 1, pm_exprs(v), \
                pm_intervals(pm_interval_new(pm_int(ctx, lo), pm_int(ctx, hi), 1)))
    pm_func *t8 = TABLE("t8", PM_U8, -300, 900);
    pm_func_define_expr(t8, pm_cast(PM_U8, pm_clamp(pm_addf(pm_div(pm_cast(PM_F32, v), pm_float(ctx, 3)), 10),
                                                   pm_float(ctx, 0), pm_float(ctx, 250))));
    pm_func *t16 = TABLE("t16", PM_I16, -100, 200);
    pm_func_define_expr(t16, pm_cast(PM_I16, pm_clamp(pm_addi(pm_muli(v, 3), -50), pm_int(ctx, -80),
                                                      pm_int(ctx, 400))));
    pm_func *t32 = TABLE("t32", PM_F32, 0, 399);
    pm_func_define_expr(t32, pm_mulf(pm_cast(PM_F32, pm_clamp(pm_sub(pm_int(ctx, 200), v), pm_int(ctx, 20),
                                                              pm_int(ctx, 150))), 0.5));
    pm_func *tend = TABLE("tend", PM_U8, 0, 300);
    pm_func_define_expr(tend, pm_cast(PM_U8, pm_max(pm_min(pm_addi(v, -100), pm_int(ctx, 250)),
                                                    pm_int(ctx, 0))));
    pm_func *tn = TABLE("tn", PM_I32, 0, 96);
    pm_func_define_expr(tn, pm_modi(pm_mul(v, v), 97));
#undef TABLE
    flat_tables_funcs[0] = t8, flat_tables_funcs[1] = t16, flat_tables_funcs[2] = t32;
    flat_tables_funcs[3] = tend, flat_tables_funcs[4] = tn;
    pm_expr *at = pm_call(img, x, y);
    pm_expr *sum = pm_add(pm_cast(PM_F32, pm_call(t8, at)),
                          pm_cast(PM_F32, pm_call(t16, pm_addi(pm_modi(at, 400), -150))));
    sum = pm_add(sum, pm_call(t32, pm_addi(pm_modi(at, 450), -20)));
    sum = pm_add(sum, pm_cast(PM_F32, pm_call(tend, pm_modi(at, 400))));
    sum = pm_add(sum, pm_cast(PM_F32, pm_call(tn, pm_modi(at, 130))));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(row, col));
    pm_func_define_expr(out, sum);
    return finish_rc(ctx, "flat_tables", R, C, 1, (pm_func *const[]){img}, 1, (pm_func *const[]){out});
}

/* The ranges the tables above are flat outside, and definitions that must not pass:
 * one too large as a tree, the variable outside a clamp, a parameter in the clamped
 * expression, an integer that wraps on the domain, a non-monotone clamped expression. */
static void test_flat_ranges(void)
{
    pm_ctx *ctx = pm_ctx_new();
    if (!built(ctx, "flat_tables", build_flat_tables))
        return;
    static const int64_t want[4][2] = {{-30, 720}, {-10, 150}, {50, 180}, {100, 300}};
    for (int i = 0; i < 5; i++) {
        int64_t lo = 0, hi = 0;
        bool flat = pm_func_flat_range(flat_tables_funcs[i], &lo, &hi);
        if (!CHECK(flat == (i < 4)) || (i < 4 && !CHECK(lo == want[i][0] && hi == want[i][1])))
            fprintf(stderr, "  table %d: flat %d, %lld .. %lld\n", i, flat, (long long)lo, (long long)hi);
    }
    pm_expr *v = pm_var(ctx, "v"), *P = pm_param(ctx, PM_I32, "P");
    pm_expr *bad[4] = {
        pm_add(pm_clamp(v, pm_int(ctx, 0), pm_int(ctx, 10)), v),
        pm_clamp(pm_mul(v, P), pm_int(ctx, 0), pm_int(ctx, 10)),
        pm_cast(PM_I32, pm_clamp(pm_cast(PM_I8, v), pm_const(ctx, PM_I8, 0), pm_const(ctx, PM_I8, 10))),
        pm_clamp(pm_mul(v, v), pm_int(ctx, 0), pm_int(ctx, 10)),
    };
    /* a clamp of a shared minimum 40 levels deep: 2^40 nodes as a tree, refused at once */
    pm_expr *deep = v;
    for (int k = 0; k < 40; k++)
        deep = pm_min(deep, deep);
    pm_func *fd = pm_func_new(ctx, "deep", PM_I32, 1, pm_exprs(v),
                              pm_intervals(pm_interval_new(pm_int(ctx, -5), pm_int(ctx, 300), 1)));
    pm_func_define_expr(fd, pm_clamp(deep, pm_int(ctx, 0), pm_int(ctx, 10)));
    int64_t dlo, dhi;
    CHECK(!pm_func_flat_range(fd, &dlo, &dhi));
    for (int i = 0; i < 4; i++) {
        pm_func *f = pm_func_new(ctx, "bad", PM_I32, 1, pm_exprs(v),
                                 pm_intervals(pm_interval_new(pm_int(ctx, -5), pm_int(ctx, 300), 1)));
        pm_func_define_expr(f, bad[i]);
        int64_t lo, hi;
        if (!CHECK(!pm_func_flat_range(f, &lo, &hi)))
            fprintf(stderr, "  bad definition %d passed: %lld .. %lld\n", i, (long long)lo, (long long)hi);
    }
    pm_ctx_free(ctx);
}

static void test_flat_tables(void) { test_widths("flat_tables", build_flat_tables, 13); }

/* A definition whose nodes are shared: each level reads the one below three times (a
 * test on it and both sides of a select), so written out as a tree it has 3^7 nodes.
 * `deep` is point-wise (inlined into `out`), and `out`'s cases are decided per row (a
 * branch per case, each path with values of its own). */
#define SHARED_LEVELS 7
static pm_pipeline *build_shared_nodes(pm_ctx *ctx)
{
    DOMAIN2(ctx, R, C, x, y, row, col);
    pm_func *in = pm_image(ctx, "in", PM_F32, R, C);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {row, col};
    pm_expr *v = pm_call(in, x, y);
    for (int k = 0; k < SHARED_LEVELS; k++)
        v = pm_select(pm_gt(v, pm_float(ctx, 0.5)), pm_addf(v, -0.25), pm_addf(v, 0.375));
    pm_func *deep = pm_func_new(ctx, "deep", PM_F32, 2, xy, dom);
    pm_func_define_expr(deep, v);
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy, dom);
    /* out's cases are the rows' residues modulo 4, taken by a branch per row; x % 4 is
     * one node, in the second case's value (computed on its path) and the later cases'
     * conditions (tested after that path, where its values are not available) */
    pm_expr *r = pm_modi(x, 4), *up = pm_addi(x, -1);
    pm_define(out, pm_case_new(pm_eq(r, pm_int(ctx, 0)), pm_add(pm_call(deep, x, y), pm_call(in, x, y))),
              pm_case_new(pm_eq(r, pm_int(ctx, 1)),
                          pm_add(pm_sub(pm_call(deep, up, y), pm_call(deep, x, y)), pm_cast(PM_F32, r))),
              pm_case_new(pm_eq(r, pm_int(ctx, 2)), pm_mulf(pm_call(deep, up, y), 0.5)),
              pm_case_new(pm_eq(r, pm_int(ctx, 3)), pm_sub(pm_call(deep, x, y), pm_call(deep, up, y))));
    return finish_rc(ctx, "shared_nodes", R, C, 1, (pm_func *const[]){in}, 1,
                     (pm_func *const[]){out});
}

/* The emitter computes a shared node once per point: the IR it builds stays far below
 * the written-out tree's size (about 2 instructions per tree node), and the values equal
 * the interpreter's at 1 and 2 threads. */
static void test_shared_nodes(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_shared_nodes(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "  shared_nodes: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {5, 17}, {17, 40}};
    pm_value est[2] = {PM_I(64), PM_I(64)};
    for (int threads = 1; threads <= 2; threads++) {
        pm_kernel *k = compile(p, est, threads);
        if (!k)
            continue;
        pm_compile_stats st;
        if (CHECK(pm_kernel_compile_stats(k, &st, sizeof st) == PM_OK) &&
            !CHECK(st.ir_instructions_before < 1500))
            fprintf(stderr, "  shared_nodes: %lld IR instructions built\n",
                    (long long)st.ir_instructions_before);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            pm_value params[2] = {PM_I(sizes[s][0]), PM_I(sizes[s][1])};
            char label[128];
            snprintf(label, sizeof label, "shared_nodes %lldx%lld threads=%d",
                     (long long)sizes[s][0], (long long)sizes[s][1], threads);
            double d = differential(p, k, params, 5 + (unsigned)s, NULL, label);
            if (!CHECK(d <= 0))
                fprintf(stderr, "  %s: max diff %g\n", label, d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
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
    return finish_rc(ctx, "iterated", R, C, 1, (pm_func *const[]){img}, 1, (pm_func *const[]){f});
}

static void test_wrap(void) { test_builder("wrap", build_wrap, 0); }
static void test_float_int(void) { test_builder("float_int", build_float_int, 1e-3); }
static void test_sampling2(void) { test_builder("sampling", build_sampling, 1e-5); }
static void test_histogram(void) { test_builder("histogram", build_histogram, 0); }
static void test_parity(void) { test_builder("parity", build_parity, 0); }
static void test_iterated(void) { test_builder("iterated", build_iterated, 1e-5); }

typedef struct harris_job {
    pm_kernel *k;
    pm_value params[2];
    pm_buffer in, out;
    pm_status status;
} harris_job;

static void *harris_job_run(void *arg)
{
    harris_job *job = arg;
    pm_error err;
    for (int i = 0; i < 5 && job->status == PM_OK; i++)
        job->status = pm_kernel_run(job->k, job->params, &job->in, &job->out, &err);
    return NULL;
}

static void test_concurrent_harris(void)
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
    harris_job jobs[4];
    pthread_t threads[4];
    for (int t = 0; t < 4; t++) {
        int64_t rows = 60 + 37 * t, cols = 90 + 11 * t; /* different sizes share scratch pools */
        harris_job *j = &jobs[t];
        pm_sample_harris.params(rows, cols, j->params);
        j->k = k;
        j->in = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
        j->out = check_buffer_new(PM_F32, 2, (int64_t[]){rows, cols});
        pm_sample_harris.fill_input(0, &j->in, j->params);
        j->status = PM_OK;
        pthread_create(&threads[t], NULL, harris_job_run, j);
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        harris_job *j = &jobs[t];
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

/* The blur at sizes around vectors and tiles, 1-row outputs, and a size far from the
 * estimate; the kernel outlives the context it was compiled from. */
static void test_blur_sizes(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, NULL, &err);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  compile: %s\n", err.message);
        pm_ctx_free(ctx);
        return;
    }
    /* The kernel does not keep the pipeline: free the context first. */
    pm_ctx_free(ctx);
    ctx = pm_ctx_new();
    p = check_blur_pipeline(ctx);
    static const int64_t sizes[][2] = {{3, 1}, {3, 17}, {5, 33}, {64, 64}, {130, 7}, {257, 300}};
    for (int s = 0; s < 6; s++) {
        check_blur_case c;
        check_blur_case_new(&c, p, sizes[s][0], sizes[s][1], 7u + (unsigned)s);
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK);
        double d = check_buffer_maxdiff(&c.want, &c.got);
        if (!CHECK(d <= 1e-6))
            fprintf(stderr, "  blur %lldx%lld: max diff %g (%s)\n", (long long)sizes[s][0],
                    (long long)sizes[s][1], d, err.message);
        check_blur_case_free(&c);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- threads and vector widths ----------------------------------------------------- */

static void test_thread_counts(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    check_blur_case c;
    check_blur_case_new(&c, p, 101, 77, 11u);
    static const int threads[] = {1, 2, 3, 8};
    static const int widths[] = {0, 1, 4, 16};
    for (int t = 0; t < 4; t++) {
        pm_compile_options co = pm_compile_options_default();
        co.threads = threads[t];
        co.vector_width = widths[t];
        co.opt_level = t % 4;
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  threads %d: %s\n", threads[t], err.message);
            continue;
        }
        memset(c.got.data, 0, 99 * 77 * sizeof(float));
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK);
        CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
        pm_kernel_free(k);
    }
    check_blur_case_free(&c);
    pm_ctx_free(ctx);
}

/* Gathers take 32-bit offsets (codegen/llvm/access.c); a vector loop runs only when the
 * buffers it gathers from fit them, else its scalar code reads with 64-bit indices
 * (vector.c). An input whose second row starts 8 GiB after its first (virtual memory
 * only: two rows are touched) takes the scalar path; the same pixels packed densely the
 * vectors; both equal the interpreter, at vector widths 16 and 1. */
static void test_wide_gather(void)
{
    enum { C = 40 };
    const int64_t stride = ((int64_t)1 << 31) + 16; /* elements: offsets need 64 bits */
    size_t bytes = (size_t)(stride + C) * sizeof(float);
    float *far = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (far == MAP_FAILED) {
        fprintf(stderr, "  wide_gather: no 8 GiB of address space, skipped\n");
        return;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *img = pm_image(ctx, "img", PM_F32, pm_int(ctx, 2), N);
    pm_func *at = pm_image(ctx, "at", PM_I32, pm_int(ctx, 2), N);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, (pm_expr *const[]){x, y},
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 7), 1),
                                            pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    /* row (x + 1) mod 2 at a column from `at` (clamped): a gather across the 8 GiB */
    pm_expr *row = pm_modi(pm_addi(x, 1), 2);
    pm_expr *col = pm_clamp(pm_call(at, pm_modi(x, 2), y), pm_int(ctx, 0), pm_addi(N, -1));
    pm_func_define_expr(out, pm_call(img, row, col));
    pm_pipeline *p = finish(ctx, "wide_gather", 1, &N, 2, (pm_func *const[]){img, at}, 1, &out);
    float dense[2 * C], want[8 * C], got[8 * C];
    int32_t cols[2 * C];
    for (int i = 0; i < 2 * C; i++) {
        dense[i] = (float)i * 0.5f - 3;
        cols[i] = (i * 7 + 3) % (C + 5) - 2; /* a few out of range: clamped */
    }
    memcpy(far, dense, C * sizeof(float));
    memcpy(far + stride, dense + C, C * sizeof(float));
    const int64_t ext[2] = {2, C};
    pm_buffer in_dense[2] = {pm_buffer_dense(dense, PM_F32, 2, ext),
                             pm_buffer_dense(cols, PM_I32, 2, ext)};
    pm_buffer in_far[2] = {pm_buffer_dense(far, PM_F32, 2, ext), in_dense[1]};
    in_far[0].stride[0] = stride;
    in_far[0].stride[1] = 1;
    const int64_t out_ext[2] = {8, C};
    pm_buffer bw = pm_buffer_dense(want, PM_F32, 2, out_ext);
    pm_buffer bg = pm_buffer_dense(got, PM_F32, 2, out_ext);
    pm_value params[1] = {PM_I(C)};
    pm_error err;
    if (p && CHECK_STATUS(pm_interpret(p, params, in_dense, &bw), PM_OK)) {
        static const int widths[] = {16, 1};
        for (int w = 0; w < 2; w++) {
            pm_compile_options co = pm_compile_options_default();
            co.vector_width = widths[w];
            pm_kernel *k = pm_jit_compile(jit, p, params, &co, &err);
            if (!CHECK(k != NULL)) {
                fprintf(stderr, "  wide_gather: %s\n", err.message);
                continue;
            }
            for (int far_rows = 0; far_rows < 2; far_rows++) {
                memset(got, 0, sizeof got);
                CHECK_STATUS(pm_kernel_run(k, params, far_rows ? in_far : in_dense, &bg, &err), PM_OK);
                if (!CHECK(memcmp(got, want, sizeof got) == 0))
                    fprintf(stderr, "  wide_gather: width %d, %s rows differ\n", widths[w],
                            far_rows ? "8 GiB apart" : "dense");
            }
            pm_kernel_free(k);
        }
    }
    munmap(far, bytes);
    pm_ctx_free(ctx);
}

/* Gathers of 1- and 2-byte elements (a LUT): a table of N u8 (then u16) values read at
 * clamped indices from a second input, placed at each start offset 0..3 bytes from a
 * word boundary and ending on the last byte before an inaccessible page (so a read past
 * the table's end would fault, as a gather of the aligned 32-bit words around the
 * elements could), equals the interpreter at vector widths 16 and 1. */
static void test_narrow_gather(void)
{
    enum { N = 37, R = 8, C = 53 };
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!CHECK(mem != MAP_FAILED))
        return;
    CHECK(mprotect(mem + page, (size_t)page, PROT_NONE) == 0);
    static const pm_type types[] = {PM_U8, PM_U16};
    for (int t = 0; t < 2; t++) {
        pm_type ty = types[t];
        size_t esize = (size_t)pm_type_size(ty);
        pm_ctx *ctx = pm_ctx_new();
        pm_expr *Np = pm_param(ctx, PM_I32, "N");
        pm_func *lut = pm_image(ctx, "lut", ty, Np);
        pm_func *at = pm_image(ctx, "at", PM_I32, pm_int(ctx, R), pm_int(ctx, C));
        pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
        pm_func *out = pm_func_new(ctx, "out", ty, 2, (pm_expr *const[]){x, y},
                                   pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1),
                                                pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1)));
        pm_expr *idx = pm_clamp(pm_call(at, x, y), pm_int(ctx, 0), pm_addi(Np, -1));
        pm_func_define_expr(out, pm_call(lut, idx));
        pm_pipeline *p = finish(ctx, "narrow_gather", 1, &Np, 2, (pm_func *const[]){lut, at}, 1, &out);
        int32_t cols[R * C];
        for (int i = 0; i < R * C; i++)
            cols[i] = (i * 11 + 5) % (N + 6) - 3; /* every entry, and a few out of range */
        uint16_t want[R * C], got[R * C];
        const int64_t lut_ext[1] = {N}, at_ext[2] = {R, C};
        pm_value params[1] = {PM_I(N)};
        for (int shift = 0; p && shift < 4; shift++) {
            /* the table's last byte is the page's last accessible byte, minus shift */
            unsigned char *data = mem + page - N * esize - (size_t)shift;
            for (size_t i = 0; i < N * esize; i++)
                data[i] = (unsigned char)(i * 37 + 11 + shift);
            pm_buffer in[2] = {pm_buffer_dense(data, ty, 1, lut_ext),
                               pm_buffer_dense(cols, PM_I32, 2, at_ext)};
            pm_buffer bw = pm_buffer_dense(want, ty, 2, at_ext);
            pm_buffer bg = pm_buffer_dense(got, ty, 2, at_ext);
            pm_error err;
            if (!CHECK_STATUS(pm_interpret(p, params, in, &bw), PM_OK))
                continue;
            static const int widths[] = {16, 1};
            for (int w = 0; w < 2; w++) {
                pm_compile_options co = pm_compile_options_default();
                co.vector_width = widths[w];
                pm_kernel *k = pm_jit_compile(jit, p, params, &co, &err);
                if (!CHECK(k != NULL)) {
                    fprintf(stderr, "  narrow_gather: %s\n", err.message);
                    continue;
                }
                memset(got, 0xff, sizeof got);
                CHECK_STATUS(pm_kernel_run(k, params, in, &bg, &err), PM_OK);
                if (!CHECK(memcmp(got, want, R * C * esize) == 0))
                    fprintf(stderr, "  narrow_gather: %s table %d bytes off a word, width %d differs\n",
                            ty == PM_U8 ? "u8" : "u16", shift, widths[w]);
                pm_kernel_free(k);
            }
        }
        pm_ctx_free(ctx);
    }
    munmap(mem, (size_t)(2 * page));
}

/* ---- the samples -------------------------------------------------------------------- */

/* Apps that exercise the runtime's paths (scratch slots, reductions, several inputs and
 * outputs); test_samples_widths compares every app at many sizes and widths. */
static const char *const runtime_apps[] = {"unsharp_mask", "harris", "bilateral_grid",
                                           "camera_pipe", "pyramid_blend", "interpolate"};

static void test_samples_rerun(void)
{
    int n = (int)(sizeof runtime_apps / sizeof runtime_apps[0]);
    for (int a = 0; a < n; a++) {
        const pm_sample_app *app = pm_sample_find(runtime_apps[a]);
        if (!CHECK(app != NULL))
            continue;
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = app->build(ctx);
        if (!CHECK(p != NULL)) {
            pm_ctx_free(ctx);
            continue;
        }
        pm_value params[32];
        app->params(23, 41, params);

        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, params, NULL, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  %s: %s\n", app->name, err.message);
            pm_ctx_free(ctx);
            continue;
        }
        int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
        pm_buffer in[8], want[8], got[8];
        for (int i = 0; i < nin; i++) {
            int nd;
            int64_t ext[PM_MAX_DIMS];
            pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext);
            in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
            if (app->fill_input)
                app->fill_input(i, &in[i], params);
            else
                check_fill(&in[i], 5u + (unsigned)i, false);
        }
        for (int i = 0; i < nout; i++) {
            int nd;
            int64_t ext[PM_MAX_DIMS];
            pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext);
            pm_type t = pm_func_type(pm_pipeline_output(p, i));
            want[i] = check_buffer_new(t, nd, ext);
            got[i] = check_buffer_new(t, nd, ext);
        }
        CHECK_STATUS(pm_interpret(p, params, in, want), PM_OK);
        /* Twice: the second run reuses the scratch set of the first. */
        for (int r = 0; r < 2; r++) {
            CHECK_STATUS(pm_kernel_run(k, params, in, got, &err), PM_OK);
            for (int i = 0; i < nout; i++) {
                double d = check_buffer_maxdiff(&want[i], &got[i]);
                if (!CHECK(d <= app->tolerance))
                    fprintf(stderr, "  %s output %d: max diff %g\n", app->name, i, d);
            }
        }
        for (int i = 0; i < nin; i++)
            check_buffer_free(&in[i]);
        for (int i = 0; i < nout; i++) {
            check_buffer_free(&want[i]);
            check_buffer_free(&got[i]);
        }
        pm_kernel_free(k);
        pm_ctx_free(ctx);
    }
}

int main(void)
{
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return check_finish("compiled");
    }
    static const struct { const char *name; void (*fn)(void); } groups[] = {
        {"integers", test_integers}, {"cases", test_cases}, {"sampling", test_sampling},
        {"reductions", test_reductions}, {"time", test_time_iterated}, {"scan", test_scan},
        {"empty_stage", test_empty_stage}, {"concurrent", test_concurrent},
        {"samples", test_samples_widths}, {"sample_sizes", test_samples_sizes},
        {"samples_rerun", test_samples_rerun}, {"wrap", test_wrap},
        {"float_int", test_float_int}, {"sampling2", test_sampling2},
        {"histogram", test_histogram}, {"iterated", test_iterated},
        {"concurrent_harris", test_concurrent_harris}, {"blur", test_blur_sizes},
        {"threads", test_thread_counts}, {"wide_gather", test_wide_gather},
        {"narrow_gather", test_narrow_gather},
        {"float_casts", test_float_casts}, {"parity", test_parity},
        {"parity_merge", test_parity_merge}, {"shared_nodes", test_shared_nodes},
        {"strides", test_strides}, {"levels", test_levels}, {"bin_rows", test_bin_rows},
        {"flat_ranges", test_flat_ranges}, {"flat_tables", test_flat_tables}};
    const char *only = getenv("PM_TEST_ONLY");
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!only || strcmp(only, groups[i].name) == 0)
            groups[i].fn();
    kernel_cache_clear();
    pm_jit_free(jit);
    return check_finish("compiled");
}
