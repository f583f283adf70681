/* test_image_io.c — polymage_io (include/polymage_io.h):
 *  - PNG round trips are exact for every channel count (1..4), both bit depths and the
 *    u8, u16, f32, f64 buffer types, in memory and through files; JPEG round trips (grey,
 *    RGB) stay within a tolerance;
 *  - the documented conversions: channels (luma, repeated grey, alpha dropped or opaque),
 *    depths (v * 257, rounded reductions), strided (interleaved) buffers both ways;
 *    interlaced, palette (with tRNS) and 1-bit PNGs written with libpng here;
 *  - wrong calls give PM_IO_ERR_ARGUMENT / _UNSUPPORTED / _FORMAT / _FILE with a message
 *    naming the file and the cause;
 *  - every truncation of a PNG and a JPEG is a clean error, and byte flips at every offset
 *    give either a picture or a clean error, never a crash (run it under ASan + UBSan:
 *    make test-asan);
 *  - messages keep their cause: libpng out of memory at each of its allocations is
 *    PM_IO_ERR_NOMEM, a header claiming more pixels than the file holds says so.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "polymage_io.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

/* A deterministic picture of one buffer type: a smooth pattern plus a little texture
 * (JPEG-friendly when smooth), every value exactly representable at `depth` bits. */
static pm_buffer make_picture(pm_type type, int channels, int64_t rows, int64_t cols, int depth,
                              int smooth)
{
    int64_t ext[3] = {channels, rows, cols};
    pm_buffer b = channels == 1 ? check_buffer_new(type, 2, ext + 1) : check_buffer_new(type, 3, ext);
    unsigned max = depth == 16 ? 65535u : 255u;
    for (int c = 0; c < channels; c++)
        for (int64_t x = 0; x < rows; x++)
            for (int64_t y = 0; y < cols; y++) {
                unsigned v;
                if (smooth)
                    v = (unsigned)((double)max * (0.5 + 0.4 * sin(0.21 * (double)x + 0.7 * c) *
                                                            cos(0.17 * (double)y - 0.3 * c)));
                else
                    v = (unsigned)((x * 7919 + y * 104729 + c * 31337 + x * y * 13) % (max + 1));
                if (type == PM_U16 && depth == 8)
                    v *= 257; /* what an 8-bit file gives a u16 buffer */
                int64_t i = (c * rows + x) * cols + y;
                switch (type) {
                case PM_U8: ((uint8_t *)b.data)[i] = (uint8_t)v; break;
                case PM_U16: ((uint16_t *)b.data)[i] = (uint16_t)v; break;
                case PM_F32: ((float *)b.data)[i] = (float)v / (float)max; break;
                case PM_F64: ((double *)b.data)[i] = (double)v / (double)max; break;
                default: break;
                }
            }
    return b;
}

static double mean_abs_diff(const pm_buffer *a, const pm_buffer *b)
{
    double sum = 0;
    int64_t n = check_buffer_count(a);
    for (int64_t i = 0; i < n; i++)
        sum += fabs((double)((const uint8_t *)a->data)[i] - (double)((const uint8_t *)b->data)[i]);
    return n ? sum / (double)n : 0;
}

