/* test_validate.c — pm_pipeline_new's checks: one test per validation error, each checking
 * the status and the message (function, access, one offending point), and pipelines that
 * must validate (the samples, downsampling, histograms, time-iterated stencils). */
#include "check.h"
#include "samples.h"

#include <stdio.h>

/* pm_pipeline_new with one parameter list, one input and one output (any may be absent). */
static pm_status make(pm_ctx *ctx, int nparams, pm_expr *const *params, pm_func *input,
                      pm_func *output)
{
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "t", nparams, params, input ? 1 : 0,
                                   input ? (pm_func *const[]){input} : NULL, 1,
                                   (pm_func *const[]){output}, &p);
    CHECK((st == PM_OK) == (p != NULL));
    return st;
}

/* A 1-D function f over [lb, ub] named name, with variable x. */
static pm_func *func1(pm_ctx *ctx, const char *name, pm_expr *x, pm_expr *lb, pm_expr *ub,
                      int64_t step)
{
    return pm_func_new(ctx, name, PM_I32, 1, pm_exprs(x), pm_intervals(pm_interval_new(lb, ub, step)));
}

#define MSG pm_ctx_errmsg(ctx)

/* ---- pipelines that validate ------------------------------------------------------------ */

static void test_samples_validate(void)
{
    int n = 0;
    const pm_sample_app *apps = pm_sample_apps(&n);
    CHECK(n >= 2);
    bool saw_harris = false, saw_unsharp = false;
    for (int i = 0; i < n; i++) {
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = apps[i].build(ctx);
        if (!CHECK(p != NULL))
            fprintf(stderr, "  sample %s: %s\n", apps[i].name, MSG);
        CHECK_STATUS(pm_ctx_status(ctx), PM_OK);
        saw_harris |= p && apps[i].build == pm_sample_harris.build;
        saw_unsharp |= p && apps[i].build == pm_sample_unsharp_mask.build;
        pm_ctx_free(ctx);
    }
    CHECK(saw_harris);
    CHECK(saw_unsharp);
}

/* g(x) = I(x) on [0, N-1]; f(x) = g(2x + 1) on [0, (N-2)/2] (floor), the pyramid's
 * downsample; u(x) = I(x / 2) + I(x / 2 - (x / 2) % 2) on [0, 2N - 1], the upsample. */
static void test_downsample_validates(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *g = func1(ctx, "g", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func_define_expr(g, pm_call(I, x));
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_divi(pm_addi(N, -2), 2), 1);
    pm_func_define_expr(f, pm_call(g, pm_addi(pm_muli(x, 2), 1)));
    pm_func *u = func1(ctx, "u", x, pm_int(ctx, 0), pm_addi(pm_muli(N, 2), -1), 1);
    pm_func_define_expr(u, pm_add(pm_call(I, pm_divi(x, 2)), 
                                  pm_call(I, pm_sub(pm_divi(x, 2), pm_modi(pm_divi(x, 2), 2)))));
    pm_func *out = func1(ctx, "out", x, pm_int(ctx, 0), pm_divi(pm_addi(N, -2), 2), 1);
    pm_func_define_expr(out, pm_add(pm_call(f, x), pm_call(u, x)));
    if (!CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, out), PM_OK))
        fprintf(stderr, "  %s\n", MSG);
    pm_ctx_free(ctx);

    /* The same downsample one point too far: f's last point reads g(N), past g's end. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    g = func1(ctx, "g", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func_define_expr(g, pm_call(I, x));
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_divi(N, 2), 1);
    pm_func_define_expr(f, pm_call(g, pm_addi(pm_muli(x, 2), 1)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: access g((x * 2) + 1) reads outside g's domain at x = 0 (N = 1), "
                        "where it reads g(1)");
    pm_ctx_free(ctx);
}

/* hist(I(r, c)) += 1 over the image: the index is data-dependent (skipped when outside
 * [0, 255] at run time), the value's reads are affine and inside. */
