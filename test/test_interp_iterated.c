/* test_interp_iterated.c — self-referencing functions in the interpreter against plain C
 * loops: a time-iterated 3-point stencil f(t, x) (in f32, with the operation order
 * mirrored so the comparison is exact, and in i32 with floor division of negative sums),
 * and a summed-area table that refers to itself along both dimensions. */
#include "check.h"

#include <stdlib.h>
#include <string.h>

/* f(0, x) = I(x); for t >= 1: (f(t-1, x-1) + f(t-1, x) + f(t-1, x+1)) / 3 inside,
 * (f(t-1, 0) + f(t-1, 1)) / 2 at x = 0 and (f(t-1, N-2) + f(t-1, N-1)) / 2 at x = N-1,
 * f(t-1, 0) when N = 1.
 * Outputs: the whole history f over [0, T] x [0, N-1] and last(x) = f(T, x). */
static pm_pipeline *build_heat(pm_ctx *ctx, pm_type type)
{
    pm_expr *T = pm_param(ctx, PM_I32, "T"), *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", type, N);
    pm_expr *t = pm_var(ctx, "t"), *x = pm_var(ctx, "x");
    pm_interval *times = pm_interval_new(pm_int(ctx, 0), T, 1);
    pm_interval *space = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *f = pm_func_new(ctx, "f", type, 2, pm_exprs(t, x), pm_intervals(times, space));
    pm_expr *tp = pm_addi(t, -1);
    pm_expr *left = pm_call(f, tp, pm_addi(x, -1)), *mid = pm_call(f, tp, x);
    pm_expr *right = pm_call(f, tp, pm_addi(x, 1));
    pm_expr *three = pm_int(ctx, 3), *two = pm_int(ctx, 2);
    pm_expr *later = pm_ge(t, pm_int(ctx, 1));
    pm_expr *first = pm_eq(x, pm_int(ctx, 0)), *final = pm_eq(x, pm_addi(N, -1));
    /* The boundary cases are written so no two overlap and no read leaves the domain for
     * any N >= 1 (validation checks all of them): N = 1 has a case of its own. */
    pm_define(f, pm_case_new(pm_eq(t, pm_int(ctx, 0)), pm_call(I, x)),
              pm_case_new(pm_and(later, pm_between(x, pm_int(ctx, 1), pm_addi(N, -2))),
                          pm_div(pm_add(pm_add(left, mid), right), three)),
              pm_case_new(pm_and(later, pm_and(first, pm_le(x, pm_addi(N, -2)))),
                          pm_div(pm_add(mid, right), two)),
              pm_case_new(pm_and(later, pm_and(final, pm_ge(x, pm_int(ctx, 1)))),
                          pm_div(pm_add(left, mid), two)),
              pm_case_new(pm_and(later, pm_and(first, final)), mid));
    pm_func *last = pm_func_new(ctx, "last", type, 1, pm_exprs(x), pm_intervals(space));
    /* T is in no image extent, so nothing else tells validation that T >= 0 */
    pm_define(last, pm_case_new(pm_ge(T, pm_int(ctx, 0)), pm_call(f, T, x)));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "heat", 2, pm_exprs(T, N), 1, &I, 2,
                                   (pm_func *const[]){f, last}, &p);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  heat: %s\n", pm_ctx_errmsg(ctx));
    return p;
}

static int32_t floor_div(int32_t a, int32_t b)
{
    int32_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static void heat_reference_f32(int64_t T, int64_t N, const float *in, float *h)
{
    for (int64_t x = 0; x < N; x++)
        h[x] = in[x];
    for (int64_t t = 1; t <= T; t++) {
        const float *p = h + (t - 1) * N;
        float *q = h + t * N;
        for (int64_t x = 0; x < N; x++) {
            if (N == 1)
                q[x] = p[0];
            else if (x == 0)
                q[x] = (p[0] + p[1]) / 2.0f;
            else if (x == N - 1)
                q[x] = (p[N - 2] + p[N - 1]) / 2.0f;
            else
                q[x] = (p[x - 1] + p[x] + p[x + 1]) / 3.0f;
        }
    }
}

static void heat_reference_i32(int64_t T, int64_t N, const int32_t *in, int32_t *h)
{
    for (int64_t x = 0; x < N; x++)
        h[x] = in[x];
    for (int64_t t = 1; t <= T; t++) {
        const int32_t *p = h + (t - 1) * N;
        int32_t *q = h + t * N;
        for (int64_t x = 0; x < N; x++) {
            if (N == 1)
                q[x] = p[0];
            else if (x == 0)
                q[x] = floor_div(p[0] + p[1], 2);
            else if (x == N - 1)
                q[x] = floor_div(p[N - 2] + p[N - 1], 2);
            else
                q[x] = floor_div(p[x - 1] + p[x] + p[x + 1], 3);
        }
    }
}

static void test_heat(pm_type type, int64_t T, int64_t N, unsigned seed)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_heat(ctx, type);
    int64_t ein[1] = {N}, ehist[2] = {T + 1, N};
    pm_buffer in = check_buffer_new(type, 1, ein);
    pm_buffer outs[2] = {check_buffer_new(type, 2, ehist), check_buffer_new(type, 1, ein)};
    check_fill(&in, seed, false);
    if (type == PM_I32) /* values of both signs, small enough that sums cannot overflow */
        for (int64_t x = 0; x < N; x++)
            ((int32_t *)in.data)[x] = ((int32_t *)in.data)[x] % 100000;
    size_t esize = pm_type_size(type);
    char *want = calloc((size_t)((T + 1) * N), esize);
    if (type == PM_F32)
        heat_reference_f32(T, N, in.data, (float *)want);
    else
        heat_reference_i32(T, N, in.data, (int32_t *)want);
    pm_value params[2] = {PM_I(T), PM_I(N)};
    if (p && CHECK_STATUS(pm_interpret(p, params, &in, outs), PM_OK)) {
        if (!CHECK(memcmp(want, outs[0].data, (size_t)((T + 1) * N) * esize) == 0))
            fprintf(stderr, "  heat %s T=%lld N=%lld: history differs\n", pm_type_name(type),
                    (long long)T, (long long)N);
        CHECK(memcmp(want + (size_t)(T * N) * esize, outs[1].data, (size_t)N * esize) == 0);
    } else if (p) {
        fprintf(stderr, "  heat: %s\n", pm_ctx_errmsg(ctx));
    }
    free(want);
    check_buffer_free(&in);
    check_buffer_free(&outs[0]);
    check_buffer_free(&outs[1]);
    pm_ctx_free(ctx);
}

