/* pyramid_blend.c — Pyramid Blending, the PolyMage benchmark (see docs/apps.md §5).
 *
 * Blends two colour pictures img1, img2 (f32 [3][R][C]) under a mask (f32 [R][C]) with
 * L = 4 levels: Gaussian pyramids of both pictures and of the mask (Dx_*, Dy_* for levels
 * 1..3, the 1-4-6-4-1 / 16 filter with decimation), Laplacian levels of the pictures
 * (Uy_* = G_l - Up(G_{l+1}), the upsampling's x pass being Ux_*), the blend of each
 * Laplacian level by the mask's Gaussian level (Res_0..3), and the collapse
 * (Col_2, Col_1, blend, each with its x pass). 40 stages.
 *
 * R, C are the padded size: the picture sits at offset 31 with clamp-to-edge padding of
 * 31 before and 29 after (R = rows + 60). The output blend is f32 [3][rows][cols] with
 * out[c][x-31][y-31]. Every domain is the benchmark's written in terms of R, C (floor
 * divisions by 2^l), so any size works where the coarsest level is non-empty.
 * The up-sampling's even/odd formulas are written as two Cases on the parity, so each
 * formula's reads are checked (and evaluated) only where it applies. */
#include "samples.h"
#include "image_io.h"

#include <stdbool.h>
#include <stdio.h>

enum { LEVELS = 4 };

typedef struct blend_builder {
    pm_ctx *ctx;
    pm_expr *R, *C;
    pm_expr *c, *x, *y;
} blend_builder;

/* n / 2^level, floor. */
static pm_expr *scaled(pm_expr *n, int level)
{
    return level == 0 ? n : pm_divi(n, (int64_t)1 << level);
}

static pm_interval *span(blend_builder *b, int64_t lb, pm_expr *ub)
{
    return pm_interval_new(pm_int(b->ctx, lb), ub, 1);
}

/* A stage over (c, x, y) for pictures, (x, y) for the mask. */
static pm_func *stage(blend_builder *b, const char *name, bool colour, pm_interval *rows,
                      pm_interval *cols)
{
    if (colour)
        return pm_func_new(b->ctx, name, PM_F32, 3, (pm_expr *const[]){b->c, b->x, b->y},
                           pm_intervals(pm_interval_new(pm_int(b->ctx, 0), pm_int(b->ctx, 2), 1),
                                        rows, cols));
    return pm_func_new(b->ctx, name, PM_F32, 2, (pm_expr *const[]){b->x, b->y},
                       pm_intervals(rows, cols));
}

static pm_expr *at(blend_builder *b, pm_func *f, pm_expr *x, pm_expr *y)
{
    return pm_func_ndims(f) == 3 ? pm_call(f, b->c, x, y) : pm_call(f, x, y);
}

/* (f(2t-2) + 4 f(2t-1) + 6 f(2t) + 4 f(2t+1) + f(2t+2)) * 0.0625 along x (along_x) or y. */
static pm_expr *down5(blend_builder *b, pm_func *f, bool along_x)
{
    static const double weight[5] = {1, 4, 6, 4, 1};
    pm_expr *t2 = pm_muli(along_x ? b->x : b->y, 2);
    pm_expr *sum = NULL;
    for (int k = -2; k <= 2; k++) {
        pm_expr *tk = pm_addi(t2, k);
        pm_expr *term = along_x ? at(b, f, tk, b->y) : at(b, f, b->x, tk);
        if (weight[k + 2] != 1)
            term = pm_mul(pm_float(b->ctx, weight[k + 2]), term);
        sum = sum ? pm_add(sum, term) : term;
    }
    return pm_mul(sum, pm_float(b->ctx, 0.0625));
}

/* Gaussian level `level` of f (level - 1): Dx then Dy; returns Dy. */
static pm_func *pyr_down(blend_builder *b, const char *what, pm_func *f, int level)
{
    bool colour = pm_func_ndims(f) == 3;
    char name[64];
    pm_interval *rows = span(b, level, pm_addi(scaled(b->R, level), -2));
    snprintf(name, sizeof name, "Dx_%s_L%d", what, level);
    pm_func *dx = stage(b, name, colour, rows,
                        span(b, level - 1, pm_addi(scaled(b->C, level - 1), -2)));
    pm_func_define_expr(dx, down5(b, f, true));
    snprintf(name, sizeof name, "Dy_%s_L%d", what, level);
    pm_func *dy = stage(b, name, colour, rows, span(b, level, pm_addi(scaled(b->C, level), -2)));
    pm_func_define_expr(dy, down5(b, dx, false));
    return dy;
}

