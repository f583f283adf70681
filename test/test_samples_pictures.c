/* test_samples_pictures.c — the pictures the sample apps give, as the polymage command
 * and the image service show them:
 *  - every app at odd sizes (1x1, 7x9, 33x65, 101x203, 203x133 where the app accepts
 *    them, its smallest picture made odd with three or four columns more, interpolate at
 *    954x1440 and 1001x1203): compiled once at the app's quick size, run at each size,
 *    its output equals the interpreter's within the app's tolerance;
 *  - interpolate fills the whole picture at every size with an opaque pixel: no output
 *    pixel is black (0 or NaN in every channel) where the input colour is not (the last
 *    rows and columns were, at sizes not a multiple of 512: 154 pixels at 954x1440);
 *  - the rendering rule (pm_sample_render): floats in [0, 1] are clamped, so one pixel
 *    at 1.5 is 255 and leaves the others at their own levels; u16 over 0 .. 65535;
 *    PM_RENDER_STRETCH (harris's response) from the lowest to the highest value; BGR;
 *  - pm_picture_row (the service's fast fill) equals pm_picture_level per pixel for grey,
 *    RGB and RGBA pictures, every channel and luma, rows and columns outside (clamped),
 *    rows shorter than, overlapping and wider than the picture; unsharp mask's fill from a
 *    picture (the picture inside a zero border, every element written).
 * PM_TEST_ONLY=app runs one app's sizes. */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* An app's buffers at one size: inputs filled from the generated photo, the outputs of
 * the interpreter (want) and of the kernel (got), both first filled with one garbage. */
typedef struct app_buffers {
    int nin, nout;
    pm_value params[16];
    pm_buffer in[8], want[4], got[4];
} app_buffers;

static bool buffers_new(app_buffers *b, const pm_sample_app *app, pm_pipeline *p,
                        int64_t rows, int64_t cols)
{
    memset(b, 0, sizeof *b);
    b->nin = pm_pipeline_ninputs(p);
    b->nout = pm_pipeline_noutputs(p);
    app->params(rows, cols, b->params);
    for (int i = 0; i < b->nin + b->nout; i++) {
        bool is_out = i >= b->nin;
        int index = is_out ? i - b->nin : i, nd = 0;
        int64_t ext[PM_MAX_DIMS];
        if (!CHECK_STATUS(pm_pipeline_buffer_shape(p, is_out, index, b->params, &nd, ext), PM_OK))
            return false;
        pm_type t = pm_func_type(is_out ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index));
        if (!is_out) {
            b->in[index] = check_buffer_new(t, nd, ext);
            app->fill_input(index, &b->in[index], b->params);
            continue;
        }
        b->want[index] = check_buffer_new(t, nd, ext);
        b->got[index] = check_buffer_new(t, nd, ext);
        check_fill(&b->want[index], 99u, false);
        check_fill(&b->got[index], 99u, false);
    }
    return true;
}

static void buffers_free(app_buffers *b)
{
    for (int i = 0; i < b->nin; i++)
        check_buffer_free(&b->in[i]);
    for (int i = 0; i < b->nout; i++) {
        check_buffer_free(&b->want[i]);
        check_buffer_free(&b->got[i]);
    }
}

/* ---- interpolate: a full picture ------------------------------------------------------ */

/* Output pixels of interpolate's out [3][R][C] that are black (0 or NaN in every
 * channel) where the input colour img[0..2][x+1][y+1] is not; those within 32 of the
 * bottom or right edge counted into *edge. */
static int64_t black_pixels(const pm_buffer *in, const pm_buffer *out, int64_t *edge)
{
    int64_t R = out->extent[1], C = out->extent[2], xs = R + 2, ys = C + 2, bad = 0;
    const float *img = in->data, *o = out->data;
    *edge = 0;
    for (int64_t x = 0; x < R; x++)
        for (int64_t y = 0; y < C; y++) {
            bool input_black = true, black = true;
            for (int c = 0; c < 3; c++) {
                float v = o[(c * R + x) * C + y];
                input_black &= img[(c * xs + x + 1) * ys + y + 1] == 0;
                black &= v == 0 || isnan(v); /* NaN is shown as 0 */
            }
            if (black && !input_black) {
                bad++;
                *edge += x >= R - 32 || y >= C - 32;
            }
        }
    return bad;
}

/* Without one opaque pixel there is nothing to fill from (1x1 on a hole: NaN). */
static bool has_opaque(const pm_buffer *in)
{
    int64_t plane = in->extent[1] * in->extent[2];
    const float *alpha = (const float *)in->data + 3 * plane;
    for (int64_t i = 0; i < plane; i++)
        if (alpha[i] > 0)
            return true;
    return false;
}

