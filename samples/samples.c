/* samples.c — the registry of sample apps, in the paper's order. */
#include "samples.h"
#include "image_io.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const pm_sample_app *const apps[] = {
    &pm_sample_unsharp_mask,
    &pm_sample_bilateral_grid,
    &pm_sample_harris,
    &pm_sample_camera_pipe,
    &pm_sample_pyramid_blend,
    &pm_sample_interpolate,
    &pm_sample_local_laplacian,
};

const pm_sample_app *pm_sample_apps(int *count)
{
    static pm_sample_app flat[sizeof apps / sizeof apps[0]];
    for (size_t i = 0; i < sizeof apps / sizeof apps[0]; i++)
        flat[i] = *apps[i];
    if (count)
        *count = (int)(sizeof apps / sizeof apps[0]);
    return flat;
}

const pm_sample_app *pm_sample_find(const char *name)
{
    for (size_t i = 0; name && i < sizeof apps / sizeof apps[0]; i++)
        if (strcmp(apps[i]->name, name) == 0)
            return apps[i];
    return NULL;
}

pm_buffer pm_sample_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params)
{
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    pm_buffer b = pm_buffer_dense(NULL, pm_func_type(f), 0, NULL);
    if (pm_pipeline_buffer_shape(p, is_output, index, params, &ndims, extents) != PM_OK)
        return b;
    b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    size_t count = 1;
    for (int d = 0; d < ndims; d++)
        count *= (size_t)(extents[d] > 0 ? extents[d] : 0);
    /* aligned to the cache line as image libraries and Halide's own buffers are: a
     * row of vectors then never splits a line (free() releases it) */
    size_t bytes = (count ? count : 1) * pm_type_size(b.type);
    bytes = (bytes + 63) / 64 * 64;
    b.data = aligned_alloc(64, bytes);
    if (b.data)
        memset(b.data, 0, bytes);
    return b;
}

int64_t pm_sample_buffer_count(const pm_buffer *b)
{
    int64_t n = 1;
    for (int d = 0; d < b->ndims; d++)
        n *= b->extent[d] > 0 ? b->extent[d] : 0;
    return n;
}

double pm_sample_element(const pm_buffer *b, int64_t i)
{
    switch (b->type) {
    case PM_U8: return ((const uint8_t *)b->data)[i];
    case PM_I8: return ((const int8_t *)b->data)[i];
    case PM_U16: return ((const uint16_t *)b->data)[i];
    case PM_I16: return ((const int16_t *)b->data)[i];
    case PM_U32: return ((const uint32_t *)b->data)[i];
    case PM_I32: return ((const int32_t *)b->data)[i];
    case PM_I64: return (double)((const int64_t *)b->data)[i];
    case PM_F32: return ((const float *)b->data)[i];
    case PM_F64: return ((const double *)b->data)[i];
    default: return 0;
    }
}

double pm_sample_buffer_maxdiff(const pm_buffer *a, const pm_buffer *b)
{
    double worst = 0;
    for (int64_t i = 0, n = pm_sample_buffer_count(a); i < n; i++) {
        double x = pm_sample_element(a, i), y = pm_sample_element(b, i);
        double d = isnan(x) || isnan(y) ? (isnan(x) && isnan(y) ? 0 : INFINITY) : fabs(x - y);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* ---- pictures ----------------------------------------------------------------------- */

static int photo_level(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    return pm_photo_level(pic->rows, pic->cols, c, x, y);
}

static float photo_pixel(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    return c < 0 ? pm_photo_gray(pic->rows, pic->cols, x, y)
                 : pm_photo_pixel(pic->rows, pic->cols, c, x, y);
}

pm_sample_picture pm_photo_picture(int64_t rows, int64_t cols)
{
    return (pm_sample_picture){.rows = rows, .cols = cols, .level = photo_level,
                               .pixel = photo_pixel};
}

static int bytes_level(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    const uint8_t *px = pic->bytes + (x * pic->cols + y) * pic->channels;
    if (pic->channels == 1)
        return px[0];
    if (c >= 0)
        return px[c];
    return (int)(0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2] + 0.5f);
}

static float bytes_pixel(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    return (float)bytes_level(pic, c, x, y) / 255.0f;
}

pm_sample_picture pm_bytes_picture(const uint8_t *bytes, int64_t rows, int64_t cols,
                                   int channels)
{
    return (pm_sample_picture){.rows = rows, .cols = cols, .level = bytes_level,
                               .pixel = bytes_pixel, .bytes = bytes, .channels = channels};
}

static int64_t clamp_index(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

int pm_picture_level(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    return pic->level(pic, c, clamp_index(x, pic->rows), clamp_index(y, pic->cols));
}

/* pm_picture_row's loop over the columns inside a pm_bytes_picture: out[i] for the pixels
 * at px (ch channels each), channel c or the luma (c < 0), as bytes_level computes them.
 * Written to vectorize (one division per value, no table); on x86-64 it is built twice,
 * for AVX2 and for the baseline, and the loader picks (the baseline's SSE2 does not
 * vectorize the luma's stride-3 reads: 6 ms against 0.8 ms for 1920 x 1080 pixels).
 * samples.c is compiled at -O3 (CMakeLists.txt), whose cost model vectorizes it; the
 * language standard's no-contraction rule keeps each product and sum as bytes_level's. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
/* (not under ThreadSanitizer: the clones' resolver runs before its runtime is up, and
 * every program crashed at start) */
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static void bytes_row(const uint8_t *px, int ch, int c, int64_t n, float divisor, float *out)
{
    /* each case with its channel count a constant: a strided read the vectorizer knows */
#define PM_BYTES_ROW(CH)                                                                   \
    do {                                                                                   \
        if (c >= 0) {                                                                      \
            for (int64_t i = 0; i < n; i++)                                                \
                out[i] = (float)px[i * (CH) + c] / divisor;                                \
        } else {                                                                           \
            for (int64_t i = 0; i < n; i++) {                                              \
                const uint8_t *p = px + i * (CH);                                          \
                int level = (int)(0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2] + 0.5f);   \
                out[i] = (float)level / divisor;                                           \
            }                                                                              \
        }                                                                                  \
    } while (0)
    if (ch == 1) {
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)px[i] / divisor;
    } else if (ch == 3) {
        PM_BYTES_ROW(3);
    } else { /* 4: the only other count pm_picture_row passes */
        PM_BYTES_ROW(4);
    }
#undef PM_BYTES_ROW
}

