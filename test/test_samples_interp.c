/* test_samples_interp.c — the five larger PolyMage benchmark apps (bilateral grid, camera
 * pipe, pyramid blend, interpolate, local laplacian) under the reference interpreter at
 * their quick sizes, each checked against something computed independently from
 * docs/apps.md:
 *  - every app: builds and validates, its output has no NaN/Inf and stays in range;
 *  - camera pipe: every output pixel equals plain C written from the doc's formulas
 *    (demosaicking, the doc's integer matrix for 3700 K, the tone curve);
 *  - bilateral grid: the whole output against plain C arrays written from the doc; a
 *    constant picture stays constant, also at p = 1.0 (the zero-weight z = 13 read);
 *  - pyramid blend: with the mask all 1 the output is img1, all 0 img2 (the Laplacian
 *    pyramid collapses back to its picture);
 *  - interpolate: opaque constant colour stays that colour; with scattered alpha the
 *    known pixels keep their colour and holes get values inside the colour range;
 *  - local laplacian: the whole output against plain C arrays written from the doc
 *    (lapl_reference), within 1 LSB; with alpha = 0 the pyramids telescope and the output
 *    follows the closed form out = (ic/65535 + 0.01) * img / (img + 0.01).
 * Prints the interpreter time of each app. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An app's pipeline with buffers for its inputs and outputs at rows x cols. */
typedef struct app_run {
    const pm_sample_app *app;
    pm_ctx *ctx;
    pm_pipeline *p;
    pm_value params[8];
    int ninputs, noutputs;
    pm_buffer in[4], out[2];
    double ms;
} app_run;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Builds the app and allocates and fills its buffers at the quick size (false on failure,
 * reported). */
static bool run_open_size(app_run *r, const char *name, int64_t rows, int64_t cols);

static bool run_open(app_run *r, const char *name)
{
    memset(r, 0, sizeof *r);
    const pm_sample_app *app = pm_sample_find(name);
    if (!CHECK(app != NULL))
        return false;
    return run_open_size(r, name, app->quick_rows, app->quick_cols);
}

/* The same at rows x cols. */
static bool run_open_size(app_run *r, const char *name, int64_t rows, int64_t cols)
{
    memset(r, 0, sizeof *r);
    r->app = pm_sample_find(name);
    if (!CHECK(r->app != NULL))
        return false;
    r->ctx = pm_ctx_new();
    r->p = r->app->build(r->ctx);
    if (!CHECK(r->p != NULL)) {
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(r->ctx));
        return false;
    }
    r->app->params(rows, cols, r->params);
    r->ninputs = pm_pipeline_ninputs(r->p);
    r->noutputs = pm_pipeline_noutputs(r->p);
    for (int i = 0; i < r->ninputs + r->noutputs; i++) {
        bool is_out = i >= r->ninputs;
        int index = is_out ? i - r->ninputs : i;
        int ndims = 0;
        int64_t ext[PM_MAX_DIMS];
        if (!CHECK_STATUS(pm_pipeline_buffer_shape(r->p, is_out, index, r->params, &ndims, ext),
                          PM_OK))
            return false;
        pm_func *f = is_out ? pm_pipeline_output(r->p, index) : pm_pipeline_input(r->p, index);
        pm_buffer b = check_buffer_new(pm_func_type(f), ndims, ext);
        if (is_out)
            r->out[index] = b;
        else {
            r->in[index] = b;
            r->app->fill_input(index, &r->in[index], r->params);
        }
    }
    return true;
}

static bool run_interpret(app_run *r)
{
    double t0 = now_ms();
    pm_status st = pm_interpret(r->p, r->params, r->in, r->out);
    r->ms = now_ms() - t0;
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  %s: %s\n", r->app->name, pm_ctx_errmsg(r->ctx));
        return false;
    }
    return true;
}

static void run_close(app_run *r)
{
    for (int i = 0; i < r->ninputs; i++)
        check_buffer_free(&r->in[i]);
    for (int i = 0; i < r->noutputs; i++)
        check_buffer_free(&r->out[i]);
    pm_ctx_free(r->ctx);
}