static void check_full_picture(const app_buffers *b, const char *label)
{
    if (!has_opaque(&b->in[0])) {
        printf("  %s: no opaque pixel to fill from\n", label);
        return;
    }
    int64_t edge_want, edge_got;
    int64_t want = black_pixels(&b->in[0], &b->want[0], &edge_want);
    int64_t got = black_pixels(&b->in[0], &b->got[0], &edge_got);
    if (!CHECK(want == 0 && got == 0))
        fprintf(stderr, "  %s: black pixels: interpreter %lld (%lld at the edges), "
                "compiled %lld (%lld)\n", label, (long long)want, (long long)edge_want,
                (long long)got, (long long)edge_got);
}

/* ---- every app at odd sizes ----------------------------------------------------------- */

/* Runs app at rows x cols through k and the interpreter and compares. */
static void check_size(const pm_sample_app *app, pm_pipeline *p, pm_kernel *k, int64_t rows,
                       int64_t cols)
{
    char label[128];
    snprintf(label, sizeof label, "%s %lldx%lld", app->name, (long long)rows, (long long)cols);
    app_buffers b;
    pm_error err;
    if (buffers_new(&b, app, p, rows, cols) &&
        CHECK_STATUS(pm_interpret(p, b.params, b.in, b.want), PM_OK) &&
        CHECK_STATUS(pm_kernel_run(k, b.params, b.in, b.got, &err), PM_OK)) {
        double worst = 0;
        for (int i = 0; i < b.nout; i++) {
            double d = check_buffer_maxdiff(&b.want[i], &b.got[i]);
            worst = d > worst ? d : worst;
        }
        if (!CHECK(worst <= app->tolerance))
            fprintf(stderr, "  %s: max diff %g > %g\n", label, worst, app->tolerance);
        if (strcmp(app->name, "interpolate") == 0)
            check_full_picture(&b, label);
        printf("  %s: max diff %g\n", label, worst);
    }
    buffers_free(&b);
}

/* The sizes app is run at: the odd ones it accepts, and its smallest made odd, with
 * three or four columns more. */
static int app_sizes(const pm_sample_app *app, int64_t (*sizes)[2])
{
    static const int64_t odd[][2] = {{1, 1}, {7, 9}, {33, 65}, {101, 203}, {203, 133}};
    int n = 0;
    for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++)
        if (odd[i][0] >= app->min_rows && odd[i][1] >= app->min_cols) {
            sizes[n][0] = odd[i][0];
            sizes[n++][1] = odd[i][1];
        }
    sizes[n][0] = app->min_rows | 1;
    sizes[n++][1] = (app->min_cols + 3) | 1;
    if (strcmp(app->name, "interpolate") == 0) { /* the sizes that once had black edges */
        sizes[n][0] = 954, sizes[n++][1] = 1440;
        sizes[n][0] = 1001, sizes[n++][1] = 1203;
    }
    return n;
}

static void test_app(pm_jit *jit, const pm_sample_app *app)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "  %s: %s\n", app->name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    pm_value est[16];
    app->params(app->quick_rows, app->quick_cols, est);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, est, NULL, &err);
    if (CHECK(k != NULL)) {
        int64_t sizes[8][2];
        for (int i = 0, n = app_sizes(app, sizes); i < n; i++)
            check_size(app, p, k, sizes[i][0], sizes[i][1]);
    } else {
        fprintf(stderr, "  compile %s: %s\n", app->name, err.message);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- the rendering rule ---------------------------------------------------------------- */

/* A [3][2][3] f32 picture in [0, 1] with one pixel at 1.5 and one at -0.25: clamped, the
 * others keep their own levels (a stretch over -0.25 .. 1.5 moved them all). */
static void test_render_clamp(void)
{
    float v[18];
    for (int i = 0; i < 18; i++)
        v[i] = (float)i / 17;
    v[4] = 1.5f;
    v[9] = -0.25f;
    pm_buffer b = pm_buffer_dense(v, PM_F32, 3, (int64_t[]){3, 2, 3});
    int64_t rows, cols;
    int ch;
    uint8_t *px = pm_sample_render(&b, 0, &rows, &cols, &ch);
    if (!CHECK(px && rows == 2 && cols == 3 && ch == 3))
        return;
    int bad = 0;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < 6; i++) {
            int idx = c * 6 + i, want = (int)(v[idx] * 255.0f + 0.5f);
            want = idx == 4 ? 255 : idx == 9 ? 0 : want;
            bad += px[i * 3 + c] != want;
        }
    CHECK(bad == 0);
    free(px);

    /* BGR: plane 2 is shown as red */
    px = pm_sample_render(&b, PM_RENDER_BGR, &rows, &cols, &ch);
    CHECK(px && px[0] == (uint8_t)(v[12] * 255.0f + 0.5f) && px[2] == 0);
    free(px);
    /* stretched (harris's response): the lowest value is 0, the highest 255 */
    px = pm_sample_render(&b, PM_RENDER_STRETCH, &rows, &cols, &ch);
    CHECK(px && px[3 * 3 + 1] == 0 && px[4 * 3 + 0] == 255); /* v[9], v[4] */
    free(px);
    /* u16 over its full range, NaN as 0 */
    uint16_t w[2] = {65535, 32768};
    pm_buffer bw = pm_buffer_dense(w, PM_U16, 2, (int64_t[]){1, 2});
    px = pm_sample_render(&bw, 0, &rows, &cols, &ch);
    CHECK(px && ch == 1 && px[0] == 255 && px[1] == 128);
    free(px);
    float nan[2] = {NAN, 0.5f};
    pm_buffer bn = pm_buffer_dense(nan, PM_F32, 2, (int64_t[]){1, 2});
    px = pm_sample_render(&bn, 0, &rows, &cols, &ch);
    CHECK(px && px[0] == 0 && px[1] == 128);
    free(px);
}

