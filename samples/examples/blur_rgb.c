/* blur_rgb.c — separable 5x5 Gaussian blur of an RGB u8 image with clamped edges.
 *
 * The image is stored channel first, I(c, x, y) = [3][rows][cols], like the benchmark
 * apps: the compiler vectorizes the last dimension, so it should be the long one (an
 * interleaved [rows][cols][3] picture passed through strides gives the same result about
 * 10x slower). pm_pad extends the image by 2 pixels on each side of its spatial
 * dimensions {1, 2} (rows, columns; the colour dimension 0 is left alone) by repeating
 * the edge; each pm_stencil_func is one 1-D pass of [1 4 6 4 1] over the points where
 * all five taps are inside its input, so the passes shrink the padded domain back to the
 * image's:
 * the output is 3 x rows x cols, indexed from 0. The first pass keeps the unnormalized
 * sums (at most 255 * 16, a u16); the second divides by 16 * 16 and stores a u8
 * (rounded down, like C's integer division). Integer weights, integer types and a scale
 * of 2^-8 let pm_stencil_func sum in integers (u16, then u32 and >> 8), as Halide's blur
 * does by hand. */
#include "examples/examples.h"

pm_pipeline *blur_rgb_pipeline(pm_ctx **ctx_out)
{
    pm_ctx *ctx = *ctx_out = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, 3), R, C);
    static const int rows[] = {1}, cols[] = {2}, spatial[] = {1, 2}, taps[] = {5};
    static const double g[] = {1, 4, 6, 4, 1};
    pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, spatial, 2);
    pm_func *bx = pm_stencil_func(E, "bx", PM_U16, 1, 1, rows, taps, g);
    pm_func *by = pm_stencil_func(bx, "by", PM_U8, 1.0 / 256, 1, cols, taps, g);
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "blur_rgb", 2, pm_exprs(R, C), 1, &I, 1, &by, &p);
    return p;
}

pm_status blur_rgb(pm_jit *jit, const uint8_t *in, uint8_t *out, int64_t rows, int64_t cols,
                   pm_error *error)
{
    pm_ctx *ctx;
    pm_pipeline *p = blur_rgb_pipeline(&ctx);
    const int64_t shape[] = {3, rows, cols};
    pm_buffer bin = pm_buffer_dense((void *)in, PM_U8, 3, shape);
    pm_buffer bout = pm_buffer_dense(out, PM_U8, 3, shape);
    return example_run(jit, ctx, p, (pm_value[]){PM_I(rows), PM_I(cols)}, &bin, &bout, error);
}
