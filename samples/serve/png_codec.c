/* png_codec.c — see png_codec.h. */
#include "png_codec.h"

#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pm_png_result pm_png_decode(const void *data, size_t size, int64_t max_side,
                            int64_t max_pixels, uint8_t **pixels, int64_t *rows,
                            int64_t *cols, int *channels, char *msg, size_t msg_size)
{
    *pixels = NULL;
    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (size < sizeof signature || memcmp(data, signature, sizeof signature) != 0) {
        snprintf(msg, msg_size, "the body is not a PNG image (%zu bytes, no PNG signature)",
                 size);
        return PM_PNG_NOT_IMAGE;
    }
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, data, size)) {
        snprintf(msg, msg_size, "the PNG header cannot be read: %s", image.message);
        png_image_free(&image);
        return PM_PNG_NOT_IMAGE;
    }
    int64_t w = image.width, h = image.height;
    /* both are below 2^31 per the PNG format, so w * h fits int64 */
    if (w < 1 || h < 1 || w > max_side || h > max_side || w * h > max_pixels) {
        snprintf(msg, msg_size,
                 "the image is %lld x %lld pixels; the limit is %lld per side and %lld in all",
                 (long long)h, (long long)w, (long long)max_side, (long long)max_pixels);
        png_image_free(&image);
        return PM_PNG_TOO_LARGE;
    }
    int ch = image.format & PNG_FORMAT_FLAG_COLOR ? 3 : 1;
    image.format = ch == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    size_t stride = (size_t)w * (size_t)ch;
    uint8_t *px = malloc(stride * (size_t)h);
    if (!px) {
        snprintf(msg, msg_size, "out of memory for a %lld x %lld image", (long long)h,
                 (long long)w);
        png_image_free(&image);
        return PM_PNG_NOMEM;
    }
    /* black background: the composite of a transparent pixel is defined, not garbage */
    png_color black = {0, 0, 0};
    if (!png_image_finish_read(&image, &black, px, (png_int_32)stride, NULL)) {
        snprintf(msg, msg_size, "the PNG data cannot be decoded: %s", image.message);
        png_image_free(&image);
        free(px);
        return PM_PNG_NOT_IMAGE;
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
    if (rows < 1 || cols < 1 || rows > 0x7fffffff || cols > 0x7fffffff / 4 ||
        (channels != 1 && channels != 3))
        return NULL;
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)cols;
    image.height = (png_uint_32)rows;
    image.format = channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    png_int_32 stride = (png_int_32)(cols * channels);
    png_alloc_size_t need = 0;
    if (!png_image_write_get_memory_size(image, need, 0, pixels, stride, NULL) || need == 0)
        return NULL;
    void *out = malloc(need);
    if (!out)
        return NULL;
    if (!png_image_write_to_memory(&image, out, &need, 0, pixels, stride, NULL)) {
        free(out);
        return NULL;
    }
    *size = need;
    return out;
}