static void test_histogram_validates(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_expr *b = pm_var(ctx, "b"), *r = pm_var(ctx, "r"), *c = pm_var(ctx, "c");
    pm_func *hist = pm_reduction_new(
        ctx, "hist", PM_I32, 1, pm_exprs(b),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1)), 2, pm_exprs(r, c),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                     pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)),
        PM_REDUCE_SUM, NULL);
    CHECK_STATUS(pm_reduction_define(hist, 1, pm_exprs(pm_cast(PM_I32, pm_call(I, r, c))),
                                     pm_int(ctx, 1)),
                 PM_OK);
    CHECK_STATUS(make(ctx, 2, pm_exprs(R, C), I, hist), PM_OK);
    pm_ctx_free(ctx);
}

/* f(t, x) = I(x) at t = 0; the 3-point average of f(t - 1, .) inside; f(t - 1, x) on the
 * two edges. Self-reads are at t - 1, so always earlier. */
static pm_func *time_stencil(pm_ctx *ctx, pm_expr *T, pm_expr *N, pm_func *I, int dt)
{
    pm_expr *t = pm_var(ctx, "t"), *x = pm_var(ctx, "x");
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(t, x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), T, 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_expr *prev = pm_addi(t, dt);
    pm_expr *inside = pm_and(pm_ge(t, pm_int(ctx, 1)),
                             pm_between(x, pm_int(ctx, 1), pm_addi(N, -2)));
    pm_expr *edge = pm_and(pm_ge(t, pm_int(ctx, 1)),
                           pm_or(pm_eq(x, pm_int(ctx, 0)), pm_eq(x, pm_addi(N, -1))));
    pm_expr *avg = pm_add(pm_add(pm_call(f, prev, pm_addi(x, -1)), pm_call(f, prev, x)),
                          pm_call(f, prev, pm_addi(x, 1)));
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)), pm_case_new(inside, avg),
              pm_case_new(edge, pm_call(f, prev, x)));
    return f;
}

static void test_time_stencil(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *T = pm_param(ctx, PM_I32, "T"), *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = time_stencil(ctx, T, N, I, -1);
    CHECK_STATUS(make(ctx, 2, pm_exprs(T, N), I, f), PM_OK);
    pm_ctx_free(ctx);

    /* Reading the next time step instead is not a recurrence. */
    ctx = pm_ctx_new();
    T = pm_param(ctx, PM_I32, "T");
    N = pm_param(ctx, PM_I32, "N");
    I = pm_image(ctx, "I", PM_I32, N);
    f = time_stencil(ctx, T, N, I, 1);
    CHECK_STATUS(make(ctx, 2, pm_exprs(T, N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: self-reference f(t + 1, x - 1) in case 2 reads a point not before "
                        "(t, x) at t = 1, x = 1 (T = 1, N = 3), where it reads f(2, 0)");
    pm_ctx_free(ctx);
}

/* Conditions that depend on data cannot be compared: accepted as written. */
static void test_data_dependent_cases_accepted(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_expr *pos = pm_gt(pm_call(I, x), pm_int(ctx, 0));
    pm_define(f, pm_case_new(pm_and(pm_ge(x, pm_int(ctx, 1)), pos), pm_call(I, pm_addi(x, -1))),
              pm_case_new(pm_and(pm_ge(x, pm_int(ctx, 1)), pm_not(pos)), pm_int(ctx, 0)),
              pm_case_new(pm_eq(x, pm_int(ctx, 0)), pm_int(ctx, 1)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_OK);
    pm_ctx_free(ctx);

    /* But an affine conjunct that surely holds in both still overlaps: x == 0 is in case 1
     * (its data-dependent part is an "or") and in case 2. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pos = pm_gt(pm_call(I, x), pm_int(ctx, 0));
    pm_define(f, pm_case_new(pm_or(pm_le(x, pm_int(ctx, 0)), pos), pm_int(ctx, 2)),
              pm_case_new(pm_eq(x, pm_int(ctx, 0)), pm_int(ctx, 1)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: cases 1 ((x <= 0) || (I(x) > 0)) and 2 (x == 0) overlap at x = 0 (N = 1)");
    pm_ctx_free(ctx);
}

/* Data-dependent indices are not checked statically (the interpreter and codegen clamp). */
static void test_data_dependent_reads_accepted(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *lut = pm_image(ctx, "lut", PM_I32, pm_int(ctx, 16));
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    /* x * x is not affine either: also left to run time. */
    pm_func_define_expr(f, pm_add(pm_call(lut, pm_call(I, x)), pm_call(I, pm_mul(x, x))));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 2, (pm_func *const[]){I, lut}, 1,
                                 (pm_func *const[]){f}, &p),
                 PM_OK);
    pm_ctx_free(ctx);
}

/* Reads are checked for parameter values that give every image at least one point: f on
 * the constant domain [0, 0] may read I(0) although N = 0 would make I empty. Shifts and
 * truncating division by constants are affine too. */
static void test_context_and_other_affine_forms(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 0), 1);
    pm_func_define_expr(f, pm_call(I, pm_int(ctx, 0)));
    pm_func *g = func1(ctx, "g", x, pm_int(ctx, 0), pm_addi(pm_shl(N, pm_int(ctx, 1)), -1), 1);
    pm_func_define_expr(g, pm_add(pm_call(I, pm_shr(x, pm_int(ctx, 1))),
                                  pm_call(I, pm_cdiv(x, pm_int(ctx, 2)))));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, (pm_func *const[]){I}, 2,
                                 (pm_func *const[]){f, g}, &p),
                 PM_OK);
    pm_ctx_free(ctx);

    /* ... but one point further is outside for N = 1. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    g = func1(ctx, "g", x, pm_int(ctx, 0), pm_shl(N, pm_int(ctx, 1)), 1);
    pm_func_define_expr(g, pm_call(I, pm_cdiv(x, pm_int(ctx, 2))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, g), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "g: access I(cdiv(x, 2)) reads outside I's domain at x = 2 (N = 1), "
                        "where it reads I(1)");
    pm_ctx_free(ctx);
}

/* ---- 1. affine bounds ------------------------------------------------------------------- */

