/* png_codec.c — see png_codec.h: the service's picture policy over polymage_io. */
#include "png_codec.h"

#include "polymage_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* interleaved pixels as polymage_io's [channel][row][col] picture */
static pm_buffer interleaved(const uint8_t *pixels, int64_t rows, int64_t cols, int channels)
{
    int64_t extents[3] = {channels, rows, cols};
    pm_buffer b = pm_buffer_dense((void *)pixels, PM_U8, 3, extents);
    b.stride[0] = 1;
    b.stride[1] = cols * channels;
    b.stride[2] = channels;
    return b;
}

pm_png_result pm_png_decode(const void *data, size_t size, int64_t max_side,
                            int64_t max_pixels, uint8_t **pixels, int64_t *rows,
                            int64_t *cols, int *channels, char *msg, size_t msg_size)
{
    *pixels = NULL;
    pm_io_info info;
    pm_io_error err;
    pm_io_status s = pm_io_probe(data, size, "the body", &info, &err);
    if (s != PM_IO_OK) {
        snprintf(msg, msg_size, "%s", err.message);
        return s == PM_IO_ERR_NOMEM ? PM_PNG_NOMEM : PM_PNG_NOT_IMAGE;
    }
    int64_t w = info.cols, h = info.rows; /* both below 2^31: w * h fits int64 */
    if (w < 1 || h < 1 || w > max_side || h > max_side || w * h > max_pixels) {
        snprintf(msg, msg_size,
                 "the image is %lld x %lld pixels; the limit is %lld per side and %lld in all",
                 (long long)h, (long long)w, (long long)max_side, (long long)max_pixels);
        return PM_PNG_TOO_LARGE;
    }
    int ch = info.channels >= 3 ? 3 : 1;
    uint8_t *px = malloc((size_t)w * (size_t)h * (size_t)ch);
    if (!px) {
        snprintf(msg, msg_size, "out of memory for a %lld x %lld image", (long long)h,
                 (long long)w);
        return PM_PNG_NOMEM;
    }
    pm_buffer b = interleaved(px, h, w, ch);
    s = pm_io_decode_into(data, size, "the body", &b, &err);
    if (s != PM_IO_OK) {
        snprintf(msg, msg_size, "%s", err.message);
        free(px);
        return s == PM_IO_ERR_NOMEM ? PM_PNG_NOMEM : PM_PNG_NOT_IMAGE;
    }
    *pixels = px;
    *rows = h;
    *cols = w;
    *channels = ch;
    return PM_PNG_OK;
}

void *pm_png_encode(const uint8_t *pixels, int64_t rows, int64_t cols, int channels,
                    size_t *size)
{
    if (rows < 1 || cols < 1 || (channels != 1 && channels != 3))
        return NULL;
    pm_buffer b = interleaved(pixels, rows, cols, channels);
    void *out = NULL;
    if (pm_io_encode(&b, NULL, &out, size, NULL) != PM_IO_OK)
        return NULL;
    return out;
}
