/* camera_pipe.c — the Camera Pipeline, the PolyMage benchmark (see docs/apps.md §4).
 *
 * From a raw int16 Bayer image img [R][C] (G R / B G, 2x2 cells starting at (0, 0)) to an
 * 8-bit BGR picture: a hot-pixel suppression (denoised), the four Bayer planes at half
 * resolution, edge-aware demosaicking of the missing colours (integer arithmetic, C
 * division), interleaving back to full resolution, a colour matrix interpolated between
 * the 3200 K and 7000 K calibrations (inputs matrix_3200, matrix_7000, f32 [3][4]) for
 * colour_temp, and a tone curve as a lookup table over every int16 value. The output
 * process is u8 [3][R-48][C-64] holding out[c][x-12][y-16], channel 0 = B, 1 = G, 2 = R.
 *
 * The benchmark fixes R = 1968, C = 2592; here they are parameters and every domain is
 * the benchmark's written in terms of them (floor halves for the half-resolution planes),
 * so any raw size of at least 50 x 66 works. 27 stages, no Case conditions (selects only),
 * no padding: the output is an interior crop. */
#include "samples.h"
#include "image_io.h"

#include <math.h>

typedef struct camera_builder {
    pm_ctx *ctx;
    pm_expr *x, *y;
} camera_builder;

/* A 2-D int16 stage over rows [x0, x1] x cols [y0, y1]. */
static pm_func *plane(camera_builder *b, const char *name, pm_expr *x0, pm_expr *x1, pm_expr *y0,
                      pm_expr *y1)
{
    pm_interval *dom[2] = {pm_interval_new(x0, x1, 1), pm_interval_new(y0, y1, 1)};
    return pm_func_new(b->ctx, name, PM_I16, 2, (pm_expr *const[]){b->x, b->y}, dom);
}

/* f(x + dx, y + dy) widened to int: the demosaicking arithmetic is int, stored as int16. */
static pm_expr *at(camera_builder *b, pm_func *f, int dx, int dy)
{
    return pm_cast(PM_I32, pm_call(f, pm_addi(b->x, dx), pm_addi(b->y, dy)));
}

/* (u + v) / 2 with C's truncating division, as the generated code does it. */
static pm_expr *half_sum(camera_builder *b, pm_expr *u, pm_expr *v)
{
    return pm_cdiv(pm_add(u, v), pm_int(b->ctx, 2));
}

/* own - (g(p) + g(q)) / 2 + (c(p) + c(q)) / 2: a missing colour from the known one at
 * two neighbours p, q, corrected by the green difference there. */
static pm_expr *colour_from_pair(camera_builder *b, pm_expr *own, pm_func *g, pm_func *c,
                                 int px, int py, int qx, int qy)
{
    pm_expr *green = half_sum(b, at(b, g, px, py), at(b, g, qx, qy));
    pm_expr *colour = half_sum(b, at(b, c, px, py), at(b, c, qx, qy));
    return pm_add(pm_sub(own, green), colour);
}

/* r_b / b_r: the diagonal pair (p, q) or the anti-diagonal pair (p2, q2), whichever has
 * the smaller colour difference. */
static pm_expr *diagonal_colour(camera_builder *b, pm_expr *own, pm_func *g, pm_func *c,
                                const int p[4], const int n[4])
{
    pm_expr *pos = colour_from_pair(b, own, g, c, p[0], p[1], p[2], p[3]);
    pm_expr *pos_d = pm_absd(at(b, c, p[0], p[1]), at(b, c, p[2], p[3]));
    pm_expr *neg = colour_from_pair(b, own, g, c, n[0], n[1], n[2], n[3]);
    pm_expr *neg_d = pm_absd(at(b, c, n[0], n[1]), at(b, c, n[2], n[3]));
    return pm_select(pm_lt(pos_d, neg_d), pos, neg);
}

/* iY(a, b)(x, y) = y even ? a(x, y/2) : b(x, y/2) on half-res rows, full-res cols. */
static pm_func *interleave_y(camera_builder *b, const char *name, pm_func *even, pm_func *odd,
                             pm_expr *x0, pm_expr *x1, pm_expr *y0, pm_expr *y1)
{
    pm_func *f = plane(b, name, x0, x1, y0, y1);
    pm_expr *y_half = pm_divi(b->y, 2);
    pm_func_define_expr(f, pm_select(pm_eq(pm_modi(b->y, 2), pm_int(b->ctx, 0)),
                                     pm_call(even, b->x, y_half), pm_call(odd, b->x, y_half)));
    return f;
}

