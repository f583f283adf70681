/* test_interp_types.c — the scalar semantics of polymage.h as the interpreter applies
 * them, against values worked out by hand (not computed by the library): wrap-around of
 * narrow integers, floor and C division, saturating float -> integer casts, absd, shifts,
 * select, min / max, math functions, data-dependent reads (clamped into the callee's
 * box), stepped domains, strided and cropped buffer views, and argument errors. */
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- typed element access ------------------------------------------------------------ */

static void put(pm_buffer *b, int64_t i, double v)
{
    switch (b->type) {
    case PM_U8: ((uint8_t *)b->data)[i] = (uint8_t)v; break;
    case PM_I8: ((int8_t *)b->data)[i] = (int8_t)v; break;
    case PM_U16: ((uint16_t *)b->data)[i] = (uint16_t)v; break;
    case PM_I16: ((int16_t *)b->data)[i] = (int16_t)v; break;
    case PM_U32: ((uint32_t *)b->data)[i] = (uint32_t)v; break;
    case PM_I32: ((int32_t *)b->data)[i] = (int32_t)v; break;
    case PM_I64: ((int64_t *)b->data)[i] = (int64_t)v; break;
    case PM_F32: ((float *)b->data)[i] = (float)v; break;
    case PM_F64: ((double *)b->data)[i] = v; break;
    default: break;
    }
}

static double get(const pm_buffer *b, int64_t i)
{
    switch (b->type) {
    case PM_U8: return ((uint8_t *)b->data)[i];
    case PM_I8: return ((int8_t *)b->data)[i];
    case PM_U16: return ((uint16_t *)b->data)[i];
    case PM_I16: return ((int16_t *)b->data)[i];
    case PM_U32: return ((uint32_t *)b->data)[i];
    case PM_I32: return ((int32_t *)b->data)[i];
    case PM_I64: return (double)((int64_t *)b->data)[i];
    case PM_F32: return ((float *)b->data)[i];
    case PM_F64: return ((double *)b->data)[i];
    default: return NAN;
    }
}

/* ---- point-wise operations: out(i) = op(A(i), B(i)) ------------------------------------ */

typedef pm_expr *(*op2)(pm_expr *a, pm_expr *b);

/* The context of the pipeline check_op is building, for ops that need literals. */
static pm_ctx *op_ctx;

/* Runs out(i) = op(A(i), B(i)) on n values and compares with want (within tol; NaN must
 * match NaN). out has type tout: op's value is stored converted like pm_cast. */
static void check_op(const char *what, pm_type ta, pm_type tb, pm_type tout, op2 op, int n,
                     const double *a, const double *b, const double *want, double tol)
{
    pm_ctx *ctx = pm_ctx_new();
    op_ctx = ctx;
    pm_func *A = pm_image(ctx, "A", ta, pm_int(ctx, n)), *B = pm_image(ctx, "B", tb, pm_int(ctx, n));
    pm_expr *i = pm_var(ctx, "i");
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, n - 1), 1);
    pm_func *out = pm_func_new(ctx, "out", tout, 1, pm_exprs(i), pm_intervals(all));
    pm_func_define_expr(out, op(pm_call(A, i), pm_call(B, i)));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, what, 0, NULL, 2, (pm_func *const[]){A, B}, 1, &out, &p);
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  %s: %s\n", what, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    int64_t ext[1] = {n};
    pm_buffer in[2] = {check_buffer_new(ta, 1, ext), check_buffer_new(tb, 1, ext)};
    pm_buffer res = check_buffer_new(tout, 1, ext);
    for (int k = 0; k < n; k++) {
        put(&in[0], k, a[k]);
        put(&in[1], k, b ? b[k] : 0);
    }
    st = pm_interpret(p, NULL, in, &res);
    if (CHECK_STATUS(st, PM_OK)) {
        for (int k = 0; k < n; k++) {
            double got = get(&res, k);
            bool ok = isnan(want[k]) ? isnan(got) : got == want[k] || fabs(got - want[k]) <= tol;
            if (!CHECK(ok))
                fprintf(stderr, "  %s: element %d (%g, %g) gave %.17g, expected %.17g\n", what, k,
                        a[k], b ? b[k] : 0, got, want[k]);
        }
    } else {
        fprintf(stderr, "  %s: %s\n", what, pm_ctx_errmsg(ctx));
    }
    check_buffer_free(&in[0]);
    check_buffer_free(&in[1]);
    check_buffer_free(&res);
    pm_ctx_free(ctx);
}

#define N_OF(arr) ((int)(sizeof(arr) / sizeof((arr)[0])))
#define CHECK_OP(what, ta, tb, tout, op, a, b, want, tol)                                   \
    do {                                                                                   \
        _Static_assert(N_OF(a) == N_OF(want), "value lists differ in length");             \
        check_op(what, ta, tb, tout, op, N_OF(a), a, b, want, tol);                        \
    } while (0)

