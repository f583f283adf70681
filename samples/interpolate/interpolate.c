/* interpolate.c — Multiscale Interpolation, the PolyMage benchmark (see
 * docs/apps.md §6).
 *
 * Fills the transparent parts of an RGBA picture (f32 [4][R+2][C+2], /255, a 1-pixel
 * zero border) from its opaque parts across L = 10 scales: the colour is premultiplied
 * by alpha (downsampled_L0), a pyramid of 1-2-1 / 4 decimations (Dx_Ll, downsampled_Ll
 * for l = 1..9), then from the coarsest level up each level keeps its own premultiplied
 * value and lets the up-sampled coarser one show through where it is transparent
 * (Ux_Ll, interpolated_Ll for l = 8..0), and a final normalisation by the accumulated
 * alpha (interpolate). Output f32 [3][R][C]. 38 stages.
 *
 * Every level-l stage covers [0, R_l + 1] x [0, C_l + 1], R_l = ceil(R / 2^l) and
 * C_l = ceil(C / 2^l): a body where the doc's formula applies and a frame of zeros,
 * written as two Cases (the body condition and its negation). The benchmark fixes
 * R = 2560, C = 1536 (multiples of 2^9, where ceil and floor agree); here they are
 * parameters, and every size from 1 x 1 has every level non-empty and every pixel
 * filled (a floor left an odd level's last row or column without a coarse point above
 * it: black edges). */
#include "samples.h"
#include "image_io.h"

#include <stdio.h>

enum { LEVELS = 10 };

typedef struct interp_builder {
    pm_ctx *ctx;
    pm_expr *R, *C;
    pm_expr *c, *x, *y;
    pm_interval *channels;
} interp_builder;

/* n / 2^level rounded up: a level keeps a point for the last one of an odd finer level,
 * so the up pass finds a coarse point over every fine one. */
static pm_expr *scaled(pm_expr *n, int level)
{
    int64_t step = (int64_t)1 << level;
    return level == 0 ? n : pm_divi(pm_addi(n, step - 1), step);
}

/* A 4-channel stage over [0, rows + 1] x [0, cols + 1]. */
static pm_func *level_stage(interp_builder *b, const char *name, pm_expr *rows, pm_expr *cols)
{
    pm_ctx *ctx = b->ctx;
    return pm_func_new(ctx, name, PM_F32, 3, (pm_expr *const[]){b->c, b->x, b->y},
                       pm_intervals(b->channels, pm_interval_new(pm_int(ctx, 0), pm_addi(rows, 1), 1),
                                    pm_interval_new(pm_int(ctx, 0), pm_addi(cols, 1), 1)));
}

/* value on x in [1, rows], y in [1, cols]; 0 on the frame around it. */
static void define_body(interp_builder *b, pm_func *f, pm_expr *rows, pm_expr *cols, pm_expr *value)
{
    pm_ctx *ctx = b->ctx;
    pm_expr *body = pm_and(pm_between(b->x, pm_int(ctx, 1), rows),
                           pm_between(b->y, pm_int(ctx, 1), cols));
    pm_define(f, pm_case_new(body, value), pm_case_new(pm_not(body), pm_float(ctx, 0)));
}

/* (f(2t - 2) + 2 f(2t - 1) + f(2t)) * 0.25 along x or y. */
static pm_expr *down3(interp_builder *b, pm_func *f, int along_x)
{
    pm_expr *t2 = pm_muli(along_x ? b->x : b->y, 2);
    pm_expr *v[3];
    for (int k = 0; k < 3; k++) {
        pm_expr *tk = pm_addi(t2, k - 2);
        v[k] = along_x ? pm_call(f, b->c, tk, b->y) : pm_call(f, b->c, b->x, tk);
    }
    pm_expr *sum = pm_add(pm_add(v[0], pm_mul(pm_float(b->ctx, 2), v[1])), v[2]);
    return pm_mul(sum, pm_float(b->ctx, 0.25));
}

/* (f((t + 1) / 2) + f((t + 2) / 2)) / 2 along x or y. */
static pm_expr *up2(interp_builder *b, pm_func *f, int along_x)
{
    pm_expr *t = along_x ? b->x : b->y;
    pm_expr *lo = pm_divi(pm_addi(t, 1), 2), *hi = pm_divi(pm_addi(t, 2), 2);
    pm_expr *vlo = along_x ? pm_call(f, b->c, lo, b->y) : pm_call(f, b->c, b->x, lo);
    pm_expr *vhi = along_x ? pm_call(f, b->c, hi, b->y) : pm_call(f, b->c, b->x, hi);
    return pm_div(pm_add(vlo, vhi), pm_float(b->ctx, 2));
}

