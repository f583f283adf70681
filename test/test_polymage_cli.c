/* test_polymage_cli.c — the `polymage` command (cli/command.c), run as a process:
 *  - --help for the command and each subcommand;
 *  - run on PNGs and a JPEG this test writes: the output is a valid PNG of the picture's
 *    size, and unsharp_mask's is the interpreter's result on the same picture rendered the
 *    same way (at most one 8-bit level apart); a missing output folder is created; on a
 *    step, the sharpened overshoot is clamped and the flat parts keep their levels;
 *    interpolate takes a picture's alpha as its mask and fills the transparent half;
 *  - explain (text with the groups; the diagram as SVG through dot, or DOT text), bench
 *    with a tiny size and 2 runs, sample and the run_sample alias;
 *  - with a disk cache (PM_CACHE_DIR), a second run and sample say the kernel was loaded
 *    from it, not compiled;
 *  - bad usages (unknown app, command or option, missing, corrupt or too small picture,
 *    an output name that is no picture) exit non-zero with a message on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "image_io.h"
#include "polymage_io.h"
#include "samples.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PM_CLI
#error "PM_CLI: the polymage command's path (test/CMakeLists.txt)"
#endif

static char dir[256];
static char out_text[1 << 16], err_text[1 << 16];

static void slurp(const char *path, char *buf, size_t size)
{
    buf[0] = '\0';
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs `program args` with stdout and stderr captured; returns the exit status. */
static int run(const char *program, const char *args)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s >'%s/stdout.txt' 2>'%s/stderr.txt'", dir,
             program, args, dir, dir);
    int status = system(cmd);
    char path[512];
    snprintf(path, sizeof path, "%s/stdout.txt", dir);
    slurp(path, out_text, sizeof out_text);
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    slurp(path, err_text, sizeof err_text);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return rc;
}

static int polymage(const char *args)
{
    return run(PM_CLI, args);
}

/* The generated photo as a picture file (grey or RGB; the format from the name). */
static void write_photo(const char *name, int64_t rows, int64_t cols, int channels)
{
    uint8_t *px = malloc((size_t)(rows * cols * channels));
    for (int c = 0; c < channels; c++)
        for (int64_t x = 0; x < rows; x++)
            for (int64_t y = 0; y < cols; y++)
                px[(c * rows + x) * cols + y] =
                    (uint8_t)pm_photo_level(rows, cols, channels == 1 ? -1 : c, x, y);
    int64_t ext[3] = {channels, rows, cols};
    pm_buffer b = pm_buffer_dense(px, PM_U8, 3, ext);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pm_io_error err;
    if (!CHECK(pm_io_write(path, &b, NULL, &err) == PM_IO_OK))
        fprintf(stderr, "%s\n", err.message);
    free(px);
}

/* A picture the command wrote: its size and channels, or 0 when it is not a valid one. */
static int read_picture(const char *name, int64_t *rows, int64_t *cols, pm_buffer *b)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pm_io_info info;
    pm_io_error err;
    if (!CHECK(pm_io_probe_file(path, &info, &err) == PM_IO_OK)) {
        fprintf(stderr, "%s\n", err.message);
        return 0;
    }
    *rows = info.rows;
    *cols = info.cols;
    if (b && !CHECK(pm_io_read(path, PM_U8, 0, b, &err) == PM_IO_OK))
        return 0;
    return info.channels;
}