static pm_expr *first(pm_expr *a, pm_expr *b) { (void)b; return a; }
static pm_expr *neg(pm_expr *a, pm_expr *b) { (void)b; return pm_neg(a); }
static pm_expr *absv(pm_expr *a, pm_expr *b) { (void)b; return pm_abs(a); }
static pm_expr *cast_u8(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_U8, a); }
static pm_expr *cast_i8(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_I8, a); }
static pm_expr *cast_u16(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_U16, a); }
static pm_expr *cast_i32(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_I32, a); }
static pm_expr *cast_u32(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_U32, a); }
static pm_expr *cast_i64(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_I64, a); }
static pm_expr *cast_f32(pm_expr *a, pm_expr *b) { (void)b; return pm_cast(PM_F32, a); }
static pm_expr *select_lt(pm_expr *a, pm_expr *b) { return pm_select(pm_lt(a, b), a, b); }
static pm_expr *select_cond(pm_expr *a, pm_expr *b)
{   /* a condition cast to a number is 1 or 0 */
    return pm_add(pm_cast(PM_U8, pm_gt(a, b)), pm_muli(pm_cast(PM_U8, pm_eq(a, b)), 2));
}
static pm_expr *mul_sub(pm_expr *a, pm_expr *b) { return pm_sub(pm_mul(a, a), b); }
static pm_expr *plus_literal(pm_expr *a, pm_expr *b) { (void)b; return pm_addi(a, 250); }
static pm_expr *and_or(pm_expr *a, pm_expr *b)
{
    return pm_bxor(pm_band(a, b), pm_bor(a, pm_shl(b, pm_int(op_ctx, 4))));
}
static pm_expr *m_sqrt(pm_expr *a, pm_expr *b) { (void)b; return pm_sqrt(a); }
static pm_expr *m_exp(pm_expr *a, pm_expr *b) { (void)b; return pm_exp(a); }
static pm_expr *m_log(pm_expr *a, pm_expr *b) { (void)b; return pm_log(a); }
static pm_expr *m_sin(pm_expr *a, pm_expr *b) { (void)b; return pm_sin(a); }
static pm_expr *m_cos(pm_expr *a, pm_expr *b) { (void)b; return pm_cos(a); }
static pm_expr *m_tanh(pm_expr *a, pm_expr *b) { (void)b; return pm_math(PM_TANH, a); }
static pm_expr *m_floor(pm_expr *a, pm_expr *b) { (void)b; return pm_floor(a); }
static pm_expr *m_ceil(pm_expr *a, pm_expr *b) { (void)b; return pm_ceil(a); }
static pm_expr *m_round(pm_expr *a, pm_expr *b) { (void)b; return pm_math(PM_ROUND, a); }
static pm_expr *m_trunc(pm_expr *a, pm_expr *b) { (void)b; return pm_math(PM_TRUNC, a); }

static void test_wrap_around(void)
{
    const double a[] = {200, 255, 0, 17, 128}, b[] = {100, 1, 0, 3, 128};
    CHECK_OP("u8 add", PM_U8, PM_U8, PM_U8, pm_add, a, b, ((double[]){44, 0, 0, 20, 0}), 0);
    CHECK_OP("u8 sub", PM_U8, PM_U8, PM_U8, pm_sub, a, b, ((double[]){100, 254, 0, 14, 0}), 0);
    CHECK_OP("u8 mul", PM_U8, PM_U8, PM_U8, pm_mul, a, b, ((double[]){32, 255, 0, 51, 0}), 0);
    CHECK_OP("u8 + literal", PM_U8, PM_U8, PM_U8, plus_literal, a, b,
             ((double[]){194, 249, 250, 11, 122}), 0);
    /* the output is i32, but the sum happens in u8 before it is stored */
    CHECK_OP("u8 add into i32", PM_U8, PM_U8, PM_I32, pm_add, a, b,
             ((double[]){44, 0, 0, 20, 0}), 0);
    const double c[] = {65535, 65000, 300, 0}, d[] = {2, 1000, 300, 1};
    CHECK_OP("u16 add", PM_U16, PM_U16, PM_U16, pm_add, c, d, ((double[]){1, 464, 600, 1}), 0);
    CHECK_OP("u16 mul", PM_U16, PM_U16, PM_U16, pm_mul, c, d,
             ((double[]){65534, 53824, 24464, 0}), 0);
    CHECK_OP("u16 sub", PM_U16, PM_U16, PM_U16, pm_sub, d, c, ((double[]){3, 1536, 0, 1}), 0);
    const double e[] = {127, -128, 64, -1, 100}, f[] = {1, 1, 2, -1, 100};
    CHECK_OP("i8 add", PM_I8, PM_I8, PM_I8, pm_add, e, f, ((double[]){-128, -127, 66, -2, -56}), 0);
    CHECK_OP("i8 sub", PM_I8, PM_I8, PM_I8, pm_sub, e, f, ((double[]){126, 127, 62, 0, 0}), 0);
    CHECK_OP("i8 mul", PM_I8, PM_I8, PM_I8, pm_mul, e, f, ((double[]){127, -128, -128, 1, 16}), 0);
    CHECK_OP("i8 neg", PM_I8, PM_I8, PM_I8, neg, e, f, ((double[]){-127, -128, -64, 1, -100}), 0);
    CHECK_OP("i8 abs", PM_I8, PM_I8, PM_I8, absv, e, f, ((double[]){127, -128, 64, 1, 100}), 0);
    /* mixed types: u8 and i8 meet in u8 (equal width, the unsigned wins) */
    CHECK_OP("u8 + i8", PM_U8, PM_I8, PM_U8, pm_add, ((double[]){10, 200}), ((double[]){-1, 100}),
             ((double[]){9, 44}), 0);
    /* i32 wraps too */
    CHECK_OP("i32 add", PM_I32, PM_I32, PM_I32, pm_add, ((double[]){2147483647, -2147483648.0}),
             ((double[]){1, -1}), ((double[]){-2147483648.0, 2147483647}), 0);
    CHECK_OP("u32 mul", PM_U32, PM_U32, PM_U32, pm_mul, ((double[]){4294967295.0, 65536}),
             ((double[]){2, 65536}), ((double[]){4294967294.0, 0}), 0);
}