/* All values of an f32 buffer are finite and within [lo, hi]. */
static bool all_in_range(const pm_buffer *b, double lo, double hi)
{
    const float *v = b->data;
    int64_t n = check_buffer_count(b), bad = 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < lo || v[i] > hi)
            bad++;
    if (bad)
        fprintf(stderr, "  %lld of %lld values outside [%g, %g] or not finite\n", (long long)bad,
                (long long)n, lo, hi);
    return bad == 0;
}

/* ---- camera pipe: plain C from the doc ------------------------------------------------- */

static const int16_t *cam_raw;
static int64_t cam_cols;

static int cam_img(int64_t x, int64_t y) { return cam_raw[x * cam_cols + y]; }
static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }
static int half(int a, int b) { return (a + b) / 2; } /* C division, as the doc says */

static int cam_denoised(int64_t x, int64_t y)
{
    int n0 = cam_img(x - 2, y), n1 = cam_img(x + 2, y), n2 = cam_img(x, y - 2), n3 = cam_img(x, y + 2);
    int lo = imin(imin(n0, n1), imin(n2, n3)), hi = imax(imax(n0, n1), imax(n2, n3));
    return imax(lo, imin(hi, cam_img(x, y)));
}
static int g_gr(int64_t x, int64_t y) { return cam_denoised(2 * x, 2 * y); }
static int r_r(int64_t x, int64_t y) { return cam_denoised(2 * x, 2 * y + 1); }
static int b_b(int64_t x, int64_t y) { return cam_denoised(2 * x + 1, 2 * y); }
static int g_gb(int64_t x, int64_t y) { return cam_denoised(2 * x + 1, 2 * y + 1); }
static int g_r(int64_t x, int64_t y)
{
    return abs(g_gr(x, y + 1) - g_gr(x, y)) < abs(g_gb(x - 1, y) - g_gb(x, y))
               ? half(g_gr(x, y + 1), g_gr(x, y))
               : half(g_gb(x - 1, y), g_gb(x, y));
}
static int g_b(int64_t x, int64_t y)
{
    return abs(g_gb(x, y - 1) - g_gb(x, y)) < abs(g_gr(x + 1, y) - g_gr(x, y))
               ? half(g_gb(x, y - 1), g_gb(x, y))
               : half(g_gr(x + 1, y), g_gr(x, y));
}
static int r_gr(int64_t x, int64_t y)
{
    return g_gr(x, y) - half(g_r(x, y), g_r(x, y - 1)) + half(r_r(x, y - 1), r_r(x, y));
}
static int b_gr(int64_t x, int64_t y)
{
    return g_gr(x, y) - half(g_b(x, y), g_b(x - 1, y)) + half(b_b(x, y), b_b(x - 1, y));
}
static int r_gb(int64_t x, int64_t y)
{
    return g_gb(x, y) - half(g_r(x, y), g_r(x + 1, y)) + half(r_r(x, y), r_r(x + 1, y));
}
static int b_gb(int64_t x, int64_t y)
{
    return g_gb(x, y) - half(g_b(x, y), g_b(x, y + 1)) + half(b_b(x, y), b_b(x, y + 1));
}
static int r_b(int64_t x, int64_t y)
{
    int rp = g_b(x, y) - half(g_r(x, y), g_r(x + 1, y - 1)) + half(r_r(x, y), r_r(x + 1, y - 1));
    int rpd = abs(r_r(x, y) - r_r(x + 1, y - 1));
    int rn = g_b(x, y) - half(g_r(x, y - 1), g_r(x + 1, y)) + half(r_r(x, y - 1), r_r(x + 1, y));
    int rnd = abs(r_r(x, y - 1) - r_r(x + 1, y));
    return rpd < rnd ? rp : rn;
}
static int b_r(int64_t x, int64_t y)
{
    int bp = g_r(x, y) - half(g_b(x, y), g_b(x - 1, y + 1)) + half(b_b(x, y), b_b(x - 1, y + 1));
    int bpd = abs(b_b(x, y) - b_b(x - 1, y + 1));
    int bn = g_r(x, y) - half(g_b(x, y + 1), g_b(x - 1, y)) + half(b_b(x, y + 1), b_b(x - 1, y));
    int bnd = abs(b_b(x, y + 1) - b_b(x - 1, y));
    return bpd < bnd ? bp : bn;
}

