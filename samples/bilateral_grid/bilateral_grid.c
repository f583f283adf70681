/* bilateral_grid.c — the Bilateral Grid, the PolyMage benchmark (see docs/apps.md §2).
 *
 * Follows the benchmark's generated code (its shipped DSL spec differs). The input is a
 * grey picture (f32 in [0, 1]) clamp-padded by 24 rows/cols before and 32 after, so
 * R = rows + 56, C = cols + 56. sigma_s = 8 and 1/sigma_r = 10 are fixed.
 *
 *  - grid(c, gx, gy, z): a histogram Reduction. Cell (gx, gy) collects the 9 x 9 window
 *    centred on padded pixel (8gx, 8gy) (neighbouring windows share a row or column):
 *    each pixel p adds p to channel 0 and 1 to channel 1 at z = 2 + (int)(10p + 0.5).
 *  - blurz, blurx, blury: the unnormalised 1-4-6-4-1 filter along z, gx, gy, each on a
 *    domain shrunk by the filter's reach.
 *  - interpolated(c, x, y): trilinear interpolation of blury at (x/8, y/8, 2 + 10p), the
 *    z cell truncated (no rounding).
 *  - filtered(x, y) = interpolated(0) / interpolated(1) at padded (x+24, y+24), or the
 *    input where the weight is 0. Output f32 [rows][cols].
 *
 * The benchmark's grid sizes (gx in [1, 325] for R = 2616) are written as functions of R,
 * C so any picture size works: the last cell index is (R - 33)/8 + 3, enough for the
 * interpolation of the last pixel row R - 33 plus the blurs' reach.
 *
 * One read leaves blury's domain in the definition: a pixel with p = 1.0 interpolates
 * between z = 12 and z = 13 with weight 0 on z = 13. The generated code reads a
 * neighbouring memory cell there; we clamp the z index to blury's domain [2, 12] in the
 * expression, which gives the same result (u + 0 * (v - u) = u for any finite v) and keeps
 * every read inside the domain for the interpreter and compiled code alike. */
#include "samples.h"
#include "image_io.h"

/* g(at - 2) + 4 g(at - 1) + 6 g(at) + 4 g(at + 1) + g(at + 2) along dimension `along` of
 * a 4-D (c, gx, gy, z) function, unnormalised. */
static pm_expr *binomial5(pm_ctx *ctx, pm_func *g, pm_expr *const at[4], int along)
{
    static const double weight[5] = {1, 4, 6, 4, 1};
    pm_expr *sum = NULL;
    for (int k = -2; k <= 2; k++) {
        pm_expr *args[4] = {at[0], at[1], at[2], at[3]};
        args[along] = pm_addi(at[along], k);
        pm_expr *term = pm_call_n(g, 4, args);
        if (weight[k + 2] != 1)
            term = pm_mul(pm_float(ctx, weight[k + 2]), term);
        sum = sum ? pm_add(sum, term) : term;
    }
    return sum;
}

static pm_expr *lerp(pm_expr *u, pm_expr *v, pm_expr *w)
{
    return pm_add(u, pm_mul(w, pm_sub(v, u)));
}

