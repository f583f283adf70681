/* unsharp_mask.c — Unsharp Mask, the PolyMage benchmark (see docs/apps.md).
 *
 * img is f32 [3][R+4][C+4] with the picture at [2, R+1] x [2, C+1] and a zero ghost
 * border of 2. blurx and blury apply the 1-4-6-4-1 / 16 filter along x then y; sharpen
 * adds weight times the detail; mask keeps the original where the detail is below
 * threshold. Output: mask f32 [3][R][C] (out[c][x-2][y-2]). */
#include "samples.h"
#include "image_io.h"

#include <stdbool.h>

/* (f(x-2) + 4 f(x-1) + 6 f(x) + 4 f(x+1) + f(x+2)) / 16 along dimension `along`. */
static pm_expr *binomial5(pm_ctx *ctx, pm_func *f, pm_expr *c, pm_expr *x, pm_expr *y, int along)
{
    static const double weight[5] = {0.0625, 0.25, 0.375, 0.25, 0.0625};
    pm_expr *sum = NULL;
    for (int k = -2; k <= 2; k++) {
        pm_expr *xk = along == 0 ? pm_addi(x, k) : x, *yk = along == 1 ? pm_addi(y, k) : y;
        pm_expr *term = pm_mul(pm_call(f, c, xk, yk), pm_float(ctx, weight[k + 2]));
        sum = sum ? pm_add(sum, term) : term;
    }
    return sum;
}

static pm_pipeline *build_unsharp(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *threshold = pm_param(ctx, PM_F32, "threshold");
    pm_expr *weight = pm_param(ctx, PM_F32, "weight");
    pm_func *img = pm_image(ctx, "img", PM_F32, pm_int(ctx, 3), pm_addi(R, 4), pm_addi(C, 4));

    pm_expr *c = pm_var(ctx, "c"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *channels = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 2), 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 2), pm_addi(R, 1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 2), pm_addi(C, 1), 1);
    pm_interval *all_cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, 3), 1);
    pm_expr *const cxy[] = {c, x, y};

    pm_func *blurx = pm_func_new(ctx, "blurx", PM_F32, 3, cxy, pm_intervals(channels, rows, all_cols));
    pm_func_define_expr(blurx, binomial5(ctx, img, c, x, y, 0));

    pm_interval *const out_dom[] = {channels, rows, cols};
    pm_func *blury = pm_func_new(ctx, "blury", PM_F32, 3, cxy, out_dom);
    pm_func_define_expr(blury, binomial5(ctx, blurx, c, x, y, 1));

    pm_func *sharpen = pm_func_new(ctx, "sharpen", PM_F32, 3, cxy, out_dom);
    pm_func_define_expr(sharpen, pm_sub(pm_mul(pm_call(img, c, x, y), pm_addf(weight, 1)),
                                        pm_mul(pm_call(blury, c, x, y), weight)));

    pm_func *mask = pm_func_new(ctx, "mask", PM_F32, 3, cxy, out_dom);
    pm_expr *detail = pm_abs(pm_sub(pm_call(img, c, x, y), pm_call(blury, c, x, y)));
    pm_func_define_expr(mask, pm_select(pm_lt(detail, threshold), pm_call(img, c, x, y),
                                        pm_call(sharpen, c, x, y)));

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "unsharp_mask", 4, pm_exprs(R, C, threshold, weight), 1,
                    (pm_func *const[]){img}, 1, (pm_func *const[]){mask}, &p);
    return p;
}

static void unsharp_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows);
    out[1] = PM_I(cols);
    out[2] = PM_F(0.001);
    out[3] = PM_F(3);
}

static void unsharp_fill_from(int index, pm_buffer *b, const pm_value *params,
                              const pm_sample_picture *pic)
{
    (void)index;
    int64_t R = params[0].i, C = params[1].i;
    int64_t xs = b->extent[1], ys = b->extent[2];
    float *data = b->data;
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < xs; x++) {
            float *row = data + (c * xs + x) * ys;
            /* the picture at [2, R + 1] x [2, C + 1], zero around it: each value written once */
            int64_t n = x >= 2 && x <= R + 1 && ys > 2 ? (C < ys - 2 ? C : ys - 2) : 0;
            int64_t from = n > 0 ? 2 + n : 0;
            for (int64_t y = 0; y < (n > 0 ? 2 : 0); y++)
                row[y] = 0;
            if (n > 0)
                pm_picture_row(pic, c, x - 2, 0, n, 255.0f, row + 2);
            for (int64_t y = from; y < ys; y++)
                row[y] = 0;
        }
}

static void unsharp_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(params[0].i, params[1].i);
    unsharp_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_unsharp_mask = {
    .name = "unsharp_mask",
    .title = "Unsharp Mask",
    .build = build_unsharp,
    .params = unsharp_params,
    .fill_input = unsharp_fill,
    .fill_from = unsharp_fill_from,
    .min_rows = 8,
    .min_cols = 8,
    .paper_rows = 2048,
    .paper_cols = 2048,
    .quick_rows = 200,
    .quick_cols = 256,
    .tolerance = 1e-4,
};