/* Full-resolution colour at (x, y): which half-res plane holds it follows the Bayer cell. */
static void cam_rgb(int64_t x, int64_t y, int rgb[3])
{
    int64_t hx = x / 2, hy = y / 2;
    bool ex = x % 2 == 0, ey = y % 2 == 0;
    if (ex && ey) { /* green site of a red row */
        rgb[0] = r_gr(hx, hy), rgb[1] = g_gr(hx, hy), rgb[2] = b_gr(hx, hy);
    } else if (ex) { /* red site */
        rgb[0] = r_r(hx, hy), rgb[1] = g_r(hx, hy), rgb[2] = b_r(hx, hy);
    } else if (ey) { /* blue site */
        rgb[0] = r_b(hx, hy), rgb[1] = g_b(hx, hy), rgb[2] = b_b(hx, hy);
    } else { /* green site of a blue row */
        rgb[0] = r_gb(hx, hy), rgb[1] = g_gb(hx, hy), rgb[2] = b_gb(hx, hy);
    }
}

static int cam_curve(int v, float gamma, float contrast)
{
    float xf = (float)v / 1024.0f;
    xf = xf < 0 ? 0 : xf > 1 ? 1 : xf;
    float g = powf(xf, 1.0f / gamma);
    float b = 2.0f - powf(2.0f, contrast / 100.0f);
    float a = 2.0f - 2.0f * b;
    float z = g > 0.5f ? 1.0f - (a * (1 - g) * (1 - g) + b * (1 - g)) : a * g * g + b * g;
    float s = 256.0f * z;
    s = s < 0 ? 0 : s > 255 ? 255 : s;
    return (int)(uint8_t)s;
}

static void test_camera_pipe(void)
{
    app_run r;
    if (run_open(&r, "camera_pipe") && run_interpret(&r)) {
        /* The doc's matrix for 3700 K (rows R, G, B). */
        static const int matrix[3][4] = {
            {548, -103, 7, -10220}, {-96, 373, 61, -7254}, {-30, -260, 882, -5562}};
        cam_raw = r.in[0].data;
        cam_cols = r.params[1].i;
        int64_t rows = r.out[0].extent[1], cols = r.out[0].extent[2];
        const uint8_t *out = r.out[0].data;
        int64_t bad = 0, distinct_low = 0, distinct_high = 0;
        for (int64_t x = 12; x < 12 + rows; x++)
            for (int64_t y = 16; y < 16 + cols; y++) {
                int rgb[3];
                cam_rgb(x, y, rgb);
                for (int c = 0; c < 3; c++) {
                    const int *m = matrix[2 - c]; /* channel 0 is blue */
                    int sum = m[3] + m[0] * rgb[0] + m[1] * rgb[1] + m[2] * rgb[2];
                    int want = cam_curve((int16_t)(sum / 256), 2.0f, 50.0f);
                    int got = out[(c * rows + (x - 12)) * cols + (y - 16)];
                    if (got != want && bad++ < 5)
                        fprintf(stderr, "  camera_pipe (%d, %lld, %lld): got %d, want %d\n", c,
                                (long long)x, (long long)y, got, want);
                    distinct_low += got < 64;
                    distinct_high += got > 192;
                }
            }
        CHECK(bad == 0);
        /* the synthesized raw develops into a real picture, not a flat or clipped one */
        CHECK(distinct_low > 0 && distinct_high > 0);
        printf("  camera_pipe %lldx%lld: %.0f ms\n", (long long)rows, (long long)cols, r.ms);
    }
    run_close(&r);
}

/* ---- bilateral grid --------------------------------------------------------------------- */

/* The bilateral grid from the doc's math with plain arrays, in f32 and the doc's order of
 * sums: out[(x-24) * (C-56) + y-24] for padded pixels x in [24, R-33], y in [24, C-33]. */