static pm_pipeline *build_bilateral_grid(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *input = pm_image(ctx, "input", PM_F32, R, C);
#define K(v) pm_int(ctx, (v))

    /* Last cell indices: 325 and 197 at the benchmark's R = 2616, C = 1592. */
    pm_expr *GX = pm_addi(pm_divi(pm_addi(R, -33), 8), 3);
    pm_expr *GY = pm_addi(pm_divi(pm_addi(C, -33), 8), 3);

    pm_expr *c = pm_var(ctx, "c"), *gx = pm_var(ctx, "gx"), *gy = pm_var(ctx, "gy"),
            *z = pm_var(ctx, "z");
    pm_expr *const cell[4] = {c, gx, gy, z};
    pm_interval *channels = pm_interval_new(K(0), K(1), 1);
    pm_interval *all_gx = pm_interval_new(K(1), GX, 1), *all_gy = pm_interval_new(K(1), GY, 1);
    pm_interval *inner_gx = pm_interval_new(K(3), pm_addi(GX, -2), 1);
    pm_interval *inner_gy = pm_interval_new(K(3), pm_addi(GY, -2), 1);
    pm_interval *blur_z = pm_interval_new(K(2), K(12), 1);

    /* The histogram: one update per (channel, cell, window pixel). */
    pm_expr *rc = pm_var(ctx, "rc"), *rgx = pm_var(ctx, "rgx"), *rgy = pm_var(ctx, "rgy"),
            *ri = pm_var(ctx, "ri"), *rj = pm_var(ctx, "rj");
    pm_interval *window = pm_interval_new(K(0), K(8), 1);
    pm_func *grid = pm_reduction_new(
        ctx, "grid", PM_F32, 4, cell,
        pm_intervals(channels, all_gx, all_gy, pm_interval_new(K(0), K(14), 1)), 5,
        pm_exprs(rc, rgx, rgy, ri, rj), pm_intervals(channels, all_gx, all_gy, window, window),
        PM_REDUCE_SUM, NULL);
    {
        pm_expr *p = pm_call(input, pm_add(pm_addi(pm_muli(rgx, 8), -4), ri),
                             pm_add(pm_addi(pm_muli(rgy, 8), -4), rj));
        pm_expr *zb = pm_addi(pm_cast(PM_I32, pm_addf(pm_mulf(p, 10), 0.5)), 2);
        pm_expr *value = pm_select(pm_eq(rc, K(0)), p, pm_float(ctx, 1));
        pm_reduction_define(grid, 4, pm_exprs(rc, rgx, rgy, zb), value);
    }

    pm_func *blurz = pm_func_new(ctx, "blurz", PM_F32, 4, cell,
                                 pm_intervals(channels, all_gx, all_gy, blur_z));
    pm_func_define_expr(blurz, binomial5(ctx, grid, cell, 3));
    pm_func *blurx = pm_func_new(ctx, "blurx", PM_F32, 4, cell,
                                 pm_intervals(channels, inner_gx, all_gy, blur_z));
    pm_func_define_expr(blurx, binomial5(ctx, blurz, cell, 1));
    pm_func *blury = pm_func_new(ctx, "blury", PM_F32, 4, cell,
                                 pm_intervals(channels, inner_gx, inner_gy, blur_z));
    pm_func_define_expr(blury, binomial5(ctx, blurx, cell, 2));

    /* Trilinear interpolation at every padded picture pixel. */
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *pic_rows = pm_interval_new(K(24), pm_addi(R, -33), 1);
    pm_interval *pic_cols = pm_interval_new(K(24), pm_addi(C, -33), 1);
    pm_func *interpolated = pm_func_new(ctx, "interpolated", PM_F32, 3,
                                        (pm_expr *const[]){c, x, y},
                                        pm_intervals(channels, pic_rows, pic_cols));
    {
        pm_expr *p = pm_call(input, x, y);
        pm_expr *zv = pm_mulf(p, 10);
        pm_expr *zi = pm_cast(PM_I32, zv);
        pm_expr *zf = pm_sub(zv, pm_cast(PM_F32, zi));
        pm_expr *xi = pm_divi(x, 8), *yi = pm_divi(y, 8);
        pm_expr *xf = pm_div(pm_cast(PM_F32, pm_modi(x, 8)), pm_float(ctx, 8));
        pm_expr *yf = pm_div(pm_cast(PM_F32, pm_modi(y, 8)), pm_float(ctx, 8));
        pm_expr *v[2][2][2];
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                for (int d = 0; d < 2; d++) {
                    /* clamped: see the header comment (z = 13 has weight 0) */
                    pm_expr *zc = pm_clamp(pm_addi(zi, 2 + d), K(2), K(12));
                    v[a][b][d] = pm_call(blury, c, pm_addi(xi, a), pm_addi(yi, b), zc);
                }
        pm_expr *near_z = lerp(lerp(v[0][0][0], v[1][0][0], xf), lerp(v[0][1][0], v[1][1][0], xf), yf);
        pm_expr *far_z = lerp(lerp(v[0][0][1], v[1][0][1], xf), lerp(v[0][1][1], v[1][1][1], xf), yf);
        pm_func_define_expr(interpolated, lerp(near_z, far_z, zf));
    }

    pm_func *filtered = pm_func_new(
        ctx, "filtered", PM_F32, 2, (pm_expr *const[]){x, y},
        pm_intervals(pm_interval_new(K(0), pm_addi(R, -57), 1),
                     pm_interval_new(K(0), pm_addi(C, -57), 1)));
    {
        pm_expr *px = pm_addi(x, 24), *py = pm_addi(y, 24);
        pm_expr *weight = pm_call(interpolated, K(1), px, py);
        pm_func_define_expr(filtered,
                            pm_select(pm_gt(weight, pm_float(ctx, 0)),
                                      pm_div(pm_call(interpolated, K(0), px, py), weight),
                                      pm_call(input, px, py)));
    }
#undef K

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "bilateral_grid", 2, pm_exprs(R, C), 1, (pm_func *const[]){input}, 1,
                    (pm_func *const[]){filtered}, &p);
    return p;
}

static void bilateral_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows + 56);
    out[1] = PM_I(cols + 56);
}

/* 8-bit grey / 255, clamp-to-edge padded by 24 before and 32 after (main.py's
 * image_clamp). */
static void bilateral_fill_from(int index, pm_buffer *b, const pm_value *params,
                                const pm_sample_picture *pic)
{
    (void)index;
    int64_t R = params[0].i, C = params[1].i;
    float *data = b->data;
    for (int64_t x = 0; x < R; x++)
        pm_picture_row(pic, -1, x - 24, -24, C, 255.0f, data + x * C);
}

static void bilateral_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(params[0].i - 56, params[1].i - 56);
    bilateral_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_bilateral_grid = {
    .name = "bilateral_grid",
    .title = "Bilateral Grid",
    .build = build_bilateral_grid,
    .params = bilateral_params,
    .fill_input = bilateral_fill,
    .fill_from = bilateral_fill_from,
    .min_rows = 8,
    .min_cols = 8,
    .paper_rows = 2560,
    .paper_cols = 1536,
    .quick_rows = 64,
    .quick_cols = 96,
    .tolerance = 1e-4,
};