static void test_bound_not_affine(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C"), *x = pm_var(ctx, "x");
    pm_func *blurx = func1(ctx, "blurx", x, pm_int(ctx, 0), pm_mul(R, C), 1);
    pm_func_define_expr(blurx, x);
    CHECK_STATUS(make(ctx, 2, pm_exprs(R, C), NULL, blurx), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "blurx: interval bound R * C is not affine in the parameters");
    pm_ctx_free(ctx);

    /* A float parameter, cast to an integer, is still not a size. */
    ctx = pm_ctx_new();
    pm_expr *s = pm_param(ctx, PM_F32, "s");
    x = pm_var(ctx, "x");
    blurx = func1(ctx, "blurx", x, pm_cast(PM_I32, s), pm_int(ctx, 9), 1);
    pm_func_define_expr(blurx, x);
    CHECK_STATUS(make(ctx, 1, pm_exprs(s), NULL, blurx), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "blurx: interval bound (i32)(s) is not affine in the parameters (s is a "
                        "float parameter");
    pm_ctx_free(ctx);

    /* A call (data) in a bound. */
    ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_call(I, pm_int(ctx, 0)), 1);
    pm_func_define_expr(f, x);
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: interval bound I(0) is not affine in the parameters");
    pm_ctx_free(ctx);

    /* Quasi-affine bounds are fine: min, max, floor division, modulo. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    f = func1(ctx, "f", x, pm_modi(N, 4), pm_max(pm_divi(N, 3), pm_min(N, pm_int(ctx, 7))), 1);
    pm_func_define_expr(f, x);
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), NULL, f), PM_OK);
    pm_ctx_free(ctx);
}

static void test_extent_not_affine(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_mul(R, C));
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 0), 1)));
    pm_func_define_expr(f, pm_call(I, x));
    CHECK_STATUS(make(ctx, 2, pm_exprs(R, C), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "I: extent R * C is not affine in the parameters");
    pm_ctx_free(ctx);
}

static void test_reduction_bound_not_affine(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *b = pm_var(ctx, "b"), *r = pm_var(ctx, "r");
    pm_func *h = pm_reduction_new(
        ctx, "h", PM_I32, 1, pm_exprs(b),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)), 1, pm_exprs(r),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_mul(N, N), 1)), PM_REDUCE_SUM, NULL);
    pm_reduction_define(h, 1, pm_exprs(pm_modi(r, 4)), pm_int(ctx, 1));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), NULL, h), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "h: reduction interval bound N * N is not affine in the parameters");
    pm_ctx_free(ctx);
}

/* ---- 2. overlapping cases --------------------------------------------------------------- */

