/* polymage_io.c — PNG and JPEG into and from pm_buffers (see include/polymage_io.h).
 *
 * Decoding goes in two steps: the codec (libpng or libjpeg-turbo, all in memory) writes
 * the file's samples interleaved, as stored (8-bit bytes or host-order 16-bit words), into
 * a `raw` picture; convert_into then maps every pixel to the caller's buffer (type,
 * channels, strides). Encoding goes the other way, one row at a time. Files are read
 * whole and handed to the memory decoders; written by encoding to memory first.
 *
 * libpng reports errors by longjmp out of its error callback and libjpeg by calling
 * error_exit: both callbacks here copy the message and longjmp back to the setjmp of the
 * one function that drives the codec. Everything that function changes after setjmp
 * lives in a job struct reached through a pointer (never a local variable), so it keeps
 * its value across the longjmp.
 */
#include "polymage_io.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h> /* before jpeglib.h, which uses FILE */
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

/* ---- errors ------------------------------------------------------------------------ */

const char *pm_io_status_name(pm_io_status status)
{
    switch (status) {
    case PM_IO_OK: return "PM_IO_OK";
    case PM_IO_ERR_FILE: return "PM_IO_ERR_FILE";
    case PM_IO_ERR_FORMAT: return "PM_IO_ERR_FORMAT";
    case PM_IO_ERR_CORRUPT: return "PM_IO_ERR_CORRUPT";
    case PM_IO_ERR_UNSUPPORTED: return "PM_IO_ERR_UNSUPPORTED";
    case PM_IO_ERR_ARGUMENT: return "PM_IO_ERR_ARGUMENT";
    case PM_IO_ERR_TOO_LARGE: return "PM_IO_ERR_TOO_LARGE";
    case PM_IO_ERR_NOMEM: return "PM_IO_ERR_NOMEM";
    }
    return "PM_IO_ERR_UNKNOWN";
}

#if defined(__GNUC__)
__attribute__((format(printf, 4, 5)))
#endif
static pm_io_status fail(pm_io_error *e, pm_io_status s, const char *name, const char *fmt, ...)
{
    if (!e)
        return s;
    e->status = s;
    int n = snprintf(e->message, sizeof e->message, "%s: ", name ? name : "image");
    if (n < 0 || (size_t)n >= sizeof e->message)
        return s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message + n, sizeof e->message - (size_t)n, fmt, ap);
    va_end(ap);
    return s;
}

static pm_io_status ok(pm_io_error *e)
{
    if (e) {
        e->status = PM_IO_OK;
        e->message[0] = '\0';
    }
    return PM_IO_OK;
}

/* a * b into *r unless it overflows size_t */
static int mul_size(size_t a, size_t b, size_t *r)
{
    if (a && b > SIZE_MAX / a)
        return 0;
    *r = a * b;
    return 1;
}

/* ---- the decoded picture as stored --------------------------------------------------- */

typedef struct raw {
    int64_t rows, cols;
    int channels, depth; /* 1..4; 8 or 16 */
    size_t row_bytes;
    uint8_t *px; /* rows * row_bytes */
} raw;

static const uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