/* The apps' flags: only harris's response is stretched; camera pipe and local Laplacian
 * are BGR. */
static void test_render_flags(void)
{
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    for (int i = 0; i < n; i++) {
        int f = pm_sample_render_flags(&apps[i]);
        bool harris = strcmp(apps[i].name, "harris") == 0;
        bool bgr = !strcmp(apps[i].name, "camera_pipe") || !strcmp(apps[i].name, "local_laplacian");
        if (!CHECK(!!(f & PM_RENDER_STRETCH) == harris && !!(f & PM_RENDER_BGR) == bgr))
            fprintf(stderr, "  %s: flags %d\n", apps[i].name, f);
    }
}

static void test_picture_row(void)
{
    static const int channels[3] = {1, 3, 4};
    uint8_t bytes[5 * 7 * 4];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (uint8_t)(i * 37 + 11);
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        pm_sample_picture pic = pm_bytes_picture(bytes, 5, 7, channels[k]);
        for (int c = -1; c < channels[k]; c++)
            for (int64_t x = -2; x < 8; x++)
                for (int64_t y0 = -4; y0 < 9; y0++)
                    for (int64_t n = 0; n < 16; n += 3) {
                        float row[16];
                        pm_picture_row(&pic, c, x, y0, n, 255.0f, row);
                        for (int64_t i = 0; i < n; i++)
                            bad += row[i] != (float)pm_picture_level(&pic, c, x, y0 + i) / 255.0f;
                    }
    }
    CHECK(bad == 0);
}

/* unsharp mask's input from a picture: the picture at [2, R + 1] x [2, C + 1] of each
 * plane, zero around it (its fill writes each value once, the border apart). */
static void test_unsharp_fill(void)
{
    const pm_sample_app *app = pm_sample_find("unsharp_mask");
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    if (!CHECK(p != NULL)) {
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[3][2] = {{8, 8}, {9, 13}, {31, 17}};
    for (int k = 0; k < 3; k++) {
        int64_t R = sizes[k][0], C = sizes[k][1];
        uint8_t *bytes = malloc((size_t)(R * C * 3));
        for (int64_t i = 0; i < R * C * 3; i++)
            bytes[i] = (uint8_t)(i * 29 + 7);
        pm_sample_picture pic = pm_bytes_picture(bytes, R, C, 3);
        pm_value params[8];
        app->params(R, C, params);
        pm_buffer b = pm_sample_buffer(p, 0, 0, params);
        float *d = b.data;
        for (int64_t i = 0; i < pm_sample_buffer_count(&b); i++)
            d[i] = -1; /* every element must be written */
        app->fill_from(0, &b, params, &pic);
        int64_t xs = b.extent[1], ys = b.extent[2];
        int bad = 0;
        for (int c = 0; c < 3; c++)
            for (int64_t x = 0; x < xs; x++)
                for (int64_t y = 0; y < ys; y++) {
                    bool in = x >= 2 && x <= R + 1 && y >= 2 && y <= C + 1;
                    float want = in ? (float)bytes[((x - 2) * C + (y - 2)) * 3 + c] / 255.0f : 0;
                    bad += d[(c * xs + x) * ys + y] != want;
                }
        CHECK(bad == 0);
        free(b.data);
        free(bytes);
    }
    pm_ctx_free(ctx);
}

int main(void)
{
    test_picture_row();
    test_unsharp_fill();
    test_render_clamp();
    test_render_flags();
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL))
        return check_finish("samples_pictures");
    const char *only = getenv("PM_TEST_ONLY");
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    for (int i = 0; i < n; i++)
        if (!only || strcmp(only, apps[i].name) == 0)
            test_app(jit, &apps[i]);
    pm_jit_free(jit);
    return check_finish("samples_pictures");
}