static void test_division(void)
{
    const double a[] = {-7, 7, -7, 7, 0, -6, 5, -5, -2147483648.0, -2147483648.0};
    const double b[] = {2, 2, -2, -2, 3, 3, 0, 0, -1, 1};
    CHECK_OP("floor div", PM_I32, PM_I32, PM_I32, pm_div, a, b,
             ((double[]){-4, 3, 3, -4, 0, -2, 0, 0, -2147483648.0, -2147483648.0}), 0);
    CHECK_OP("floor mod", PM_I32, PM_I32, PM_I32, pm_mod, a, b,
             ((double[]){1, 1, -1, -1, 0, 0, 0, 0, 0, 0}), 0);
    CHECK_OP("c div", PM_I32, PM_I32, PM_I32, pm_cdiv, a, b,
             ((double[]){-3, 3, 3, -3, 0, -2, 0, 0, -2147483648.0, -2147483648.0}), 0);
    CHECK_OP("c mod", PM_I32, PM_I32, PM_I32, pm_cmod, a, b,
             ((double[]){-1, 1, -1, 1, 0, 0, 0, 0, 0, 0}), 0);
    CHECK_OP("i8 floor div", PM_I8, PM_I8, PM_I8, pm_div, ((double[]){-128, -1, 127}),
             ((double[]){-1, 4, -4}), ((double[]){-128, -1, -32}), 0);
    CHECK_OP("u8 div mod", PM_U8, PM_U8, PM_U8, pm_mod, ((double[]){255, 7}),
             ((double[]){16, 0}), ((double[]){15, 0}), 0);
    CHECK_OP("i64 floor div", PM_I64, PM_I64, PM_I64, pm_div, ((double[]){-1e15 - 1, 1e15}),
             ((double[]){1000, -7}), ((double[]){-1e12 - 1, -142857142857143.0}), 0);
    /* floats: ordinary division, and x - y * floor(x / y) */
    const double x[] = {-7.5, 7.5, 7.5, 1}, y[] = {2, -2, 2, 0};
    CHECK_OP("f32 div", PM_F32, PM_F32, PM_F32, pm_div, x, y,
             ((double[]){-3.75, -3.75, 3.75, INFINITY}), 0);
    CHECK_OP("f32 mod", PM_F32, PM_F32, PM_F32, pm_mod, x, y, ((double[]){0.5, -0.5, 1.5, NAN}), 0);
    CHECK_OP("f64 mod", PM_F64, PM_F64, PM_F64, pm_mod, x, y, ((double[]){0.5, -0.5, 1.5, NAN}), 0);
}

