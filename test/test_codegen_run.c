/* test_codegen_run.c — compiled code gives the interpreter's answer.
 *
 * Each pipeline is compiled by pm_codegen, JIT-compiled with the runtime's engine
 * (runtime/jit_engine.h; pm_jit_compile will wrap the same steps) and run on random
 * inputs next to pm_interpret: sizes 1x1, smaller than a vector, odd, not divisible by
 * the vector width, large; vector widths 1 and 16; 1 and 2 threads. Output buffers start
 * with the same garbage on both sides, so points covered by no case must stay untouched.
 * Integers compare exactly, floats within the sample's tolerance. */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<llvm-c/Core.h>)
#define HAVE_LLVM_HEADERS 1
#endif
#endif

#ifndef HAVE_LLVM_HEADERS
int main(void)
{
    printf("codegen_run: skipped (LLVM headers not on the include path)\n");
    return 0;
}
#else
#include "codegen/codegen.h"
#include "runtime/jit_engine.h"
#include "runtime/rt.h"
#include "runtime/scratch.h"

#include <llvm-c/Orc.h>

typedef int32_t (*entry_fn)(const pm_value *, const pm_buffer *, pm_buffer *, pm_run_ctx *);

static pm_engine *engine;

typedef struct kernel {
    pm_engine_code *code;
    entry_fn fn;
    pm_scratch_pool *pool;
    int threads;
} kernel;

static bool kernel_compile(kernel *k, pm_pipeline *p, int width, int threads)
{
    memset(k, 0, sizeof *k);
    pm_error err = {0};
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(engine, 3, &err);
    if (!CHECK(tm != NULL))
        return false;
    LLVMOrcThreadSafeContextRef ts = LLVMOrcCreateNewThreadSafeContext();
    pm_codegen_options o = {.vector_width = width, .threads = threads, .tm = tm};
    if (getenv("PM_TEST_VERBOSE")) {
        o.dump_mask = PM_DUMP_BIT(PM_PHASE_DOMAINS) | PM_DUMP_BIT(PM_PHASE_AST);
        o.dump_to = stderr;
    }
    pm_codegen_result r;
    pm_status st = pm_codegen(p, NULL, &o, LLVMOrcThreadSafeContextGetContext(ts), &r, &err);
    bool ok = CHECK_STATUS(st, PM_OK);
    char name[64];
    if (ok) {
        pm_engine_unique_name(engine, "k", name, sizeof name);
        ok = CHECK_STATUS(pm_engine_prepare_module(r.module, tm, r.entry_name, name, &err), PM_OK) &&
             CHECK_STATUS(pm_engine_optimize(r.module, tm, 3, &err), PM_OK);
    }
    if (ok) {
        LLVMModuleRef m = r.module;
        r.module = NULL;
        ok = CHECK_STATUS(pm_engine_add_module(engine, m, ts, &k->code, &err), PM_OK);
    }
    void *addr = NULL;
    if (ok)
        ok = CHECK_STATUS(pm_engine_lookup(engine, name, &addr, &err), PM_OK);
    if (!ok)
        fprintf(stderr, "  %s: %s\n", pm_pipeline_name(p), err.message);
    k->fn = (entry_fn)addr;
    k->pool = pm_scratch_pool_new(r.nslots);
    k->threads = threads > 0 ? threads : 2;
    pm_codegen_result_free(&r);
    LLVMOrcDisposeThreadSafeContext(ts);
    LLVMDisposeTargetMachine(tm);
    return ok;
}

static void kernel_free(kernel *k)
{
    pm_engine_code_free(k->code);
    pm_scratch_pool_free(k->pool);
}

static void fill_strides(pm_buffer *b)
{
    int64_t s = 1;
    for (int d = b->ndims - 1; d >= 0; d--) {
        b->stride[d] = s;
        s *= b->extent[d];
    }
}