static void round_trips(void)
{
    const pm_type types[] = {PM_U8, PM_U16, PM_F32, PM_F64};
    for (size_t t = 0; t < 4; t++)
        for (int depth = 8; depth <= 16; depth += 8)
            for (int ch = 1; ch <= 4; ch++) {
                /* f32/f64 at 16 bits: v / 65535 round-trips exactly through rounding */
                pm_buffer img = make_picture(types[t], ch, 13, 17, depth, 0);
                pm_io_write_options o = pm_io_write_options_default();
                o.bit_depth = depth;
                void *png = NULL;
                size_t size = 0;
                pm_io_error err;
                if (!CHECK(pm_io_encode(&img, &o, &png, &size, &err) == PM_IO_OK))
                    fprintf(stderr, "%s\n", err.message);
                pm_io_info info;
                CHECK(pm_io_probe(png, size, "rt.png", &info, &err) == PM_IO_OK);
                CHECK(info.format == PM_IO_PNG && info.rows == 13 && info.cols == 17 &&
                      info.channels == ch && info.bit_depth == depth);
                pm_buffer back;
                CHECK(pm_io_decode(png, size, "rt.png", types[t], 0, &back, &err) == PM_IO_OK);
                double d = check_buffer_maxdiff(&img, &back);
                if (!CHECK(d == 0))
                    fprintf(stderr, "PNG %s %d-bit %d channels: difference %g\n",
                            pm_type_name(types[t]), depth, ch, d);
                pm_io_free(&back);
                CHECK(back.data == NULL);
                free(png);
                check_buffer_free(&img);
            }

    /* through files, 16-bit RGBA and 8-bit grey */
    for (int k = 0; k < 2; k++) {
        pm_type type = k ? PM_U16 : PM_U8;
        int ch = k ? 4 : 1;
        pm_buffer img = make_picture(type, ch, 31, 9, k ? 16 : 8, 0);
        char path[512];
        snprintf(path, sizeof path, "%s/rt%d.PNG", tmpdir, k);
        pm_io_error err;
        CHECK(pm_io_write(path, &img, NULL, &err) == PM_IO_OK);
        pm_io_info info;
        CHECK(pm_io_probe_file(path, &info, &err) == PM_IO_OK && info.bit_depth == (k ? 16 : 8));
        pm_buffer back;
        CHECK(pm_io_read(path, type, ch, &back, &err) == PM_IO_OK);
        CHECK(check_buffer_maxdiff(&img, &back) == 0);
        pm_io_free(&back);
        check_buffer_free(&img);
    }

    /* JPEG: grey and RGB, in memory and through a file; within a tolerance */
    for (int ch = 1; ch <= 3; ch += 2) {
        pm_buffer img = make_picture(PM_U8, ch, 48, 64, 8, 1);
        pm_io_write_options o = pm_io_write_options_default();
        o.format = PM_IO_JPEG;
        o.jpeg_quality = 95;
        void *jpg = NULL;
        size_t size = 0;
        pm_io_error err;
        CHECK(pm_io_encode(&img, &o, &jpg, &size, &err) == PM_IO_OK);
        pm_io_info info;
        CHECK(pm_io_probe(jpg, size, "rt.jpg", &info, &err) == PM_IO_OK);
        CHECK(info.format == PM_IO_JPEG && info.channels == ch && info.bit_depth == 8 &&
              info.rows == 48 && info.cols == 64);
        pm_buffer back;
        CHECK(pm_io_decode(jpg, size, "rt.jpg", PM_U8, 0, &back, &err) == PM_IO_OK);
        double worst = check_buffer_maxdiff(&img, &back), mean = mean_abs_diff(&img, &back);
        printf("JPEG %d channel(s), quality 95: largest difference %g, mean %.3f levels\n", ch,
               worst, mean);
        CHECK(worst <= 24 && mean <= 2); /* 4:2:0 chroma: colour edges move most */
        pm_io_free(&back);
        char path[512];
        snprintf(path, sizeof path, "%s/rt.jpeg", tmpdir);
        CHECK(pm_io_write(path, &img, NULL, &err) == PM_IO_OK); /* from the name */
        CHECK(pm_io_read(path, PM_U8, ch, &back, &err) == PM_IO_OK);
        CHECK(check_buffer_maxdiff(&img, &back) <= 16 && mean_abs_diff(&img, &back) <= 2);
        pm_io_free(&back);
        free(jpg);
        check_buffer_free(&img);
    }
}

