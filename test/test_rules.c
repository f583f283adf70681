/* test_rules.c — the rules users trip on (docs/language.md "Rules that surprise"), each
 * checked where the library states it, interpreted and compiled:
 *  - an interval's upper bound is inclusive, an image takes extents: a buffer sized the
 *    other way is PM_ERR_ARGUMENT whose message says which rule;
 *  - an output buffer is indexed from the domain's lower bound;
 *  - pm_stencil's kernel columns move the first coordinate x, its rows y;
 *  - u8 arithmetic wraps (200 + 100 = 44) unless widened with pm_cast;
 *  - a zero-dimensional reduction is one value, in a 0-dimensional buffer. */
#include "check.h"

#include <stdio.h>
#include <string.h>

static pm_jit *jit;

/* Runs p interpreted and compiled on the same buffers (the output is written twice and
 * compared); returns the status of the compiled run and its message in err. */
static pm_status both(pm_ctx *ctx, pm_pipeline *p, const pm_value *params, const pm_buffer *in,
                      pm_buffer *out, size_t out_bytes, pm_error *err)
{
    unsigned char saved[4096];
    pm_status si = pm_interpret(p, params, in, out);
    if (si == PM_OK && out_bytes <= sizeof saved)
        memcpy(saved, out->data, out_bytes);
    pm_kernel *k = pm_jit_compile(jit, p, params, NULL, err);
    if (!CHECK(k != NULL))
        return err->status;
    memset(out->data, 0x5A, out_bytes);
    pm_status sc = pm_kernel_run(k, params, in, out, err);
    CHECK(sc == si);
    if (si == PM_OK && sc == PM_OK)
        CHECK(memcmp(saved, out->data, out_bytes) == 0);
    else
        CHECK(strcmp(pm_ctx_errmsg(ctx), err->message) == 0); /* the same message */
    pm_kernel_free(k);
    return sc;
}

static void test_extent_vs_bound(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_expr *x = pm_var(ctx, "x");
    /* f over [2, N-1]: N-2 points, stored from index 0 = coordinate 2 */
    pm_interval *iv = pm_interval_new(pm_int(ctx, 2), pm_addi(N, -1), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, &x, &iv);
    pm_func_define_expr(f, pm_muli(pm_call(I, x), 10));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "rules", 1, &N, 1, &I, 1, &f, &p), PM_OK);
    int32_t in[8] = {0, 1, 2, 3, 4, 5, 6, 7}, out[8];
    pm_value params[] = {PM_I(8)};
    pm_buffer bi = pm_buffer_dense(in, PM_I32, 1, (const int64_t[]){8});
    pm_buffer bo = pm_buffer_dense(out, PM_I32, 1, (const int64_t[]){6});
    pm_error err;
    CHECK_STATUS(both(ctx, p, params, &bi, &bo, 6 * sizeof *out, &err), PM_OK);
    CHECK(out[0] == 20 && out[5] == 70); /* index 0 is coordinate 2, the lower bound */
    /* the output sized as if the bound were exclusive (7) or indexed from 0 (8) */
    for (int64_t wrong = 7; wrong <= 8; wrong++) {
        bo.extent[0] = wrong;
        CHECK_STATUS(both(ctx, p, params, &bi, &bo, 6 * sizeof *out, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "expected i32[6]");
        CHECK_CONTAINS(err.message, "[2, 7]");
        CHECK_CONTAINS(err.message, "upper bound is inclusive");
        CHECK_CONTAINS(err.message, "index 0 is the lower bound 2");
        CHECK_CONTAINS(err.message, "(dimension 0 of f is the interval [2, 7]"); /* from 0 */
    }
    /* the image sized as if it took an inclusive bound (7 for an extent of 8) */
    bo.extent[0] = 6;
    bi.extent[0] = 7;
    CHECK_STATUS(both(ctx, p, params, &bi, &bo, 6 * sizeof *out, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "(dimension 0 of image I has extent 8");
    CHECK_CONTAINS(err.message, "covering 0 .. 7");
    CHECK_CONTAINS(err.message, "not an inclusive upper bound");
    pm_ctx_free(ctx);
}

static void test_stencil_orientation(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_int(ctx, 3), pm_int(ctx, 3));
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *one = pm_interval_new(pm_int(ctx, 1), pm_int(ctx, 1), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 2, pm_exprs(x, y), pm_intervals(one, one));
    pm_func *g = pm_func_new(ctx, "g", PM_F32, 2, pm_exprs(x, y), pm_intervals(one, one));
    /* one row, three columns, weight on the first column: f(x - 1, y) */
    pm_func_define_expr(f, pm_stencil(I, pm_exprs(x, y), 1, 1, 3, (const double[]){1, 0, 0}));
    /* three rows, one column, weight on the first row: g(x, y - 1) */
    pm_func_define_expr(g, pm_stencil(I, pm_exprs(x, y), 1, 3, 1, (const double[]){1, 0, 0}));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "orient", 0, NULL, 1, &I, 2, (pm_func *const[]){f, g}, &p),
                 PM_OK);
    float in[9] = {0, 1, 2, 10, 11, 12, 20, 21, 22}, of = -1, og = -1; /* I(x, y) = 10x + y */
    pm_buffer bi = pm_buffer_dense(in, PM_F32, 2, (const int64_t[]){3, 3});
    pm_buffer bo[2] = {pm_buffer_dense(&of, PM_F32, 2, (const int64_t[]){1, 1}),
                       pm_buffer_dense(&og, PM_F32, 2, (const int64_t[]){1, 1})};
    CHECK_STATUS(pm_interpret(p, NULL, &bi, bo), PM_OK);
    CHECK(of == 1);  /* I(0, 1): the column moved x */
    CHECK(og == 10); /* I(1, 0): the row moved y */
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
    of = og = -1;
    if (CHECK(k != NULL))
        CHECK_STATUS(pm_kernel_run(k, NULL, &bi, bo, &err), PM_OK);
    CHECK(of == 1 && og == 10);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