static pm_io_format sniff(const void *data, size_t size)
{
    const uint8_t *b = data;
    if (size >= 8 && memcmp(b, png_signature, 8) == 0)
        return PM_IO_PNG;
    if (size >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return PM_IO_JPEG;
    return PM_IO_AUTO;
}

/* ---- libpng's memory -------------------------------------------------------------------- */

/* libpng allocates through these (png_create_*_struct_2, mem_ptr = the job's `nomem`
 * flag), so its running out of memory is told apart from a corrupted file or a bad
 * argument: libpng itself says only "Out of memory" or "insufficient memory". */
#ifdef PM_IO_TEST_HOOKS
/* Tests only (the internal library): this thread's next n libpng allocations succeed,
 * the later ones fail; -1 (the start): none fail. Out of memory cannot be made to
 * happen on time otherwise. */
static _Thread_local long png_allocs_left = -1;
void pm_io_test_png_alloc_limit(long n);
void pm_io_test_png_alloc_limit(long n)
{
    png_allocs_left = n;
}
static int png_alloc_allowed(void)
{
    if (png_allocs_left < 0)
        return 1;
    return png_allocs_left > 0 ? (png_allocs_left--, 1) : 0;
}
#else
static int png_alloc_allowed(void)
{
    return 1;
}
#endif

static png_voidp png_mem_alloc(png_structp png, png_alloc_size_t n)
{
    void *p = png_alloc_allowed() ? malloc(n ? n : 1) : NULL;
    if (!p)
        *(int *)png_get_mem_ptr(png) = 1;
    return p;
}

static void png_mem_free(png_structp png, png_voidp p)
{
    (void)png;
    free(p);
}

/* ---- PNG reading ----------------------------------------------------------------------- */

typedef struct png_job {
    const char *name;
    const uint8_t *data;
    size_t size, pos;
    int truncated;
    int own_msg;  /* msg is ours (a check of this file), not libpng's */
    int nomem;    /* a libpng allocation failed                      */
    char msg[512];
    png_structp png;
    png_infop info;
    raw *out;
    png_bytep *row_ptrs;
} png_job;

static void png_job_error(png_structp png, png_const_charp msg)
{
    png_job *j = png_get_error_ptr(png);
    /* our own message is already in j->msg (and msg may be j->msg itself: copying it
     * onto itself would be undefined behaviour) */
    if (!j->own_msg)
        snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

/* Ends the decode through libpng's error path with a message of ours. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void png_job_fail(png_job *j, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(j->msg, sizeof j->msg, fmt, ap);
    va_end(ap);
    j->own_msg = 1;
    png_error(j->png, j->msg);
}

static void png_job_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* ancillary-chunk complaints: the pixels are still right */
}

static void png_job_read(png_structp png, png_bytep out, size_t n)
{
    png_job *j = png_get_io_ptr(png);
    if (n > j->size - j->pos) {
        j->truncated = 1;
        png_job_fail(j, "truncated file: the PNG data ends at byte %zu", j->size);
    }
    memcpy(out, j->data + j->pos, n);
    j->pos += n;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* After libpng's longjmp: frees what the decode holds and says why it stopped. */
static pm_io_status png_failed(png_job *j, pm_io_error *e)
{
    png_destroy_read_struct(&j->png, &j->info, NULL);
    free(j->row_ptrs);
    j->row_ptrs = NULL;
    if (j->out) {
        free(j->out->px);
        j->out->px = NULL;
    }
    if (j->nomem)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory in libpng (%s)", j->msg);
    return fail(e, PM_IO_ERR_CORRUPT, j->name, "%s%s", j->truncated ? "" : "corrupted PNG: ",
                j->msg);
}

/* Header only (j->out NULL: fills info) or the whole picture into *j->out. */
static pm_io_status png_run(png_job *j, pm_io_info *info, pm_io_error *e)
{
    j->png = png_create_read_struct_2(PNG_LIBPNG_VER_STRING, j, png_job_error, png_job_warning,
                                      &j->nomem, png_mem_alloc, png_mem_free);
    if (!j->png)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory for libpng");
    j->info = png_create_info_struct(j->png);
    if (!j->info) {
        png_destroy_read_struct(&j->png, NULL, NULL);
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory for libpng");
    }
    if (setjmp(png_jmpbuf(j->png)))
        return png_failed(j, e);
    png_set_read_fn(j->png, j, png_job_read);
    png_read_info(j->png, j->info);
    png_uint_32 w = png_get_image_width(j->png, j->info), h = png_get_image_height(j->png, j->info);
    int depth = png_get_bit_depth(j->png, j->info), type = png_get_color_type(j->png, j->info);
    int alpha = (type & PNG_COLOR_MASK_ALPHA) || png_get_valid(j->png, j->info, PNG_INFO_tRNS);
    int colour = (type & PNG_COLOR_MASK_COLOR) != 0;
    info->format = PM_IO_PNG;
    info->rows = h;
    info->cols = w;
    info->channels = (colour ? 3 : 1) + (alpha ? 1 : 0);
    info->bit_depth = depth == 16 ? 16 : 8;
    if (!j->out) {
        png_destroy_read_struct(&j->png, &j->info, NULL);
        return ok(e);
    }
    png_set_expand(j->png); /* palettes to RGB, 1/2/4-bit grey to 8, tRNS to alpha */
    if (depth == 16 && host_little_endian())
        png_set_swap(j->png);
    png_set_interlace_handling(j->png);
    png_read_update_info(j->png, j->info);
    raw *r = j->out;
    r->rows = h;
    r->cols = w;
    r->channels = png_get_channels(j->png, j->info);
    r->depth = png_get_bit_depth(j->png, j->info);
    r->row_bytes = png_get_rowbytes(j->png, j->info);
    size_t bytes, ptrs;
    if (r->channels != info->channels || (r->depth != 8 && r->depth != 16) ||
        r->row_bytes != (size_t)w * (size_t)r->channels * (size_t)(r->depth / 8))
        png_job_fail(j, "unexpected layout after expansion (%d channels, %d bits)", r->channels,
                     r->depth);
    /* deflate expands at most 1032 times: a header claiming more pixels than the file
     * can hold is corrupted, found before its memory is taken */
    if ((double)(r->row_bytes + 1) * (double)h > 1032.0 * (double)j->size + 65536.0)
        png_job_fail(j, "its %zu bytes cannot hold %lu x %lu pixels of %d channel%s (deflate "
                     "expands data at most 1032 times)", j->size, (unsigned long)h,
                     (unsigned long)w, r->channels, r->channels == 1 ? "" : "s");
    if (!mul_size(r->row_bytes, h, &bytes) || !mul_size(sizeof *j->row_ptrs, h, &ptrs)) {
        png_destroy_read_struct(&j->png, &j->info, NULL);
        return fail(e, PM_IO_ERR_TOO_LARGE, j->name, "%lu x %lu pixels do not fit in memory",
                    (unsigned long)h, (unsigned long)w);
    }
    r->px = malloc(bytes ? bytes : 1);
    j->row_ptrs = malloc(ptrs ? ptrs : 1);
    if (!r->px || !j->row_ptrs) {
        png_destroy_read_struct(&j->png, &j->info, NULL);
        free(r->px);
        r->px = NULL;
        free(j->row_ptrs);
        j->row_ptrs = NULL;
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory for %lu x %lu pixels (%zu bytes)",
                    (unsigned long)h, (unsigned long)w, bytes);
    }
    for (png_uint_32 y = 0; y < h; y++)
        j->row_ptrs[y] = r->px + (size_t)y * r->row_bytes;
    png_read_image(j->png, j->row_ptrs);
    png_read_end(j->png, NULL); /* the chunks up to IEND: a file cut after IDAT is truncated */
    png_destroy_read_struct(&j->png, &j->info, NULL);
    free(j->row_ptrs);
    j->row_ptrs = NULL;
    return ok(e);
}

/* ---- JPEG reading ------------------------------------------------------------------------ */

typedef struct jpeg_job {
    struct jpeg_error_mgr mgr; /* first: libjpeg hands back its address */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX + 64];
    const char *name;
    struct jpeg_decompress_struct d;
    struct jpeg_compress_struct c;
    raw *out;
    uint8_t *row;       /* jpeg_encode's row of samples */
    unsigned char *mem; /* jpeg_mem_dest's buffer */
    unsigned long mem_size;
    size_t rows_cap;    /* rows of out->px allocated so far */
    int nomem;
} jpeg_job;