static void conversions(void)
{
    /* RGBA 8-bit, one pixel per case */
    const uint8_t px[2][4] = {{200, 100, 50, 7}, {0, 255, 10, 255}};
    int64_t ext[3] = {4, 1, 2};
    uint8_t planar[8];
    for (int c = 0; c < 4; c++)
        for (int y = 0; y < 2; y++)
            planar[c * 2 + y] = px[y][c];
    pm_buffer img = pm_buffer_dense(planar, PM_U8, 3, ext);
    void *png = NULL;
    size_t size = 0;
    pm_io_error err;
    CHECK(pm_io_encode(&img, NULL, &png, &size, &err) == PM_IO_OK);
    pm_buffer grey, rgb, u16, f32;
    CHECK(pm_io_decode(png, size, "c.png", PM_U8, 1, &grey, &err) == PM_IO_OK);
    CHECK(grey.ndims == 2 && grey.extent[0] == 1 && grey.extent[1] == 2);
    for (int y = 0; y < 2; y++) /* rounded luma */
        CHECK(((uint8_t *)grey.data)[y] ==
              (299 * px[y][0] + 587 * px[y][1] + 114 * px[y][2] + 500) / 1000);
    CHECK(pm_io_decode(png, size, "c.png", PM_U8, 3, &rgb, &err) == PM_IO_OK);
    CHECK(rgb.ndims == 3 && rgb.extent[0] == 3); /* alpha dropped, not composited */
    CHECK(((uint8_t *)rgb.data)[0] == 200 && ((uint8_t *)rgb.data)[2] == 100);
    CHECK(pm_io_decode(png, size, "c.png", PM_U16, 0, &u16, &err) == PM_IO_OK);
    CHECK(((uint16_t *)u16.data)[0] == 200 * 257 && ((uint16_t *)u16.data)[6] == 7 * 257);
    CHECK(pm_io_decode(png, size, "c.png", PM_F32, 4, &f32, &err) == PM_IO_OK);
    CHECK(((float *)f32.data)[1] == 0.0f && ((float *)f32.data)[3] == 1.0f &&
          ((float *)f32.data)[0] == 200.0f / 255.0f);
    pm_io_free(&grey);
    pm_io_free(&rgb);
    pm_io_free(&u16);
    pm_io_free(&f32);
    free(png);

    /* grey to RGB + opaque alpha; 16-bit to u8 rounded */
    uint16_t g16[3] = {0, 32896, 65535};
    int64_t gext[2] = {1, 3};
    pm_buffer g = pm_buffer_dense(g16, PM_U16, 2, gext);
    CHECK(pm_io_encode(&g, NULL, &png, &size, &err) == PM_IO_OK);
    pm_buffer rgba;
    CHECK(pm_io_decode(png, size, "g.png", PM_U8, 4, &rgba, &err) == PM_IO_OK);
    const uint8_t *q = rgba.data;
    CHECK(q[0] == 0 && q[1] == 128 && q[2] == 255);     /* R */
    CHECK(q[3] == 0 && q[4] == 128 && q[8] == 255);     /* G, B repeat the grey */
    CHECK(q[9] == 255 && q[10] == 255 && q[11] == 255); /* opaque */
    pm_io_free(&rgba);
    free(png);

    /* f32 writing clamps and maps NaN to 0 */
    float fv[4] = {-1.0f, 2.0f, NAN, 0.5f};
    int64_t fext[2] = {2, 2};
    pm_buffer fb = pm_buffer_dense(fv, PM_F32, 2, fext);
    CHECK(pm_io_encode(&fb, NULL, &png, &size, &err) == PM_IO_OK);
    pm_buffer fu8;
    CHECK(pm_io_decode(png, size, "f.png", PM_U8, 1, &fu8, &err) == PM_IO_OK);
    q = fu8.data;
    CHECK(q[0] == 0 && q[1] == 255 && q[2] == 0 && q[3] == 128);
    pm_io_free(&fu8);
    free(png);

    /* interleaved memory both ways, and a buffer padded between rows */
    pm_buffer src = make_picture(PM_U8, 3, 5, 6, 8, 0);
    uint8_t inter[5 * 8 * 3];
    memset(inter, 0xee, sizeof inter);
    int64_t iext[3] = {3, 5, 6};
    pm_buffer il = pm_buffer_dense(inter, PM_U8, 3, iext);
    il.stride[0] = 1;
    il.stride[1] = 8 * 3; /* two pixels of padding per row */
    il.stride[2] = 3;
    CHECK(pm_io_encode(&src, NULL, &png, &size, &err) == PM_IO_OK);
    CHECK(pm_io_decode_into(png, size, "i.png", &il, &err) == PM_IO_OK);
    int same = 1;
    for (int c = 0; c < 3; c++)
        for (int x = 0; x < 5; x++)
            for (int y = 0; y < 8; y++) {
                uint8_t want = y < 6 ? ((uint8_t *)src.data)[(c * 5 + x) * 6 + y] : 0xee;
                same &= inter[x * 24 + y * 3 + c] == want;
            }
    CHECK(same);
    free(png);
    CHECK(pm_io_encode(&il, NULL, &png, &size, &err) == PM_IO_OK);
    pm_buffer back;
    CHECK(pm_io_decode(png, size, "i.png", PM_U8, 3, &back, &err) == PM_IO_OK);
    CHECK(check_buffer_maxdiff(&src, &back) == 0);
    pm_io_free(&back);
    free(png);
    check_buffer_free(&src);
}