static void bilateral_reference(int64_t R, int64_t C, const float *in, float *out)
{
    int64_t GX = (R - 33) / 8 + 3, GY = (C - 33) / 8 + 3, NX = GX + 1, NY = GY + 1;
    size_t cells = (size_t)(2 * NX * NY * 15);
    float *grid = calloc(cells, sizeof *grid), *bz = calloc(cells, sizeof *bz),
          *bx = calloc(cells, sizeof *bx), *by = calloc(cells, sizeof *by);
#define G(a, c, gx, gy, z) a[(((c) * NX + (gx)) * NY + (gy)) * 15 + (z)]
    for (int c = 0; c < 2; c++)
        for (int64_t gx = 1; gx <= GX; gx++)
            for (int64_t gy = 1; gy <= GY; gy++)
                for (int i = 0; i <= 8; i++)
                    for (int j = 0; j <= 8; j++) {
                        float p = in[(8 * gx - 4 + i) * C + 8 * gy - 4 + j];
                        int zb = 2 + (int)(10 * p + 0.5f);
                        G(grid, c, gx, gy, zb) += c == 0 ? p : 1.0f;
                    }
    for (int c = 0; c < 2; c++)
        for (int64_t gx = 1; gx <= GX; gx++)
            for (int64_t gy = 1; gy <= GY; gy++)
                for (int z = 2; z <= 12; z++)
                    G(bz, c, gx, gy, z) = G(grid, c, gx, gy, z - 2) + 4 * G(grid, c, gx, gy, z - 1) +
                                          6 * G(grid, c, gx, gy, z) + 4 * G(grid, c, gx, gy, z + 1) +
                                          G(grid, c, gx, gy, z + 2);
    for (int c = 0; c < 2; c++)
        for (int64_t gx = 3; gx <= GX - 2; gx++)
            for (int64_t gy = 1; gy <= GY; gy++)
                for (int z = 2; z <= 12; z++)
                    G(bx, c, gx, gy, z) = G(bz, c, gx - 2, gy, z) + 4 * G(bz, c, gx - 1, gy, z) +
                                          6 * G(bz, c, gx, gy, z) + 4 * G(bz, c, gx + 1, gy, z) +
                                          G(bz, c, gx + 2, gy, z);
    for (int c = 0; c < 2; c++)
        for (int64_t gx = 3; gx <= GX - 2; gx++)
            for (int64_t gy = 3; gy <= GY - 2; gy++)
                for (int z = 2; z <= 12; z++)
                    G(by, c, gx, gy, z) = G(bx, c, gx, gy - 2, z) + 4 * G(bx, c, gx, gy - 1, z) +
                                          6 * G(bx, c, gx, gy, z) + 4 * G(bx, c, gx, gy + 1, z) +
                                          G(bx, c, gx, gy + 2, z);
    for (int64_t x = 24; x <= R - 33; x++)
        for (int64_t y = 24; y <= C - 33; y++) {
            float p = in[x * C + y], zv = 10 * p;
            int zi = (int)zv;
            float zf = zv - (float)zi, xf = (float)(x % 8) / 8, yf = (float)(y % 8) / 8;
            int64_t xi = x / 8, yi = y / 8;
            float val[2];
            for (int c = 0; c < 2; c++) {
                float v[2][2][2];
                for (int a = 0; a < 2; a++)
                    for (int b = 0; b < 2; b++)
                        for (int d = 0; d < 2; d++) {
                            int z = 2 + zi + d; /* z = 13 only with weight zf = 0 */
                            v[a][b][d] = G(by, c, xi + a, yi + b, z > 12 ? 12 : z);
                        }
                float lo[2];
                for (int d = 0; d < 2; d++) {
                    float u0 = v[0][0][d] + xf * (v[1][0][d] - v[0][0][d]);
                    float u1 = v[0][1][d] + xf * (v[1][1][d] - v[0][1][d]);
                    lo[d] = u0 + yf * (u1 - u0);
                }
                val[c] = lo[0] + zf * (lo[1] - lo[0]);
            }
            out[(x - 24) * (C - 56) + y - 24] = val[1] > 0 ? val[0] / val[1] : p;
        }
#undef G
    free(grid);
    free(bz);
    free(bx);
    free(by);
}

