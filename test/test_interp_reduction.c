/* test_interp_reduction.c — reductions in the interpreter against plain C loops:
 * a 256-bin histogram of a u8 image, every reduction operation, updates whose index
 * falls outside the variable domain (skipped, also between the points of a stepped
 * domain), non-zero initial values, and a reduction feeding a cumulative sum. */
#include "check.h"

#include <stdlib.h>
#include <string.h>

static pm_pipeline *build(pm_ctx *ctx, const char *name, int nparams, pm_expr *const *params,
                          pm_func *in, pm_func *out)
{
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, name, nparams, params, 1, &in, 1, &out, &p);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(ctx));
    return p;
}

static bool run(pm_ctx *ctx, pm_pipeline *p, const pm_value *params, pm_buffer *in,
                pm_buffer *out)
{
    if (!p)
        return false;
    pm_status st = pm_interpret(p, params, in, out);
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  %s: %s\n", pm_pipeline_name(p), pm_ctx_errmsg(ctx));
        return false;
    }
    return true;
}

/* hist(I(x, y)) += 1 over a u8 image: every bin counted by a loop. */
static void test_histogram(int64_t R, int64_t C, unsigned seed)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *Rp = pm_param(ctx, PM_I32, "R"), *Cp = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, Rp, Cp);
    pm_expr *b = pm_var(ctx, "b"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(Rp, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(Cp, -1), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, pm_exprs(b), pm_intervals(bins), 2,
                                     pm_exprs(x, y), pm_intervals(rows, cols), PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_call(I, x, y)), pm_int(ctx, 1));
    pm_pipeline *p = build(ctx, "histogram", 2, pm_exprs(Rp, Cp), I, hist);

    int64_t ein[2] = {R, C}, eout[1] = {256};
    pm_buffer in = check_buffer_new(PM_U8, 2, ein), out = check_buffer_new(PM_I32, 1, eout);
    check_fill(&in, seed, false);
    memset(out.data, 0x5a, 256 * sizeof(int32_t)); /* every bin must be initialized */
    pm_value params[2] = {PM_I(R), PM_I(C)};
    if (run(ctx, p, params, &in, &out)) {
        int32_t want[256] = {0};
        const uint8_t *px = in.data;
        for (int64_t i = 0; i < R * C; i++)
            want[px[i]]++;
        CHECK(memcmp(want, out.data, sizeof want) == 0);
        int64_t total = 0;
        for (int i = 0; i < 256; i++)
            total += ((int32_t *)out.data)[i];
        CHECK(total == R * C);
    }
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_ctx_free(ctx);
}

/* col(y) = op over x of I(x, y) for an i32 image (small values, full-range ones for and /
 * or), starting at `initial`. */
static void test_column_op(pm_reduce_op op, int64_t initial, unsigned seed)
{
    pm_type type = PM_I32;
    static const char *names[] = {"sum", "product", "min", "max", "and", "or"};
    int64_t R = 9, C = 23;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", type, pm_int(ctx, R), pm_int(ctx, C));
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    pm_expr *yy = pm_var(ctx, "yy");
    pm_interval *rcols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    /* reduces over (x, yy) and writes at index yy: a column reduction */
    pm_func *colr = pm_reduction_new(ctx, "colr", type, 1, pm_exprs(y), pm_intervals(cols), 2,
                                     pm_exprs(x, yy), pm_intervals(rows, rcols), op,
                                     pm_const(ctx, type, (double)initial));
    pm_reduction_define(colr, 1, pm_exprs(yy), pm_call(I, x, yy));
    pm_pipeline *p = build(ctx, names[op], 0, NULL, I, colr);

    int64_t ein[2] = {R, C}, eout[1] = {C};
    pm_buffer in = check_buffer_new(type, 2, ein), out = check_buffer_new(type, 1, eout);
    check_fill(&in, seed, op != PM_REDUCE_AND && op != PM_REDUCE_OR);
    if (run(ctx, p, NULL, &in, &out)) {
        int bad = 0;
        for (int64_t yv = 0; yv < C; yv++) {
            /* uint32 arithmetic wraps like i32 (two's complement) */
            uint32_t acc = (uint32_t)initial;
            for (int64_t xv = 0; xv < R; xv++) {
                uint32_t v = (uint32_t)((int32_t *)in.data)[xv * C + yv];
                switch (op) {
                case PM_REDUCE_SUM: acc += v; break;
                case PM_REDUCE_PRODUCT: acc *= v; break;
                case PM_REDUCE_MIN: acc = (int32_t)v < (int32_t)acc ? v : acc; break;
                case PM_REDUCE_MAX: acc = (int32_t)v > (int32_t)acc ? v : acc; break;
                case PM_REDUCE_AND: acc &= v; break;
                case PM_REDUCE_OR: acc |= v; break;
                }
            }
            bad += (int32_t)acc != ((int32_t *)out.data)[yv];
        }
        if (!CHECK(bad == 0))
            fprintf(stderr, "  reduction %s: %d columns differ\n", names[op], bad);
    }
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_ctx_free(ctx);
}