/* PNGs polymage_io does not write, made with libpng here: Adam7-interlaced RGB, a 2-bit
 * palette with a tRNS entry, 1-bit grey. */
static int write_png_file(const char *path, int64_t rows, int64_t cols, int depth, int type,
                          int interlace, const uint8_t *const *row_ptrs, const png_color *palette,
                          int npalette, const png_byte *trans, int ntrans)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info || setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)cols, (png_uint_32)rows, depth, type, interlace,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (palette)
        png_set_PLTE(png, info, palette, npalette);
    if (trans)
        png_set_tRNS(png, info, trans, ntrans, NULL);
    png_write_info(png, info);
    png_write_image(png, (png_bytepp)row_ptrs);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return fclose(f) == 0 ? 0 : -1;
}

static void other_pngs(void)
{
    enum { R = 13, C = 17 };
    char path[512];
    pm_io_error err;
    /* interlaced RGB */
    static uint8_t rgb[R][C * 3];
    const uint8_t *rows[R];
    for (int x = 0; x < R; x++) {
        for (int i = 0; i < C * 3; i++)
            rgb[x][i] = (uint8_t)(x * 31 + i * 7);
        rows[x] = rgb[x];
    }
    snprintf(path, sizeof path, "%s/adam7.png", tmpdir);
    CHECK(write_png_file(path, R, C, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7, rows, NULL, 0,
                         NULL, 0) == 0);
    pm_buffer b;
    if (CHECK(pm_io_read(path, PM_U8, 0, &b, &err) == PM_IO_OK)) {
        int same = b.extent[0] == 3 && b.extent[1] == R && b.extent[2] == C;
        for (int c = 0; c < 3 && same; c++)
            for (int x = 0; x < R; x++)
                for (int y = 0; y < C; y++)
                    same &= ((uint8_t *)b.data)[(c * R + x) * C + y] == rgb[x][y * 3 + c];
        CHECK(same);
        pm_io_free(&b);
    }
    /* a 2-bit palette, entry 1 half transparent: RGBA */
    static const png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 128, 255}, {9, 9, 9}};
    static const png_byte trans[2] = {255, 100};
    static uint8_t packed[R][(C * 2 + 7) / 8];
    for (int x = 0; x < R; x++) {
        memset(packed[x], 0, sizeof packed[x]);
        for (int y = 0; y < C; y++)
            packed[x][y / 4] |= (uint8_t)(((x + y) % 4) << (6 - 2 * (y % 4)));
        rows[x] = packed[x];
    }
    snprintf(path, sizeof path, "%s/palette.png", tmpdir);
    CHECK(write_png_file(path, R, C, 2, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE, rows, pal, 4,
                         trans, 2) == 0);
    pm_io_info info;
    CHECK(pm_io_probe_file(path, &info, &err) == PM_IO_OK && info.channels == 4 &&
          info.bit_depth == 8);
    if (CHECK(pm_io_read(path, PM_U8, 0, &b, &err) == PM_IO_OK)) {
        int same = b.ndims == 3 && b.extent[0] == 4;
        for (int x = 0; x < R && same; x++)
            for (int y = 0; y < C; y++) {
                int k = (x + y) % 4;
                const uint8_t *d = b.data;
                same &= d[(0 * R + x) * C + y] == pal[k].red && d[(1 * R + x) * C + y] == pal[k].green &&
                        d[(2 * R + x) * C + y] == pal[k].blue &&
                        d[(3 * R + x) * C + y] == (k < 2 ? trans[k] : 255);
            }
        CHECK(same);
        pm_io_free(&b);
    }
    /* 1-bit grey: 0 and 255 */
    static uint8_t bits[R][(C + 7) / 8];
    for (int x = 0; x < R; x++) {
        memset(bits[x], 0, sizeof bits[x]);
        for (int y = 0; y < C; y++)
            if ((x * y) % 3 == 0)
                bits[x][y / 8] |= (uint8_t)(0x80 >> (y % 8));
        rows[x] = bits[x];
    }
    snprintf(path, sizeof path, "%s/bits.png", tmpdir);
    CHECK(write_png_file(path, R, C, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_ADAM7, rows, NULL, 0,
                         NULL, 0) == 0);
    if (CHECK(pm_io_read(path, PM_F32, 0, &b, &err) == PM_IO_OK)) {
        int same = b.ndims == 2;
        for (int x = 0; x < R && same; x++)
            for (int y = 0; y < C; y++)
                same &= ((float *)b.data)[x * C + y] == ((x * y) % 3 == 0 ? 1.0f : 0.0f);
        CHECK(same);
        pm_io_free(&b);
    }
}