static void test_bilateral_grid(void)
{
    app_run r;
    if (run_open(&r, "bilateral_grid") && run_interpret(&r)) {
        CHECK(all_in_range(&r.out[0], 0.0, 1.0));
        int64_t n = check_buffer_count(&r.out[0]);
        float *want = malloc(sizeof *want * (size_t)n);
        bilateral_reference(r.params[0].i, r.params[1].i, r.in[0].data, want);
        const float *got = r.out[0].data;
        double worst = 0;
        for (int64_t i = 0; i < n; i++)
            worst = fmax(worst, fabs((double)got[i] - want[i]));
        if (!CHECK(worst < 1e-5))
            fprintf(stderr, "  bilateral_grid vs plain C: max diff %g\n", worst);
        free(want);
        printf("  bilateral_grid %lldx%lld: %.0f ms\n", (long long)r.out[0].extent[0],
               (long long)r.out[0].extent[1], r.ms);

        /* A constant picture: every grid cell holds (n v, n) at one z, the blurs and the
         * interpolation mix such pairs, so the ratio stays v. */
        float *in = r.in[0].data;
        for (int64_t i = 0; i < check_buffer_count(&r.in[0]); i++)
            in[i] = 0.375f;
        if (run_interpret(&r)) {
            const float *o = r.out[0].data;
            double worst = 0;
            for (int64_t i = 0; i < check_buffer_count(&r.out[0]); i++)
                worst = fmax(worst, fabs(o[i] - 0.375));
            CHECK(worst < 1e-6);
        }
        /* p = 1.0 everywhere reads z = 13 with weight 0 (clamped in the definition). */
        for (int64_t i = 0; i < check_buffer_count(&r.in[0]); i++)
            in[i] = 1.0f;
        if (run_interpret(&r)) {
            const float *o = r.out[0].data;
            double worst = 0;
            for (int64_t i = 0; i < check_buffer_count(&r.out[0]); i++)
                worst = fmax(worst, fabs(o[i] - 1.0));
            CHECK(worst < 1e-6);
        }
    }
    run_close(&r);
}

/* ---- pyramid blend ---------------------------------------------------------------------- */

/* max |blend - img| over the output, img being the padded input at offset 31. */
static double blend_vs_input(const app_run *r, const pm_buffer *img)
{
    int64_t rows = r->out[0].extent[1], cols = r->out[0].extent[2];
    int64_t R = img->extent[1], C = img->extent[2];
    const float *o = r->out[0].data, *in = img->data;
    double worst = 0;
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < rows; x++)
            for (int64_t y = 0; y < cols; y++)
                worst = fmax(worst, fabs((double)o[(c * rows + x) * cols + y] -
                                         in[(c * R + x + 31) * C + y + 31]));
    return worst;
}

static void test_pyramid_blend(void)
{
    app_run r;
    if (run_open(&r, "pyramid_blend") && run_interpret(&r)) {
        CHECK(all_in_range(&r.out[0], -0.25, 1.25));
        printf("  pyramid_blend %lldx%lld: %.0f ms\n", (long long)r.out[0].extent[1],
               (long long)r.out[0].extent[2], r.ms);
        float *mask = r.in[2].data;
        for (int fill = 1; fill >= 0; fill--) {
            for (int64_t i = 0; i < check_buffer_count(&r.in[2]); i++)
                mask[i] = (float)fill;
            if (run_interpret(&r)) {
                double worst = blend_vs_input(&r, &r.in[fill ? 0 : 1]);
                if (!CHECK(worst < 1e-5))
                    fprintf(stderr, "  pyramid_blend mask %d: max diff %g\n", fill, worst);
            }
        }
    }
    run_close(&r);
}

/* ---- interpolate ------------------------------------------------------------------------ */

