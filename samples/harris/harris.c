/* harris.c — Harris corner detection, as in Figure 1 of the PolyMage paper (ASPLOS'15).
 *
 * Eleven stages over [0, R+1] x [0, C+1]: image derivatives Ix, Iy (Sobel-like 3x3
 * stencils scaled by 1/12) where 1 <= x <= R, 1 <= y <= C; their products; 3x3 box sums
 * Sxx, Syy, Sxy, the determinant and trace, and the corner response
 * harris = det - 0.04 * trace^2 where 2 <= x <= R-1, 2 <= y <= C-1. The frame the cases
 * leave uncovered is never written. Input and output are f32 [R+2][C+2]. */
#include "samples.h"
#include "image_io.h"

static pm_pipeline *build_harris(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, pm_addi(R, 2), pm_addi(C, 2));

    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *row = pm_interval_new(pm_int(ctx, 0), pm_addi(R, 1), 1);
    pm_interval *col = pm_interval_new(pm_int(ctx, 0), pm_addi(C, 1), 1);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {row, col};

    pm_expr *c = pm_and(pm_between(x, pm_int(ctx, 1), R), pm_between(y, pm_int(ctx, 1), C));
    pm_expr *cb = pm_and(pm_between(x, pm_int(ctx, 2), pm_addi(R, -1)),
                         pm_between(y, pm_int(ctx, 2), pm_addi(C, -1)));

    pm_func *Iy = pm_func_new(ctx, "Iy", PM_F32, 2, xy, dom);
    pm_define(Iy, pm_case_new(c, pm_stencil(I, xy, 1.0 / 12, 3, 3,
                                            (const double[]){-1, -2, -1,
                                                              0, 0, 0,
                                                              1, 2, 1})));
    pm_func *Ix = pm_func_new(ctx, "Ix", PM_F32, 2, xy, dom);
    pm_define(Ix, pm_case_new(c, pm_stencil(I, xy, 1.0 / 12, 3, 3,
                                            (const double[]){-1, 0, 1,
                                                             -2, 0, 2,
                                                             -1, 0, 1})));

    pm_func *Ixx = pm_func_new(ctx, "Ixx", PM_F32, 2, xy, dom);
    pm_define(Ixx, pm_case_new(c, pm_mul(pm_call(Ix, x, y), pm_call(Ix, x, y))));
    pm_func *Iyy = pm_func_new(ctx, "Iyy", PM_F32, 2, xy, dom);
    pm_define(Iyy, pm_case_new(c, pm_mul(pm_call(Iy, x, y), pm_call(Iy, x, y))));
    pm_func *Ixy = pm_func_new(ctx, "Ixy", PM_F32, 2, xy, dom);
    pm_define(Ixy, pm_case_new(c, pm_mul(pm_call(Ix, x, y), pm_call(Iy, x, y))));

    static const double box[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    pm_func *Sxx = pm_func_new(ctx, "Sxx", PM_F32, 2, xy, dom);
    pm_func *Syy = pm_func_new(ctx, "Syy", PM_F32, 2, xy, dom);
    pm_func *Sxy = pm_func_new(ctx, "Sxy", PM_F32, 2, xy, dom);
    pm_func *pairs[3][2] = {{Sxx, Ixx}, {Syy, Iyy}, {Sxy, Ixy}};
    for (int i = 0; i < 3; i++)
        pm_define(pairs[i][0], pm_case_new(cb, pm_stencil(pairs[i][1], xy, 1, 3, 3, box)));

    pm_func *det = pm_func_new(ctx, "det", PM_F32, 2, xy, dom);
    pm_expr *d = pm_sub(pm_mul(pm_call(Sxx, x, y), pm_call(Syy, x, y)),
                        pm_mul(pm_call(Sxy, x, y), pm_call(Sxy, x, y)));
    pm_define(det, pm_case_new(cb, d));

    pm_func *trace = pm_func_new(ctx, "trace", PM_F32, 2, xy, dom);
    pm_define(trace, pm_case_new(cb, pm_add(pm_call(Sxx, x, y), pm_call(Syy, x, y))));

    pm_func *harris = pm_func_new(ctx, "harris", PM_F32, 2, xy, dom);
    pm_expr *coarsity = pm_sub(pm_call(det, x, y),
                               pm_mul(pm_mulf(pm_call(trace, x, y), 0.04), pm_call(trace, x, y)));
    pm_define(harris, pm_case_new(cb, coarsity));

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "harris", 2, pm_exprs(R, C), 1, (pm_func *const[]){I}, 1,
                    (pm_func *const[]){harris}, &p);
    return p;
}

/* The benchmark passes a rows x cols image without padding: R = rows - 2. */
static void harris_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows - 2);
    out[1] = PM_I(cols - 2);
}

static void harris_fill_from(int index, pm_buffer *b, const pm_value *params,
                             const pm_sample_picture *pic)
{
    (void)index;
    (void)params;
    float *data = b->data;
    int64_t rows = b->extent[0], cols = b->extent[1];
    for (int64_t x = 0; x < rows; x++) /* 8-bit grey / 255, as the benchmark loads it */
        pm_picture_row(pic, -1, x, 0, cols, 255.0f, data + x * cols);
}

static void harris_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(b->extent[0], b->extent[1]);
    harris_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_harris = {
    .name = "harris",
    .title = "Harris Corner",
    .build = build_harris,
    .params = harris_params,
    .fill_input = harris_fill,
    .fill_from = harris_fill_from,
    .min_rows = 8,
    .min_cols = 8,
    .paper_rows = 6400,
    .paper_cols = 6400,
    .quick_rows = 256,
    .quick_cols = 320,
    .tolerance = 1e-4,
    .output_stretch = 1, /* a response, not a picture: the service shows it stretched */
};