static void expect(pm_io_status got, pm_io_status want, const pm_io_error *err, const char *needle1,
                   const char *needle2)
{
    if (!CHECK(got == want))
        fprintf(stderr, "expected %s, got %s: %s\n", pm_io_status_name(want),
                pm_io_status_name(got), err->message);
    CHECK(err->status == want);
    if (needle1)
        CHECK_CONTAINS(err->message, needle1);
    if (needle2)
        CHECK_CONTAINS(err->message, needle2);
}

/* pm_io_write_options.size: the released size is read; 0 (an initializer without
 * _default()), SIZE_MAX, a size between the fields and a newer header's are refused by
 * pm_io_encode and pm_io_write alike, naming the struct, the size and the sizes read,
 * before any other field is (bit_depth 12 would be refused otherwise) and before any file
 * is made. */
static void write_options_sizes(const pm_buffer *img)
{
    pm_io_write_options o = pm_io_write_options_default();
    CHECK(o.size == sizeof o);
    void *png = NULL;
    size_t size = 0;
    pm_io_error err;
    CHECK(pm_io_encode(img, &o, &png, &size, &err) == PM_IO_OK && png && size > 8);
    free(png);
    const size_t bad[] = {0, SIZE_MAX, offsetof(pm_io_write_options, bit_depth), sizeof o - 1,
                          sizeof o + 8, sizeof o * 2};
    char path[512], want[160], read[64];
    snprintf(path, sizeof path, "%s/sized.png", tmpdir);
    snprintf(read, sizeof read, "reads %zu;", sizeof o);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o = pm_io_write_options_default();
        o.size = bad[i];
        o.bit_depth = 12;
        snprintf(want, sizeof want, "pm_io_write_options.size = %zu is not the size of any "
                 "version of pm_io_write_options", bad[i]);
        png = (void *)&o;
        size = 1;
        expect(pm_io_encode(img, &o, &png, &size, &err), PM_IO_ERR_ARGUMENT, &err, want, read);
        CHECK(png == NULL && size == 0);
        CHECK_CONTAINS(err.message, "image: ");
        CHECK_CONTAINS(err.message, "start from pm_io_write_options_default()");
        expect(pm_io_write(path, img, &o, &err), PM_IO_ERR_ARGUMENT, &err, want, path);
        CHECK(access(path, F_OK) != 0);
    }
    /* NULL options are the defaults */
    CHECK(pm_io_write(path, img, NULL, &err) == PM_IO_OK);
    CHECK(access(path, F_OK) == 0);
}