static void test_casts(void)
{
    const double v[] = {300.7, -5.5, 1e10, -1e10, NAN, 2.99, -2.99, 255.9, -0.5, INFINITY};
    CHECK_OP("f32 -> u8", PM_F32, PM_F32, PM_U8, cast_u8, v, NULL,
             ((double[]){255, 0, 255, 0, 0, 2, 0, 255, 0, 255}), 0);
    CHECK_OP("f32 -> i8", PM_F32, PM_F32, PM_I8, cast_i8, v, NULL,
             ((double[]){127, -5, 127, -128, 0, 2, -2, 127, 0, 127}), 0);
    CHECK_OP("f32 -> u16", PM_F32, PM_F32, PM_U16, cast_u16, v, NULL,
             ((double[]){300, 0, 65535, 0, 0, 2, 0, 255, 0, 65535}), 0);
    CHECK_OP("f32 -> i32", PM_F32, PM_F32, PM_I32, cast_i32, v, NULL,
             ((double[]){300, -5, 2147483647, -2147483648.0, 0, 2, -2, 255, 0, 2147483647}), 0);
    CHECK_OP("f64 -> u32", PM_F64, PM_F64, PM_U32, cast_u32, v, NULL,
             ((double[]){300, 0, 4294967295.0, 0, 0, 2, 0, 255, 0, 4294967295.0}), 0);
    CHECK_OP("f64 -> i64", PM_F64, PM_F64, PM_I64, cast_i64, ((double[]){1e19, -1e19, -3.7}),
             NULL, ((double[]){9223372036854775807.0, -9223372036854775808.0, -3}), 0);
    /* a value stored into an integer function converts like pm_cast */
    CHECK_OP("f32 stored in u8", PM_F32, PM_F32, PM_U8, first, v, NULL,
             ((double[]){255, 0, 255, 0, 0, 2, 0, 255, 0, 255}), 0);
    const double w[] = {300, -1, 200, 65536 + 7, -2147483648.0};
    CHECK_OP("i32 -> u8", PM_I32, PM_I32, PM_U8, cast_u8, w, NULL,
             ((double[]){44, 255, 200, 7, 0}), 0);
    CHECK_OP("i32 -> i8", PM_I32, PM_I32, PM_I8, cast_i8, w, NULL,
             ((double[]){44, -1, -56, 7, 0}), 0);
    CHECK_OP("i32 -> u16", PM_I32, PM_I32, PM_U16, cast_u16, w, NULL,
             ((double[]){300, 65535, 200, 7, 0}), 0);
    CHECK_OP("i32 -> u32", PM_I32, PM_I32, PM_U32, cast_u32, w, NULL,
             ((double[]){300, 4294967295.0, 200, 65543, 2147483648.0}), 0);
    CHECK_OP("i32 -> f32", PM_I32, PM_I32, PM_F32, cast_f32, ((double[]){16777217, -3}), NULL,
             ((double[]){16777216, -3}), 0);
    CHECK_OP("u8 -> i32", PM_U8, PM_U8, PM_I32, cast_i32, ((double[]){255, 0}), NULL,
             ((double[]){255, 0}), 0);
    CHECK_OP("i8 -> u32", PM_I8, PM_I8, PM_U32, cast_u32, ((double[]){-1, 5}), NULL,
             ((double[]){4294967295.0, 5}), 0);
}

static void test_absd_shifts_bits(void)
{
    CHECK_OP("u8 absd", PM_U8, PM_U8, PM_U8, pm_absd, ((double[]){3, 250, 7, 0}),
             ((double[]){250, 3, 7, 255}), ((double[]){247, 247, 0, 255}), 0);
    CHECK_OP("u16 absd", PM_U16, PM_U16, PM_U16, pm_absd, ((double[]){0, 65535}),
             ((double[]){65535, 1}), ((double[]){65535, 65534}), 0);
    /* |a - b| of i8 -128 and 127 is 255, which wraps to -1 in i8 (same type) */
    CHECK_OP("i8 absd", PM_I8, PM_I8, PM_I8, pm_absd, ((double[]){-5, 7, -128}),
             ((double[]){7, -5, 127}), ((double[]){12, 12, -1}), 0);
    CHECK_OP("f32 absd", PM_F32, PM_F32, PM_F32, pm_absd, ((double[]){0.25, -1}),
             ((double[]){1, 0.5}), ((double[]){0.75, 1.5}), 0);
    /* shift amounts are taken modulo the bit width */
    CHECK_OP("u8 shl", PM_U8, PM_U8, PM_U8, pm_shl, ((double[]){1, 1, 255, 3}),
             ((double[]){3, 9, 1, 8}), ((double[]){8, 2, 254, 3}), 0);
    CHECK_OP("u8 shr", PM_U8, PM_U8, PM_U8, pm_shr, ((double[]){200, 255, 128}),
             ((double[]){1, 7, 9}), ((double[]){100, 1, 64}), 0);
    CHECK_OP("i8 shr", PM_I8, PM_I8, PM_I8, pm_shr, ((double[]){-128, -1, 64, -7}),
             ((double[]){1, 7, 6, 1}), ((double[]){-64, -1, 1, -4}), 0);
    CHECK_OP("i32 shl", PM_I32, PM_I32, PM_I32, pm_shl, ((double[]){1, 1, 1, 3}),
             ((double[]){33, -1, 31, 30}), ((double[]){2, -2147483648.0, -2147483648.0, -1073741824}),
             0);
    CHECK_OP("i32 shr", PM_I32, PM_I32, PM_I32, pm_shr, ((double[]){-1, -2147483648.0, 1024}),
             ((double[]){31, 4, 35}), ((double[]){-1, -134217728, 128}), 0);
    CHECK_OP("i64 shr", PM_I64, PM_I64, PM_I64, pm_shr, ((double[]){-8, -1e15, 1e15}),
             ((double[]){1, 65, 64}), ((double[]){-4, -5e14, 1e15}), 0);
    CHECK_OP("u32 shr", PM_U32, PM_U32, PM_U32, pm_shr, ((double[]){2147483648.0, 4294967295.0}),
             ((double[]){31, 4}), ((double[]){1, 268435455}), 0);
    CHECK_OP("u16 shr", PM_U16, PM_U16, PM_U16, pm_shr, ((double[]){32768}), ((double[]){15}),
             ((double[]){1}), 0);
    /* (a & b) ^ (a | (b << 4)) */
    CHECK_OP("bitwise", PM_I32, PM_I32, PM_I32, and_or, ((double[]){12, -1}),
             ((double[]){10, 1}), ((double[]){8 ^ (12 | 160), 1 ^ -1}), 0);
}