static void jpeg_job_exit(j_common_ptr cinfo)
{
    jpeg_job *j = (jpeg_job *)cinfo->err;
    cinfo->err->format_message(cinfo, j->msg);
    longjmp(j->jump, 1);
}

/* Warnings (level -1) are corrupt data (a premature end, extraneous bytes, a bad Huffman
 * code): libjpeg would go on with made-up pixels, here they are errors. Trace messages
 * (level >= 0) are ignored. */
static void jpeg_job_emit(j_common_ptr cinfo, int level)
{
    if (level < 0)
        jpeg_job_exit(cinfo);
}

static void jpeg_job_silent(j_common_ptr cinfo)
{
    (void)cinfo;
}

static void jpeg_job_init_errors(jpeg_job *j)
{
    jpeg_std_error(&j->mgr);
    j->mgr.error_exit = jpeg_job_exit;
    j->mgr.emit_message = jpeg_job_emit;
    j->mgr.output_message = jpeg_job_silent;
}

/* After libjpeg gave up (jpeg_job_exit jumped back): the partial pixels freed and the
 * message classified as out of memory, truncated, unsupported or corrupted. */
static pm_io_status jpeg_failed(jpeg_job *j, pm_io_error *e)
{
    jpeg_destroy_decompress(&j->d);
    if (j->out) {
        free(j->out->px);
        j->out->px = NULL;
    }
    if (j->nomem)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "%s", j->msg);
    if (strstr(j->msg, "Premature end"))
        return fail(e, PM_IO_ERR_CORRUPT, j->name, "truncated file: %s", j->msg);
    if (strstr(j->msg, "Unsupported"))
        return fail(e, PM_IO_ERR_UNSUPPORTED, j->name, "unsupported JPEG: %s", j->msg);
    return fail(e, PM_IO_ERR_CORRUPT, j->name, "corrupted JPEG: %s", j->msg);
}

/* Grey decodes as grey, YCbCr and RGB as RGB: the channels, 0 for another colour space
 * (CMYK, YCCK). */
static int jpeg_channels(struct jpeg_decompress_struct *d)
{
    switch (d->jpeg_color_space) {
    case JCS_GRAYSCALE:
        d->out_color_space = JCS_GRAYSCALE;
        return 1;
    case JCS_YCbCr:
    case JCS_RGB:
        d->out_color_space = JCS_RGB;
        return 3;
    default:
        return 0;
    }
}

/* The scanlines into r->px, which grows as they are decoded: a corrupted header claiming
 * a huge picture fails at the data's end before its memory is taken. Jumps back to
 * jpeg_run's setjmp when out of memory. */
static void jpeg_read_rows(jpeg_job *j, raw *r)
{
    while (j->d.output_scanline < j->d.output_height) {
        size_t at = j->d.output_scanline;
        if (at == j->rows_cap) {
            size_t cap = at ? at * 2 : 64;
            cap = cap > (size_t)r->rows ? (size_t)r->rows : cap;
            uint8_t *p = realloc(r->px, cap * r->row_bytes);
            if (!p) {
                snprintf(j->msg, sizeof j->msg, "out of memory for %lld x %lld pixels",
                         (long long)r->rows, (long long)r->cols);
                j->nomem = 1;
                longjmp(j->jump, 1);
            }
            r->px = p;
            j->rows_cap = cap;
        }
        JSAMPROW row = r->px + at * r->row_bytes;
        jpeg_read_scanlines(&j->d, &row, 1);
    }
}

static pm_io_status jpeg_run(jpeg_job *j, const void *data, size_t size, pm_io_info *info,
                             pm_io_error *e)
{
    jpeg_job_init_errors(j);
    j->d.err = &j->mgr;
    if (setjmp(j->jump))
        return jpeg_failed(j, e);
    jpeg_create_decompress(&j->d);
    jpeg_mem_src(&j->d, (const unsigned char *)data, (unsigned long)size);
    jpeg_read_header(&j->d, TRUE);
    int channels = jpeg_channels(&j->d);
    if (channels == 0) {
        jpeg_destroy_decompress(&j->d);
        return fail(e, PM_IO_ERR_UNSUPPORTED, j->name,
                    "unsupported JPEG colour space %d (CMYK or YCCK): only grey and colour "
                    "(YCbCr, RGB) JPEGs are read", (int)j->d.jpeg_color_space);
    }
    info->format = PM_IO_JPEG;
    info->rows = j->d.image_height;
    info->cols = j->d.image_width;
    info->channels = channels;
    info->bit_depth = 8;
    if (!j->out) {
        jpeg_destroy_decompress(&j->d);
        return ok(e);
    }
    raw *r = j->out;
    r->rows = j->d.image_height;
    r->cols = j->d.image_width;
    r->channels = channels;
    r->depth = 8;
    r->row_bytes = (size_t)r->cols * (size_t)channels;
    size_t bytes;
    if (!mul_size(r->row_bytes, (size_t)r->rows, &bytes)) {
        jpeg_destroy_decompress(&j->d);
        return fail(e, PM_IO_ERR_TOO_LARGE, j->name, "%lld x %lld pixels do not fit in memory",
                    (long long)r->rows, (long long)r->cols);
    }
    jpeg_start_decompress(&j->d);
    if ((int)j->d.output_components != channels) {
        snprintf(j->msg, sizeof j->msg, "%d components decoded, %d expected",
                 (int)j->d.output_components, channels);
        longjmp(j->jump, 1);
    }
    jpeg_read_rows(j, r);
    jpeg_finish_decompress(&j->d);
    jpeg_destroy_decompress(&j->d);
    return ok(e);
}

