/* image_io.c — the generated default photo and PNG output through polymage_io (see
 * image_io.h).
 *
 * The scene is built from smooth fields and a hash-based value noise so it has what
 * image filters care about: flat regions, soft gradients, hard edges at several
 * orientations, corners (for Harris), fine texture (for sharpening) and a bright light. */
#include "image_io.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#ifdef PM_HAVE_POLYMAGE_IO
#include "polymage_io.h"
#include <stdio.h>
#endif

static float clamp01(float v)
{
    return v < 0 ? 0 : v > 1 ? 1 : v;
}

static uint32_t hash2(int64_t x, int64_t y)
{
    uint32_t h = (uint32_t)(x * 374761393 + y * 668265263);
    h = (h ^ (h >> 13)) * 1274126177u;
    return h ^ (h >> 16);
}

/* Value noise in [0, 1] with cells of `cell` pixels, bilinearly smoothed. */
static float value_noise(float u, float v, float cell)
{
    float fu = u / cell, fv = v / cell;
    int64_t iu = (int64_t)floorf(fu), iv = (int64_t)floorf(fv);
    float tu = fu - (float)iu, tv = fv - (float)iv;
    tu = tu * tu * (3 - 2 * tu);
    tv = tv * tv * (3 - 2 * tv);
    float a = (float)(hash2(iu, iv) & 0xffff) / 65535.0f;
    float b = (float)(hash2(iu + 1, iv) & 0xffff) / 65535.0f;
    float c = (float)(hash2(iu, iv + 1) & 0xffff) / 65535.0f;
    float d = (float)(hash2(iu + 1, iv + 1) & 0xffff) / 65535.0f;
    return (a + (b - a) * tu) + ((c + (d - c) * tu) - (a + (b - a) * tu)) * tv;
}

float pm_photo_pixel(int64_t rows, int64_t cols, int c, int64_t x, int64_t y)
{
    /* Normalised coordinates: u down (0 top .. 1 bottom), v across. */
    float u = rows > 1 ? (float)x / (float)(rows - 1) : 0.5f;
    float v = cols > 1 ? (float)y / (float)(cols - 1) : 0.5f;
    float scale = (float)(rows < cols ? rows : cols) / 512.0f;
    if (scale < 1.0f / 64)
        scale = 1.0f / 64;
    float px = (float)x / scale, py = (float)y / scale; /* pixel units at 512-px scale */
    float rgb[3];

    /* Sky: blue gradient, lighter near the horizon, with soft clouds. */
    float cloud = value_noise(px, py, 48) * 0.6f + value_noise(px, py, 17) * 0.4f;
    cloud = clamp01((cloud - 0.55f) * 3.0f);
    rgb[0] = 0.35f + 0.4f * u + 0.45f * cloud;
    rgb[1] = 0.55f + 0.3f * u + 0.35f * cloud;
    rgb[2] = 0.95f - 0.1f * u + 0.05f * cloud;

    /* Sun: a bright disc with a halo. */
    float du = u - 0.22f, dv = (v - 0.78f) * (float)cols / (float)(rows > 0 ? rows : 1);
    float r = sqrtf(du * du + dv * dv);
    float sun = r < 0.06f ? 1.0f : expf(-(r - 0.06f) * 18.0f) * 0.6f;
    for (int k = 0; k < 3; k++)
        rgb[k] = rgb[k] * (1 - sun) + (k == 2 ? 0.8f : 1.0f) * sun;

    /* Hills: two layered silhouettes with grass texture. */
    float hill1 = 0.58f + 0.06f * sinf(v * 7.0f) + 0.03f * sinf(v * 19.0f + 1.0f);
    float hill2 = 0.70f + 0.05f * sinf(v * 4.0f + 2.0f);
    float grass = value_noise(px, py, 3) * 0.5f + value_noise(px, py, 9) * 0.5f;
    if (u > hill1) {
        float shade = 0.75f + 0.25f * grass;
        rgb[0] = 0.20f * shade;
        rgb[1] = 0.42f * shade;
        rgb[2] = 0.18f * shade;
    }
    if (u > hill2) {
        float shade = 0.6f + 0.4f * grass;
        rgb[0] = 0.30f * shade;
        rgb[1] = 0.55f * shade;
        rgb[2] = 0.20f * shade;
    }

    /* House: a wall with brick texture, a triangular roof, dark windows (corners). */
    float wall_top = 0.55f, wall_bottom = 0.82f, wall_left = 0.18f, wall_right = 0.46f;
    if (u >= wall_top && u <= wall_bottom && v >= wall_left && v <= wall_right) {
        float brick_row = floorf(px / 9.0f);
        float mortar_h = fmodf(px, 9.0f) < 1.2f;
        float offset = fmodf(brick_row, 2.0f) * 10.0f;
        float mortar_v = fmodf(py + offset, 20.0f) < 1.2f;
        float tone = 0.85f + 0.15f * value_noise(px, py, 5);
        if (mortar_h > 0 || mortar_v > 0) {
            rgb[0] = rgb[1] = rgb[2] = 0.78f;
        } else {
            rgb[0] = 0.62f * tone;
            rgb[1] = 0.30f * tone;
            rgb[2] = 0.22f * tone;
        }
        for (int w = 0; w < 2; w++) {
            float wl = wall_left + 0.04f + 0.13f * (float)w, wr = wl + 0.08f;
            if (u > 0.62f && u < 0.72f && v > wl && v < wr) {
                bool frame = u < 0.63f || u > 0.71f || v < wl + 0.006f || v > wr - 0.006f ||
                             fabsf(v - (wl + wr) / 2) < 0.003f;
                float glow = 0.15f + 0.1f * (u - 0.62f) * 10;
                rgb[0] = frame ? 0.95f : 0.12f + glow;
                rgb[1] = frame ? 0.95f : 0.14f + glow;
                rgb[2] = frame ? 0.92f : 0.22f;
            }
        }
        if (u > 0.70f && v > 0.30f && v < 0.35f) { /* door */
            rgb[0] = 0.35f;
            rgb[1] = 0.2f;
            rgb[2] = 0.1f;
        }
    }
    float roof_peak = 0.42f, centre = (wall_left + wall_right) / 2;
    float half_width = (wall_right - wall_left) / 2 + 0.03f;
    if (u >= roof_peak && u < wall_top) {
        float reach = half_width * (u - roof_peak) / (wall_top - roof_peak);
        if (fabsf(v - centre) <= reach) {
            float tile = fmodf(px, 6.0f) < 1.0f ? 0.6f : 1.0f;
            rgb[0] = 0.45f * tile;
            rgb[1] = 0.12f * tile;
            rgb[2] = 0.10f * tile;
        }
    }

    /* Vignette and a little sensor noise, as in a real photo. */
    float vig = 1.0f - 0.25f * ((u - 0.5f) * (u - 0.5f) + (v - 0.5f) * (v - 0.5f)) * 2;
    float noise = ((float)(hash2(x * 3 + c, y) & 0xff) / 255.0f - 0.5f) * 0.02f;
    return clamp01(rgb[c] * vig + noise);
}