static void test_select_min_max(void)
{
    CHECK_OP("select", PM_I32, PM_I32, PM_I32, select_lt, ((double[]){3, -3, 5}),
             ((double[]){4, -4, 5}), ((double[]){3, -4, 5}), 0);
    CHECK_OP("bool to number", PM_I32, PM_I32, PM_U8, select_cond, ((double[]){3, -3, 5}),
             ((double[]){4, -4, 5}), ((double[]){0, 1, 2}), 0);
    /* u32 values above 2^31 compare as unsigned */
    CHECK_OP("u32 min", PM_U32, PM_U32, PM_U32, pm_min, ((double[]){4000000000.0, 1}),
             ((double[]){5, 4000000000.0}), ((double[]){5, 1}), 0);
    CHECK_OP("u32 max", PM_U32, PM_U32, PM_U32, pm_max, ((double[]){4000000000.0, 1}),
             ((double[]){5, 4000000000.0}), ((double[]){4000000000.0, 4000000000.0}), 0);
    CHECK_OP("i32 min", PM_I32, PM_I32, PM_I32, pm_min, ((double[]){-2147483648.0, 7}),
             ((double[]){5, -7}), ((double[]){-2147483648.0, -7}), 0);
    CHECK_OP("f32 max", PM_F32, PM_F32, PM_F32, pm_max, ((double[]){-0.5, 3}),
             ((double[]){0.25, -3}), ((double[]){0.25, 3}), 0);
}

static void test_float_arithmetic(void)
{
    /* a * a - b with a = 1 + 2^-12, b = 1 + 2^-11: a * a = 1 + 2^-11 + 2^-24 rounds (to
     * even) to b in f32, so the result is 0; computed in double it would be 2^-24. */
    double a = 1 + ldexp(1, -12), b = 1 + ldexp(1, -11);
    CHECK_OP("f32 rounding", PM_F32, PM_F32, PM_F32, mul_sub, ((double[]){a}), ((double[]){b}),
             ((double[]){0}), 0);
    CHECK_OP("f64 rounding", PM_F64, PM_F64, PM_F64, mul_sub, ((double[]){a}), ((double[]){b}),
             ((double[]){ldexp(1, -24)}), 0);
}

static void test_math(void)
{
    /* expected values from the exact mathematics, to f32 accuracy */
    const double tol = 1e-6;
    CHECK_OP("sqrt", PM_F32, PM_F32, PM_F32, m_sqrt, ((double[]){2, 0, 16, -1}), NULL,
             ((double[]){1.41421356237, 0, 4, NAN}), tol);
    CHECK_OP("exp", PM_F32, PM_F32, PM_F32, m_exp, ((double[]){0, 1, -1}), NULL,
             ((double[]){1, 2.71828182846, 0.36787944117}), tol);
    CHECK_OP("log", PM_F32, PM_F32, PM_F32, m_log, ((double[]){1, 2.71828182846, 0}), NULL,
             ((double[]){0, 1, -INFINITY}), tol);
    CHECK_OP("sin", PM_F32, PM_F32, PM_F32, m_sin, ((double[]){0, 1.57079632679, 0.5}), NULL,
             ((double[]){0, 1, 0.4794255386}), tol);
    CHECK_OP("cos", PM_F32, PM_F32, PM_F32, m_cos, ((double[]){0, 3.14159265359}), NULL,
             ((double[]){1, -1}), tol);
    CHECK_OP("tanh", PM_F32, PM_F32, PM_F32, m_tanh, ((double[]){0, 0.5}), NULL,
             ((double[]){0, 0.46211715726}), tol);
    CHECK_OP("pow", PM_F32, PM_F32, PM_F32, pm_pow, ((double[]){2, 9, 2}), ((double[]){10, 0.5, -1}),
             ((double[]){1024, 3, 0.5}), tol);
    CHECK_OP("atan2", PM_F32, PM_F32, PM_F32, pm_atan2, ((double[]){1, 1, -1}),
             ((double[]){1, 0, -1}), ((double[]){0.78539816340, 1.57079632679, -2.35619449019}),
             tol);
    CHECK_OP("f64 sqrt", PM_F64, PM_F64, PM_F64, m_sqrt, ((double[]){2}), NULL,
             ((double[]){1.4142135623730951}), 1e-15);
    /* an integer argument is converted to f32 first */
    CHECK_OP("sqrt of i32", PM_I32, PM_I32, PM_F32, m_sqrt, ((double[]){9, 2}), NULL,
             ((double[]){3, 1.41421356237}), tol);
    const double r[] = {-1.5, 2.5, -2.5, 0.5, -1.7, 1.2};
    CHECK_OP("floor", PM_F32, PM_F32, PM_F32, m_floor, r, NULL,
             ((double[]){-2, 2, -3, 0, -2, 1}), 0);
    CHECK_OP("ceil", PM_F32, PM_F32, PM_F32, m_ceil, r, NULL, ((double[]){-1, 3, -2, 1, -1, 2}), 0);
    CHECK_OP("round", PM_F32, PM_F32, PM_F32, m_round, r, NULL,
             ((double[]){-2, 3, -3, 1, -2, 1}), 0);
    CHECK_OP("trunc", PM_F32, PM_F32, PM_F32, m_trunc, r, NULL,
             ((double[]){-1, 2, -2, 0, -1, 1}), 0);
}

