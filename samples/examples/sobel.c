/* sobel.c — Sobel gradient magnitude of a gray u8 image with clamped edges.
 *
 * The kernels are pictures of the image: with dims {0, 1} (rows, columns) a kernel's
 * rows move down the image's rows and its columns across its columns, so sx (columns
 * -1, 0, +1) is the derivative across columns. The u8 pixels are summed in f32 (exact
 * here); the magnitude is stored into a u8 function, which truncates and saturates. */
#include "examples/examples.h"

pm_pipeline *sobel_pipeline(pm_ctx **ctx_out)
{
    pm_ctx *ctx = *ctx_out = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    static const int xy[] = {0, 1}, k3[] = {3, 3};
    static const double sx[] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    static const double sy[] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, xy, 1);
    pm_func *gx = pm_stencil_func(E, "gx", PM_F32, 1, 2, xy, k3, sx);
    pm_func *gy = pm_stencil_func(E, "gy", PM_F32, 1, 2, xy, k3, sy);
    pm_func *mag = pm_func_like(gx, "mag", PM_U8);
    pm_expr *x = pm_func_var(mag, 0), *y = pm_func_var(mag, 1);
    pm_expr *dx = pm_call(gx, x, y), *dy = pm_call(gy, x, y);
    pm_func_define_expr(mag, pm_sqrt(pm_add(pm_mul(dx, dx), pm_mul(dy, dy))));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "sobel", 2, pm_exprs(R, C), 1, &I, 1, &mag, &p);
    return p;
}

pm_status sobel(pm_jit *jit, const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                pm_error *error)
{
    pm_ctx *ctx;
    pm_pipeline *p = sobel_pipeline(&ctx);
    const int64_t shape[] = {rows, cols};
    pm_buffer bin = pm_buffer_dense((void *)in, PM_U8, 2, shape);
    pm_buffer bout = pm_buffer_dense(out, PM_U8, 2, shape);
    return example_run(jit, ctx, p, (pm_value[]){PM_I(rows), PM_I(cols)}, &bin, &bout, error);
}
