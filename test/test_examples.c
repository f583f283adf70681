/* test_examples.c — the three example filters of samples/examples (docs/jit.md) against
 * plain C loops written from their descriptions in examples.h, exactly (u8 results), at
 * sizes from 1 x 1 to a few hundred pixels, compiled (the examples' one-call runners) and
 * interpreted (their pipelines through pm_interpret); the same for the filters written
 * without the helpers (the _plain files of bench/lines, jit.md's line counts). Also the
 * runners' error path. */
#include "check.h"
#include "examples/examples.h"
#include "lines/plain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t clampi(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* in, out: channel first, [3][R][C] */
static void blur_reference(const uint8_t *in, uint8_t *out, int64_t R, int64_t C)
{
    static const int g[5] = {1, 4, 6, 4, 1};
    uint16_t *bx = malloc(sizeof *bx * (size_t)(3 * R * (C + 4)));
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < R; x++) /* bx covers columns -2 .. C+1 */
            for (int64_t y = -2; y < C + 2; y++) {
                int s = 0;
                for (int i = 0; i < 5; i++)
                    s += g[i] * in[(c * R + clampi(x + i - 2, 0, R - 1)) * C + clampi(y, 0, C - 1)];
                bx[(c * R + x) * (C + 4) + y + 2] = (uint16_t)s;
            }
    for (int c = 0; c < 3; c++)
        for (int64_t x = 0; x < R; x++)
            for (int64_t y = 0; y < C; y++) {
                int s = 0;
                for (int j = 0; j < 5; j++)
                    s += g[j] * bx[(c * R + x) * (C + 4) + y + j];
                out[(c * R + x) * C + y] = (uint8_t)(s / 256);
            }
    free(bx);
}

static void sobel_reference(const uint8_t *in, uint8_t *out, int64_t R, int64_t C)
{
    static const int sx[3][3] = {{-1, 0, 1}, {-2, 0, 2}, {-1, 0, 1}};
    for (int64_t x = 0; x < R; x++)
        for (int64_t y = 0; y < C; y++) {
            int gx = 0, gy = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    int v = in[clampi(x + i - 1, 0, R - 1) * C + clampi(y + j - 1, 0, C - 1)];
                    gx += sx[i][j] * v; /* across columns */
                    gy += sx[j][i] * v; /* down rows: the transposed kernel */
                }
            float m = sqrtf((float)(gx * gx + gy * gy));
            out[x * C + y] = m >= 255 ? 255 : (uint8_t)m;
        }
}

static void hist_eq_reference(const uint8_t *in, uint8_t *out, int64_t R, int64_t C)
{
    int64_t hist[256] = {0}, cdf[256], n = R * C, cmin = INT64_MAX;
    for (int64_t i = 0; i < n; i++)
        hist[in[i]]++;
    for (int v = 0; v < 256; v++)
        cdf[v] = hist[v] + (v ? cdf[v - 1] : 0);
    for (int64_t i = 0; i < n; i++)
        cmin = cdf[in[i]] < cmin ? cdf[in[i]] : cmin;
    int64_t den = n - cmin > 1 ? n - cmin : 1;
    for (int64_t i = 0; i < n; i++)
        out[i] = (uint8_t)((cdf[in[i]] - cmin) * 255 / den);
}

typedef struct example {
    const char *name;
    int channels;
    pm_pipeline *(*pipeline)(pm_ctx **ctx);
    /* the one-call runner; NULL: the pipeline through example_run */
    pm_status (*run)(pm_jit *, const uint8_t *, uint8_t *, int64_t, int64_t, pm_error *);
    void (*reference)(const uint8_t *, uint8_t *, int64_t, int64_t);
} example;

static const example examples[] = {
    {"blur_rgb", 3, blur_rgb_pipeline, blur_rgb, blur_reference},
    {"sobel", 1, sobel_pipeline, sobel, sobel_reference},
    {"hist_eq", 1, hist_eq_pipeline, hist_eq, hist_eq_reference},
    {"blur_rgb_plain", 3, blur_rgb_plain_pipeline, NULL, blur_reference},
    {"sobel_plain", 1, sobel_plain_pipeline, NULL, sobel_reference},
    {"hist_eq_plain", 1, hist_eq_plain_pipeline, NULL, hist_eq_reference},
};

/* e's pipeline compiled and run on in (a runner like the examples' own). */
static pm_status run_pipeline(const example *e, pm_jit *jit, const uint8_t *in, uint8_t *out,
                              int64_t R, int64_t C, pm_error *err)
{
    pm_ctx *ctx;
    pm_pipeline *p = e->pipeline(&ctx);
    const int64_t rgb[] = {3, R, C}, gray[] = {R, C};
    int nd = e->channels == 3 ? 3 : 2;
    pm_buffer bi = pm_buffer_dense((void *)in, PM_U8, nd, nd == 3 ? rgb : gray);
    pm_buffer bo = pm_buffer_dense(out, PM_U8, nd, nd == 3 ? rgb : gray);
    return example_run(jit, ctx, p, (pm_value[]){PM_I(R), PM_I(C)}, &bi, &bo, err);
}