/* unsharp_mask by the interpreter on the picture file, rendered as the command renders. */
static uint8_t *expected(const char *app_name, const char *name, int64_t *rows, int64_t *cols,
                         int *channels)
{
    const pm_sample_app *app = pm_sample_find(app_name);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    pm_buffer img;
    pm_io_error err;
    if (!CHECK(pm_io_read(path, PM_U8, 3, &img, &err) == PM_IO_OK))
        return NULL;
    int64_t r = img.extent[1], c = img.extent[2];
    uint8_t *inter = malloc((size_t)(r * c * 3));
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; i < r * c; i++)
            inter[i * 3 + k] = ((uint8_t *)img.data)[k * r * c + i];
    pm_io_free(&img);
    pm_sample_picture pic = pm_bytes_picture(inter, r, c, 3);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    pm_value params[16];
    pm_buffer in[8], out;
    int ni = pm_pipeline_ninputs(p);
    app->params(r, c, params);
    for (int i = 0; i < ni; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_from(i, &in[i], params, &pic);
    }
    out = pm_sample_buffer(p, 1, 0, params);
    uint8_t *px = NULL;
    if (CHECK(pm_interpret(p, params, in, &out) == PM_OK))
        px = pm_sample_render(&out, pm_sample_render_flags(app), rows, cols, channels);
    for (int i = 0; i < ni; i++)
        free(in[i].data);
    free(out.data);
    free(inter);
    pm_ctx_free(ctx);
    return px;
}

static void helps(void)
{
    CHECK(polymage("--help") == 0);
    CHECK_CONTAINS(out_text, "usage: polymage COMMAND");
    CHECK_CONTAINS(out_text, "local_laplacian");
    const char *cmds[] = {"run", "sample", "explain", "bench"};
    for (int i = 0; i < 4; i++) {
        char args[64], want[64];
        snprintf(args, sizeof args, "%s --help", cmds[i]);
        snprintf(want, sizeof want, "usage: polymage %s", cmds[i]);
        CHECK(polymage(args) == 0);
        CHECK_CONTAINS(out_text, want);
        snprintf(args, sizeof args, "help %s", cmds[i]);
        CHECK(polymage(args) == 0);
        CHECK_CONTAINS(out_text, want);
    }
    CHECK(polymage("apps") == 0);
    CHECK_CONTAINS(out_text, "camera_pipe");
    CHECK_CONTAINS(out_text, "Bayer");
}

/* unsharp_mask on a step from grey 60 to 200: the sharpened pixels beside the step and
 * at the picture's zero-padded edges overshoot [0, 1] and are drawn 0 and 255, and the
 * flat parts keep their levels exactly (a stretch over the overshoot moved them all). */
static void unsharp_overshoot(void)
{
    enum { R = 32, N = 48 };
    uint8_t px[3 * R * N];
    for (int i = 0; i < 3 * R * N; i++)
        px[i] = i % N < N / 2 ? 60 : 200;
    pm_buffer b = pm_buffer_dense(px, PM_U8, 3, (int64_t[]){3, R, N});
    char path[512];
    snprintf(path, sizeof path, "%s/step.png", dir);
    pm_io_error err;
    CHECK(pm_io_write(path, &b, NULL, &err) == PM_IO_OK);
    CHECK(polymage("run unsharp_mask step.png step_sharp.png") == 0);
    int64_t r = 0, c = 0;
    pm_buffer got;
    if (!CHECK(read_picture("step_sharp.png", &r, &c, &got) == 3 && r == R && c == N))
        return;
    const uint8_t *g = got.data;
    int flat_bad = 0, white = 0, black = 0;
    for (int i = 0; i < 3 * R * N; i++) {
        int x = i / N % R, y = i % N;
        bool flat = x >= 4 && x < R - 4 &&
                    ((y >= 4 && y < N / 2 - 4) || (y >= N / 2 + 4 && y < N - 4));
        flat_bad += flat && g[i] != px[i];
        white += g[i] == 255;
        black += g[i] == 0;
    }
    if (!CHECK(flat_bad == 0 && white > 0 && black > 0))
        fprintf(stderr, "unsharp step: %d flat pixels moved, %d white, %d black\n", flat_bad,
                white, black);
    pm_io_free(&got);
}

