/* test_interp_harris.c — the interpreter's Harris corner response against plain C loops
 * written from the math of docs/apps.md section 3 (not from the pipeline).
 *
 * The reference computes in double, so the two differ by f32 rounding only: every
 * interior point must be within 1e-5 * (1 + |reference|) (observed differences are
 * around 1e-7). The 2-pixel frame the cases leave uncovered must keep the sentinel the
 * output was prefilled with, bit for bit. Sizes include the degenerate R, C = 1..3 where
 * the interior is empty or one pixel, odd and non-square ones, and the app's quick size. */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SENTINEL (-12345.5f)

/* Harris on an (R+2) x (C+2) image; writes ref[x][y] for 2 <= x <= R-1, 2 <= y <= C-1. */
static void harris_reference(int64_t R, int64_t C, const float *in, double *ref)
{
    int64_t rows = R + 2, cols = C + 2;
    size_t n = (size_t)(rows * cols);
    double *ix = calloc(n, sizeof *ix), *iy = calloc(n, sizeof *iy);
#define I(a, b) ((double)in[(a) * cols + (b)])
    for (int64_t x = 1; x <= R; x++)
        for (int64_t y = 1; y <= C; y++) {
            iy[x * cols + y] = (-I(x - 1, y - 1) + I(x - 1, y + 1) - 2 * I(x, y - 1) +
                                2 * I(x, y + 1) - I(x + 1, y - 1) + I(x + 1, y + 1)) / 12;
            ix[x * cols + y] = (-I(x - 1, y - 1) - 2 * I(x - 1, y) - I(x - 1, y + 1) +
                                I(x + 1, y - 1) + 2 * I(x + 1, y) + I(x + 1, y + 1)) / 12;
        }
#undef I
    for (int64_t x = 2; x <= R - 1; x++)
        for (int64_t y = 2; y <= C - 1; y++) {
            double sxx = 0, syy = 0, sxy = 0;
            for (int i = -1; i <= 1; i++)
                for (int j = -1; j <= 1; j++) {
                    double gx = ix[(x + i) * cols + y + j], gy = iy[(x + i) * cols + y + j];
                    sxx += gx * gx;
                    syy += gy * gy;
                    sxy += gx * gy;
                }
            double det = sxx * syy - sxy * sxy, trace = sxx + syy;
            ref[x * cols + y] = det - 0.04 * trace * trace;
        }
    free(ix);
    free(iy);
}

static void check_size(pm_ctx *ctx, pm_pipeline *p, int64_t R, int64_t C, unsigned seed, double *ms)
{
    int64_t ext[2] = {R + 2, C + 2};
    pm_value params[2] = {PM_I(R), PM_I(C)};
    pm_buffer in = check_buffer_new(PM_F32, 2, ext), out = check_buffer_new(PM_F32, 2, ext);
    check_fill(&in, seed, false);
    float *o = out.data;
    for (int64_t i = 0; i < ext[0] * ext[1]; i++)
        o[i] = SENTINEL;
    double *ref = calloc((size_t)(ext[0] * ext[1]), sizeof *ref);
    harris_reference(R, C, in.data, ref);

    clock_t t0 = clock();
    pm_status st = pm_interpret(p, params, &in, &out);
    *ms = 1000.0 * (double)(clock() - t0) / CLOCKS_PER_SEC;
    if (!CHECK_STATUS(st, PM_OK)) {
        fprintf(stderr, "  R=%lld C=%lld: %s\n", (long long)R, (long long)C,
                pm_ctx_errmsg(ctx));
    }
    int64_t bad_frame = 0, bad_inside = 0, inside = 0;
    double worst = 0;
    for (int64_t x = 0; x < ext[0]; x++)
        for (int64_t y = 0; y < ext[1]; y++) {
            float got = o[x * ext[1] + y];
            if (x >= 2 && x <= R - 1 && y >= 2 && y <= C - 1) {
                double want = ref[x * ext[1] + y], diff = fabs((double)got - want);
                inside++;
                if (!(diff <= 1e-5 * (1 + fabs(want))))
                    bad_inside++;
                worst = diff > worst ? diff : worst;
            } else if (memcmp(&got, &(float){SENTINEL}, sizeof got) != 0) {
                bad_frame++;
            }
        }
    if (!CHECK(bad_inside == 0 && bad_frame == 0))
        fprintf(stderr, "  R=%lld C=%lld: %lld of %lld interior points off (worst %g), "
                "%lld frame points overwritten\n", (long long)R, (long long)C,
                (long long)bad_inside, (long long)inside, worst, (long long)bad_frame);
    /* The interior really holds values (not an accidental match of untouched memory). */
    if (inside > 0)
        CHECK(o[2 * ext[1] + 2] != SENTINEL);
    free(ref);
    check_buffer_free(&in);
    check_buffer_free(&out);
}

int main(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_harris.build(ctx);
    if (!CHECK(p != NULL)) {
        fprintf(stderr, "%s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return check_finish("test_interp_harris");
    }
    static const int64_t sizes[][2] = {
        {1, 1}, {2, 2}, {3, 3}, {1, 5}, {5, 1}, {3, 4}, {4, 3}, {7, 13}, {16, 9}, {33, 64},
    };
    double ms;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_size(ctx, p, sizes[i][0], sizes[i][1], (unsigned)i + 1, &ms);

    /* The app's quick size (256 x 320 picture: R = 254, C = 318), and its speed: the
     * oracle must stay usable at test sizes. */
    pm_value qp[2];
    pm_sample_harris.params(pm_sample_harris.quick_rows, pm_sample_harris.quick_cols, qp);
    check_size(ctx, p, qp[0].i, qp[1].i, 99, &ms);
    printf("harris %lld x %lld interpreted in %.1f ms\n", (long long)pm_sample_harris.quick_rows,
           (long long)pm_sample_harris.quick_cols, ms);

    pm_ctx_free(ctx);
    return check_finish("test_interp_harris");
}