static void misuse(void)
{
    pm_io_error err;
    pm_buffer img = make_picture(PM_U8, 3, 4, 5, 8, 0);
    void *png = NULL;
    size_t size = 0;
    CHECK(pm_io_encode(&img, NULL, &png, &size, &err) == PM_IO_OK);

    pm_buffer out;
    expect(pm_io_decode(png, size, "a.png", PM_I32, 0, &out, &err), PM_IO_ERR_ARGUMENT, &err,
           "a.png", "wrong buffer type i32");
    CHECK(out.data == NULL);
    expect(pm_io_decode(png, size, "a.png", PM_U8, 5, &out, &err), PM_IO_ERR_ARGUMENT, &err,
           "a.png", "5 channels");
    int64_t ext[3] = {3, 4, 6};
    pm_buffer wrong = check_buffer_new(PM_U8, 3, ext);
    expect(pm_io_decode_into(png, size, "a.png", &wrong, &err), PM_IO_ERR_ARGUMENT, &err,
           "wrong buffer shape u8[3][4][6]", "4 x 5 pixels");
    check_buffer_free(&wrong);
    int64_t ext4[4] = {1, 3, 4, 5};
    wrong = check_buffer_new(PM_U8, 4, ext4);
    expect(pm_io_decode_into(png, size, "a.png", &wrong, &err), PM_IO_ERR_ARGUMENT, &err,
           "wrong buffer shape", "[channels 1..4]");
    free(png);
    expect(pm_io_encode(&wrong, NULL, &png, &size, &err), PM_IO_ERR_ARGUMENT, &err,
           "wrong buffer shape", NULL);
    check_buffer_free(&wrong);

    pm_io_write_options o = pm_io_write_options_default();
    o.bit_depth = 12;
    expect(pm_io_encode(&img, &o, &png, &size, &err), PM_IO_ERR_UNSUPPORTED, &err,
           "unsupported bit depth 12", NULL);
    o = pm_io_write_options_default();
    o.format = PM_IO_JPEG;
    o.bit_depth = 16;
    expect(pm_io_encode(&img, &o, &png, &size, &err), PM_IO_ERR_UNSUPPORTED, &err, "JPEG", "8 bits");
    pm_buffer rgba = make_picture(PM_U8, 4, 4, 5, 8, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/alpha.jpg", tmpdir);
    expect(pm_io_write(path, &rgba, NULL, &err), PM_IO_ERR_UNSUPPORTED, &err, "alpha.jpg",
           "4 channels");
    CHECK(access(path, F_OK) != 0);
    check_buffer_free(&rgba);
    o = pm_io_write_options_default();
    o.format = PM_IO_JPEG;
    o.jpeg_quality = 0;
    expect(pm_io_encode(&img, &o, &png, &size, &err), PM_IO_ERR_ARGUMENT, &err, "jpeg_quality", NULL);
    write_options_sizes(&img);

    snprintf(path, sizeof path, "%s/picture.tiff", tmpdir);
    expect(pm_io_write(path, &img, NULL, &err), PM_IO_ERR_FORMAT, &err, "picture.tiff", ".png");
    snprintf(path, sizeof path, "%s/no/such/folder/x.png", tmpdir);
    expect(pm_io_write(path, &img, NULL, &err), PM_IO_ERR_FILE, &err, "no/such/folder/x.png",
           "No such file");
    expect(pm_io_read(path, PM_U8, 0, &out, &err), PM_IO_ERR_FILE, &err, "x.png", "cannot open");
    expect(pm_io_read(tmpdir, PM_U8, 0, &out, &err), PM_IO_ERR_FILE, &err, tmpdir, "cannot read");
    static const char text[] = "hello, this is text";
    expect(pm_io_decode(text, sizeof text, "notes.txt", PM_U8, 0, &out, &err), PM_IO_ERR_FORMAT,
           &err, "notes.txt", "not a PNG or JPEG");
    expect(pm_io_decode(text, 0, "empty.png", PM_U8, 0, &out, &err), PM_IO_ERR_FORMAT, &err,
           "empty.png", "empty");
    int64_t none[2] = {0, 5};
    pm_buffer empty = pm_buffer_dense(img.data, PM_U8, 2, none);
    expect(pm_io_encode(&empty, NULL, &png, &size, &err), PM_IO_ERR_ARGUMENT, &err, "empty", NULL);
    /* sizes that overflow are refused before memory is taken */
    int64_t huge[3] = {4, (int64_t)1 << 40, (int64_t)1 << 40};
    pm_buffer big = pm_buffer_dense(img.data, PM_U8, 3, huge);
    expect(pm_io_encode(&big, NULL, &png, &size, &err), PM_IO_ERR_TOO_LARGE, &err, "over PNG", NULL);
    o = pm_io_write_options_default();
    o.format = PM_IO_JPEG;
    big.extent[0] = 3;
    expect(pm_io_encode(&big, &o, &png, &size, &err), PM_IO_ERR_TOO_LARGE, &err, "at most", NULL);
    check_buffer_free(&img);
}

/* CRC-32 of PNG chunks (ISO 3309), to keep a flipped byte past libpng's CRC check. */
static uint32_t crc32_of(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xffffffffu;
}

/* Recomputes the CRC of the PNG chunk holding byte `at` (after the signature), so the
 * flip reaches the header's fields, zlib and the filters instead of the CRC check. */
static void fix_png_crc(uint8_t *png, size_t size, size_t at)
{
    size_t pos = 8;
    while (pos + 12 <= size) {
        uint32_t len = (uint32_t)png[pos] << 24 | (uint32_t)png[pos + 1] << 16 |
                       (uint32_t)png[pos + 2] << 8 | png[pos + 3];
        if (len > size - pos - 12)
            return;
        if (at >= pos + 4 && at < pos + 8 + len) {
            uint32_t c = crc32_of(png + pos + 4, len + 4);
            for (int k = 0; k < 4; k++)
                png[pos + 8 + len + (size_t)k] = (uint8_t)(c >> (24 - 8 * k));
            return;
        }
        pos += 12 + len;
    }
}

/* Every truncation is an error; flips at every offset are a picture or an error. */
static void damaged(const char *what, const uint8_t *good, size_t size, pm_type type, int png)
{
    pm_io_info info;
    pm_io_error err;
    CHECK(pm_io_probe(good, size, what, &info, &err) == PM_IO_OK);
    uint8_t *copy = malloc(size);
    int truncated_ok = 0, flipped_ok = 0, flipped_err = 0, bad_messages = 0;
    for (size_t n = 0; n < size; n++) {
        /* a fresh allocation of exactly n bytes, so ASan sees any read past the end */
        uint8_t *cut = malloc(n ? n : 1);
        memcpy(cut, good, n);
        pm_buffer out;
        pm_io_status s = pm_io_decode(cut, n, what, type, 0, &out, &err);
        if (s == PM_IO_OK) {
            truncated_ok++;
            pm_io_free(&out);
        } else if (!strstr(err.message, what) || strlen(err.message) <= strlen(what) + 4) {
            bad_messages++;
        }
        free(cut);
    }
    static const uint8_t patterns[] = {0xff, 0x01, 0x80, 0x10};
    int npatterns = png ? 4 : 3; /* the last, for PNG: with the chunk's CRC made right */
    for (int p = 0; p < npatterns; p++)
        for (size_t at = 0; at < size; at++) {
            memcpy(copy, good, size);
            copy[at] ^= patterns[p];
            if (p == 3)
                fix_png_crc(copy, size, at);
            pm_buffer out;
            pm_io_status s = pm_io_decode(copy, size, what, type, 0, &out, &err);
            if (s == PM_IO_OK) {
                flipped_ok++;
                CHECK(out.data != NULL);
                pm_io_free(&out);
            } else {
                flipped_err++;
                if (!strstr(err.message, what) || s == PM_IO_ERR_ARGUMENT || s == PM_IO_ERR_FILE)
                    bad_messages++;
            }
        }
    printf("%s (%zu bytes): %zu truncations all errors: %s; %zu flips: %d decoded, %d errors\n",
           what, size, size, truncated_ok ? "no" : "yes", (size_t)npatterns * size, flipped_ok,
           flipped_err);
    if (!CHECK(truncated_ok == 0))
        fprintf(stderr, "%s: %d truncations decoded\n", what, truncated_ok);
    CHECK(bad_messages == 0);
    CHECK(flipped_err > 0);
    /* one message, shown */
    pm_buffer out;
    pm_io_decode(good, size / 2, what, type, 0, &out, &err);
    printf("  cut in half: %s: %s\n", pm_io_status_name(err.status), err.message);
    free(copy);
}

static void fuzz(void)
{
    struct {
        const char *name;
        pm_type type;
        int channels, depth;
        pm_io_format format;
    } cases[] = {
        {"rgb8.png", PM_U8, 3, 8, PM_IO_PNG},   {"rgba16.png", PM_U16, 4, 16, PM_IO_PNG},
        {"grey8.png", PM_F32, 1, 8, PM_IO_PNG}, {"rgb.jpg", PM_U8, 3, 8, PM_IO_JPEG},
        {"grey.jpg", PM_F32, 1, 8, PM_IO_JPEG},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pm_buffer img = make_picture(cases[i].type, cases[i].channels, 19, 23, cases[i].depth,
                                     cases[i].format == PM_IO_JPEG);
        pm_io_write_options o = pm_io_write_options_default();
        o.format = cases[i].format;
        void *data = NULL;
        size_t size = 0;
        pm_io_error err;
        if (CHECK(pm_io_encode(&img, &o, &data, &size, &err) == PM_IO_OK))
            damaged(cases[i].name, data, size, cases[i].type, cases[i].format == PM_IO_PNG);
        free(data);
        check_buffer_free(&img);
    }
}

/* ---- messages that keep their cause ---------------------------------------------------- */

/* The internal polymage_io's test hook (io/polymage_io.c, built with PM_IO_TEST_HOOKS):
 * this thread's next n libpng allocations succeed and the later ones fail; -1: none fail. */
void pm_io_test_png_alloc_limit(long n);

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (uint8_t)(v >> (24 - 8 * k));
}