static void test_interpolate(void)
{
    app_run r;
    if (run_open(&r, "interpolate") && run_interpret(&r)) {
        int64_t R = r.params[0].i, C = r.params[1].i, xs = R + 2, ys = C + 2;
        const float *in = r.in[0].data, *o = r.out[0].data;
#define IN(c, x, y) in[((c) * xs + (x)) * ys + (y)]
#define OUT(c, x, y) o[((c) * R + (x)) * C + (y)]
        /* Opaque pixels keep their colour; holes get a weighted average of opaque colours
         * (every weight in the recurrence is >= 0 and alpha is 0 or 1), so they stay
         * within the colour range of the opaque pixels. */
        double lo[3] = {1, 1, 1}, hi[3] = {0, 0, 0};
        int64_t opaque = 0;
        for (int64_t x = 1; x <= R; x++)
            for (int64_t y = 1; y <= C; y++)
                if (IN(3, x, y) == 1.0f) {
                    opaque++;
                    for (int c = 0; c < 3; c++)
                        lo[c] = fmin(lo[c], IN(c, x, y)), hi[c] = fmax(hi[c], IN(c, x, y));
                }
        CHECK(opaque > 0 && opaque < R * C);
        int64_t bad_known = 0, bad_hole = 0;
        for (int c = 0; c < 3; c++)
            for (int64_t x = 0; x < R; x++)
                for (int64_t y = 0; y < C; y++) {
                    float got = OUT(c, x, y);
                    if (IN(3, x + 1, y + 1) == 1.0f)
                        bad_known += got != IN(c, x + 1, y + 1);
                    else
                        bad_hole += !(got >= lo[c] - 1e-5 && got <= hi[c] + 1e-5);
                }
        CHECK(bad_known == 0);
        CHECK(bad_hole == 0);
        printf("  interpolate %lldx%lld: %.0f ms\n", (long long)R, (long long)C, r.ms);

#undef IN
#undef OUT
    }
    run_close(&r);

    /* Opaque constant colour everywhere: every level's transparency is 0 inside, so the
     * output is the colour exactly. At a smaller size, odd at some levels. */
    if (run_open_size(&r, "interpolate", 90, 70)) {
        int64_t R = r.params[0].i, C = r.params[1].i, xs = R + 2, ys = C + 2;
        const float *o = r.out[0].data;
#define OUT(c, x, y) o[((c) * R + (x)) * C + (y)]
        float *w = r.in[0].data;
        static const float colour[4] = {0.25f, 0.5f, 0.75f, 1.0f};
        for (int c = 0; c < 4; c++)
            for (int64_t x = 1; x <= R; x++)
                for (int64_t y = 1; y <= C; y++)
                    w[(c * xs + x) * ys + y] = colour[c];
        if (run_interpret(&r)) {
            int64_t bad = 0;
            for (int c = 0; c < 3; c++)
                for (int64_t x = 0; x < R; x++)
                    for (int64_t y = 0; y < C; y++)
                        bad += OUT(c, x, y) != colour[c];
            CHECK(bad == 0);
        }
#undef OUT
    }
    run_close(&r);
}

/* ---- local laplacian -------------------------------------------------------------------- */

/* The grey level img of the definition at padded pixel (x, y), in f32 like the pipeline. */
static float lapl_grey(const uint16_t *ic, int64_t xs, int64_t ys, int64_t x, int64_t y)
{
#define IC(c) ic[((c) * xs + x) * ys + y]
    return (0.299f * IC(2) + 0.587f * IC(1) + 0.114f * IC(0)) / 65535.0f;
#undef IC
}

/* One level-l array of the reference: (R_l + 4) x (C_l + 4) floats. */
typedef struct lapl_plane {
    int64_t rows, cols; /* R_l, C_l: the array is (rows + 4) x (cols + 4) */
    float *v;
} lapl_plane;

static lapl_plane lp_new(int64_t rows, int64_t cols)
{
    lapl_plane p = {rows, cols, calloc((size_t)((rows + 4) * (cols + 4)), sizeof(float))};
    return p;
}
#define LP(p, x, y) ((p).v[(x) * ((p).cols + 4) + (y)])

/* pyrDown of f into a (rows, cols) plane: x pass then y pass, 0 outside the bodies. */
static lapl_plane lp_down(lapl_plane f, int64_t rows, int64_t cols)
{
    lapl_plane dx = lp_new(rows, f.cols), d = lp_new(rows, cols);
    for (int64_t x = 2; x <= rows + 1; x++)
        for (int64_t y = 2; y <= f.cols + 1; y++)
            LP(dx, x, y) = (LP(f, 2 * x - 3, y) + 3 * LP(f, 2 * x - 2, y) + 3 * LP(f, 2 * x - 1, y) +
                            LP(f, 2 * x, y)) * 0.125f;
    for (int64_t x = 2; x <= rows + 1; x++)
        for (int64_t y = 2; y <= cols + 1; y++)
            LP(d, x, y) = (LP(dx, x, 2 * y - 3) + 3 * LP(dx, x, 2 * y - 2) +
                           3 * LP(dx, x, 2 * y - 1) + LP(dx, x, 2 * y)) * 0.125f;
    free(dx.v);
    return d;
}