static void test_u8_wraps(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, 2));
    pm_expr *x = pm_var(ctx, "x");
    pm_interval *iv = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 0), 1);
    pm_func *w = pm_func_new(ctx, "wrapped", PM_U16, 1, &x, &iv);
    pm_func *s = pm_func_new(ctx, "widened", PM_U16, 1, &x, &iv);
    pm_expr *a = pm_call(I, pm_int(ctx, 0)), *b = pm_call(I, pm_int(ctx, 1));
    pm_func_define_expr(w, pm_add(a, b));                                   /* u8 + u8 */
    pm_func_define_expr(s, pm_add(pm_cast(PM_U16, a), pm_cast(PM_U16, b))); /* widened */
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "wrap", 0, NULL, 1, &I, 2, (pm_func *const[]){w, s}, &p),
                 PM_OK);
    uint8_t in[2] = {200, 100};
    uint16_t ow = 0, os = 0;
    pm_buffer bi = pm_buffer_dense(in, PM_U8, 1, (const int64_t[]){2});
    pm_buffer bo[2] = {pm_buffer_dense(&ow, PM_U16, 1, (const int64_t[]){1}),
                       pm_buffer_dense(&os, PM_U16, 1, (const int64_t[]){1})};
    CHECK_STATUS(pm_interpret(p, NULL, &bi, bo), PM_OK);
    CHECK(ow == 44 && os == 300);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
    ow = os = 0;
    if (CHECK(k != NULL))
        CHECK_STATUS(pm_kernel_run(k, NULL, &bi, bo, &err), PM_OK);
    CHECK(ow == 44 && os == 300);
    pm_kernel_free(k);
    pm_ctx_free(ctx);

    /* pm_stencil's weight-1 taps of a u8 function add in u8 (wrap); pm_stencil_nd sums
     * in f32 */
    ctx = pm_ctx_new();
    pm_func *J = pm_image(ctx, "J", PM_U8, pm_int(ctx, 3), pm_int(ctx, 1));
    pm_expr *y = pm_var(ctx, "y");
    x = pm_var(ctx, "x");
    pm_interval *one = pm_interval_new(pm_int(ctx, 1), pm_int(ctx, 1), 1);
    pm_interval *zero = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 0), 1);
    static const double box[3] = {1, 1, 1};
    pm_func *a3 = pm_func_new(ctx, "a3", PM_U16, 2, pm_exprs(x, y), pm_intervals(one, zero));
    pm_func *b3 = pm_func_new(ctx, "b3", PM_U16, 2, pm_exprs(x, y), pm_intervals(one, zero));
    pm_func_define_expr(a3, pm_stencil(J, pm_exprs(x, y), 1, 1, 3, box));
    pm_func_define_expr(b3, pm_stencil_nd(J, pm_exprs(x, y), 1, 1, (const int[]){0},
                                          (const int[]){3}, box));
    p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "wrap3", 0, NULL, 1, &J, 2, (pm_func *const[]){a3, b3}, &p),
                 PM_OK);
    uint8_t jin[3] = {200, 100, 10};
    bi = pm_buffer_dense(jin, PM_U8, 2, (const int64_t[]){3, 1});
    bo[0] = pm_buffer_dense(&ow, PM_U16, 2, (const int64_t[]){1, 1});
    bo[1] = pm_buffer_dense(&os, PM_U16, 2, (const int64_t[]){1, 1});
    CHECK_STATUS(pm_interpret(p, NULL, &bi, bo), PM_OK);
    CHECK(ow == 54 && os == 310);
    pm_ctx_free(ctx);
}

static void test_zero_dim_reduction(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_expr *r = pm_var(ctx, "r");
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *total = pm_reduction_new(ctx, "total", PM_I64, 0, NULL, NULL, 1, &r, &all,
                                      PM_REDUCE_SUM, NULL);
    pm_reduction_define(total, 0, NULL, pm_call(I, r));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "zero", 1, &N, 1, &I, 1, &total, &p), PM_OK);
    int ndims = -1;
    int64_t ext[PM_MAX_DIMS];
    CHECK_STATUS(pm_pipeline_buffer_shape(p, 1, 0, (pm_value[]){PM_I(5)}, &ndims, ext), PM_OK);
    CHECK(ndims == 0);
    int32_t in[5] = {1, 2, 3, 4, 5};
    int64_t sum = 0;
    pm_buffer bi = pm_buffer_dense(in, PM_I32, 1, (const int64_t[]){5});
    pm_buffer bo = pm_buffer_dense(&sum, PM_I64, 0, NULL);
    pm_error err;
    CHECK_STATUS(both(ctx, p, (pm_value[]){PM_I(5)}, &bi, &bo, sizeof sum, &err), PM_OK);
    CHECK(sum == 15);
    pm_ctx_free(ctx);
}

int main(void)
{
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL))
        return check_finish("rules");
    test_extent_vs_bound();
    test_stencil_orientation();
    test_u8_wraps();
    test_zero_dim_reduction();
    pm_jit_free(jit);
    return check_finish("rules");
}