/* One operation with libpng's allocations failing from the n-th on: it succeeds or says
 * out of memory (PM_IO_ERR_NOMEM naming the picture), never anything else. Returns 1 for
 * a failure inside libpng's work (after its structs were made), 0 otherwise. */
static int oom_case(const char *what, long n, pm_io_status s, const pm_io_error *err, int *bad)
{
    if (s == PM_IO_OK)
        return 0;
    if (s != PM_IO_ERR_NOMEM || !strstr(err->message, "out of memory")) {
        fprintf(stderr, "%s, %ld libpng allocations: %s: %s\n", what, n, pm_io_status_name(s),
                err->message);
        (*bad)++;
    }
    return strstr(err->message, "out of memory in libpng") != NULL;
}

static void png_out_of_memory(void)
{
    pm_buffer img = make_picture(PM_U16, 4, 19, 23, 16, 0);
    void *png = NULL, *again = NULL;
    size_t size = 0, again_size = 0;
    pm_io_error err;
    if (!CHECK(pm_io_encode(&img, NULL, &png, &size, &err) == PM_IO_OK))
        return;
    int bad = 0, decode_inside = 0, encode_inside = 0, probe_inside = 0, last_ok = 0;
    for (long n = 0; n <= 200; n++) {
        pm_buffer out;
        pm_io_info info;
        pm_io_test_png_alloc_limit(n);
        pm_io_status s = pm_io_decode(png, size, "oom.png", PM_U8, 0, &out, &err);
        decode_inside += oom_case("decode", n, s, &err, &bad);
        last_ok = s == PM_IO_OK;
        if (s == PM_IO_OK)
            pm_io_free(&out);
        s = pm_io_probe(png, size, "oom.png", &info, &err);
        probe_inside += oom_case("probe", n, s, &err, &bad);
        s = pm_io_encode(&img, NULL, &again, &again_size, &err);
        encode_inside += oom_case("encode", n, s, &err, &bad);
        free(again);
        again = NULL;
        pm_io_test_png_alloc_limit(-1);
    }
    printf("libpng out of memory: %d decodes, %d probes, %d encodes failed inside libpng\n",
           decode_inside, probe_inside, encode_inside);
    CHECK(bad == 0);
    CHECK(decode_inside > 0 && encode_inside > 0); /* a header needs only libpng's structs */
    CHECK(last_ok); /* 200 allocations are plenty */
    pm_buffer out;
    pm_io_test_png_alloc_limit(0);
    expect(pm_io_decode(png, size, "oom.png", PM_U8, 0, &out, &err), PM_IO_ERR_NOMEM, &err,
           "oom.png: out of memory", NULL);
    pm_io_test_png_alloc_limit(-1);
    free(png);
    check_buffer_free(&img);
}