/* pyrUp of f (level l + 1) to a (rows, cols) plane, 0 outside the bodies. */
static lapl_plane lp_up(lapl_plane f, int64_t rows, int64_t cols)
{
    lapl_plane ux = lp_new(rows, f.cols), u = lp_new(rows, cols);
    for (int64_t x = 2; x <= rows + 1; x++)
        for (int64_t y = 2; y <= f.cols + 1; y++)
            LP(ux, x, y) = x % 2 == 0 ? 0.25f * LP(f, x / 2, y) + 0.75f * LP(f, x / 2 + 1, y)
                                      : 0.25f * LP(f, x / 2 + 2, y) + 0.75f * LP(f, x / 2 + 1, y);
    for (int64_t x = 2; x <= rows + 1; x++)
        for (int64_t y = 2; y <= cols + 1; y++)
            LP(u, x, y) = y % 2 == 0 ? 0.25f * LP(ux, x, y / 2) + 0.75f * LP(ux, x, y / 2 + 1)
                                     : 0.25f * LP(ux, x, y / 2 + 2) + 0.75f * LP(ux, x, y / 2 + 1);
    free(ux.v);
    return u;
}

/* Local Laplacian with 8 levels and 8 intensities straight from the doc's math. */
static void lapl_reference(int64_t R, int64_t C, float alpha, float beta, const uint16_t *ic,
                           uint16_t *out)
{
    enum { L = 8, K = 8 };
    int64_t xs = R + 4, ys = C + 4;
    lapl_plane in_g[L], g[L][K], lap[L][K], out_l[L], out_g[L];
    in_g[0] = lp_new(R, C);
    for (int64_t x = 0; x < xs; x++)
        for (int64_t y = 0; y < ys; y++)
            LP(in_g[0], x, y) = lapl_grey(ic, xs, ys, x, y);
    for (int l = 1; l < L; l++)
        in_g[l] = lp_down(in_g[l - 1], R >> l, C >> l);
    for (int k = 0; k < K; k++) {
        g[0][k] = lp_new(R, C);
        for (int64_t x = 0; x < xs; x++)
            for (int64_t y = 0; y < ys; y++) {
                float v = LP(in_g[0], x, y);
                int idx = (int)(v * 1792);
                idx = idx < 0 ? 0 : idx > 1792 ? 1792 : idx;
                float t = (float)(idx - 256 * k) / 256;
                float level = (float)k / 7;
                LP(g[0][k], x, y) = beta * (v - level) + level + alpha * t * expf(-(t * t) / 2);
            }
        for (int l = 1; l < L; l++)
            g[l][k] = lp_down(g[l - 1][k], R >> l, C >> l);
        for (int l = 0; l < L - 1; l++) {
            lapl_plane u = lp_up(g[l + 1][k], R >> l, C >> l);
            lap[l][k] = lp_new(R >> l, C >> l);
            for (int64_t i = 0; i < (u.rows + 4) * (u.cols + 4); i++)
                lap[l][k].v[i] = g[l][k].v[i] - u.v[i];
            free(u.v);
        }
        lap[L - 1][k] = g[L - 1][k];
    }
    for (int l = 0; l < L; l++) {
        out_l[l] = lp_new(R >> l, C >> l);
        for (int64_t x = 0; x < (R >> l) + 4; x++)
            for (int64_t y = 0; y < (C >> l) + 4; y++) {
                float lev = LP(in_g[l], x, y) * 7;
                int li = (int)lev;
                li = li < 0 ? 0 : li > 6 ? 6 : li;
                float lf = lev - (float)li;
                LP(out_l[l], x, y) = (1 - lf) * LP(lap[l][li], x, y) + lf * LP(lap[l][li + 1], x, y);
            }
    }
    out_g[L - 1] = out_l[L - 1];
    for (int l = L - 2; l >= 0; l--) {
        out_g[l] = lp_up(out_g[l + 1], R >> l, C >> l);
        for (int64_t i = 0; i < ((R >> l) + 4) * ((C >> l) + 4); i++)
            out_g[l].v[i] += out_l[l].v[i];
    }
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < R; x++)
            for (int64_t y = 0; y < C; y++) {
                float colour = ic[(c * xs + x + 2) * ys + y + 2] / 65535.0f + 0.01f;
                float v = LP(out_g[0], x + 2, y + 2) * colour / (LP(in_g[0], x + 2, y + 2) + 0.01f);
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                out[(c * R + x) * C + y] = (uint16_t)(v * 65535);
            }
    for (int l = 0; l < L; l++) {
        free(in_g[l].v);
        free(out_l[l].v);
        if (l < L - 1)
            free(out_g[l].v);
        for (int k = 0; k < K; k++) {
            free(g[l][k].v);
            if (l < L - 1)
                free(lap[l][k].v);
        }
    }
}
#undef LP