/* ---- decoding: the front ---------------------------------------------------------------- */

/* Header only when r is NULL. */
static pm_io_status decode_raw(const void *data, size_t size, const char *name, raw *r,
                               pm_io_info *info, pm_io_error *e)
{
    if (!data && size)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "NULL data of %zu bytes", size);
    if (size == 0)
        return fail(e, PM_IO_ERR_FORMAT, name, "empty: not a PNG or JPEG image");
    memset(info, 0, sizeof *info);
    switch (sniff(data, size)) {
    case PM_IO_PNG: {
        png_job j;
        memset(&j, 0, sizeof j);
        j.name = name;
        j.data = data;
        j.size = size;
        j.out = r;
        return png_run(&j, info, e);
    }
    case PM_IO_JPEG: {
        jpeg_job *j = calloc(1, sizeof *j);
        if (!j)
            return fail(e, PM_IO_ERR_NOMEM, name, "out of memory");
        j->name = name;
        j->out = r;
        pm_io_status s = jpeg_run(j, data, size, info, e);
        free(j);
        return s;
    }
    default:
        return fail(e, PM_IO_ERR_FORMAT, name,
                    "not a PNG or JPEG image (%zu bytes, no PNG or JPEG signature)", size);
    }
}

static int supported_type(pm_type t)
{
    return t == PM_U8 || t == PM_U16 || t == PM_F32 || t == PM_F64;
}

/* The buffer's channel count (1..4), or 0 when its shape is no picture. */
static int buffer_channels(const pm_buffer *b)
{
    if (b->ndims == 2)
        return 1;
    if (b->ndims == 3 && b->extent[0] >= 1 && b->extent[0] <= 4)
        return (int)b->extent[0];
    return 0;
}

static void shape_text(const pm_buffer *b, char *out, size_t n)
{
    size_t len = (size_t)snprintf(out, n, "%s[", pm_type_name(b->type) ? pm_type_name(b->type) : "?");
    for (int d = 0; d < b->ndims && d < PM_MAX_DIMS && len < n; d++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", d ? "][" : "", (long long)b->extent[d]);
    if (len < n)
        snprintf(out + len, n - len, "]");
}

/* Element strides of a picture buffer: channel, row, col. A stride of 0 is that
 * dimension's dense row-major stride (the library's rule, pm_buffer). */
static void picture_strides(const pm_buffer *b, int64_t s[3])
{
    int64_t st[3], dense = 1;
    for (int d = b->ndims - 1; d >= 0; d--) {
        st[d] = b->stride[d] ? b->stride[d] : dense;
        dense *= b->extent[d];
    }
    if (b->ndims == 2) {
        s[0] = 0;
        s[1] = st[0];
        s[2] = st[1];
    } else {
        s[0] = st[0];
        s[1] = st[1];
        s[2] = st[2];
    }
}

static void store(void *data, pm_type t, int64_t at, unsigned v, int depth)
{
    switch (t) {
    case PM_U8:
        ((uint8_t *)data)[at] = (uint8_t)(depth == 8 ? v : (v * 255u + 32767u) / 65535u);
        break;
    case PM_U16:
        ((uint16_t *)data)[at] = (uint16_t)(depth == 16 ? v : v * 257u);
        break;
    case PM_F32:
        ((float *)data)[at] = (float)v / (depth == 16 ? 65535.0f : 255.0f);
        break;
    case PM_F64:
        ((double *)data)[at] = (double)v / (depth == 16 ? 65535.0 : 255.0);
        break;
    default:
        break;
    }
}

static void convert_into(const raw *r, pm_buffer *dst)
{
    int want = buffer_channels(dst);
    int64_t s[3];
    picture_strides(dst, s);
    unsigned max = r->depth == 16 ? 65535u : 255u;
    if (r->depth == 8 && dst->type == PM_U8 && want == r->channels && s[2] == want &&
        (want == 1 || s[0] == 1)) {
        /* interleaved 8-bit into interleaved 8-bit of the same channels (the image
         * service's decode): whole rows, no per-sample conversion */
        for (int64_t x = 0; x < r->rows; x++)
            memcpy((uint8_t *)dst->data + x * s[1], r->px + (size_t)x * r->row_bytes,
                   (size_t)(r->cols * want));
        return;
    }
    for (int64_t x = 0; x < r->rows; x++) {
        const uint8_t *row = r->px + (size_t)x * r->row_bytes;
        for (int64_t y = 0; y < r->cols; y++) {
            unsigned v[4] = {0}, out[4]; /* r->channels (1..4) of v are read */
            for (int c = 0; c < r->channels; c++)
                v[c] = r->depth == 16 ? ((const uint16_t *)row)[y * r->channels + c]
                                      : row[y * r->channels + c];
            int colour = r->channels >= 3, has_alpha = r->channels == 2 || r->channels == 4;
            unsigned alpha = has_alpha ? v[r->channels - 1] : max;
            unsigned grey = colour ? (299u * v[0] + 587u * v[1] + 114u * v[2] + 500u) / 1000u : v[0];
            switch (want) {
            case 1: out[0] = grey; break;
            case 2: out[0] = grey; out[1] = alpha; break;
            default:
                for (int c = 0; c < 3; c++)
                    out[c] = colour ? v[c] : v[0];
                out[3] = alpha;
                break;
            }
            for (int c = 0; c < want; c++)
                store(dst->data, dst->type, c * s[0] + x * s[1] + y * s[2], out[c], r->depth);
        }
    }
}

pm_io_status pm_io_probe(const void *data, size_t size, const char *name, pm_io_info *info,
                         pm_io_error *error)
{
    pm_io_info scratch;
    return decode_raw(data, size, name, NULL, info ? info : &scratch, error);
}

/* Checks the type and shape of a destination buffer (rows, cols < 0: not yet known). */
static pm_io_status check_destination(const pm_buffer *dst, const char *name, int64_t rows,
                                      int64_t cols, pm_io_error *e)
{
    if (!dst || !dst->data)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "no destination buffer (NULL %s)",
                    dst ? "data" : "buffer");
    if (!supported_type(dst->type))
        return fail(e, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer type %s: pictures are read into u8, u16, f32 or f64 buffers",
                    pm_type_name(dst->type) ? pm_type_name(dst->type) : "?");
    char shape[160];
    shape_text(dst, shape, sizeof shape);
    if (!buffer_channels(dst))
        return fail(e, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer shape %s: a picture is [rows][cols] or [channels 1..4][rows][cols]",
                    shape);
    int nd = dst->ndims;
    if (rows >= 0 && (dst->extent[nd - 2] != rows || dst->extent[nd - 1] != cols))
        return fail(e, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer shape %s for a picture of %lld x %lld pixels (rows x cols)",
                    shape, (long long)rows, (long long)cols);
    return PM_IO_OK;
}

