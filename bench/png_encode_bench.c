/* png_encode_bench.c — what encoding the image service's answers costs, measured (not a
 * test):
 *
 *   pm_png_encode_bench [--reps N] [--size RxC] [--apps a,b,...] [--only s1,s2,...]
 *
 * The pictures are the service's answers: each app (harris, unsharp_mask and
 * bilateral_grid by default) is compiled with the jit and run once on the generated photo
 * at rows x cols (1080x1920 by default), and its output 0 rendered to 8-bit interleaved
 * pixels with pm_sample_render, as samples/serve/service.c's run_app does. Each picture
 * is then encoded by every configuration below, once to warm up and N times timed (9 by
 * default; in rounds: each round times every configuration once); a line gives the median, the fastest and the slowest run, the bytes, and the
 * size and speed next to "old" (pm_io_encode with default options, the service's
 * encoder before samples/serve/png_codec.c: libpng, zlib level 6, libpng's adaptive filters and its
 * Z_FILTERED strategy, the pixels converted sample by sample by polymage_io). Every PNG
 * is decoded once and compared with the picture.
 *
 *   pm_io          pm_io_encode's defaults (the old service encoder)
 *   pm_png_encode  the service's encoder as built (samples/serve/png_codec.c)
 *   jpeg           pm_jpeg_encode at quality 90 (through pm_io_encode)
 *   libpng         libpng called directly on the caller's rows (no conversion)
 *   spng           libspng (when built with it: PM_HAVE_SPNG), from the whole picture
 *
 * with zlib levels 0, 1, 2, 3, 6 (strategy Z_DEFAULT_STRATEGY), level 6 with Z_FILTERED,
 * Z_RLE and Z_HUFFMAN_ONLY (zlib's level makes no difference to those two), each with the
 * filters none, sub, up, paeth and all (the library's adaptive choice per row among the
 * five). --only keeps the configurations whose label (printed in the first column, e.g.
 * "spng/1/default/up") contains one of the strings.
 *
 * Timings belong under the bench lock: /work/shared/tools/timed build/pm_png_encode_bench */
#define _POSIX_C_SOURCE 200809L
#include "png_codec.h"
#include "polymage_io.h"
#include "samples.h"

#include <png.h>
#include <zlib.h>
#ifdef PM_HAVE_SPNG
#include <spng.h>
#endif

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct picture {
    const char *name;
    uint8_t *px; /* interleaved */
    int64_t rows, cols;
    int channels;
} picture;

enum { LIB_PMIO, LIB_PNG, LIB_SPNG, LIB_JPEG, LIB_SERVE };
static const char *const lib_names[] = {"pm_io", "libpng", "spng", "jpeg", "pm_png_encode"};
enum { S_DEFAULT, S_FILTERED, S_RLE, S_HUFFMAN };
static const char *const strategy_names[] = {"default", "filtered", "rle", "huffman"};
static const int strategy_z[] = {Z_DEFAULT_STRATEGY, Z_FILTERED, Z_RLE, Z_HUFFMAN_ONLY};
static const char *const filter_names[] = {"none", "sub", "up", "paeth", "all"};
/* libpng's PNG_FILTER_* masks; libspng's SPNG_FILTER_CHOICE_* have the same values */
static const int filter_masks[] = {0x08, 0x10, 0x20, 0x80, 0xf8};

typedef struct config {
    int lib, level, strategy, filter; /* filter: index into filter_names */
    char label[48];
} config;

/* ---- libpng, called directly ----------------------------------------------------------- */

typedef struct growbuf {
    uint8_t *data;
    size_t len, cap;
    int failed;
} growbuf;

static void grow_write(png_structp png, png_bytep data, size_t n)
{
    growbuf *g = png_get_io_ptr(png);
    if (n > g->cap - g->len) {
        size_t cap = g->cap ? g->cap : 1 << 16;
        while (cap - g->len < n)
            cap *= 2;
        uint8_t *p = realloc(g->data, cap);
        if (!p) {
            g->failed = 1;
            png_error(png, "out of memory");
        }
        g->data = p;
        g->cap = cap;
    }
    memcpy(g->data + g->len, data, n);
    g->len += n;
}