static void test_overlapping_cases(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), N, 1);
    pm_define(f, pm_case_new(pm_le(x, pm_int(ctx, 5)), pm_int(ctx, 1)),
              pm_case_new(pm_ge(x, pm_int(ctx, 5)), pm_int(ctx, 2)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: cases 1 (x <= 5) and 2 (x >= 5) overlap at x = 5 (N = 5)");
    pm_ctx_free(ctx);

    /* Disjoint cases that only meet outside the domain are fine. */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 9), 1);
    pm_define(f, pm_case_new(pm_le(x, pm_int(ctx, 4)), pm_int(ctx, 1)),
              pm_case_new(pm_ge(x, pm_int(ctx, 5)), pm_int(ctx, 2)),
              pm_case_new(pm_ge(x, pm_int(ctx, 10)), pm_int(ctx, 3)));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_OK);
    pm_ctx_free(ctx);

    /* A case without condition covers everything, so any other case overlaps it. A strided
     * domain: the overlap is at an even point. */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 9), 2);
    pm_define(f, pm_case_new(pm_ge(x, pm_int(ctx, 3)), pm_int(ctx, 1)),
              pm_case_new(NULL, pm_int(ctx, 2)));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: cases 1 (x >= 3) and 2 (everywhere) overlap at x = 4");
    pm_ctx_free(ctx);
}

/* ---- 3. static out-of-domain reads ------------------------------------------------------ */

/* Harris-like: Sxx's condition lets x reach R + 1, where Ixx(x + 1, y) = Ixx(R + 2, y) is
 * past Ixx's domain [0, R + 1]. The smallest example has R = 0, C = 1. */
static void test_read_outside_function(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_addi(R, 2), pm_addi(C, 2));
    pm_interval *const dom[] = {pm_interval_new(pm_int(ctx, 0), pm_addi(R, 1), 1),
                                pm_interval_new(pm_int(ctx, 0), pm_addi(C, 1), 1)};
    pm_expr *c = pm_and(pm_between(x, pm_int(ctx, 1), R), pm_between(y, pm_int(ctx, 1), C));
    pm_expr *wide = pm_and(pm_between(x, pm_int(ctx, 1), pm_addi(R, 1)),
                           pm_between(y, pm_int(ctx, 1), C));
    pm_func *Ixx = pm_func_new(ctx, "Ixx", PM_F32, 2, pm_exprs(x, y), dom);
    pm_define(Ixx, pm_case_new(c, pm_call(I, x, y)));
    pm_func *Sxx = pm_func_new(ctx, "Sxx", PM_F32, 2, pm_exprs(x, y), dom);
    pm_define(Sxx, pm_case_new(wide, pm_add(pm_call(Ixx, pm_addi(x, -1), y),
                                            pm_call(Ixx, pm_addi(x, 1), y))));
    CHECK_STATUS(make(ctx, 2, pm_exprs(R, C), I, Sxx), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "Sxx: access Ixx(x + 1, y) reads outside Ixx's domain at x = 1, y = 1 "
                        "(R = 0, C = 1), where it reads Ixx(2, 1)");
    pm_ctx_free(ctx);
}

