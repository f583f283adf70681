/* image_io.h — the bundled default image and PNG output for samples, tests and bench.
 *
 * The default image is generated, not shipped: a deterministic, photo-like synthetic
 * scene (sky gradient, sun, hills, a textured house with windows, grass noise, soft
 * shading), so any size can be made without files and every run sees the same pixels.
 */
#ifndef PM_SAMPLES_IMAGE_IO_H
#define PM_SAMPLES_IMAGE_IO_H

#include <stdint.h>

/* Colour value of channel c (0 = R, 1 = G, 2 = B) at pixel (x = row, y = col) of a
 * rows x cols picture of the default scene, in [0, 1]. */
float pm_photo_pixel(int64_t rows, int64_t cols, int c, int64_t x, int64_t y);
/* Grey value (luma) of the same pixel, in [0, 1]. */
float pm_photo_gray(int64_t rows, int64_t cols, int64_t x, int64_t y);

/* The 8-bit level (0..255) a camera would store for channel c of pixel (x, y), or the grey
 * level when c < 0. Coordinates outside the picture are clamped to its edge, which is the
 * clamp-to-edge padding several apps put around their input. */
int pm_photo_level(int64_t rows, int64_t cols, int c, int64_t x, int64_t y);

/* Writes an 8-bit PNG of rows x cols pixels with `channels` (1 or 3) from a function
 * returning values in [0, 1] (clamped), through polymage_io. Returns 0 on success, -1 on
 * failure (polymage_io's message printed on stderr; always -1 when the samples are built
 * without polymage_io). */
typedef float (*pm_pixel_fn)(void *user, int c, int64_t x, int64_t y);
int pm_write_png(const char *path, int64_t rows, int64_t cols, int channels,
                 pm_pixel_fn pixel, void *user);

#endif