static void grow_flush(png_structp png)
{
    (void)png;
}

static void *libpng_encode(const picture *p, const config *c, size_t *size)
{
    growbuf g = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return NULL;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(g.data);
        return NULL;
    }
    png_set_write_fn(png, &g, grow_write, grow_flush);
    png_set_IHDR(png, info, (png_uint_32)p->cols, (png_uint_32)p->rows, 8,
                 p->channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, filter_masks[c->filter]);
    png_set_compression_level(png, c->level);
    png_set_compression_strategy(png, strategy_z[c->strategy]);
    png_write_info(png, info);
    size_t stride = (size_t)p->cols * (size_t)p->channels;
    for (int64_t x = 0; x < p->rows; x++)
        png_write_row(png, p->px + (size_t)x * stride);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    *size = g.len;
    return g.data;
}

/* ---- libspng --------------------------------------------------------------------------- */

#ifdef PM_HAVE_SPNG
static void *spng_encode(const picture *p, const config *c, size_t *size)
{
    spng_ctx *ctx = spng_ctx_new(SPNG_CTX_ENCODER);
    if (!ctx)
        return NULL;
    struct spng_ihdr ihdr = {.width = (uint32_t)p->cols,
                             .height = (uint32_t)p->rows,
                             .bit_depth = 8,
                             .color_type = p->channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE
                                                            : SPNG_COLOR_TYPE_TRUECOLOR};
    void *out = NULL;
    int err = spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
    if (!err)
        err = spng_set_ihdr(ctx, &ihdr);
    if (!err)
        err = spng_set_option(ctx, SPNG_FILTER_CHOICE, filter_masks[c->filter]);
    if (!err)
        err = spng_set_option(ctx, SPNG_IMG_COMPRESSION_LEVEL, c->level);
    if (!err)
        err = spng_set_option(ctx, SPNG_IMG_COMPRESSION_STRATEGY, strategy_z[c->strategy]);
    size_t len = (size_t)p->rows * (size_t)p->cols * (size_t)p->channels;
    if (!err)
        err = spng_encode_image(ctx, p->px, len, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
    if (!err)
        out = spng_get_png_buffer(ctx, size, &err);
    if (err) {
        fprintf(stderr, "spng: %s\n", spng_strerror(err));
        free(out);
        out = NULL;
    }
    spng_ctx_free(ctx);
    return out;
}
#endif

/* ---- polymage_io (the service's path before png_codec.c) ------------------------------- */

static void *pmio_encode(const picture *p, const config *c, size_t *size)
{
    int64_t extents[3] = {p->channels, p->rows, p->cols};
    pm_buffer b = pm_buffer_dense(p->px, PM_U8, 3, extents);
    b.stride[0] = 1;
    b.stride[1] = p->cols * p->channels;
    b.stride[2] = p->channels;
    (void)c;
    void *out = NULL;
    pm_io_error e;
    if (pm_io_encode(&b, NULL, &out, size, &e) != PM_IO_OK) {
        fprintf(stderr, "pm_io_encode: %s\n", e.message);
        return NULL;
    }
    return out;
}

static void *encode(const picture *p, const config *c, size_t *size)
{
    switch (c->lib) {
    case LIB_PNG: return libpng_encode(p, c, size);
#ifdef PM_HAVE_SPNG
    case LIB_SPNG: return spng_encode(p, c, size);
#endif
    case LIB_SERVE: return pm_png_encode(p->px, p->rows, p->cols, p->channels, size);
    case LIB_JPEG: return pm_jpeg_encode(p->px, p->rows, p->cols, p->channels, c->level, size);
    default: return pmio_encode(p, c, size);
    }
}

/* 1 when the PNG decodes to the picture exactly */
static int verify(const picture *p, const void *png, size_t size)
{
    pm_buffer d;
    pm_io_error e;
    if (pm_io_decode(png, size, "encoded", PM_U8, p->channels, &d, &e) != PM_IO_OK) {
        fprintf(stderr, "decode: %s\n", e.message);
        return 0;
    }
    int same = 1;
    /* d is planar: [c][x][y] (2-D for grey) */
    size_t plane = (size_t)p->rows * (size_t)p->cols;
    const uint8_t *q = d.data;
    for (size_t i = 0; i < plane && same; i++)
        for (int c = 0; c < p->channels; c++)
            if (q[(size_t)c * plane + i] != p->px[i * (size_t)p->channels + (size_t)c]) {
                same = 0;
                break;
            }
    pm_io_free(&d);
    return same;
}

/* ---- the pictures ---------------------------------------------------------------------- */

static int render_app(const char *name, int64_t rows, int64_t cols, pm_jit *jit, picture *out)
{
    const pm_sample_app *app = pm_sample_find(name);
    if (!app) {
        fprintf(stderr, "no app %s\n", name);
        return 0;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? app->build(ctx) : NULL;
    if (!p) {
        fprintf(stderr, "%s cannot be built\n", name);
        pm_ctx_free(ctx);
        return 0;
    }
    pm_value params[32];
    app->params(rows, cols, params);
    int ni = pm_pipeline_ninputs(p), no = pm_pipeline_noutputs(p);
    pm_buffer in[8], outs[8];
    for (int i = 0; i < ni; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_input(i, &in[i], params);
    }
    for (int i = 0; i < no; i++)
        outs[i] = pm_sample_buffer(p, 1, i, params);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, params, NULL, &err);
    int ok = k && pm_kernel_run(k, params, in, outs, &err) == PM_OK;
    if (!ok)
        fprintf(stderr, "%s: %s\n", name, err.message);
    if (ok) {
        out->name = app->name;
        out->px = pm_sample_render(&outs[0], pm_sample_render_flags(app), &out->rows,
                                   &out->cols, &out->channels);
        ok = out->px != NULL;
    }
    pm_kernel_free(k);
    for (int i = 0; i < ni; i++)
        free(in[i].data);
    for (int i = 0; i < no; i++)
        free(outs[i].data);
    pm_ctx_free(ctx);
    return ok;
}

/* ---- the configurations ---------------------------------------------------------------- */

static int keep(const char *label, const char *only)
{
    if (!only)
        return 1;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", only);
    for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
        if (strstr(label, s))
            return 1;
    return 0;
}

static int add(config *cs, int n, int lib, int level, int strategy, int filter, const char *only)
{
    config c = {.lib = lib, .level = level, .strategy = strategy, .filter = filter};
    if (lib == LIB_JPEG)
        snprintf(c.label, sizeof c.label, "jpeg/q%d", level);
    else if (lib == LIB_SERVE)
        snprintf(c.label, sizeof c.label, "pm_png_encode");
    else
        snprintf(c.label, sizeof c.label, "%s/%d/%s/%s", lib_names[lib], level,
                 strategy_names[strategy], filter_names[filter]);
    if (n == 0 || keep(c.label, only)) /* "old" (the first) always: the reference */
        cs[n++] = c;
    return n;
}

static int make_configs(config *cs, const char *only)
{
    int n = 0;
    n = add(cs, n, LIB_PMIO, 6, S_FILTERED, 4, only); /* old: pm_io_encode's defaults */
    n = add(cs, n, LIB_SERVE, 1, S_RLE, 2, only); /* the service's, as built */
    n = add(cs, n, LIB_JPEG, 90, 0, 0, only);
    static const int levels[] = {0, 1, 2, 3, 6};
    for (int lib = LIB_PNG; lib <= LIB_SPNG; lib++) {
#ifndef PM_HAVE_SPNG
        if (lib == LIB_SPNG)
            break;
#endif
        for (int f = 0; f < 5; f++) {
            for (int l = 0; l < 5; l++)
                n = add(cs, n, lib, levels[l], S_DEFAULT, f, only);
            n = add(cs, n, lib, 6, S_FILTERED, f, only);
            n = add(cs, n, lib, 1, S_RLE, f, only);
            n = add(cs, n, lib, 1, S_HUFFMAN, f, only);
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    int reps = 9;
    int64_t rows = 1080, cols = 1920;
    const char *apps = "harris,unsharp_mask,bilateral_grid", *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            long long r, c;
            if (sscanf(argv[++i], "%lldx%lld", &r, &c) != 2 || r < 1 || c < 1) {
                fprintf(stderr, "--size RxC\n");
                return 2;
            }
            rows = r;
            cols = c;
        } else if (strcmp(argv[i], "--apps") == 0 && i + 1 < argc)
            apps = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: pm_png_encode_bench [--reps N] [--size RxC] "
                            "[--apps a,b,...] [--only s1,s2,...]\n");
            return 2;
        }
    }
    if (reps < 1)
        reps = 1;

    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!jit) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return 1;
    }
    picture pics[8];
    int npics = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", apps);
    for (char *s = strtok(list, ","); s && npics < 8; s = strtok(NULL, ","))
        if (render_app(s, rows, cols, jit, &pics[npics]))
            npics++;
        else
            return 1;
    pm_jit_free(jit);

    static config cs[128];
    int nc = make_configs(cs, only);
    printf("# pm_png_encode_bench: %lld x %lld photo, %d timed runs per line (after one "
           "warm-up); libpng %s, zlib %s",
           (long long)rows, (long long)cols, reps, png_get_libpng_ver(NULL), zlibVersion());