static void test_read_outside_image(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func_define_expr(f, pm_sub(pm_call(I, x), pm_call(I, pm_addi(x, -1))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: access I(x - 1) reads outside I's domain at x = 0 (N = 1), where it "
                        "reads I(-1)");
    pm_ctx_free(ctx);

    /* Guarded by a case condition instead, it is fine. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_define(f, pm_case_new(pm_ge(x, pm_int(ctx, 1)), pm_call(I, pm_addi(x, -1))),
              pm_case_new(pm_lt(x, pm_int(ctx, 1)), pm_int(ctx, 0)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_OK);
    pm_ctx_free(ctx);
}

/* select evaluates both arms: guarding a read with select does not make it safe. */
static void test_read_in_select_arm(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func_define_expr(f, pm_select(pm_ge(x, pm_int(ctx, 1)), pm_call(I, pm_addi(x, -1)),
                                     pm_int(ctx, 0)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: access I(x - 1) reads outside I's domain at x = 0");
    pm_ctx_free(ctx);
}

/* g is defined at even points only: reading it at odd ones leaves its domain. */
static void test_read_between_strided_points(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *g = func1(ctx, "g", x, pm_int(ctx, 0), pm_int(ctx, 8), 2);
    pm_func_define_expr(g, x);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 8), 1);
    pm_func_define_expr(f, pm_call(g, x));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: access g(x) reads outside g's domain at x = 1, where it reads g(1)");
    pm_ctx_free(ctx);

    /* Reading g(2 * (x / 2)) stays on its grid. */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    g = func1(ctx, "g", x, pm_int(ctx, 0), pm_int(ctx, 8), 2);
    pm_func_define_expr(g, x);
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 8), 1);
    pm_func_define_expr(f, pm_call(g, pm_muli(pm_divi(x, 2), 2)));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_OK);
    pm_ctx_free(ctx);
}

/* The calling case's domain is the function's domain and its case condition. */
static void test_read_outside_in_one_case(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_define(f, pm_case_new(pm_le(x, pm_int(ctx, 3)), pm_call(I, x)),
              pm_case_new(pm_gt(x, pm_int(ctx, 3)), pm_call(I, pm_addi(x, 1))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: access I(x + 1) in case 2 reads outside I's domain at x = 4 (N = 5), "
                        "where it reads I(5)");
    pm_ctx_free(ctx);
}

static void test_reduction_read_outside(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *b = pm_var(ctx, "b"), *r = pm_var(ctx, "r");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *h = pm_reduction_new(
        ctx, "h", PM_I32, 1, pm_exprs(b),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)), 1, pm_exprs(r),
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)), PM_REDUCE_SUM, NULL);
    pm_reduction_define(h, 1, pm_exprs(pm_modi(r, 4)), pm_call(I, pm_addi(r, 1)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, h), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "h: access I(r + 1) in the update reads outside I's domain at r = 0 (N = 1)"
                        ", where it reads I(1)");
    pm_ctx_free(ctx);

    /* An affine index that leaves the variable domain is fine: the update is skipped. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    b = pm_var(ctx, "b");
    r = pm_var(ctx, "r");
    I = pm_image(ctx, "I", PM_I32, N);
    h = pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(b),
                         pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)), 1,
                         pm_exprs(r), pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)),
                         PM_REDUCE_MAX, NULL);
    pm_reduction_define(h, 1, pm_exprs(r), pm_call(I, r));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, h), PM_OK);
    pm_ctx_free(ctx);
}

/* ---- 4. self-reference ------------------------------------------------------------------ */