static void test_local_laplacian(void)
{
    app_run r;
    if (run_open(&r, "local_laplacian") && run_interpret(&r)) {
        int64_t R = r.params[0].i, C = r.params[1].i, xs = R + 4, ys = C + 4;
        const uint16_t *ic = r.in[0].data, *o = r.out[0].data;
#define IC(c, x, y) ic[((c) * xs + (x)) * ys + (y)]
#define OUT(c, x, y) o[((c) * R + (x)) * C + (y)]
        printf("  local_laplacian %lldx%lld: %.0f ms\n", (long long)R, (long long)C, r.ms);
        /* Detail enhancement keeps the picture: small mean change, some change. */
        double total = 0;
        for (int c = 0; c < 3; c++)
            for (int64_t x = 0; x < R; x++)
                for (int64_t y = 0; y < C; y++)
                    total += fabs((double)OUT(c, x, y) - IC(c, x + 2, y + 2));
        double mean = total / (3.0 * R * C);
        if (!CHECK(mean > 16 && mean < 0.05 * 65535))
            fprintf(stderr, "  local_laplacian: mean |out - in| = %g\n", mean);

        /* alpha = 0: every intensity level holds the same picture, so every Laplacian
         * level collapses back to img and out = (ic/65535 + 0.01) * img / (img + 0.01),
         * borders included. Up to f32 rounding before the truncation to u16. */
        r.params[2] = PM_F(0);
        if (run_interpret(&r)) {
            int64_t bad = 0;
            for (int c = 0; c < 3; c++)
                for (int64_t x = 0; x < R; x++)
                    for (int64_t y = 0; y < C; y++) {
                        float g = lapl_grey(ic, xs, ys, x + 2, y + 2);
                        float v = g * (IC(c, x + 2, y + 2) / 65535.0f + 0.01f) / (g + 0.01f);
                        v = v < 0 ? 0 : v > 1 ? 1 : v;
                        int want = (int)(v * 65535.0f);
                        if (abs(OUT(c, x, y) - want) > 2 && bad++ < 5)
                            fprintf(stderr, "  local_laplacian alpha 0 (%d, %lld, %lld): got %d, want %d\n",
                                    c, (long long)x, (long long)y, OUT(c, x, y), want);
                    }
            CHECK(bad == 0);
        }
        r.params[2] = PM_F(1.0 / 7);

        /* The whole output against plain C written from the doc (lapl_reference). */
        r.params[2] = PM_F(1.0 / 7);
        if (run_interpret(&r)) {
            uint16_t *want = malloc(sizeof *want * (size_t)(3 * R * C));
            lapl_reference(R, C, 1.0f / 7, 1.0f, ic, want);
            int64_t bad = 0;
            int worst = 0;
            for (int64_t i = 0; i < 3 * R * C; i++) {
                int d = abs((int)o[i] - (int)want[i]);
                worst = d > worst ? d : worst;
                bad += d > 1;
            }
            if (!CHECK(bad == 0))
                fprintf(stderr, "  local_laplacian vs reference: %lld pixels off by > 1 (max %d)\n",
                        (long long)bad, worst);
            printf("  local_laplacian vs plain C: max diff %d LSB\n", worst);
            free(want);
        }
#undef IC
#undef OUT
    }
    run_close(&r);
}

int main(void)
{
    test_camera_pipe();
    test_bilateral_grid();
    test_pyramid_blend();
    test_interpolate();
    test_local_laplacian();
    return check_finish("samples_interp");
}