pm_io_status pm_io_decode_into(const void *data, size_t size, const char *name, pm_buffer *dst,
                               pm_io_error *error)
{
    pm_io_status s = check_destination(dst, name, -1, -1, error);
    pm_io_info info;
    if (s == PM_IO_OK)
        s = pm_io_probe(data, size, name, &info, error);
    if (s == PM_IO_OK)
        s = check_destination(dst, name, info.rows, info.cols, error);
    if (s != PM_IO_OK)
        return s;
    raw r;
    memset(&r, 0, sizeof r);
    s = decode_raw(data, size, name, &r, &info, error);
    if (s != PM_IO_OK)
        return s;
    convert_into(&r, dst);
    free(r.px);
    return ok(error);
}

pm_io_status pm_io_decode(const void *data, size_t size, const char *name, pm_type type,
                          int channels, pm_buffer *out, pm_io_error *error)
{
    if (!out)
        return fail(error, PM_IO_ERR_ARGUMENT, name, "NULL output buffer");
    memset(out, 0, sizeof *out);
    if (!supported_type(type))
        return fail(error, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer type %s: pictures are read into u8, u16, f32 or f64 buffers",
                    pm_type_name(type) ? pm_type_name(type) : "?");
    if (channels < 0 || channels > 4)
        return fail(error, PM_IO_ERR_ARGUMENT, name, "%d channels asked for: 0 (the file's) or 1..4",
                    channels);
    /* decoded first: a corrupted header's huge size fails at the data's end, before the
     * output's memory is taken */
    raw r;
    memset(&r, 0, sizeof r);
    pm_io_info info;
    pm_io_status s = decode_raw(data, size, name, &r, &info, error);
    if (s != PM_IO_OK)
        return s;
    int ch = channels ? channels : info.channels;
    size_t bytes;
    if (!mul_size((size_t)info.rows, (size_t)info.cols, &bytes) ||
        !mul_size(bytes, (size_t)ch, &bytes) || !mul_size(bytes, pm_type_size(type), &bytes) ||
        bytes > (size_t)INT64_MAX) {
        free(r.px);
        return fail(error, PM_IO_ERR_TOO_LARGE, name,
                    "%lld x %lld pixels of %d %s channels overflow the address space",
                    (long long)info.rows, (long long)info.cols, ch, pm_type_name(type));
    }
    int64_t ext[3] = {ch, info.rows, info.cols};
    pm_buffer b = ch == 1 ? pm_buffer_dense(NULL, type, 2, ext + 1) : pm_buffer_dense(NULL, type, 3, ext);
    b.data = malloc(bytes ? bytes : 1);
    if (!b.data) {
        free(r.px);
        return fail(error, PM_IO_ERR_NOMEM, name, "out of memory for %zu bytes of pixels", bytes);
    }
    convert_into(&r, &b);
    free(r.px);
    *out = b;
    return ok(error);
}

void pm_io_free(pm_buffer *b)
{
    if (b) {
        free(b->data);
        b->data = NULL;
    }
}

/* ---- files --------------------------------------------------------------------------------- */

static pm_io_status read_whole(const char *path, uint8_t **data, size_t *size, pm_io_error *e)
{
    *data = NULL;
    *size = 0;
    if (!path)
        return fail(e, PM_IO_ERR_ARGUMENT, "(null)", "NULL path");
    errno = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fail(e, PM_IO_ERR_FILE, path, "cannot open: %s",
                    errno ? strerror(errno) : "unknown reason");
    size_t cap = 0, len = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (len == cap) {
            size_t grown = cap ? (cap > SIZE_MAX / 2 ? 0 : cap * 2) : 1 << 16;
            uint8_t *p = grown ? realloc(buf, grown) : NULL;
            if (!p) {
                free(buf);
                fclose(f);
                return fail(e, PM_IO_ERR_NOMEM, path, "out of memory reading the file (%zu bytes so far)",
                            len);
            }
            buf = p;
            cap = grown;
        }
        errno = 0;
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) {
                int err = errno;
                free(buf);
                fclose(f);
                return fail(e, PM_IO_ERR_FILE, path, "cannot read: %s",
                            err ? strerror(err) : "read error");
            }
            break;
        }
    }
    fclose(f);
    *data = buf;
    *size = len;
    return PM_IO_OK;
}