static void test_self_reference_not_before(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *t = pm_var(ctx, "t"), *x = pm_var(ctx, "x");
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(t, x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)));
    pm_func_define_expr(f, pm_call(f, pm_addi(t, 1), x));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: self-reference f(t + 1, x) reads a point not before (t, x) at t = 0, "
                        "x = 0, where it reads f(1, 0)");
    pm_ctx_free(ctx);

    /* Reading the same point is not "before" either. */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func_define_expr(f, pm_addi(pm_call(f, x), 1));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: self-reference f(x) reads a point not before (x) at x = 0");
    pm_ctx_free(ctx);

    /* Earlier within the same row (x - 1 in the last dimension) is before: a scan. */
    ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_define(f, pm_case_new(pm_eq(x, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_gt(x, pm_int(ctx, 0)), pm_add(pm_call(f, pm_addi(x, -1)), pm_call(I, x))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_OK);
    pm_ctx_free(ctx);
}

static void test_self_reference_data_dependent(void)
{
    /* f(t - 1, I(x)): the affine leading index alone proves the order. */
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *t = pm_var(ctx, "t"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(t, x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_gt(t, pm_int(ctx, 0)), pm_call(f, pm_addi(t, -1), pm_call(I, x))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_OK);
    pm_ctx_free(ctx);

    /* f(t, I(x)): same time step, data-dependent position: the order cannot be proven. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    t = pm_var(ctx, "t");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(t, x),
                    pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1),
                                 pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_gt(t, pm_int(ctx, 0)), pm_call(f, t, pm_call(I, x))));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_UNSUPPORTED);
    CHECK_CONTAINS(MSG, "f: self-reference f(t, I(x)) in case 2 reads a point not before (t, x) "
                        "at t = 1");
    CHECK_CONTAINS(MSG, "data-dependent");
    pm_ctx_free(ctx);

    /* f(I(x), x): nothing to go on. */
    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    t = pm_var(ctx, "t");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(t, x),
                    pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1),
                                 pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_gt(t, pm_int(ctx, 0)), pm_call(f, pm_call(I, x), x)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_UNSUPPORTED);
    CHECK_CONTAINS(MSG, "f: self-reference f(I(x), x) in case 2 has a data-dependent first index");
    pm_ctx_free(ctx);
}

/* ---- 5. reductions ---------------------------------------------------------------------- */

static pm_func *small_reduction(pm_ctx *ctx, pm_expr **b, pm_expr **r)
{
    *b = pm_var(ctx, "b");
    *r = pm_var(ctx, "r");
    return pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(*b),
                            pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)), 1,
                            pm_exprs(*r),
                            pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 9), 1)),
                            PM_REDUCE_SUM, NULL);
}

static void test_reduction_reads_itself(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *b, *r;
    pm_func *h = small_reduction(ctx, &b, &r);
    pm_reduction_define(h, 1, pm_exprs(pm_modi(r, 4)), pm_call(h, pm_modi(pm_addi(r, 1), 4)));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, h), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "reduction h: value h((r + 1) % 4) reads h itself");
    pm_ctx_free(ctx);

    /* In the index too. */
    ctx = pm_ctx_new();
    h = small_reduction(ctx, &b, &r);
    pm_reduction_define(h, 1, pm_exprs(pm_call(h, pm_int(ctx, 0))), pm_int(ctx, 1));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, h), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "reduction h: index h(0) reads h itself");
    pm_ctx_free(ctx);
}

static void test_reduction_variable_scope(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *b, *r;
    pm_func *h = small_reduction(ctx, &b, &r);
    pm_reduction_define(h, 1, pm_exprs(pm_modi(r, 4)), pm_add(r, b));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, h), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "reduction h: value r + b uses variable b; it may use only the reduction "
                        "variables");
    pm_ctx_free(ctx);
}

/* ---- graph errors (pipeline.c) ---------------------------------------------------------- */

static void test_cycle(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *A = func1(ctx, "A", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *B = func1(ctx, "B", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *out = func1(ctx, "out", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func_define_expr(A, pm_call(B, x));
    pm_func_define_expr(B, pm_addi(pm_call(A, x), 1));
    pm_func_define_expr(out, pm_call(A, x));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, out), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "cycle between functions: ");
    CHECK_CONTAINS(MSG, "B -> A -> B"); /* B uses A, which uses B */
    pm_ctx_free(ctx);
}

static void test_undefined_function(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *g = func1(ctx, "g", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func_define_expr(f, pm_call(g, x));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "function g is used but never defined");
    pm_ctx_free(ctx);
}

static void test_wrong_arity(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    CHECK(pm_call(I, x) == NULL);
    pm_func_define_expr(f, pm_call(I, x));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "call of I with 1 argument: I has 2 dimensions");
    pm_ctx_free(ctx);
}

