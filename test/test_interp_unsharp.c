/* test_interp_unsharp.c — the interpreter's Unsharp Mask against plain C loops written
 * from docs/apps.md section 1 (not from the pipeline).
 *
 * The loops mirror the operation order of the definition in f32 (the 1-4-6-4-1 filter as
 * img * {0.0625, 0.25, 0.375, 0.25, 0.0625} summed left to right, sharpen as
 * img * (1 + weight) - blury * weight), so the comparison is exact: this also proves the
 * interpreter computes f32 stages in float, not double (a double evaluation differs in
 * the last bits and, near the threshold, picks the other branch of the mask). */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const float taps[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};

/* in: [3][R+4][C+4]; out: [3][R][C]. Counts the points that kept the original pixel. */
static int64_t unsharp_reference(int64_t R, int64_t C, float threshold, float weight,
                                 const float *in, float *out)
{
    int64_t xs = R + 4, ys = C + 4, kept = 0;
    float *bx = calloc((size_t)(3 * xs * ys), sizeof *bx);
#define IMG(c, x, y) in[((c) * xs + (x)) * ys + (y)]
#define BX(c, x, y) bx[((c) * xs + (x)) * ys + (y)]
    for (int c = 0; c < 3; c++)
        for (int64_t x = 2; x <= R + 1; x++)
            for (int64_t y = 0; y <= C + 3; y++) {
                float s = IMG(c, x - 2, y) * taps[0];
                for (int k = 1; k < 5; k++)
                    s = s + IMG(c, x - 2 + k, y) * taps[k];
                BX(c, x, y) = s;
            }
    for (int c = 0; c < 3; c++)
        for (int64_t x = 2; x <= R + 1; x++)
            for (int64_t y = 2; y <= C + 1; y++) {
                float blury = BX(c, x, y - 2) * taps[0];
                for (int k = 1; k < 5; k++)
                    blury = blury + BX(c, x, y - 2 + k) * taps[k];
                float img = IMG(c, x, y);
                float sharpen = img * (weight + 1.0f) - blury * weight;
                bool keep = fabsf(img - blury) < threshold;
                kept += keep;
                out[(c * R + x - 2) * C + y - 2] = keep ? img : sharpen;
            }
#undef IMG
#undef BX
    free(bx);
    return kept;
}

/* Runs one size; returns the number of points that kept the original (for coverage). */
static int64_t check_size(pm_ctx *ctx, pm_pipeline *p, int64_t R, int64_t C, double threshold,
                          double weight, bool photo, double *ms)
{
    const pm_sample_app *app = &pm_sample_unsharp_mask;
    pm_value params[4] = {PM_I(R), PM_I(C), PM_F(threshold), PM_F(weight)};
    int64_t ein[3] = {3, R + 4, C + 4}, eout[3] = {3, R, C};
    pm_buffer in = check_buffer_new(PM_F32, 3, ein), out = check_buffer_new(PM_F32, 3, eout);
    if (photo)
        app->fill_input(0, &in, params);
    else
        check_fill(&in, (unsigned)(R * 131 + C), false);
    float *o = out.data;
    int64_t n = check_buffer_count(&out);
    for (int64_t i = 0; i < n; i++)
        o[i] = NAN; /* every point must be written: no NaN may survive */
    float *ref = calloc((size_t)n + 1, sizeof *ref);
    int64_t kept = unsharp_reference(R, C, (float)threshold, (float)weight, in.data, ref);

    clock_t t0 = clock();
    pm_status st = pm_interpret(p, params, &in, &out);
    *ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  R=%lld C=%lld: %s\n", (long long)R, (long long)C, pm_ctx_errmsg(ctx));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += memcmp(&o[i], &ref[i], sizeof(float)) != 0;
    if (!CHECK(bad == 0))
        fprintf(stderr, "  R=%lld C=%lld: %lld of %lld points differ\n", (long long)R,
                (long long)C, (long long)bad, (long long)n);
    free(ref);
    check_buffer_free(&in);
    check_buffer_free(&out);
    return kept;
}

int main(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_unsharp_mask.build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "%s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return check_finish("test_interp_unsharp");
    }
    double ms;
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {5, 1}, {1, 6}, {7, 13}, {31, 17}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        check_size(ctx, p, sizes[i][0], sizes[i][1], 0.001, 3, false, &ms);
        /* a threshold that splits random data between the branches, another weight */
        check_size(ctx, p, sizes[i][0], sizes[i][1], 0.05, 0.5, false, &ms);
    }
    /* The app's quick size on its photo: smooth areas keep the original, edges sharpen. */
    const pm_sample_app *app = &pm_sample_unsharp_mask;
    int64_t kept = check_size(ctx, p, app->quick_rows, app->quick_cols, 0.001, 3, true, &ms);
    int64_t total = 3 * app->quick_rows * app->quick_cols;
    CHECK(kept > 0 && kept < total);
    printf("unsharp_mask %lld x %lld interpreted in %.1f ms (%lld of %lld points kept)\n",
           (long long)app->quick_rows, (long long)app->quick_cols, ms, (long long)kept,
           (long long)total);
    pm_ctx_free(ctx);
    return check_finish("test_interp_unsharp");
}