static int kernel_run(kernel *k, const pm_value *params, pm_buffer *in, int nin, pm_buffer *out,
                      int nout)
{
    for (int i = 0; i < nin; i++)
        fill_strides(&in[i]);
    for (int i = 0; i < nout; i++)
        fill_strides(&out[i]);
    pm_run_ctx rt = {0};
    rt.scratch = pm_scratch_pool_checkout(k->pool);
    rt.threads = k->threads;
    int r = k->fn(params, in, out, &rt);
    pm_scratch_pool_return(k->pool, rt.scratch);
    return r;
}

/* Kernels are valid for every size: compile once per (pipeline, width, threads) and
 * reuse across sizes. Cleared before the pipeline's context is freed. */
typedef struct cached {
    pm_pipeline *p;
    int width, threads;
    bool ok;
    kernel k;
} cached;
static cached cache[16];
static int ncached;

static kernel *kernel_get(pm_pipeline *p, int width, int threads)
{
    for (int i = 0; i < ncached; i++)
        if (cache[i].p == p && cache[i].width == width && cache[i].threads == threads)
            return cache[i].ok ? &cache[i].k : NULL;
    if (ncached == 16)
        return NULL;
    cached *c = &cache[ncached++];
    c->p = p;
    c->width = width;
    c->threads = threads;
    c->ok = kernel_compile(&c->k, p, width, threads);
    return c->ok ? &c->k : NULL;
}

static void kernel_cache_clear(void)
{
    for (int i = 0; i < ncached; i++)
        if (cache[i].ok)
            kernel_free(&cache[i].k);
        else
            pm_scratch_pool_free(cache[i].k.pool);
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
    kernel *k = NULL;
    if (CHECK_STATUS(st, PM_OK) && (k = kernel_get(p, width, threads)) != NULL) {
        if (CHECK(kernel_run(k, params, in, nin, got, nout) == 0)) {
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

static void test_samples(void)
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

/* One kernel run from 4 threads at once, each with its own buffers. */
typedef struct concurrent_job {
    kernel *k;
    pm_pipeline *p;
    const pm_value *params;
    pm_buffer *in;
    pm_buffer out;
    int result;
} concurrent_job;

static void *concurrent_run(void *arg)
{
    concurrent_job *j = arg;
    for (int i = 0; i < 5 && j->result == 0; i++)
        j->result = kernel_run(j->k, j->params, j->in, 1, &j->out, 1);
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
    kernel k;
    if (kernel_compile(&k, p, 16, 2)) {
        concurrent_job jobs[4];
        pthread_t th[4];
        for (int i = 0; i < 4; i++) {
            jobs[i] = (concurrent_job){&k, p, params, &in, check_buffer_new(PM_F32, nd, ext), 0};
            pthread_create(&th[i], NULL, concurrent_run, &jobs[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            CHECK(jobs[i].result == 0);
            CHECK(check_buffer_maxdiff(&want, &jobs[i].out) <= app->tolerance);
            check_buffer_free(&jobs[i].out);
        }
        CHECK(pm_scratch_pool_nsets(k.pool) >= 1);
        kernel_free(&k);
    }
    check_buffer_free(&want);
    check_buffer_free(&in);
    kernel_cache_clear();
    pm_ctx_free(ctx);
}

int main(void)
{
    pm_error err = {0};
    engine = pm_engine_new(3, &err);
    if (!CHECK(engine != NULL)) {
        fprintf(stderr, "%s\n", err.message);
        return check_finish("codegen_run");
    }
    /* PM_TEST_ONLY=name runs one group (for debugging) */
    static const struct { const char *name; void (*fn)(void); } groups[] = {
        {"integers", test_integers}, {"cases", test_cases}, {"sampling", test_sampling},
        {"reductions", test_reductions}, {"time", test_time_iterated}, {"scan", test_scan},
        {"concurrent", test_concurrent}, {"samples", test_samples}};
    const char *only = getenv("PM_TEST_ONLY");
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (!only || strcmp(only, groups[i].name) == 0)
            groups[i].fn();
    pm_engine_free(engine);
    return check_finish("codegen_run");
}
#endif