/* iX(a, b)(x, y) = x even ? a(x/2, y) : b(x/2, y) at full resolution. */
static pm_func *interleave_x(camera_builder *b, const char *name, pm_func *even, pm_func *odd,
                             pm_expr *x0, pm_expr *x1, pm_expr *y0, pm_expr *y1)
{
    pm_func *f = plane(b, name, x0, x1, y0, y1);
    pm_expr *x_half = pm_divi(b->x, 2);
    pm_func_define_expr(f, pm_select(pm_eq(pm_modi(b->x, 2), pm_int(b->ctx, 0)),
                                     pm_call(even, x_half, b->y), pm_call(odd, x_half, b->y)));
    return f;
}

static pm_pipeline *build_camera_pipe(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *colour_temp = pm_param(ctx, PM_F32, "colour_temp");
    pm_expr *contrast = pm_param(ctx, PM_F32, "contrast");
    pm_expr *gamma = pm_param(ctx, PM_F32, "gamma");
    pm_func *img = pm_image(ctx, "img", PM_I16, R, C);
    pm_func *m3200 = pm_image(ctx, "matrix_3200", PM_F32, pm_int(ctx, 3), pm_int(ctx, 4));
    pm_func *m7000 = pm_image(ctx, "matrix_7000", PM_F32, pm_int(ctx, 3), pm_int(ctx, 4));

    camera_builder cb = {ctx, pm_var(ctx, "x"), pm_var(ctx, "y")};
    camera_builder *b = &cb;
    pm_expr *x = b->x, *y = b->y;
    pm_expr *R2 = pm_divi(R, 2), *C2 = pm_divi(C, 2);
#define K(v) pm_int(ctx, (v))

    /* denoised = clamp(I, min4, max4) over the same-colour neighbours two pixels away. */
    pm_func *denoised = plane(b, "denoised", K(8), pm_addi(R, -31), K(12), pm_addi(C, -43));
    {
        pm_expr *centre = pm_call(img, x, y);
        pm_expr *n[4] = {pm_call(img, pm_addi(x, -2), y), pm_call(img, pm_addi(x, 2), y),
                         pm_call(img, x, pm_addi(y, -2)), pm_call(img, x, pm_addi(y, 2))};
        pm_expr *lo = pm_min(pm_min(n[0], n[1]), pm_min(n[2], n[3]));
        pm_expr *hi = pm_max(pm_max(n[0], n[1]), pm_max(n[2], n[3]));
        pm_func_define_expr(denoised, pm_max(lo, pm_min(hi, centre)));
    }

    /* The four Bayer planes: c = 0 g_gr (2x, 2y), 1 r_r (2x, 2y+1), 2 b_b (2x+1, 2y),
     * 3 g_gb (2x+1, 2y+1). */
    pm_expr *c = pm_var(ctx, "c");
    pm_func *deinterleaved = pm_func_new(
        ctx, "deinterleaved", PM_I16, 3, (pm_expr *const[]){c, x, y},
        pm_intervals(pm_interval_new(K(0), K(3), 1), pm_interval_new(K(4), pm_addi(R2, -16), 1),
                     pm_interval_new(K(6), pm_addi(C2, -22), 1)));
    {
        pm_case *cases[4];
        for (int k = 0; k < 4; k++)
            cases[k] = pm_case_new(pm_eq(c, K(k)), pm_call(denoised, pm_addi(pm_muli(x, 2), k / 2),
                                                           pm_addi(pm_muli(y, 2), k % 2)));
        pm_func_define(deinterleaved, 4, cases);
    }
    pm_func *bayer[4];
    static const char *const bayer_names[4] = {"g_gr", "r_r", "b_b", "g_gb"};
    for (int k = 0; k < 4; k++) {
        bayer[k] = plane(b, bayer_names[k], K(4), pm_addi(R2, -16), K(6), pm_addi(C2, -22));
        pm_func_define_expr(bayer[k], pm_call(deinterleaved, K(k), x, y));
    }
    pm_func *g_gr = bayer[0], *r_r = bayer[1], *b_b = bayer[2], *g_gb = bayer[3];

    /* Green at red and blue sites: average along the direction of smaller change. */
    pm_func *g_r = plane(b, "g_r", K(5), pm_addi(R2, -17), K(7), pm_addi(C2, -23));
    pm_func_define_expr(
        g_r, pm_select(pm_lt(pm_absd(at(b, g_gr, 0, 1), at(b, g_gr, 0, 0)),
                             pm_absd(at(b, g_gb, -1, 0), at(b, g_gb, 0, 0))),
                       half_sum(b, at(b, g_gr, 0, 1), at(b, g_gr, 0, 0)),
                       half_sum(b, at(b, g_gb, -1, 0), at(b, g_gb, 0, 0))));
    pm_func *g_b = plane(b, "g_b", K(5), pm_addi(R2, -17), K(7), pm_addi(C2, -23));
    pm_func_define_expr(
        g_b, pm_select(pm_lt(pm_absd(at(b, g_gb, 0, -1), at(b, g_gb, 0, 0)),
                             pm_absd(at(b, g_gr, 1, 0), at(b, g_gr, 0, 0))),
                       half_sum(b, at(b, g_gb, 0, -1), at(b, g_gb, 0, 0)),
                       half_sum(b, at(b, g_gr, 1, 0), at(b, g_gr, 0, 0))));

    /* Red and blue at the other sites (half0 domain). */
    pm_expr *h0x0 = K(6), *h0x1 = pm_addi(R2, -18), *h0y0 = K(8), *h0y1 = pm_addi(C2, -24);
    pm_func *r_gr = plane(b, "r_gr", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(r_gr, colour_from_pair(b, at(b, g_gr, 0, 0), g_r, r_r, 0, 0, 0, -1));
    pm_func *b_gr = plane(b, "b_gr", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(b_gr, colour_from_pair(b, at(b, g_gr, 0, 0), g_b, b_b, 0, 0, -1, 0));
    pm_func *r_gb = plane(b, "r_gb", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(r_gb, colour_from_pair(b, at(b, g_gb, 0, 0), g_r, r_r, 0, 0, 1, 0));
    pm_func *b_gb = plane(b, "b_gb", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(b_gb, colour_from_pair(b, at(b, g_gb, 0, 0), g_b, b_b, 0, 0, 0, 1));
    pm_func *r_b = plane(b, "r_b", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(r_b, diagonal_colour(b, at(b, g_b, 0, 0), g_r, r_r,
                                             (const int[4]){0, 0, 1, -1},
                                             (const int[4]){0, -1, 1, 0}));
    pm_func *b_r = plane(b, "b_r", h0x0, h0x1, h0y0, h0y1);
    pm_func_define_expr(b_r, diagonal_colour(b, at(b, g_r, 0, 0), g_b, b_b,
                                             (const int[4]){0, 0, -1, 1},
                                             (const int[4]){0, 1, -1, 0}));

    /* Back to full resolution. */
    pm_expr *fy0 = K(16), *fy1 = pm_addi(C, -49), *fx0 = K(12), *fx1 = pm_addi(R, -37);
    pm_func *redX1 = interleave_y(b, "redX1", r_gr, r_r, h0x0, h0x1, fy0, fy1);
    pm_func *redX2 = interleave_y(b, "redX2", r_b, r_gb, h0x0, h0x1, fy0, fy1);
    pm_func *greenX1 = interleave_y(b, "greenX1", g_gr, g_r, h0x0, h0x1, fy0, fy1);
    pm_func *greenX2 = interleave_y(b, "greenX2", g_b, g_gb, h0x0, h0x1, fy0, fy1);
    pm_func *blueX1 = interleave_y(b, "blueX1", b_gr, b_r, h0x0, h0x1, fy0, fy1);
    pm_func *blueX2 = interleave_y(b, "blueX2", b_b, b_gb, h0x0, h0x1, fy0, fy1);
    pm_func *red = interleave_x(b, "red", redX1, redX2, fx0, fx1, fy0, fy1);
    pm_func *green = interleave_x(b, "green", greenX1, greenX2, fx0, fx1, fy0, fy1);
    pm_func *blue = interleave_x(b, "blue", blueX1, blueX2, fx0, fx1, fy0, fy1);

    /* The colour matrix for colour_temp, linear in 1/T between the calibrations, in f32,
     * then scaled to 8 fractional bits and truncated to int. */
    pm_expr *i = pm_var(ctx, "i"), *j = pm_var(ctx, "j");
    pm_func *matrix = pm_func_new(ctx, "matrix", PM_I32, 2, (pm_expr *const[]){i, j},
                                  pm_intervals(pm_interval_new(K(0), K(2), 1),
                                               pm_interval_new(K(0), K(3), 1)));
    {
        pm_expr *alpha = pm_div(pm_sub(pm_div(pm_float(ctx, 1), colour_temp),
                                       pm_float(ctx, 1.0 / 3200)),
                                pm_sub(pm_const(ctx, PM_F32, 1.0 / 7000),
                                       pm_const(ctx, PM_F32, 1.0 / 3200)));
        pm_expr *mixed = pm_add(pm_mul(pm_call(m3200, i, j), alpha),
                                pm_mul(pm_call(m7000, i, j), pm_sub(pm_float(ctx, 1), alpha)));
        pm_func_define_expr(matrix, pm_cast(PM_I32, pm_mulf(mixed, 256)));
    }

    /* corrected(c) for c = 0 (B), 1 (G), 2 (R) uses matrix row 2 - c. */
    pm_interval *channels = pm_interval_new(K(0), K(2), 1);
    pm_interval *out_rows = pm_interval_new(fx0, fx1, 1), *out_cols = pm_interval_new(fy0, fy1, 1);
    pm_func *corrected = pm_func_new(ctx, "corrected", PM_I16, 3, (pm_expr *const[]){c, x, y},
                                     pm_intervals(channels, out_rows, out_cols));
    {
        pm_expr *row = pm_sub(K(2), c);
        pm_expr *sum = pm_call(matrix, row, K(3));
        pm_func *rgb[3] = {red, green, blue};
        for (int k = 0; k < 3; k++)
            sum = pm_add(sum, pm_mul(pm_call(matrix, row, K(k)),
                                     pm_cast(PM_I32, pm_call(rgb[k], x, y))));
        pm_func_define_expr(corrected, pm_cdiv(sum, K(256)));
    }

    /* The tone curve over every int16 value: gamma, then an S-curve for contrast. */
    pm_expr *v = pm_var(ctx, "v");
    pm_func *curve = pm_func_new(ctx, "curveLUT", PM_U8, 1, (pm_expr *const[]){v},
                                 pm_intervals(pm_interval_new(K(-32768), K(32767), 1)));
    {
        pm_expr *xf = pm_clamp(pm_div(pm_cast(PM_F32, v), pm_float(ctx, 1024)),
                               pm_float(ctx, 0), pm_float(ctx, 1));
        pm_expr *g = pm_pow(xf, pm_div(pm_float(ctx, 1), gamma));
        pm_expr *bb = pm_sub(pm_float(ctx, 2), pm_pow(pm_const(ctx, PM_F32, 2),
                                                       pm_div(contrast, pm_float(ctx, 100))));
        pm_expr *aa = pm_sub(pm_float(ctx, 2), pm_mul(pm_float(ctx, 2), bb));
        pm_expr *ng = pm_sub(pm_float(ctx, 1), g);
        pm_expr *upper = pm_sub(pm_float(ctx, 1),
                                pm_add(pm_mul(pm_mul(aa, ng), ng), pm_mul(bb, ng)));
        pm_expr *lower = pm_add(pm_mul(pm_mul(aa, g), g), pm_mul(bb, g));
        pm_expr *z = pm_select(pm_gt(g, pm_float(ctx, 0.5)), upper, lower);
        pm_expr *scaled = pm_min(pm_max(pm_mulf(z, 256), pm_float(ctx, 0)), pm_float(ctx, 255));
        pm_func_define_expr(curve, pm_cast(PM_U8, scaled));
    }

    pm_func *process = pm_func_new(ctx, "process", PM_U8, 3, (pm_expr *const[]){c, x, y},
                                   pm_intervals(channels, out_rows, out_cols));
    pm_func_define_expr(process, pm_call(curve, pm_call(corrected, c, x, y)));
#undef K

    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "camera_pipe", 5, pm_exprs(R, C, colour_temp, contrast, gamma), 3,
                    (pm_func *const[]){img, m3200, m7000}, 1, (pm_func *const[]){process}, &p);
    return p;
}

/* rows x cols is the output picture; the raw input is 48 rows and 64 cols larger. */
static void camera_params(int64_t rows, int64_t cols, pm_value *out)
{
    out[0] = PM_I(rows + 48);
    out[1] = PM_I(cols + 64);
    out[2] = PM_F(3700);
    out[3] = PM_F(50);
    out[4] = PM_F(2.0);
}

static const float matrix_3200[3][4] = {{1.6697f, -0.2693f, -0.4004f, -42.4346f},
                                        {-0.3576f, 1.0615f, 1.5949f, -37.1158f},
                                        {-0.2175f, -1.8751f, 6.9640f, -26.6970f}};
static const float matrix_7000[3][4] = {{2.2997f, -0.4478f, 0.1706f, -39.0923f},
                                        {-0.3826f, 1.5906f, -0.2080f, -25.4311f},
                                        {-0.0888f, -0.7344f, 2.2832f, -20.0826f}};

/* The raw mosaic is synthesised so that the pipeline develops it back into the photo:
 * each site's linear colour (photo^gamma, scaled to leave headroom below the curve's
 * white point of 1024) is taken through the inverse of the colour matrix for
 * colour_temp, the colour its site records (G R / B G) is kept and rounded to a 10-bit
 * sensor value. */
static void camera_fill_from(int index, pm_buffer *b, const pm_value *params,
                             const pm_sample_picture *pic)
{
    if (index > 0) {
        const float (*m)[4] = index == 1 ? matrix_3200 : matrix_7000;
        float *data = b->data;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 4; k++)
                data[r * 4 + k] = m[r][k];
        return;
    }
    int64_t R = params[0].i, C = params[1].i;
    double T = params[2].f, gamma = params[4].f;
    double alpha = (1.0 / T - 1.0 / 3200) / (1.0 / 7000 - 1.0 / 3200);
    double m[3][4];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 4; k++)
            m[r][k] = (matrix_3200[r][k] * alpha + matrix_7000[r][k] * (1 - alpha)) * 256;
    /* inverse of the 3x3 part by cofactors */
    double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                 m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                 m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
    double inv[3][3];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            int r1 = (k + 1) % 3, r2 = (k + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
            inv[r][k] = (m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]) / det;
        }
    /* The output develops the mosaic's interior from (12, 16): a picture of the output's
     * size is placed there, so output pixel (x, y) is picture pixel (x, y), the margin
     * clamped to its edge. The photo is made at the mosaic's own size (offset 0). */
    int64_t ox = pic->rows == R ? 0 : 12, oy = pic->cols == C ? 0 : 16;
    int16_t *data = b->data;
    for (int64_t x = 0; x < R; x++)
        for (int64_t y = 0; y < C; y++) {
            /* the site's colour: 0 = R, 1 = G, 2 = B */
            int site = (x % 2 == 0) ? (y % 2 == 0 ? 1 : 0) : (y % 2 == 0 ? 2 : 1);
            double want[3];
            for (int ch = 0; ch < 3; ch++) {
                double linear = pow(pm_picture_pixel(pic, ch, x - ox, y - oy), gamma) * 0.9 * 1024;
                want[ch] = linear * 256 - m[ch][3];
            }
            double raw = 0;
            for (int k = 0; k < 3; k++)
                raw += inv[site][k] * want[k];
            raw = raw < 0 ? 0 : raw > 1023 ? 1023 : raw;
            data[x * C + y] = (int16_t)lround(raw);
        }
}

static void camera_fill(int index, pm_buffer *b, const pm_value *params)
{
    pm_sample_picture photo = pm_photo_picture(params[0].i, params[1].i);
    camera_fill_from(index, b, params, &photo);
}

const pm_sample_app pm_sample_camera_pipe = {
    .name = "camera_pipe",
    .title = "Camera Pipeline",
    .build = build_camera_pipe,
    .params = camera_params,
    .fill_input = camera_fill,
    .fill_from = camera_fill_from,
    .min_rows = 16,
    .min_cols = 16,
    .output_bgr = 1,
    .paper_rows = 1920,
    .paper_cols = 2528,
    .quick_rows = 64,
    .quick_cols = 96,
    .tolerance = 0,
};