static void runs(void)
{
    write_photo("photo.png", 40, 56, 3);
    write_photo("grey.png", 40, 56, 1);
    write_photo("photo.jpg", 40, 56, 3);

    /* unsharp_mask into a folder that does not exist yet, compared with the interpreter */
    CHECK(polymage("run unsharp_mask photo.png new/folder/sharp.png --threads 2") == 0);
    CHECK_CONTAINS(err_text, "created the folder");
    CHECK_CONTAINS(err_text, "compiled in");
    int64_t r = 0, c = 0, er = 0, ec = 0;
    int ech = 0;
    pm_buffer got;
    CHECK(read_picture("new/folder/sharp.png", &r, &c, &got) == 3 && r == 40 && c == 56);
    uint8_t *want = expected("unsharp_mask", "photo.png", &er, &ec, &ech);
    if (CHECK(want && er == 40 && ec == 56 && ech == 3) && got.data) {
        int worst = 0;
        const uint8_t *g = got.data;
        for (int k = 0; k < 3; k++)
            for (int64_t i = 0; i < r * c; i++) {
                int d = abs((int)g[k * r * c + i] - (int)want[i * 3 + k]);
                worst = d > worst ? d : worst;
            }
        printf("run unsharp_mask: largest difference from the interpreter %d level(s)\n", worst);
        CHECK(worst <= 1);
    }
    free(want);
    pm_io_free(&got);

    unsharp_overshoot();

    /* harris on grey PNG and on JPEG, with its response map; JPEG output */
    CHECK(polymage("run harris grey.png corners.png --response resp.png --check") == 0);
    CHECK_CONTAINS(out_text, "largest difference from the interpreter");
    CHECK(read_picture("corners.png", &r, &c, NULL) == 3 && r == 40 && c == 56);
    CHECK(read_picture("resp.png", &r, &c, NULL) == 1 && r == 40 && c == 56);
    CHECK(polymage("run harris photo.jpg corners.jpg") == 0);
    CHECK(read_picture("corners.jpg", &r, &c, NULL) == 3 && r == 40 && c == 56);
    CHECK(polymage("run camera_pipe photo.png raw.png --interp") == 0);
    CHECK(read_picture("raw.png", &r, &c, NULL) == 3 && r == 40 && c == 56);

    /* interpolate fills a picture's transparent pixels: the right half, transparent blue,
     * becomes the opaque left half's red */
    {
        enum { N = 512 };
        uint8_t *px = malloc((size_t)4 * N * N);
        for (int64_t i = 0; i < (int64_t)N * N; i++) {
            bool left = i % N < N / 2;
            px[i] = left ? 255 : 0;
            px[(int64_t)N * N + i] = 0;
            px[2 * (int64_t)N * N + i] = left ? 0 : 255;
            px[3 * (int64_t)N * N + i] = left ? 255 : 0;
        }
        int64_t ext[3] = {4, N, N};
        pm_buffer b = pm_buffer_dense(px, PM_U8, 3, ext);
        char path[512];
        snprintf(path, sizeof path, "%s/holes.png", dir);
        pm_io_error err;
        CHECK(pm_io_write(path, &b, NULL, &err) == PM_IO_OK);
        free(px);
        CHECK(polymage("run interpolate holes.png filled.png") == 0);
        pm_buffer got;
        if (CHECK(read_picture("filled.png", &r, &c, &got) == 3 && r == N && c == N)) {
            const uint8_t *g = got.data;
            int64_t at = 300 * N + 500; /* deep in the transparent half */
            CHECK(g[at] >= 250 && g[(int64_t)N * N + at] <= 5 && g[2 * (int64_t)N * N + at] <= 5);
        }
        pm_io_free(&got);
    }

    /* the generated photo, and the old driver's name */
    CHECK(polymage("sample unsharp_mask --rows 24 --cols 32 --out samples") == 0);
    CHECK_CONTAINS(out_text, "wrote samples/unsharp_mask_input.png");
    CHECK(read_picture("samples/unsharp_mask_output.png", &r, &c, NULL) == 3 && r == 24 && c == 32);
#ifdef PM_RUN_SAMPLE
    CHECK(run(PM_RUN_SAMPLE, "harris --rows 16 --cols 16 --out old --check") == 0);
    CHECK(read_picture("old/harris_output.png", &r, &c, NULL) == 3 && r == 16 && c == 16);
#endif
}