/* A header claiming far more pixels than the file's bytes can inflate to is refused before
 * the pixels' memory is taken, the message giving the sizes and the limit. */
static void png_size_limit(void)
{
    pm_buffer img = make_picture(PM_U8, 1, 4, 5, 8, 0);
    void *data = NULL;
    size_t size = 0;
    pm_io_error err;
    if (!CHECK(pm_io_encode(&img, NULL, &data, &size, &err) == PM_IO_OK))
        return;
    uint8_t *png = data;
    CHECK(memcmp(png + 12, "IHDR", 4) == 0);
    put_u32(png + 16, 100000); /* width: columns */
    put_u32(png + 20, 90000);  /* height: rows */
    fix_png_crc(png, size, 16);
    pm_io_info info;
    CHECK(pm_io_probe(png, size, "liar.png", &info, &err) == PM_IO_OK);
    CHECK(info.rows == 90000 && info.cols == 100000);
    pm_buffer out;
    char cause[160];
    snprintf(cause, sizeof cause, "corrupted PNG: its %zu bytes cannot hold 90000 x 100000 "
             "pixels of 1 channel (deflate expands data at most 1032 times)", size);
    expect(pm_io_decode(png, size, "liar.png", PM_U8, 0, &out, &err), PM_IO_ERR_CORRUPT, &err,
           "liar.png: ", cause);
    printf("  a lying header: %s\n", err.message);
    CHECK(out.data == NULL);
    free(data);
    check_buffer_free(&img);
}

int main(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/pm_test_image_io.XXXXXX");
    if (!CHECK(mkdtemp(tmpdir) != NULL))
        return check_finish("test_image_io");
    round_trips();
    conversions();
    other_pngs();
    misuse();
    fuzz();
    png_out_of_memory();
    png_size_limit();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_finish("test_image_io");
}