/* Product of u8 values wraps mod 256; an f32 sum follows the reduction order exactly. */
static void test_wrapping_and_float(void)
{
    int64_t N = 40;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_int(ctx, N));
    pm_expr *i = pm_var(ctx, "i"), *r = pm_var(ctx, "r");
    pm_interval *one = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 1), 1);
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, N - 1), 1);
    /* s(k) = 0.1 + the f32 sum of I(r) for r % 2 == k, in order; prod(k) = the u8
     * product of (u8)(I(r) * 255 + 1): two outputs of one pipeline. */
    pm_func *s = pm_reduction_new(ctx, "s", PM_F32, 1, pm_exprs(i), pm_intervals(one), 1,
                                  pm_exprs(r), pm_intervals(all), PM_REDUCE_SUM,
                                  pm_float(ctx, 0.1));
    pm_reduction_define(s, 1, pm_exprs(pm_mod(r, pm_int(ctx, 2))), pm_call(I, r));
    pm_func *prod = pm_reduction_new(ctx, "prod", PM_U8, 1, pm_exprs(i), pm_intervals(one), 1,
                                     pm_exprs(r), pm_intervals(all), PM_REDUCE_PRODUCT,
                                     pm_int(ctx, 1));
    pm_reduction_define(prod, 1, pm_exprs(pm_mod(r, pm_int(ctx, 2))),
                        pm_cast(PM_U8, pm_addi(pm_cast(PM_I32, pm_mulf(pm_call(I, r), 255)), 1)));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "wrap", 0, NULL, 1, &I, 2, (pm_func *const[]){s, prod}, &p);
    CHECK_STATUS(st, PM_OK);
    int64_t ein[1] = {N}, eout[1] = {2};
    pm_buffer in = check_buffer_new(PM_F32, 1, ein);
    pm_buffer outs[2] = {check_buffer_new(PM_F32, 1, eout), check_buffer_new(PM_U8, 1, eout)};
    check_fill(&in, 7, false);
    if (p && CHECK_STATUS(pm_interpret(p, NULL, &in, outs), PM_OK)) {
        const float *v = in.data;
        float sum[2] = {0.1f, 0.1f};
        uint8_t pr[2] = {1, 1};
        for (int64_t k = 0; k < N; k++) {
            sum[k % 2] = sum[k % 2] + v[k];
            pr[k % 2] = (uint8_t)(pr[k % 2] * (uint8_t)((int32_t)(v[k] * 255.0f) + 1));
        }
        CHECK(memcmp(sum, outs[0].data, sizeof sum) == 0);
        CHECK(memcmp(pr, outs[1].data, sizeof pr) == 0);
    } else if (p) {
        fprintf(stderr, "  wrap: %s\n", pm_ctx_errmsg(ctx));
    }
    check_buffer_free(&in);
    check_buffer_free(&outs[0]);
    check_buffer_free(&outs[1]);
    pm_ctx_free(ctx);
}

/* A histogram over bins [lo, hi] with a step and a non-zero initial: values outside the
 * bins, and values between the points of a stepped domain, are skipped. */
static void test_skipped_updates(int64_t lo, int64_t hi, int64_t step, int64_t initial)
{
    int64_t R = 17, C = 29;
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *init = pm_param(ctx, PM_I32, "init");
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, R), pm_int(ctx, C));
    pm_expr *b = pm_var(ctx, "b"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *bins = pm_interval_new(pm_int(ctx, lo), pm_int(ctx, hi), step);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_U16, 1, pm_exprs(b), pm_intervals(bins), 2,
                                     pm_exprs(x, y), pm_intervals(rows, cols), PM_REDUCE_SUM, init);
    /* index I - 20 reaches below 0 and beyond 235: both ends are exercised */
    pm_reduction_define(hist, 1, pm_exprs(pm_addi(pm_cast(PM_I32, pm_call(I, x, y)), -20)),
                        pm_int(ctx, 1));
    pm_pipeline *p = build(ctx, "skipped", 1, pm_exprs(init), I, hist);
    int64_t nb = (hi - lo) / step + 1;
    int64_t ein[2] = {R, C}, eout[1] = {nb};
    pm_buffer in = check_buffer_new(PM_U8, 2, ein), out = check_buffer_new(PM_U16, 1, eout);
    check_fill(&in, (unsigned)(lo + 3 * step), false);
    pm_value params[1] = {PM_I(initial)};
    if (run(ctx, p, params, &in, &out)) {
        uint16_t *want = calloc((size_t)nb, sizeof *want);
        for (int64_t k = 0; k < nb; k++)
            want[k] = (uint16_t)initial;
        int64_t skipped = 0;
        const uint8_t *px = in.data;
        for (int64_t k = 0; k < R * C; k++) {
            int64_t v = px[k] - 20;
            if (v < lo || v > hi || (v - lo) % step != 0) {
                skipped++;
                continue;
            }
            want[(v - lo) / step]++;
        }
        CHECK(skipped > 0);
        CHECK(memcmp(want, out.data, (size_t)nb * sizeof *want) == 0);
        free(want);
    }
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_ctx_free(ctx);
}