static pm_pipeline *build_interpolate(pm_ctx *ctx)
{
    interp_builder ib = {ctx, pm_param(ctx, PM_I32, "R"), pm_param(ctx, PM_I32, "C"),
                         pm_var(ctx, "c"), pm_var(ctx, "x"), pm_var(ctx, "y"),
                         pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)};
    interp_builder *b = &ib;
    pm_expr *c = b->c, *x = b->x, *y = b->y;
    pm_func *img = pm_image(ctx, "img", PM_F32, pm_int(ctx, 4), pm_addi(b->R, 2), pm_addi(b->C, 2));
    char name[64];

    /* Premultiplied colour; channel 3 holds alpha^2. */
    pm_func *down[LEVELS];
    down[0] = level_stage(b, "downsampled_L0", b->R, b->C);
    pm_func_define_expr(down[0], pm_mul(pm_call(img, c, x, y), pm_call(img, pm_int(ctx, 3), x, y)));

    for (int l = 1; l < LEVELS; l++) {
        pm_expr *rows = scaled(b->R, l), *cols = scaled(b->C, l), *prev_cols = scaled(b->C, l - 1);
        snprintf(name, sizeof name, "Dx_L%d", l);
        pm_func *dx = level_stage(b, name, rows, prev_cols);
        define_body(b, dx, rows, prev_cols, down3(b, down[l - 1], 1));
        snprintf(name, sizeof name, "downsampled_L%d", l);
        down[l] = level_stage(b, name, rows, cols);
        define_body(b, down[l], rows, cols, down3(b, dx, 0));
    }

    /* From the coarsest level up: I_l = D_l + (1 - D_l(3)) * Up(I_{l+1}). */
    pm_func *interp = down[LEVELS - 1];
    for (int l = LEVELS - 2; l >= 0; l--) {
        pm_expr *rows = scaled(b->R, l), *cols = scaled(b->C, l), *coarse_cols = scaled(b->C, l + 1);
        snprintf(name, sizeof name, "Ux_L%d", l);
        pm_func *ux = level_stage(b, name, rows, coarse_cols);
        define_body(b, ux, rows, coarse_cols, up2(b, interp, 1));
        snprintf(name, sizeof name, "interpolated_L%d", l);
        pm_func *next = level_stage(b, name, rows, cols);
        pm_expr *transparency = pm_sub(pm_float(ctx, 1), pm_call(down[l], pm_int(ctx, 3), x, y));
        define_body(b, next, rows, cols,
                    pm_add(pm_call(down[l], c, x, y), pm_mul(transparency, up2(b, ux, 0))));
        interp = next;
    }

    pm_func *out = pm_func_new(
        ctx, "interpolate", PM_F32, 3, (pm_expr *const[]){c, x, y},
        pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 2), 1),
                     pm_interval_new(pm_int(ctx, 0), pm_addi(b->R, -1), 1),
                     pm_interval_new(pm_int(ctx, 0), pm_addi(b->C, -1), 1)));
    pm_expr *x1 = pm_addi(x, 1), *y1 = pm_addi(y, 1);
    pm_func_define_expr(out, pm_div(pm_call(interp, c, x1, y1), pm_call(interp, pm_int(ctx, 3), x1, y1)));

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "interpolate", 2, pm_exprs(b->R, b->C), 1, (pm_func *const[]){img}, 1,
                    (pm_func *const[]){out}, &p);
    return p;
}

static void interpolate_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows);
    out[1] = PM_I(cols);
}

static uint32_t pixel_hash(int64_t x, int64_t y)
{
    uint32_t h = (uint32_t)(x * 2654435761u) ^ (uint32_t)(y * 40503u + 0x9e3779b9u);
    h = (h ^ (h >> 15)) * 2246822519u;
    return h ^ (h >> 13);
}

/* The photo as RGBA / 255 with the interpolation problem the app solves: only scattered
 * pixels (about 1 in 4, hash-chosen) are opaque, the rest are holes (alpha 0). A picture
 * with its own alpha (pm_bytes_picture of 4 channels) brings its holes instead: its alpha
 * / 255 is the mask. The 1-pixel border is 0 (the benchmark leaves it uninitialised). */
static void interpolate_fill_from(int index, pm_buffer *b, const pm_value *params,
                                  const pm_sample_picture *pic)
{
    (void)index;
    int64_t R = params[0].i, C = params[1].i, xs = R + 2, ys = C + 2;
    float *data = b->data;
    for (int c = 0; c < 4; c++)
        for (int64_t x = 0; x < xs; x++)
            for (int64_t y = 0; y < ys; y++) {
                float v = 0;
                if (x >= 1 && x <= R && y >= 1 && y <= C) {
                    if (c == 3 && pic->bytes && pic->channels == 4)
                        v = (float)pic->bytes[((x - 1) * pic->cols + y - 1) * 4 + 3] / 255.0f;
                    else if (c == 3)
                        v = (pixel_hash(x, y) & 3) == 0 ? 1.0f : 0.0f;
                    else
                        v = (float)pm_picture_level(pic, c, x - 1, y - 1) / 255.0f;
                }
                data[(c * xs + x) * ys + y] = v;
            }
}

static void interpolate_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(params[0].i, params[1].i);
    interpolate_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_interpolate = {
    .name = "interpolate",
    .title = "Multiscale Interpolation",
    .build = build_interpolate,
    .params = interpolate_params,
    .fill_input = interpolate_fill,
    .fill_from = interpolate_fill_from,
    .min_rows = 1, /* every level has at least one point at every size */
    .min_cols = 1,
    .paper_rows = 2560,
    .paper_cols = 1536,
    .quick_rows = 512,
    .quick_cols = 512,
    .tolerance = 1e-4,
};