static void explain_and_bench(void)
{
    CHECK(polymage("explain harris --size 64x64 -o diagrams/harris.svg") == 0);
    CHECK_CONTAINS(out_text, "== groups ==");
    CHECK_CONTAINS(out_text, "group 0");
    CHECK_CONTAINS(out_text, "== storage ==");
    CHECK_CONTAINS(err_text, "PM_TIME harris: tile");
    char path[512], head[1 << 16];
    snprintf(path, sizeof path, "%s/diagrams/harris.svg", dir);
    slurp(path, head, sizeof head);
    /* SVG through dot when it is installed, DOT text otherwise */
    CHECK(strstr(head, "<svg") != NULL || strstr(head, "digraph") != NULL);
    CHECK(polymage("explain unsharp_mask --size 32x32 -o u.dot --phases ast") == 0);
    CHECK_CONTAINS(out_text, "== ast ==");
    snprintf(path, sizeof path, "%s/u.dot", dir);
    slurp(path, head, sizeof head);
    CHECK_CONTAINS(head, "digraph");

    /* the group options: harris's group has three stages; at 1024 x 1024 its tiles
     * recompute rows, which no redundancy at all forbids */
    CHECK(polymage("explain harris --size 1024x1024 --no-diagram") == 0);
    CHECK_CONTAINS(out_text, "live-out harris, 3 stages");
    CHECK(polymage("explain harris --size 1024x1024 --no-diagram --limit 1") == 0);
    CHECK_CONTAINS(out_text, "live-out harris, 1 stage, untiled");
    CHECK(polymage("explain harris --size 1024x1024 --no-diagram --threshold 0") == 0);
    CHECK_CONTAINS(out_text, "live-out harris, 1 stage, untiled");
    CHECK(polymage("explain harris --size 1024x1024 --no-diagram --threshold 0.5") == 0);
    CHECK_CONTAINS(out_text, "live-out harris, 3 stages");
    CHECK(polymage("explain harris --size 64x64 --no-diagram --threshold 1.5") == 2);
    CHECK_CONTAINS(err_text, "--threshold needs a fraction");
    CHECK(polymage("explain harris --size 64x64 --no-diagram --limit x") == 2);
    CHECK_CONTAINS(err_text, "--limit needs a stage count");
    CHECK(polymage("explain harris --size 64x64 --no-diagram --grouping best") == 2);
    CHECK_CONTAINS(err_text, "--grouping needs greedy, capped-dp or dp, got best");
    CHECK(polymage("explain harris --size 64x64 --no-diagram --grouping dp") == 0);
    CHECK_CONTAINS(out_text, "grouping: DP, cost");

    CHECK(polymage("bench harris --size 32x48 --runs 2 --threads 1") == 0);
    CHECK_CONTAINS(out_text, "harris 32 x 48, 1 threads: compile");
    CHECK_CONTAINS(out_text, "run median");
    CHECK_CONTAINS(out_text, "IQR");
}

/* A private disk cache: the first run compiles and writes the kernel, the second loads
 * it and must not call that a compile (stderr's line and stdout's summary). */
