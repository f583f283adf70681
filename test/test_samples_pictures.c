/* test_samples_pictures.c — the pictures the sample apps give, as the polymage command
 * and the image service show them (issue 39 item 5):
 *  - the rendering rule (pm_sample_render): floats in [0, 1] are clamped, so one pixel
 *    at 1.5 is 255 and leaves the others at their own levels; u16 over 0 .. 65535;
 *    PM_RENDER_STRETCH (harris's response) from the lowest to the highest value; BGR.
 */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
    test_render_clamp();
    test_render_flags();
    return check_finish("samples_pictures");
}