/* The up-sampling's rows (or cols, with n = C) at level l: [2^(L-l+1) - 1,
 * n/2^l - 2^(L-l+1) + 2]. */
static pm_interval *up_span(blend_builder *b, pm_expr *n, int level)
{
    int64_t k = (int64_t)1 << (LEVELS - level);
    return span(b, 2 * k - 1, pm_addi(scaled(n, level), -2 * k + 2));
}

/* Up-sampling along one dimension at parity `odd` of t:
 * even: (f(t/2 - 1) + 6 f(t/2) + f(t/2 + 1)) * 0.125; odd: (4 f((t-1)/2) + 4 f((t+1)/2)) * 0.125. */
static pm_expr *up3(blend_builder *b, pm_func *f, bool along_x, bool odd)
{
    pm_expr *t = along_x ? b->x : b->y;
    pm_expr *sum;
    if (!odd) {
        pm_expr *half = pm_divi(t, 2);
        pm_expr *args[3] = {pm_addi(half, -1), half, pm_addi(half, 1)};
        pm_expr *v[3];
        for (int i = 0; i < 3; i++)
            v[i] = along_x ? at(b, f, args[i], b->y) : at(b, f, b->x, args[i]);
        sum = pm_add(pm_add(v[0], pm_mul(pm_float(b->ctx, 6), v[1])), v[2]);
    } else {
        pm_expr *lo = pm_divi(pm_addi(t, -1), 2), *hi = pm_divi(pm_addi(t, 1), 2);
        pm_expr *vlo = along_x ? at(b, f, lo, b->y) : at(b, f, b->x, lo);
        pm_expr *vhi = along_x ? at(b, f, hi, b->y) : at(b, f, b->x, hi);
        sum = pm_add(pm_mul(pm_float(b->ctx, 4), vlo), pm_mul(pm_float(b->ctx, 4), vhi));
    }
    return pm_mul(sum, pm_float(b->ctx, 0.125));
}

static pm_expr *parity_is(blend_builder *b, pm_expr *t, int parity)
{
    return pm_eq(pm_modi(t, 2), pm_int(b->ctx, parity));
}

/* The x pass of Up_level(fd): fd lives at level + 1. */
static pm_func *up_x(blend_builder *b, const char *name, pm_func *fd, int level)
{
    pm_func *ux = stage(b, name, true, up_span(b, b->R, level), up_span(b, b->C, level + 1));
    pm_define(ux, pm_case_new(parity_is(b, b->x, 0), up3(b, fd, true, false)),
              pm_case_new(parity_is(b, b->x, 1), up3(b, fd, true, true)));
    return ux;
}

/* base(c, x, y) + sign * (y pass of the up-sampling of ux), on level `level`. */
static pm_func *up_y_combined(blend_builder *b, const char *name, pm_func *base, int sign,
                              pm_func *ux, int level)
{
    pm_func *f = stage(b, name, true, up_span(b, b->R, level), up_span(b, b->C, level));
    pm_expr *own = at(b, base, b->x, b->y);
    pm_expr *even = up3(b, ux, false, false), *odd = up3(b, ux, false, true);
    pm_define(f,
              pm_case_new(parity_is(b, b->y, 0), sign > 0 ? pm_add(own, even) : pm_sub(own, even)),
              pm_case_new(parity_is(b, b->y, 1), sign > 0 ? pm_add(own, odd) : pm_sub(own, odd)));
    return f;
}