float pm_photo_gray(int64_t rows, int64_t cols, int64_t x, int64_t y)
{
    return 0.299f * pm_photo_pixel(rows, cols, 0, x, y) +
           0.587f * pm_photo_pixel(rows, cols, 1, x, y) +
           0.114f * pm_photo_pixel(rows, cols, 2, x, y);
}

static int64_t clamp_coordinate(int64_t v, int64_t n)
{
    return v < 0 ? 0 : v >= n ? n - 1 : v;
}

int pm_photo_level(int64_t rows, int64_t cols, int c, int64_t x, int64_t y)
{
    x = clamp_coordinate(x, rows);
    y = clamp_coordinate(y, cols);
    float v = c < 0 ? pm_photo_gray(rows, cols, x, y) : pm_photo_pixel(rows, cols, c, x, y);
    return (int)(v * 255.0f + 0.5f);
}

int pm_write_png(const char *path, int64_t rows, int64_t cols, int channels,
                 pm_pixel_fn pixel, void *user)
{
#ifdef PM_HAVE_POLYMAGE_IO
    if (rows < 1 || cols < 1 || (channels != 1 && channels != 3) || rows > 65535 || cols > 65535)
        return -1;
    unsigned char *bytes = malloc((size_t)(rows * cols * channels));
    if (!bytes)
        return -1;
    for (int64_t x = 0; x < rows; x++)
        for (int64_t y = 0; y < cols; y++)
            for (int c = 0; c < channels; c++) {
                float v = clamp01(pixel(user, c, x, y));
                bytes[(x * cols + y) * channels + c] = (unsigned char)(v * 255.0f + 0.5f);
            }
    /* interleaved pixels as polymage_io's [channel][row][col] picture */
    int64_t extents[3] = {channels, rows, cols};
    pm_buffer img = pm_buffer_dense(bytes, PM_U8, 3, extents);
    img.stride[0] = 1;
    img.stride[1] = cols * channels;
    img.stride[2] = channels;
    pm_io_error err;
    pm_io_status s = pm_io_write(path, &img, NULL, &err);
    if (s != PM_IO_OK)
        fprintf(stderr, "%s\n", err.message);
    free(bytes);
    return s == PM_IO_OK ? 0 : -1;
#else
    (void)path, (void)rows, (void)cols, (void)channels, (void)pixel, (void)user;
    return -1; /* built without polymage_io (libpng, libjpeg) */
#endif
}