pm_io_status pm_io_probe_file(const char *path, pm_io_info *info, pm_io_error *error)
{
    uint8_t *data;
    size_t size;
    pm_io_status s = read_whole(path, &data, &size, error);
    if (s == PM_IO_OK)
        s = pm_io_probe(data, size, path, info, error);
    free(data);
    return s;
}

pm_io_status pm_io_read(const char *path, pm_type type, int channels, pm_buffer *out,
                        pm_io_error *error)
{
    if (out)
        memset(out, 0, sizeof *out);
    uint8_t *data;
    size_t size;
    pm_io_status s = read_whole(path, &data, &size, error);
    if (s == PM_IO_OK)
        s = pm_io_decode(data, size, path, type, channels, out, error);
    free(data);
    return s;
}

pm_io_status pm_io_read_into(const char *path, pm_buffer *dst, pm_io_error *error)
{
    uint8_t *data;
    size_t size;
    pm_io_status s = read_whole(path, &data, &size, error);
    if (s == PM_IO_OK)
        s = pm_io_decode_into(data, size, path, dst, error);
    free(data);
    return s;
}

/* ---- encoding --------------------------------------------------------------------------- */

pm_io_write_options pm_io_write_options_default(void)
{
    return (pm_io_write_options){.size = sizeof(pm_io_write_options),
                                 .format = PM_IO_AUTO,
                                 .bit_depth = 0,
                                 .jpeg_quality = 90,
                                 .png_compression = -1};
}

/* The sizes of every released pm_io_write_options, oldest first; the last is the struct
 * as declared now (the rule of polymage.h's options structs: append a field at the end,
 * give it its default, append the new sizeof here). */
static const size_t write_options_sizes[] = {24}; /* 0.1 */
_Static_assert(sizeof(pm_io_write_options) == 24,
               "pm_io_write_options changed: append its new size to write_options_sizes");

/* *o = the defaults, overwritten by the caller's `given->size` bytes when that size is
 * one of a released version (NULL: the defaults); otherwise PM_IO_ERR_ARGUMENT naming
 * the struct, the size and the sizes read, before any other field is read. */
static pm_io_status read_options(const pm_io_write_options *given, const char *name,
                                 pm_io_write_options *o, pm_io_error *e)
{
    *o = pm_io_write_options_default();
    if (!given)
        return PM_IO_OK;
    size_t n = sizeof write_options_sizes / sizeof write_options_sizes[0];
    for (size_t i = 0; i < n; i++)
        if (given->size == write_options_sizes[i]) {
            memcpy((char *)o + sizeof o->size, (const char *)given + sizeof o->size,
                   given->size - sizeof o->size);
            return PM_IO_OK;
        }
    char known[64] = "";
    for (size_t i = 0, len = 0; i < n && len < sizeof known; i++)
        len += (size_t)snprintf(known + len, sizeof known - len, "%s%zu", i ? ", " : "",
                                write_options_sizes[i]);
    return fail(e, PM_IO_ERR_ARGUMENT, name,
                "pm_io_write_options.size = %zu is not the size of any version of "
                "pm_io_write_options (this polymage_io %s reads %s; start from "
                "pm_io_write_options_default())", given->size, PM_VERSION, known);
}

/* The sample of channel c at (x, y) of the picture, at the output depth. */
static unsigned load(const pm_buffer *b, const int64_t s[3], int c, int64_t x, int64_t y, int depth)
{
    int64_t at = c * s[0] + x * s[1] + y * s[2];
    unsigned max = depth == 16 ? 65535u : 255u;
    double f;
    switch (b->type) {
    case PM_U8: {
        unsigned v = ((const uint8_t *)b->data)[at];
        return depth == 8 ? v : v * 257u;
    }
    case PM_U16: {
        unsigned v = ((const uint16_t *)b->data)[at];
        return depth == 16 ? v : (v * 255u + 32767u) / 65535u;
    }
    case PM_F32: f = ((const float *)b->data)[at]; break;
    case PM_F64: f = ((const double *)b->data)[at]; break;
    default: return 0;
    }
    if (!(f > 0)) /* NaN too */
        return 0;
    if (f >= 1)
        return max;
    return (unsigned)(f * max + 0.5);
}

/* One row of output samples, interleaved, 8-bit bytes or big-endian 16-bit (PNG's order). */
static void encode_row(const pm_buffer *b, const int64_t s[3], int channels, int64_t x,
                       int depth, uint8_t *row)
{
    for (int64_t y = 0; y < b->extent[b->ndims - 1]; y++)
        for (int c = 0; c < channels; c++) {
            unsigned v = load(b, s, c, x, y, depth);
            if (depth == 8) {
                row[y * channels + c] = (uint8_t)v;
            } else {
                row[(y * channels + c) * 2] = (uint8_t)(v >> 8);
                row[(y * channels + c) * 2 + 1] = (uint8_t)v;
            }
        }
}

typedef struct png_wjob {
    const char *name;
    char msg[512];
    png_structp png;
    png_infop info;
    uint8_t *out, *row;
    size_t len, cap;
    int nomem;    /* a libpng allocation failed, or the output's                 */
    int own_msg;  /* msg is ours (the output's memory), not libpng's             */
} png_wjob;

static void png_wjob_write(png_structp png, png_bytep data, size_t n)
{
    png_wjob *j = png_get_io_ptr(png);
    if (n > j->cap - j->len) {
        size_t cap = j->cap ? j->cap : 1 << 16;
        while (cap - j->len < n)
            cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
        uint8_t *p = realloc(j->out, cap);
        if (!p) {
            j->nomem = j->own_msg = 1;
            snprintf(j->msg, sizeof j->msg, "out of memory for the encoded PNG (%zu bytes)", cap);
            png_error(png, j->msg);
        }
        j->out = p;
        j->cap = cap;
    }
    memcpy(j->out + j->len, data, n);
    j->len += n;
}

