/* png_codec.c — see png_codec.h: the service's picture policy, decoding over polymage_io,
 * PNG encoding on libpng directly, JPEG encoding over polymage_io. */
#include "png_codec.h"

#include "polymage_io.h"

#include <png.h>
#include <zlib.h>

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

/* ---- encoding: libpng called directly ---------------------------------------------------
 * Z_RLE with the "up" filter on every row (docs/png_encoding.md has the measurements): on
 * the service's answers it is 4.5x to 8x faster than libpng's defaults (zlib level 6, the
 * adaptive filter choice, Z_FILTERED) for 1.03x to 1.10x the bytes. libpng is called here
 * rather than through pm_io_encode, whose samples are converted one by one (18-60% more
 * time at this setting): the caller's rows are handed to libpng as they are. */

typedef struct png_out {
    uint8_t *data;
    size_t len, cap;
    size_t bound; /* more than any PNG of the picture takes (deflate stores a block it
                     cannot shrink): growing stops there rather than doubling past it */
} png_out;

static void png_out_write(png_structp png, png_bytep data, size_t n)
{
    png_out *o = png_get_io_ptr(png);
    if (n > o->cap - o->len) {
        size_t cap = o->cap ? o->cap : (size_t)1 << 16;
        while (cap - o->len < n) {
            if (cap > SIZE_MAX / 2)
                png_error(png, "the encoded PNG is too large");
            cap *= 2;
        }
        if (cap > o->bound && o->bound > o->len && o->bound - o->len >= n)
            cap = o->bound;
        uint8_t *p = realloc(o->data, cap);
        if (!p)
            png_error(png, "out of memory");
        o->data = p;
        o->cap = cap;
    }
    memcpy(o->data + o->len, data, n);
    o->len += n;
}

static void png_out_flush(png_structp png)
{
    (void)png;
}

/* libpng's errors come back here (and stop the encode: NULL); nothing is printed */
static void png_quiet_error(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}

static void png_quiet_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

/* The encode itself; *o holds the output (freed by the caller on failure too). The rows
 * array is the caller's, so that nothing here is live across libpng's longjmp. */
static int png_encode_rows(png_out *o, png_bytepp rows_p, int64_t rows, int64_t cols,
                           int channels)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, png_quiet_error,
                                              png_quiet_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return 0;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return 0;
    }
    png_set_write_fn(png, o, png_out_write, png_out_flush);
    png_set_IHDR(png, info, (png_uint_32)cols, (png_uint_32)rows, 8,
                 channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
    png_set_compression_strategy(png, Z_RLE);
    png_set_compression_level(png, 1); /* Z_RLE: any level but 0 (stored) is the same */
    png_set_rows(png, info, rows_p);
    png_write_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
    png_destroy_write_struct(&png, &info);
    return 1;
}

void *pm_png_encode(const uint8_t *pixels, int64_t rows, int64_t cols, int channels,
                    size_t *size)
{
    if (!pixels || !size || rows < 1 || cols < 1 || (channels != 1 && channels != 3) ||
        rows > PNG_UINT_31_MAX || cols > PNG_UINT_31_MAX / 3 ||
        (uint64_t)rows > SIZE_MAX / sizeof(png_bytep) ||
        (uint64_t)rows * (uint64_t)cols > SIZE_MAX / 4)
        return NULL;
    size_t stride = (size_t)cols * (size_t)channels;
    png_bytepp rows_p = malloc((size_t)rows * sizeof *rows_p);
    if (!rows_p)
        return NULL;
    for (int64_t x = 0; x < rows; x++)
        rows_p[x] = (png_bytep)(pixels + (size_t)x * stride);
    /* the first buffer a quarter of the raw bytes: a photo-like answer is about 0.65 of
     * them, a flat one a few percent; doubling from there up to the bound: the raw
     * bytes, a filter byte a row, and deflate's and the chunks' framing with room */
    size_t raw = stride * (size_t)rows;
    png_out o = {NULL, 0, 0, 0};
    o.bound = raw + (size_t)rows + raw / 256 + ((size_t)1 << 16);
    o.cap = raw / 4 > ((size_t)1 << 16) ? raw / 4 : (size_t)1 << 16;
    o.data = malloc(o.cap);
    int ok = o.data && png_encode_rows(&o, rows_p, rows, cols, channels);
    free(rows_p);
    if (!ok) {
        free(o.data);
        return NULL;
    }
    *size = o.len;
    return o.data;
}

void *pm_jpeg_encode(const uint8_t *pixels, int64_t rows, int64_t cols, int channels,
                     int quality, size_t *size)
{
    if (!pixels || !size || rows < 1 || cols < 1 || (channels != 1 && channels != 3) ||
        quality < 1 || quality > 100)
        return NULL;
    pm_buffer b = interleaved(pixels, rows, cols, channels);
    pm_io_write_options o = pm_io_write_options_default();
    o.format = PM_IO_JPEG;
    o.jpeg_quality = quality;
    void *out = NULL;
    if (pm_io_encode(&b, &o, &out, size, NULL) != PM_IO_OK)
        return NULL;
    return out;
}