#ifdef PM_HAVE_SPNG
    printf(", libspng %s", spng_version_string());
#endif
    printf("\n");
    int bad = 0;
    for (int pi = 0; pi < npics; pi++) {
        const picture *p = &pics[pi];
        printf("\n## %s: %lld x %lld, %d channel%s (%zu raw bytes)\n\n", p->name,
               (long long)p->rows, (long long)p->cols, p->channels, p->channels > 1 ? "s" : "",
               (size_t)p->rows * (size_t)p->cols * (size_t)p->channels);
        printf("| encoder/level/strategy/filter | median ms | min..max ms | bytes | "
               "size/old | speed/old |\n");
        printf("|---|---:|---:|---:|---:|---:|\n");
        /* one warm-up (and check) of every configuration, then the timed runs in rounds:
         * round r times every configuration once, so that a slow minute of the machine
         * falls on all of them alike rather than on a few */
        size_t *bytes = calloc((size_t)nc, sizeof *bytes);
        double *t = malloc(sizeof *t * (size_t)reps * (size_t)nc);
        int *ok = calloc((size_t)nc, sizeof *ok);
        if (!bytes || !t || !ok) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (int ci = 0; ci < nc; ci++) {
            void *out = encode(p, &cs[ci], &bytes[ci]);
            ok[ci] = out != NULL;
            if (!out)
                bad = 1;
            else if (cs[ci].lib != LIB_JPEG && !verify(p, out, bytes[ci])) {
                fprintf(stderr, "%s %s: WRONG PIXELS\n", p->name, cs[ci].label);
                ok[ci] = 0;
                bad = 1;
            }
            free(out);
        }
        for (int r = 0; r < reps; r++)
            for (int ci = 0; ci < nc; ci++) {
                if (!ok[ci])
                    continue;
                size_t size;
                double a = now_ms();
                void *out = encode(p, &cs[ci], &size);
                t[(size_t)ci * (size_t)reps + (size_t)r] = now_ms() - a;
                free(out);
            }
        double old_ms = 0, old_bytes = (double)bytes[0];
        for (int ci = 0; ci < nc; ci++) {
            if (!ok[ci]) {
                printf("| %s | failed or wrong pixels |\n", cs[ci].label);
                continue;
            }
            double *u = t + (size_t)ci * (size_t)reps;
            qsort(u, (size_t)reps, sizeof *u, cmp_double);
            double med = reps % 2 ? u[reps / 2] : (u[reps / 2 - 1] + u[reps / 2]) / 2;
            if (ci == 0)
                old_ms = med;
            printf("| %s%s | %.2f | %.2f..%.2f | %zu | %.2f | %.2fx |\n", cs[ci].label,
                   ci == 0 ? " (old)" : "", med, u[0], u[reps - 1], bytes[ci],
                   (double)bytes[ci] / old_bytes, old_ms / med);
        }
        fflush(stdout);
        free(bytes);
        free(t);
        free(ok);
    }
    for (int pi = 0; pi < npics; pi++)
        free(pics[pi].px);
    return bad;
}