static pm_pipeline *build_pyramid_blend(pm_ctx *ctx)
{
    blend_builder bb = {ctx, pm_param(ctx, PM_I32, "R"), pm_param(ctx, PM_I32, "C"),
                        pm_var(ctx, "c"), pm_var(ctx, "x"), pm_var(ctx, "y")};
    blend_builder *b = &bb;
    pm_func *img1 = pm_image(ctx, "img1", PM_F32, pm_int(ctx, 3), b->R, b->C);
    pm_func *img2 = pm_image(ctx, "img2", PM_F32, pm_int(ctx, 3), b->R, b->C);
    pm_func *mask = pm_image(ctx, "mask", PM_F32, b->R, b->C);

    /* Gaussian pyramids: G[image][level], level 0 the input. */
    pm_func *gauss[3][LEVELS];
    pm_func *inputs[3] = {img1, img2, mask};
    static const char *const names[3] = {"img1", "img2", "mask"};
    for (int i = 0; i < 3; i++) {
        gauss[i][0] = inputs[i];
        for (int l = 1; l < LEVELS; l++)
            gauss[i][l] = pyr_down(b, names[i], gauss[i][l - 1], l);
    }

    /* Laplacian levels 0..2 of both pictures: G_l - Up(G_{l+1}). */
    pm_func *lap[2][LEVELS];
    char name[64];
    for (int i = 0; i < 2; i++) {
        for (int l = 0; l < LEVELS - 1; l++) {
            snprintf(name, sizeof name, "Ux_%s_L%d", names[i], l);
            pm_func *ux = up_x(b, name, gauss[i][l + 1], l);
            snprintf(name, sizeof name, "Uy_%s_L%d", names[i], l);
            lap[i][l] = up_y_combined(b, name, gauss[i][l], -1, ux, l);
        }
        lap[i][LEVELS - 1] = gauss[i][LEVELS - 1];
    }

    /* Res_l = Lap1_l * M_l + Lap2_l * (1 - M_l). */
    pm_func *res[LEVELS];
    for (int l = 0; l < LEVELS; l++) {
        snprintf(name, sizeof name, "Res_%d", l);
        res[l] = stage(b, name, true, up_span(b, b->R, l), up_span(b, b->C, l));
        pm_expr *m = at(b, gauss[2][l], b->x, b->y);
        pm_func_define_expr(res[l], pm_add(pm_mul(at(b, lap[0][l], b->x, b->y), m),
                                           pm_mul(at(b, lap[1][l], b->x, b->y),
                                                  pm_sub(pm_float(ctx, 1), m))));
    }

    /* Collapse: O_3 = Res_3, O_l = Res_l + Up(O_{l+1}). */
    static const char *const col_names[LEVELS - 1][2] = {
        {"blend_x", "blend"}, {"Col_1_x", "Col_1"}, {"Col_2_x", "Col_2"}};
    pm_func *collapsed = res[LEVELS - 1];
    for (int l = LEVELS - 2; l >= 0; l--) {
        pm_func *ux = up_x(b, col_names[l][0], collapsed, l);
        collapsed = up_y_combined(b, col_names[l][1], res[l], +1, ux, l);
    }

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "pyramid_blend", 2, pm_exprs(b->R, b->C), 3,
                    (pm_func *const[]){img1, img2, mask}, 1, (pm_func *const[]){collapsed}, &p);
    return p;
}

/* Padding 31 before and 29 after, as the benchmark's 2048 -> 2108. */
static void blend_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows + 60);
    out[1] = PM_I(cols + 60);
}

/* img1 is the photo, img2 the photo mirrored left-right (a second picture with the same
 * statistics), both 8-bit / 255 and clamp-padded. The mask is the benchmark's: 0 above a
 * row and 1 from it on, over all columns; the benchmark's row 820 of 2108 is scaled to
 * the picture's height. */
static void blend_fill_from(int index, pm_buffer *b, const pm_value *params,
                            const pm_sample_picture *pic)
{
    int64_t R = params[0].i, C = params[1].i, rows = R - 60, cols = C - 60;
    float *data = b->data;
    if (index == 2) {
        int64_t split = 31 + (789 * rows) / 2048;
        for (int64_t x = 0; x < R; x++)
            for (int64_t y = 0; y < C; y++)
                data[x * C + y] = x < split ? 0.0f : 1.0f;
        return;
    }
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < R; x++)
            for (int64_t y = 0; y < C; y++) {
                /* mirroring commutes with clamping to the edge: cols-1-clamp(v) = clamp(cols-1-v) */
                int64_t py = index == 1 ? cols - 1 - (y - 31) : y - 31;
                int level = pm_picture_level(pic, c, x - 31, py);
                data[(c * R + x) * C + y] = (float)level / 255.0f;
            }
}

static void blend_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(params[0].i - 60, params[1].i - 60);
    blend_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_pyramid_blend = {
    .name = "pyramid_blend",
    .title = "Pyramid Blending",
    .build = build_pyramid_blend,
    .params = blend_params,
    .fill_input = blend_fill,
    .fill_from = blend_fill_from,
    .min_rows = 16,
    .min_cols = 16,
    .paper_rows = 2048,
    .paper_cols = 2048,
    .quick_rows = 96,
    .quick_cols = 128,
    .tolerance = 1e-4,
};