/* s(x, y) = sum of I over [0, x] x [0, y], defined by its recurrence on itself. */
static void test_summed_area(int64_t R, int64_t C, unsigned seed)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *Rp = pm_param(ctx, PM_I32, "R"), *Cp = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, Rp, Cp);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(Rp, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(Cp, -1), 1);
    pm_func *s = pm_func_new(ctx, "s", PM_I32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_expr *v = pm_cast(PM_I32, pm_call(I, x, y));
    pm_expr *zero = pm_int(ctx, 0);
    pm_expr *up = pm_call(s, pm_addi(x, -1), y), *west = pm_call(s, x, pm_addi(y, -1));
    pm_expr *diag = pm_call(s, pm_addi(x, -1), pm_addi(y, -1));
    pm_define(s, pm_case_new(pm_and(pm_eq(x, zero), pm_eq(y, zero)), v),
              pm_case_new(pm_and(pm_eq(x, zero), pm_gt(y, zero)), pm_add(west, v)),
              pm_case_new(pm_and(pm_gt(x, zero), pm_eq(y, zero)), pm_add(up, v)),
              pm_case_new(pm_and(pm_gt(x, zero), pm_gt(y, zero)),
                          pm_sub(pm_add(pm_add(up, west), v), diag)));
    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "sat", 2, pm_exprs(Rp, Cp), 1, &I, 1, &s, &p);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  sat: %s\n", pm_ctx_errmsg(ctx));
    int64_t ext[2] = {R, C};
    pm_buffer in = check_buffer_new(PM_U8, 2, ext), out = check_buffer_new(PM_I32, 2, ext);
    check_fill(&in, seed, false);
    pm_value params[2] = {PM_I(R), PM_I(C)};
    if (p && CHECK_STATUS(pm_interpret(p, params, &in, &out), PM_OK)) {
        /* the reference sums rows first, then columns: no recurrence shared with s */
        int32_t *want = calloc((size_t)(R * C), sizeof *want);
        const uint8_t *px = in.data;
        for (int64_t i = 0; i < R; i++) {
            int32_t row = 0;
            for (int64_t j = 0; j < C; j++) {
                row += px[i * C + j];
                want[i * C + j] = row + (i > 0 ? want[(i - 1) * C + j] : 0);
            }
        }
        CHECK(memcmp(want, out.data, (size_t)(R * C) * sizeof *want) == 0);
        /* the corner holds the sum of the whole image */
        int64_t total = 0;
        for (int64_t k = 0; k < R * C; k++)
            total += px[k];
        CHECK(((int32_t *)out.data)[R * C - 1] == total);
        free(want);
    } else if (p) {
        fprintf(stderr, "  sat: %s\n", pm_ctx_errmsg(ctx));
    }
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_ctx_free(ctx);
}

int main(void)
{
    static const int64_t heat[][2] = {{0, 2}, {3, 1}, {1, 2}, {5, 3}, {20, 17}, {64, 100}};
    for (size_t i = 0; i < sizeof heat / sizeof heat[0]; i++) {
        test_heat(PM_F32, heat[i][0], heat[i][1], (unsigned)i + 1);
        test_heat(PM_I32, heat[i][0], heat[i][1], (unsigned)i + 40);
    }
    static const int64_t sat[][2] = {{1, 1}, {1, 9}, {8, 1}, {13, 29}, {128, 96}};
    for (size_t i = 0; i < sizeof sat / sizeof sat[0]; i++)
        test_summed_area(sat[i][0], sat[i][1], (unsigned)i + 100);
    return check_finish("test_interp_iterated");
}