/* ---- data-dependent reads ----------------------------------------------------------------- */

/* out(x, y) = lut(I(x, y) - 50) + J(I(x, y)) with lut(i) = 3 i + 1 over [0, 99] and J an
 * image of 10 values: out-of-box indices clamp to the nearest end of the box. Then
 * via(x, y) = s(I(x, y)) with s over [1, 21] step 4 (points 1, 5, ..., 21): a coordinate
 * between points reads the point below it. */
static void test_data_dependent(void)
{
    int64_t R = 16, C = 16;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, R), pm_int(ctx, C));
    pm_func *J = pm_image(ctx, "J", PM_I16, pm_int(ctx, 10));
    pm_expr *i = pm_var(ctx, "i"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *lut = pm_func_new(ctx, "lut", PM_I32, 1, pm_exprs(i),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 99), 1)));
    pm_func_define_expr(lut, pm_addi(pm_muli(i, 3), 1));
    pm_func *s = pm_func_new(ctx, "s", PM_I32, 1, pm_exprs(i),
                             pm_intervals(pm_interval_new(pm_int(ctx, 1), pm_int(ctx, 21), 4)));
    pm_func_define_expr(s, pm_muli(i, 10));
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_expr *v = pm_cast(PM_I32, pm_call(I, x, y));
    pm_func_define_expr(out, pm_add(pm_call(lut, pm_addi(v, -50)), pm_call(J, v)));
    pm_func *via = pm_func_new(ctx, "via", PM_I32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(via, pm_call(s, v));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "lut", 0, NULL, 2, (pm_func *const[]){I, J}, 2,
                                   (pm_func *const[]){out, via}, &p);
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  lut: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    int64_t ext[2] = {R, C}, ej[1] = {10};
    pm_buffer in[2] = {check_buffer_new(PM_U8, 2, ext), check_buffer_new(PM_I16, 1, ej)};
    pm_buffer outs[2] = {check_buffer_new(PM_I32, 2, ext), check_buffer_new(PM_I32, 2, ext)};
    for (int64_t k = 0; k < R * C; k++)
        ((uint8_t *)in[0].data)[k] = (uint8_t)k; /* every value 0..255 once */
    for (int k = 0; k < 10; k++)
        ((int16_t *)in[1].data)[k] = (int16_t)(1000 * (k + 1));
    st = pm_interpret(p, NULL, in, outs);
    if (CHECK_STATUS(st, PM_OK)) {
        int bad = 0, bad_via = 0;
        for (int64_t k = 0; k < R * C; k++) {
            int64_t l = k - 50 < 0 ? 0 : k - 50 > 99 ? 99 : k - 50;
            int64_t j = k > 9 ? 9 : k;
            bad += ((int32_t *)outs[0].data)[k] != 3 * l + 1 + 1000 * (j + 1);
            /* the point of s at or below k, within 1 .. 21 */
            int64_t pt = k < 1 ? 1 : k > 21 ? 21 : 1 + (k - 1) / 4 * 4;
            bad_via += ((int32_t *)outs[1].data)[k] != 10 * pt;
        }
        CHECK(bad == 0);
        CHECK(bad_via == 0);
        /* spot checks written out: I = 0 reads lut(0) (clamped from -50) and J(0) */
        CHECK(((int32_t *)outs[0].data)[0] == 1 + 1000);
        CHECK(((int32_t *)outs[0].data)[255] == 3 * 99 + 1 + 10000);
        CHECK(((int32_t *)outs[1].data)[7] == 50);
    } else {
        fprintf(stderr, "  lut: %s\n", pm_ctx_errmsg(ctx));
    }
    for (int k = 0; k < 2; k++) {
        check_buffer_free(&in[k]);
        check_buffer_free(&outs[k]);
    }
    pm_ctx_free(ctx);
}