/* Type errors are found while building; pm_pipeline_new reports the first one. */
static void test_type_errors(void)
{
    struct {
        const char *name, *needle;
    } cases[] = {
        {"float index", "call of I: argument 1 ((f32)(x) * 0.5f) has type f32; indices must be integers"},
        {"bitwise on float", "'&' needs integer operands, got f32 and i32"},
        {"condition as a value", "f: case value x < 1 is a condition"},
        {"case condition not a condition", "case: condition x + 1 has type i32, not a condition"},
        {"condition in arithmetic", "'+' is not defined on conditions"},
        {"select on a value", "select: condition x has type i32, not a condition"},
    };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        pm_ctx *ctx = pm_ctx_new();
        pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
        pm_func *I = pm_image(ctx, "I", PM_F32, N);
        pm_func *f = pm_func_new(ctx, "f", PM_F32, 1, pm_exprs(x),
                                 pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
        pm_expr *value = NULL;
        switch (k) {
        case 0: value = pm_call(I, pm_mulf(x, 0.5)); break;
        case 1: value = pm_band(pm_call(I, x), pm_int(ctx, 1)); break;
        case 2: pm_func_define_expr(f, pm_lt(x, pm_int(ctx, 1))); break;
        case 3: pm_define(f, pm_case_new(pm_addi(x, 1), pm_call(I, x))); break;
        case 4: value = pm_add(pm_lt(x, pm_int(ctx, 1)), pm_call(I, x)); break;
        case 5: value = pm_select(x, pm_call(I, x), pm_float(ctx, 0)); break;
        }
        CHECK(k >= 2 && k <= 3 ? true : value == NULL);
        if (k != 2 && k != 3)
            pm_func_define_expr(f, value);
        if (!CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_TYPE))
            fprintf(stderr, "  type case: %s\n", cases[k].name);
        CHECK_CONTAINS(MSG, cases[k].needle);
        pm_ctx_free(ctx);
    }
}

static void test_unlisted_parameter_and_image(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *M = pm_param(ctx, PM_I32, "M"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(M, -1), 1);
    pm_func_define_expr(f, x);
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "pipeline t uses parameter M, which is not in its parameter list");
    pm_ctx_free(ctx);

    ctx = pm_ctx_new();
    N = pm_param(ctx, PM_I32, "N");
    x = pm_var(ctx, "x");
    I = pm_image(ctx, "I", PM_I32, N);
    pm_func *J = pm_image(ctx, "J", PM_I32, N);
    f = func1(ctx, "f", x, pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func_define_expr(f, pm_add(pm_call(I, x), pm_call(J, x)));
    CHECK_STATUS(make(ctx, 1, pm_exprs(N), I, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "pipeline t reads image J, which is not in its input list");
    pm_ctx_free(ctx);
}

static void test_foreign_variable(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *f = func1(ctx, "f", x, pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func_define_expr(f, pm_add(x, y));
    CHECK_STATUS(make(ctx, 0, NULL, NULL, f), PM_ERR_INVALID);
    CHECK_CONTAINS(MSG, "f: x + y uses variable y, which is not a dimension of f");
    pm_ctx_free(ctx);
}

int main(void)
{
    test_samples_validate();
    test_downsample_validates();
    test_histogram_validates();
    test_time_stencil();
    test_data_dependent_cases_accepted();
    test_data_dependent_reads_accepted();
    test_context_and_other_affine_forms();
    test_bound_not_affine();
    test_extent_not_affine();
    test_reduction_bound_not_affine();
    test_overlapping_cases();
    test_read_outside_function();
    test_read_outside_image();
    test_read_in_select_arm();
    test_read_between_strided_points();
    test_read_outside_in_one_case();
    test_reduction_read_outside();
    test_self_reference_not_before();
    test_self_reference_data_dependent();
    test_reduction_reads_itself();
    test_reduction_variable_scope();
    test_cycle();
    test_undefined_function();
    test_wrong_arity();
    test_type_errors();
    test_unlisted_parameter_and_image();
    test_foreign_variable();
    return check_finish("test_validate");
}