static void disk_cache_loads(void)
{
    char cache[512];
    snprintf(cache, sizeof cache, "%s/kernels", dir);
    if (!CHECK(mkdir(cache, 0700) == 0))
        return;
    setenv("PM_CACHE_DIR", cache, 1);
    CHECK(polymage("run unsharp_mask photo.png cached1.png --threads 1") == 0);
    CHECK_CONTAINS(err_text, "unsharp_mask: compiled in");
    CHECK_CONTAINS(out_text, ", compile ");
    CHECK(polymage("run unsharp_mask photo.png cached2.png --threads 1") == 0);
    CHECK_CONTAINS(err_text, "unsharp_mask: loaded from the disk cache in");
    CHECK(strstr(err_text, "compiled in") == NULL);
    CHECK_CONTAINS(out_text, ", disk cache load ");
    CHECK(polymage("sample harris --rows 16 --cols 24 --out cached --threads 1") == 0);
    CHECK_CONTAINS(out_text, "JIT compile");
    CHECK(polymage("sample harris --rows 16 --cols 24 --out cached --threads 1") == 0);
    CHECK_CONTAINS(out_text, "threads: disk cache load");
    CHECK_CONTAINS(err_text, "harris: loaded from the disk cache in");
    unsetenv("PM_CACHE_DIR");
}

static void expect_failure(const char *args, const char *needle)
{
    int rc = polymage(args);
    if (!CHECK(rc != 0))
        fprintf(stderr, "polymage %s: exit 0\n", args);
    CHECK(rc < 128); /* an exit, not a signal */
    CHECK_CONTAINS(err_text, needle);
}

static void bad_usages(void)
{
    expect_failure("", "usage: polymage");
    expect_failure("frobnicate", "no command named frobnicate");
    expect_failure("run no_such_app photo.png out.png", "no app named no_such_app");
    expect_failure("run harris missing.png out.png", "missing.png: cannot open");
    expect_failure("run harris photo.png", "run needs APP IN OUT");
    expect_failure("run harris photo.png out.tiff", "must end in .png, .jpg or .jpeg");
    expect_failure("run harris photo.png out.png --threads many", "--threads needs a count");
    expect_failure("run harris photo.png out.png --bogus", "unknown or incomplete option --bogus");
    expect_failure("bench harris --size 10by10", "--size needs ROWSxCOLS");
    expect_failure("bench harris --size 4x4 --runs 2", "needs at least 8 x 8");
    expect_failure("explain no_such_app", "no app named");
    /* a corrupt picture: truncated, and one with a flipped byte in its header */
    char src[512], dst[512];
    snprintf(src, sizeof src, "%s/photo.png", dir);
    FILE *f = fopen(src, "rb");
    static uint8_t bytes[1 << 16];
    size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f)
        fclose(f);
    CHECK(n > 100);
    snprintf(dst, sizeof dst, "%s/cut.png", dir);
    f = fopen(dst, "wb");
    fwrite(bytes, 1, n / 2, f);
    fclose(f);
    expect_failure("run harris cut.png out.png", "cut.png: truncated file");
    bytes[20] ^= 0x55; /* inside IHDR: its CRC no longer matches */
    snprintf(dst, sizeof dst, "%s/flipped.png", dir);
    f = fopen(dst, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    expect_failure("run harris flipped.png out.png", "flipped.png: corrupted PNG");
    snprintf(dst, sizeof dst, "%s/notes.png", dir);
    f = fopen(dst, "wb");
    fputs("not a picture\n", f);
    fclose(f);
    expect_failure("run harris notes.png out.png", "not a PNG or JPEG");
    write_photo("tiny.png", 4, 4, 3);
    expect_failure("run harris tiny.png out.png", "needs at least 8 x 8");
    snprintf(dst, sizeof dst, "%s/out.png", dir);
    CHECK(access(dst, F_OK) != 0); /* no failed run left an output */
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/pm_test_cli.XXXXXX");
    if (!CHECK(mkdtemp(dir) != NULL))
        return check_finish("test_polymage_cli");
    unsetenv("PM_CACHE_DIR"); /* compiles unless a test sets its own */
    helps();
    runs();
    explain_and_bench();
    disk_cache_loads();
    bad_usages();
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return check_finish("test_polymage_cli");
}