/* ---- stepped domains --------------------------------------------------------------------- */

/* f(x) = 10 x on x = 1, 3, ..., 11 (step 2, buffer index (x - 1) / 2); g(x) = f(2 x + 1)
 * on [0, 5]; h(x) = f(x) + 1 on [3, 9] step 3 (points 3, 6, 9: 6 is not a point of f,
 * yet static; validation may reject it, so h reads only f's points via 3 + 2k). */
static void test_steps(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 1));
    pm_expr *x = pm_var(ctx, "x");
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 1), pm_int(ctx, 11), 2)));
    pm_func_define_expr(f, pm_add(pm_muli(x, 10), pm_call(I, pm_int(ctx, 0))));
    pm_func *g = pm_func_new(ctx, "g", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 5), 1)));
    pm_func_define_expr(g, pm_call(f, pm_addi(pm_muli(x, 2), 1)));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "steps", 0, NULL, 1, &I, 2, (pm_func *const[]){f, g}, &p);
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  steps: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    int ndims;
    int64_t shape[PM_MAX_DIMS];
    CHECK_STATUS(pm_pipeline_buffer_shape(p, 1, 0, NULL, &ndims, shape), PM_OK);
    CHECK(ndims == 1 && shape[0] == 6);
    int64_t e1[1] = {1}, e6[1] = {6};
    pm_buffer in = check_buffer_new(PM_I32, 1, e1);
    pm_buffer outs[2] = {check_buffer_new(PM_I32, 1, e6), check_buffer_new(PM_I32, 1, e6)};
    ((int32_t *)in.data)[0] = 7;
    if (CHECK_STATUS(pm_interpret(p, NULL, &in, outs), PM_OK)) {
        static const int32_t want[6] = {17, 37, 57, 77, 97, 117};
        CHECK(memcmp(outs[0].data, want, sizeof want) == 0);
        CHECK(memcmp(outs[1].data, want, sizeof want) == 0);
    }
    check_buffer_free(&in);
    check_buffer_free(&outs[0]);
    check_buffer_free(&outs[1]);
    pm_ctx_free(ctx);
}

/* ---- buffer views -------------------------------------------------------------------------- */

/* out(x, y) = 2 I(x, y) + y over R x C, read from a crop of a larger picture and written
 * into (a) a padded-row view of a larger allocation and (b) a transposed view. */
static void test_views(void)
{
    int64_t R = 5, C = 7, BIG_R = 9, BIG_C = 12, X0 = 2, Y0 = 3;
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *Rp = pm_param(ctx, PM_I32, "R"), *Cp = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_I16, Rp, Cp);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(Rp, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(Cp, -1), 1);
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_add(pm_muli(pm_cast(PM_I32, pm_call(I, x, y)), 2), y));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "views", 2, pm_exprs(Rp, Cp), 1, &I, 1, &out, &p);
    if (!CHECK_STATUS(st, PM_OK)) {
        pm_ctx_free(ctx);
        return;
    }
    int16_t *big = malloc(sizeof(int16_t) * (size_t)(BIG_R * BIG_C));
    for (int64_t k = 0; k < BIG_R * BIG_C; k++)
        big[k] = (int16_t)(k * 37 % 1000 - 500);
    pm_buffer in = pm_buffer_dense(big + X0 * BIG_C + Y0, PM_I16, 2, (int64_t[]){R, C});
    in.stride[0] = BIG_C; /* a crop: rows of the large picture */
    in.stride[1] = 1;
    pm_value params[2] = {PM_I(R), PM_I(C)};

    /* (a) rows padded to 10 elements, inside a sentinel-filled allocation */
    int64_t pad = 10;
    int32_t *mem = malloc(sizeof(int32_t) * (size_t)(R * pad));
    for (int64_t k = 0; k < R * pad; k++)
        mem[k] = -777;
    pm_buffer padded = pm_buffer_dense(mem, PM_I32, 2, (int64_t[]){R, C});
    padded.stride[0] = pad;
    if (CHECK_STATUS(pm_interpret(p, params, &in, &padded), PM_OK)) {
        int bad = 0, touched = 0;
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < pad; j++) {
                int32_t got = mem[i * pad + j];
                if (j < C)
                    bad += got != 2 * big[(i + X0) * BIG_C + j + Y0] + j;
                else
                    touched += got != -777;
            }
        CHECK(bad == 0);
        CHECK(touched == 0);
    } else {
        fprintf(stderr, "  views: %s\n", pm_ctx_errmsg(ctx));
    }

    /* (b) transposed: element (x, y) at y * R + x */
    int32_t *tr = calloc((size_t)(R * C), sizeof(int32_t));
    pm_buffer trans = pm_buffer_dense(tr, PM_I32, 2, (int64_t[]){R, C});
    trans.stride[0] = 1;
    trans.stride[1] = R;
    if (CHECK_STATUS(pm_interpret(p, params, &in, &trans), PM_OK)) {
        int bad = 0;
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++)
                bad += tr[j * R + i] != 2 * big[(i + X0) * BIG_C + j + Y0] + j;
        CHECK(bad == 0);
    }

    /* (c) a view whose strides reach outside its extents' dense size is still fine, but
     * an output overlapping the input is refused */
    pm_buffer overlap = pm_buffer_dense(big, PM_I32, 2, (int64_t[]){R, C});
    st = pm_interpret(p, params, &in, &overlap);
    CHECK_STATUS(st, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "overlaps");
    free(big);
    free(mem);
    free(tr);
    pm_ctx_free(ctx);
}