static void png_wjob_flush(png_structp png)
{
    (void)png;
}

static void png_wjob_error(png_structp png, png_const_charp msg)
{
    png_wjob *j = png_get_error_ptr(png);
    if (!j->own_msg) /* else msg is j->msg: no copy onto itself */
        snprintf(j->msg, sizeof j->msg, "%s", msg ? msg : "libpng error");
    png_longjmp(png, 1);
}

/* After libpng's longjmp: frees what the encode holds and says why it stopped. */
static pm_io_status png_encode_failed(png_wjob *j, pm_io_error *e)
{
    png_destroy_write_struct(&j->png, &j->info);
    free(j->row);
    free(j->out);
    j->out = NULL;
    if (j->nomem)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "cannot encode the PNG: %s%s%s",
                    j->own_msg ? "" : "out of memory in libpng (", j->msg,
                    j->own_msg ? "" : ")");
    return fail(e, PM_IO_ERR_ARGUMENT, j->name, "cannot encode the PNG: %s", j->msg);
}

static pm_io_status png_encode(png_wjob *j, const pm_buffer *b, const int64_t s[3], int channels,
                               int depth, int level, size_t row_bytes, pm_io_error *e)
{
    int64_t rows = b->extent[b->ndims - 2], cols = b->extent[b->ndims - 1];
    j->png = png_create_write_struct_2(PNG_LIBPNG_VER_STRING, j, png_wjob_error, png_job_warning,
                                       &j->nomem, png_mem_alloc, png_mem_free);
    if (!j->png)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory for libpng");
    j->info = png_create_info_struct(j->png);
    j->row = malloc(row_bytes);
    if (!j->info || !j->row) {
        png_destroy_write_struct(&j->png, &j->info);
        free(j->row);
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory for libpng");
    }
    if (setjmp(png_jmpbuf(j->png)))
        return png_encode_failed(j, e);
    png_set_write_fn(j->png, j, png_wjob_write, png_wjob_flush);
    static const int types[5] = {0, PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA,
                                 PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
    png_set_IHDR(j->png, j->info, (png_uint_32)cols, (png_uint_32)rows, depth, types[channels],
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (level >= 0)
        png_set_compression_level(j->png, level);
    png_write_info(j->png, j->info);
    for (int64_t x = 0; x < rows; x++) {
        encode_row(b, s, channels, x, depth, j->row);
        png_write_row(j->png, j->row);
    }
    png_write_end(j->png, NULL);
    png_destroy_write_struct(&j->png, &j->info);
    free(j->row);
    return ok(e);
}

static pm_io_status jpeg_encode(jpeg_job *j, const pm_buffer *b, const int64_t s[3], int channels,
                                int quality, size_t row_bytes, pm_io_error *e)
{
    int64_t rows = b->extent[b->ndims - 2], cols = b->extent[b->ndims - 1];
    uint8_t *row = malloc(row_bytes);
    if (!row)
        return fail(e, PM_IO_ERR_NOMEM, j->name, "out of memory");
    j->row = row;
    jpeg_job_init_errors(j);
    j->c.err = &j->mgr;
    if (setjmp(j->jump)) {
        jpeg_destroy_compress(&j->c);
        free(j->row);
        free(j->mem);
        j->mem = NULL;
        return fail(e, PM_IO_ERR_ARGUMENT, j->name, "cannot encode the JPEG: %s", j->msg);
    }
    jpeg_create_compress(&j->c);
    jpeg_mem_dest(&j->c, &j->mem, &j->mem_size);
    j->c.image_width = (JDIMENSION)cols;
    j->c.image_height = (JDIMENSION)rows;
    j->c.input_components = channels;
    j->c.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&j->c);
    jpeg_set_quality(&j->c, quality, TRUE);
    jpeg_start_compress(&j->c, TRUE);
    for (int64_t x = 0; x < rows; x++) {
        encode_row(b, s, channels, x, 8, j->row);
        JSAMPROW r = j->row;
        jpeg_write_scanlines(&j->c, &r, 1);
    }
    jpeg_finish_compress(&j->c);
    jpeg_destroy_compress(&j->c);
    free(j->row);
    j->row = NULL;
    return ok(e);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    if (m > n)
        return 0;
    for (size_t i = 0; i < m; i++) {
        char c = s[n - m + i];
        if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != suffix[i])
            return 0;
    }
    return 1;
}

/* The JPEG branch of encode_named: JPEG's own limits (8 bits, grey or RGB, a quality in
 * 1..100, JPEG_MAX_DIMENSION a side), then the encoding into *data. */