static void check_example(pm_jit *jit, const example *e, int64_t R, int64_t C, int pattern)
{
    size_t n = (size_t)(R * C * e->channels);
    uint8_t *in = malloc(n), *got = malloc(n), *interp = malloc(n), *want = malloc(n);
    unsigned s = (unsigned)(R * 977 + C * 31 + (unsigned)pattern);
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        /* pattern 0: noise over 0..255; 1: a narrow band (hist_eq stretches it); 2: flat */
        in[i] = pattern == 0 ? (uint8_t)(s >> 16) : pattern == 1 ? (uint8_t)(100 + (s >> 16) % 20)
                                                                 : 77;
    }
    e->reference(in, want, R, C);
    memset(got, 0xAB, n);
    pm_error err;
    pm_status st = e->run ? e->run(jit, in, got, R, C, &err)
                          : run_pipeline(e, jit, in, got, R, C, &err);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  %s %lldx%lld: %s\n", e->name, (long long)R, (long long)C, err.message);
    pm_ctx *ctx;
    pm_pipeline *p = e->pipeline(&ctx);
    if (CHECK(p != NULL)) {
        const int64_t rgb[] = {3, R, C}, gray[] = {R, C};
        const int64_t *shape = e->channels == 3 ? rgb : gray;
        pm_buffer bi = pm_buffer_dense(in, PM_U8, e->channels == 3 ? 3 : 2, shape);
        pm_buffer bo = pm_buffer_dense(interp, PM_U8, e->channels == 3 ? 3 : 2, shape);
        if (!CHECK_STATUS(pm_interpret(p, (pm_value[]){PM_I(R), PM_I(C)}, &bi, &bo), PM_OK))
            fprintf(stderr, "  %s: %s\n", e->name, pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
    size_t bad_c = 0, bad_i = 0;
    for (size_t i = 0; i < n; i++) {
        bad_c += got[i] != want[i];
        bad_i += interp[i] != want[i];
    }
    if (!CHECK(bad_c == 0 && bad_i == 0))
        fprintf(stderr, "  %s %lldx%lld pattern %d: %zu compiled, %zu interpreted of %zu "
                "values differ from plain C\n", e->name, (long long)R, (long long)C, pattern,
                bad_c, bad_i, n);
    free(in);
    free(got);
    free(interp);
    free(want);
}

/* docs/jit.md: an interleaved [rows][cols][3] picture is the blur's channel-first image
 * I(c, x, y) through strides {1, 3 * cols, 3}, with no copy; the output likewise. */
static void test_interleaved_strides(pm_jit *jit)
{
    enum { R = 23, C = 31 };
    uint8_t inter[R * C * 3], planar[3 * R * C], want[3 * R * C], got[R * C * 3];
    for (int i = 0; i < R * C * 3; i++)
        inter[i] = (uint8_t)(i * 7 + i / 5);
    for (int x = 0; x < R; x++)
        for (int y = 0; y < C; y++)
            for (int c = 0; c < 3; c++)
                planar[(c * R + x) * C + y] = inter[(x * C + y) * 3 + c];
    blur_reference(planar, want, R, C);
    pm_ctx *ctx;
    pm_pipeline *p = blur_rgb_pipeline(&ctx);
    pm_buffer in = {.data = inter, .type = PM_U8, .ndims = 3, .extent = {3, R, C},
                    .stride = {1, 3 * C, 3}};
    pm_buffer out = {.data = got, .type = PM_U8, .ndims = 3, .extent = {3, R, C},
                     .stride = {1, 3 * C, 3}};
    pm_error err;
    CHECK_STATUS(example_run(jit, ctx, p, (pm_value[]){PM_I(R), PM_I(C)}, &in, &out, &err),
                 PM_OK);
    int bad = 0;
    for (int x = 0; x < R; x++)
        for (int y = 0; y < C; y++)
            for (int c = 0; c < 3; c++)
                bad += got[(x * C + y) * 3 + c] != want[(c * R + x) * C + y];
    CHECK(bad == 0);
}

int main(void)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "%s\n", err.message);
        return check_finish("examples");
    }
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {7, 5}, {64, 45}, {211, 130}};
    for (size_t e = 0; e < sizeof examples / sizeof *examples; e++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
            for (int pattern = 0; pattern < 3; pattern++)
                check_example(jit, &examples[e], sizes[i][0], sizes[i][1], pattern);
    test_interleaved_strides(jit);
    /* a wrong-size call is an error value naming the buffer, not a crash */
    uint8_t px[4] = {0};
    pm_ctx *ctx;
    pm_pipeline *p = sobel_pipeline(&ctx);
    pm_buffer in = pm_buffer_dense(px, PM_U8, 2, (const int64_t[]){2, 2});
    pm_buffer out = pm_buffer_dense(px, PM_U8, 2, (const int64_t[]){3, 2});
    CHECK_STATUS(example_run(jit, ctx, p, (pm_value[]){PM_I(2), PM_I(2)}, &in, &out, &err),
                 PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "mag");
    pm_jit_free(jit);
    /* docs/jit.md's fragments do what the guide says */
    int step = jit_guide_demo();
    if (!CHECK(step == 0))
        fprintf(stderr, "  jit_guide_demo: step %d failed\n", step);
    return check_finish("examples");
}