/* ---- argument errors ------------------------------------------------------------------------ */

static void test_errors(void)
{
    CHECK_STATUS(pm_interpret(NULL, NULL, NULL, NULL), PM_ERR_MISUSE);

    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *k = pm_param(ctx, PM_U8, "k");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_add(pm_call(I, x, y), k));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "errors", 3, pm_exprs(R, C, k), 1, &I, 1, &out, &p), PM_OK);
    if (!p) {
        pm_ctx_free(ctx);
        return;
    }
    int64_t ext[2] = {4, 6};
    pm_buffer in = check_buffer_new(PM_F32, 2, ext), res = check_buffer_new(PM_F32, 2, ext);
    float *o = res.data;
    for (int i = 0; i < 24; i++)
        o[i] = -1;
    pm_value params[3] = {PM_I(4), PM_I(6), PM_I(2)};

    CHECK_STATUS(pm_interpret(p, params, &in, &res), PM_OK);
    CHECK(o[0] == 2.0f); /* in is zeroed, k = 2 */
    for (int i = 0; i < 24; i++)
        o[i] = -1;

    /* wrong element type */
    pm_buffer wrong_type = in;
    wrong_type.type = PM_F64;
    CHECK_STATUS(pm_interpret(p, params, &wrong_type, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "input buffer I has type f64");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "f32[4][6]");

    /* wrong extents (output) */
    pm_buffer wrong_shape = res;
    wrong_shape.extent[1] = 5;
    CHECK_STATUS(pm_interpret(p, params, &in, &wrong_shape), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer out is f32[4][5]; expected f32[4][6]");

    /* wrong number of dimensions */
    pm_buffer flat = pm_buffer_dense(in.data, PM_F32, 1, (int64_t[]){24});
    CHECK_STATUS(pm_interpret(p, params, &flat, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "1 dimension");

    /* NULL data */
    pm_buffer no_data = in;
    no_data.data = NULL;
    CHECK_STATUS(pm_interpret(p, params, &no_data, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "input buffer I has no data");

    /* a negative image extent */
    pm_value negative[3] = {PM_I(-3), PM_I(6), PM_I(2)};
    CHECK_STATUS(pm_interpret(p, negative, &in, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "image I would have extent -3");

    /* a parameter value that does not fit its type */
    pm_value too_big[3] = {PM_I(4), PM_I(6), PM_I(300)};
    CHECK_STATUS(pm_interpret(p, too_big, &in, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "parameter k = 300 does not fit its type u8");

    /* missing lists */
    CHECK_STATUS(pm_interpret(p, NULL, &in, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "parameter values are NULL");
    CHECK_STATUS(pm_interpret(p, params, NULL, &res), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "input buffer list is NULL");
    CHECK_STATUS(pm_interpret(p, params, &in, NULL), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer list is NULL");

    /* none of the refused calls wrote anything */
    int touched = 0;
    for (int i = 0; i < 24; i++)
        touched += o[i] != -1;
    CHECK(touched == 0);

    /* an empty image (R = 0) is a valid argument with NULL data: nothing to compute */
    pm_value empty[3] = {PM_I(0), PM_I(6), PM_I(2)};
    pm_buffer in0 = pm_buffer_dense(NULL, PM_F32, 2, (int64_t[]){0, 6});
    pm_buffer out0 = pm_buffer_dense(NULL, PM_F32, 2, (int64_t[]){0, 6});
    CHECK_STATUS(pm_interpret(p, empty, &in0, &out0), PM_OK);

    check_buffer_free(&in);
    check_buffer_free(&res);
    pm_ctx_free(ctx);
}

int main(void)
{
    test_wrap_around();
    test_division();
    test_casts();
    test_absd_shifts_bits();
    test_select_min_max();
    test_float_arithmetic();
    test_math();
    test_data_dependent();
    test_steps();
    test_views();
    test_errors();
    return check_finish("test_interp_types");
}