static pm_io_status encode_jpeg_named(const pm_buffer *img, int quality, const char *name,
                                      int channels, int depth, const char *shape, void **data,
                                      size_t *size, pm_io_error *e)
{
    int64_t rows = img->extent[img->ndims - 2], cols = img->extent[img->ndims - 1];
    if (depth != 8)
        return fail(e, PM_IO_ERR_UNSUPPORTED, name,
                    "unsupported bit depth %d for JPEG: JPEG is written with 8 bits", depth);
    if (channels != 1 && channels != 3)
        return fail(e, PM_IO_ERR_UNSUPPORTED, name,
                    "a JPEG holds grey or RGB, not %d channels (%s): drop the alpha or write PNG",
                    channels, shape);
    if (quality < 1 || quality > 100)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "jpeg_quality %d is not in 1..100", quality);
    if (rows > JPEG_MAX_DIMENSION || cols > JPEG_MAX_DIMENSION)
        return fail(e, PM_IO_ERR_TOO_LARGE, name,
                    "%lld x %lld pixels: a JPEG has at most %d a side", (long long)rows,
                    (long long)cols, (int)JPEG_MAX_DIMENSION);
    size_t row_bytes = (size_t)cols * (size_t)channels;
    jpeg_job *j = calloc(1, sizeof *j);
    if (!j)
        return fail(e, PM_IO_ERR_NOMEM, name, "out of memory");
    j->name = name;
    int64_t s[3];
    picture_strides(img, s);
    pm_io_status st = jpeg_encode(j, img, s, channels, quality, row_bytes, e);
    if (st == PM_IO_OK) {
        *data = j->mem;
        *size = j->mem_size;
    }
    free(j);
    return st;
}

/* Encodes with options already read (read_options). */
static pm_io_status encode_named(const pm_buffer *img, pm_io_write_options o, const char *name,
                                 pm_io_format format, void **data, size_t *size, pm_io_error *e)
{
    if (!data || !size)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "NULL result pointer");
    *data = NULL;
    *size = 0;
    if (o.format != PM_IO_AUTO)
        format = o.format;
    if (format != PM_IO_PNG && format != PM_IO_JPEG)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "unknown format %d", (int)format);
    if (!img || !img->data)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "no picture to write (NULL %s)",
                    img ? "data" : "buffer");
    if (!supported_type(img->type))
        return fail(e, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer type %s: pictures are written from u8, u16, f32 or f64 buffers",
                    pm_type_name(img->type) ? pm_type_name(img->type) : "?");
    int channels = buffer_channels(img);
    char shape[160];
    shape_text(img, shape, sizeof shape);
    if (!channels)
        return fail(e, PM_IO_ERR_ARGUMENT, name,
                    "wrong buffer shape %s: a picture is [rows][cols] or [channels 1..4][rows][cols]",
                    shape);
    int64_t rows = img->extent[img->ndims - 2], cols = img->extent[img->ndims - 1];
    if (rows < 1 || cols < 1)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "an empty picture %s cannot be written", shape);
    int depth = o.bit_depth ? o.bit_depth : img->type == PM_U16 ? 16 : 8;
    if (depth != 8 && depth != 16)
        return fail(e, PM_IO_ERR_UNSUPPORTED, name, "unsupported bit depth %d: 8 or 16", depth);
    if (format == PM_IO_JPEG)
        return encode_jpeg_named(img, o.jpeg_quality, name, channels, depth, shape, data, size,
                                 e);
    size_t row_bytes;
    if (o.png_compression < -1 || o.png_compression > 9)
        return fail(e, PM_IO_ERR_ARGUMENT, name, "png_compression %d is not in -1..9",
                    o.png_compression);
    if (rows > 0x7fffffff || cols > 0x7fffffff / 8 ||
        !mul_size((size_t)cols, (size_t)channels * (size_t)(depth / 8), &row_bytes))
        return fail(e, PM_IO_ERR_TOO_LARGE, name, "%lld x %lld pixels: over PNG's limits",
                    (long long)rows, (long long)cols);
    png_wjob j;
    memset(&j, 0, sizeof j);
    j.name = name;
    int64_t s[3];
    picture_strides(img, s);
    pm_io_status st = png_encode(&j, img, s, channels, depth, o.png_compression, row_bytes, e);
    if (st == PM_IO_OK) {
        *data = j.out;
        *size = j.len;
    }
    return st;
}

pm_io_status pm_io_encode(const pm_buffer *img, const pm_io_write_options *options, void **data,
                          size_t *size, pm_io_error *error)
{
    pm_io_write_options o;
    if (data)
        *data = NULL;
    if (size)
        *size = 0;
    pm_io_status s = read_options(options, "image", &o, error);
    return s != PM_IO_OK ? s : encode_named(img, o, "image", PM_IO_PNG, data, size, error);
}

pm_io_status pm_io_write(const char *path, const pm_buffer *img,
                         const pm_io_write_options *options, pm_io_error *error)
{
    if (!path)
        return fail(error, PM_IO_ERR_ARGUMENT, "(null)", "NULL path");
    pm_io_write_options o;
    pm_io_status s = read_options(options, path, &o, error);
    if (s != PM_IO_OK)
        return s;
    pm_io_format format = o.format;
    if (format == PM_IO_AUTO) {
        if (ends_with(path, ".png"))
            format = PM_IO_PNG;
        else if (ends_with(path, ".jpg") || ends_with(path, ".jpeg"))
            format = PM_IO_JPEG;
        else
            return fail(error, PM_IO_ERR_FORMAT, path,
                        "cannot tell the format from the name: use .png, .jpg or .jpeg, or set "
                        "the options' format");
    }
    void *data;
    size_t size;
    s = encode_named(img, o, path, format, &data, &size, error);
    if (s != PM_IO_OK)
        return s;
    errno = 0;
    FILE *f = fopen(path, "wb");
    if (!f) {
        int err = errno;
        free(data);
        return fail(error, PM_IO_ERR_FILE, path, "cannot open for writing: %s",
                    err ? strerror(err) : "unknown reason");
    }
    errno = 0;
    size_t n = fwrite(data, 1, size, f);
    int err = errno;
    int closed = fclose(f);
    free(data);
    if (n != size || closed != 0) {
        remove(path);
        return fail(error, PM_IO_ERR_FILE, path, "cannot write: %s",
                    err ? strerror(err) : "write error");
    }
    return ok(error);
}