/* cdf(b) = hist(0) for b = 0, cdf(b - 1) + hist(b) after: a reduction consumed by a
 * self-referencing function (histogram equalization's first half). */
static void test_cdf(void)
{
    int64_t R = 31, C = 7;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, R), pm_int(ctx, C));
    pm_expr *b = pm_var(ctx, "b"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, pm_exprs(b), pm_intervals(bins), 2,
                                     pm_exprs(x, y), pm_intervals(rows, cols), PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_call(I, x, y)), pm_int(ctx, 1));
    pm_func *cdf = pm_func_new(ctx, "cdf", PM_I32, 1, pm_exprs(b), pm_intervals(bins));
    pm_define(cdf, pm_case_new(pm_eq(b, pm_int(ctx, 0)), pm_call(hist, b)),
              pm_case_new(pm_gt(b, pm_int(ctx, 0)),
                          pm_add(pm_call(cdf, pm_addi(b, -1)), pm_call(hist, b))));
    pm_pipeline *p = build(ctx, "cdf", 0, NULL, I, cdf);
    int64_t ein[2] = {R, C}, eout[1] = {256};
    pm_buffer in = check_buffer_new(PM_U8, 2, ein), out = check_buffer_new(PM_I32, 1, eout);
    check_fill(&in, 11, false);
    if (run(ctx, p, NULL, &in, &out)) {
        int32_t want[256] = {0};
        const uint8_t *px = in.data;
        for (int64_t k = 0; k < R * C; k++)
            want[px[k]]++;
        for (int k = 1; k < 256; k++)
            want[k] += want[k - 1];
        CHECK(memcmp(want, out.data, sizeof want) == 0);
        CHECK(((int32_t *)out.data)[255] == R * C);
    }
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_ctx_free(ctx);
}

/* A reduction with no dimensions: the i64 sum of a whole image into one value. */
static void test_scalar_sum(void)
{
    int64_t R = 19, C = 23;
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, R), pm_int(ctx, C));
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, R - 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, C - 1), 1);
    pm_func *total = pm_reduction_new(ctx, "total", PM_I64, 0, NULL, NULL, 2, pm_exprs(x, y),
                                      pm_intervals(rows, cols), PM_REDUCE_SUM, NULL);
    pm_reduction_define(total, 0, NULL, pm_cast(PM_I64, pm_call(I, x, y)));
    pm_pipeline *p = build(ctx, "total", 0, NULL, I, total);
    int64_t ein[2] = {R, C};
    pm_buffer in = check_buffer_new(PM_I32, 2, ein);
    int64_t got = -1;
    pm_buffer out = pm_buffer_dense(&got, PM_I64, 0, NULL);
    check_fill(&in, 13, false);
    if (run(ctx, p, NULL, &in, &out)) {
        int64_t want = 0;
        for (int64_t k = 0; k < R * C; k++)
            want += ((int32_t *)in.data)[k];
        CHECK(got == want);
    }
    check_buffer_free(&in);
    pm_ctx_free(ctx);
}

int main(void)
{
    test_histogram(1, 1, 1);
    test_histogram(37, 53, 2);
    test_histogram(256, 320, 3);
    test_column_op(PM_REDUCE_SUM, 0, 4);
    test_column_op(PM_REDUCE_SUM, -1000, 5);
    test_column_op(PM_REDUCE_PRODUCT, 1, 6);   /* wraps: 9 factors up to 255 */
    test_column_op(PM_REDUCE_MIN, 1000, 7);
    test_column_op(PM_REDUCE_MIN, 3, 8);       /* initial below most values */
    test_column_op(PM_REDUCE_MAX, -5, 9);
    test_column_op(PM_REDUCE_AND, -1, 10);
    test_column_op(PM_REDUCE_OR, 0, 11);
    test_column_op(PM_REDUCE_OR, 0x40000000, 12);
    test_wrapping_and_float();
    test_skipped_updates(0, 255, 1, 0);
    test_skipped_updates(10, 100, 1, 1000);
    test_skipped_updates(0, 254, 2, 7);   /* odd values fall between the bins */
    test_skipped_updates(-50, 40, 3, 65535);
    test_cdf();
    test_scalar_sum();
    return check_finish("test_interp_reduction");
}