void pm_picture_row(const pm_sample_picture *pic, int c, int64_t x, int64_t y0, int64_t n,
                    float divisor, float *out)
{
    int64_t i = 0;
    if (pic->level == bytes_level) {
        /* the columns inside the picture, without a call or a clamp per pixel */
        int64_t first = y0 < 0 ? -y0 : 0, last = pic->cols - y0; /* i in [first, last) */
        last = last > n ? n : last;
        for (; i < first && i < n; i++)
            out[i] = (float)pm_picture_level(pic, c, x, y0 + i) / divisor;
        int ch = pic->channels;
        if (i < last && (ch == 1 || ch == 3 || ch == 4)) {
            const uint8_t *row = pic->bytes + clamp_index(x, pic->rows) * pic->cols * ch;
            bytes_row(row + (y0 + i) * ch, ch, ch == 1 ? 0 : c, last - i, divisor, out + i);
            i = last;
        }
    }
    for (; i < n; i++)
        out[i] = (float)pm_picture_level(pic, c, x, y0 + i) / divisor;
}

float pm_picture_pixel(const pm_sample_picture *pic, int c, int64_t x, int64_t y)
{
    return pic->pixel(pic, c, clamp_index(x, pic->rows), clamp_index(y, pic->cols));
}

/* The linear map from b's values to [0, 1] (then clamped). A picture type keeps its own
 * range, so a value outside it (a sharpened pixel over 1) moves no other pixel's level;
 * other types, and PM_RENDER_STRETCH, go from the lowest to the highest finite value. */
static void render_map(const pm_buffer *b, int flags, double *base, double *scale)
{
    bool picture = b->type == PM_U8 || b->type == PM_U16 || b->type == PM_F32 ||
                   b->type == PM_F64;
    *base = 0;
    *scale = b->type == PM_U8 ? 1.0 / 255 : b->type == PM_U16 ? 1.0 / 65535 : 1;
    if (picture && !(flags & PM_RENDER_STRETCH))
        return;
    /* over every element, so the stretch does not depend on the channels shown */
    double lo = INFINITY, hi = -INFINITY;
    int64_t n = pm_sample_buffer_count(b);
    if (b->type == PM_F32) { /* the common case, without a switch per element */
        const float *f = b->data;
        float flo = INFINITY, fhi = -INFINITY;
        for (int64_t i = 0; i < n; i++)
            if (isfinite(f[i])) {
                flo = f[i] < flo ? f[i] : flo;
                fhi = f[i] > fhi ? f[i] : fhi;
            }
        lo = flo;
        hi = fhi;
    }
    for (int64_t i = 0; b->type != PM_F32 && i < n; i++) {
        double v = pm_sample_element(b, i);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    *base = isfinite(lo) ? lo : 0; /* a constant buffer is all 0 */
    *scale = hi > lo ? 1 / (hi - lo) : 1;
}

uint8_t *pm_sample_render(const pm_buffer *b, int flags, int64_t *rows, int64_t *cols,
                          int *channels)
{
    int nd = b->ndims;
    int64_t r = nd >= 2 ? b->extent[nd - 2] : 1, c = nd >= 1 ? b->extent[nd - 1] : 1;
    int planar = nd >= 3, ch = planar && (b->extent[nd - 3] == 3 || b->extent[nd - 3] == 4) ? 3 : 1;
    if (r < 1 || c < 1 || r > INT64_MAX / c || r * c > (int64_t)(SIZE_MAX / 3) - 1)
        return NULL;
    double base, scale;
    render_map(b, flags, &base, &scale);
    uint8_t *px = malloc((size_t)(r * c * ch));
    if (!px)
        return NULL;
    for (int k = 0; k < ch; k++) {
        int64_t plane = ch == 3 && (flags & PM_RENDER_BGR) ? 2 - k : ch == 3 ? k : 0;
        for (int64_t x = 0; x < r; x++) {
            const float *f32 = b->type == PM_F32 ? (const float *)b->data + (plane * r + x) * c
                                                 : NULL; /* the common case, typed */
            uint8_t *out = px + x * c * ch + k;
            for (int64_t y = 0; y < c; y++) {
                /* a float pixel clamped to [0, 1], then pm_write_png's rounding */
                double e = f32 ? (double)f32[y] : pm_sample_element(b, (plane * r + x) * c + y);
                float v = (float)((e - base) * scale);
                v = v < 0 ? 0 : v > 1 ? 1 : v; /* NaN stays NaN: shown as 0 below */
                out[y * ch] = v == v ? (uint8_t)(v * 255.0f + 0.5f) : 0;
            }
        }
    }
    *rows = r;
    *cols = c;
    *channels = ch;
    return px;
}

int pm_sample_render_flags(const pm_sample_app *app)
{
    return (app->output_bgr ? PM_RENDER_BGR : 0) | (app->output_stretch ? PM_RENDER_STRETCH : 0);
}
