/* command.c — the `polymage` command: the bundled apps on the user's pictures, the
 * compiler's decisions, and timings.
 *
 *   polymage run APP IN OUT [options]   the app on a PNG or JPEG picture, its output to OUT
 *   polymage sample [APP] [options]     the app on the generated photo (what run_sample did)
 *   polymage explain APP [options]      phases, groups, storage; the grouping diagram
 *   polymage bench APP [options]        compile ms, run median and IQR
 *   polymage apps                       the apps and what they take
 *
 * Results go to stdout or files; progress and timings to stderr; errors are one message on
 * stderr and a non-zero status (1 a failure, 2 a bad command line). Built as run_sample
 * too: called by that name it is `polymage sample` (the old driver's options unchanged).
 */
#define _POSIX_C_SOURCE 200809L
#include "image_io.h"
#include "polymage.h"
#include "codegen/codegen.h"
#include "polymage_io.h"
#include "samples.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *prog = "polymage";

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- help ---------------------------------------------------------------------------- */

static void list_apps(FILE *to)
{
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    for (int i = 0; i < n; i++)
        fprintf(to, "%s%s", i ? ", " : "", apps[i].name);
    fprintf(to, "\n");
}

static void help_main(FILE *to)
{
    fprintf(to,
        "usage: polymage COMMAND [ARGS] [OPTIONS]\n"
        "\n"
        "PolyMage-JIT's bundled image pipelines, compiled in this process.\n"
        "\n"
        "commands:\n"
        "  run APP IN OUT    run APP on the picture IN (PNG or JPEG), write its output to OUT\n"
        "                    (.png or .jpg)\n"
        "  sample [APP]      run APP (default harris) on the generated photo, write\n"
        "                    DIR/APP_input.png and DIR/APP_output.png (make run)\n"
        "  explain APP       the compiler's phases, groups and storage as text, the grouping\n"
        "                    diagram as SVG (Graphviz dot) or DOT text\n"
        "  bench APP         PolyMage-JIT alone: compile ms, run median and IQR\n"
        "  apps              the apps, what each takes, their smallest picture\n"
        "  help [COMMAND]    this text, or a command's\n"
        "\n"
        "apps: ");
    list_apps(to);
    fprintf(to, "\n'polymage COMMAND --help' describes a command's options. Progress and timings\n"
                "go to stderr; errors give a message and a non-zero status.\n");
}

static const char engine_help[] =
    "  --threads N     worker threads (0 = all cores, the default)\n"
    "  --interp        run the reference interpreter instead of the JIT\n"
    "  --check         also run the interpreter and report the largest difference\n"
    "                  (non-zero status when over the app's tolerance)\n"
    "  --print         print the pipeline's definitions first\n"
    "  --unfused       compile with fusion off (every stage its own loop nest)\n"
    "  --tile A,B      tile sizes (0 = the cost model's)\n"
    "  --limit N       at most N stages in a fused group (0 = the default)\n"
    "  --threshold X   the most redundant computation a group may add, 0..1\n"
    "  --grouping G    greedy, capped-dp (default) or dp: how stages group\n";

static void help_run(FILE *to)
{
    fprintf(to,
        "usage: polymage run APP IN OUT [--threads N] [--response FILE] [engine options]\n"
        "\n"
        "Runs APP on the picture IN (PNG 8/16-bit or JPEG, grey, RGB, with or without alpha)\n"
        "at the picture's size and writes the output picture to OUT (PNG for .png, JPEG for\n"
        ".jpg/.jpeg; a missing folder is created). The picture becomes the app's input as in\n"
        "the HTTP service: 8-bit levels (16-bit samples are reduced, alpha is dropped except\n"
        "by interpolate, which fills the transparent pixels from the opaque ones), grey =\n"
        "rounded luma where the app takes grey, clamped to the edge where it pads ('polymage\n"
        "apps' lists each app's input; camera_pipe gets a raw Bayer mosaic made from the\n"
        "picture). The output has the picture's size. harris writes the picture dimmed with\n"
        "its corners marked in red; --response FILE also writes the response.\n"
        "\n"
        "options:\n%s", engine_help);
}

static void help_sample(FILE *to)
{
    fprintf(to,
        "usage: polymage sample [APP] [--rows N --cols N] [--out DIR] [engine options]\n"
        "\n"
        "Runs APP (default harris) on the generated photo at the app's quick size (or N x N),\n"
        "compiling for those sizes, then runs it five more times for the steady state, and\n"
        "writes DIR/APP_input.png and DIR/APP_output.png (harris also APP_response.png);\n"
        "DIR (default .) is created if missing. `make run` calls this with --check.\n"
        "\n"
        "options:\n"
        "  --rows N, --cols N  the photo's size\n"
        "  --out DIR           where the PNGs go\n%s", engine_help);
}

static void help_explain(FILE *to)
{
    fprintf(to,
        "usage: polymage explain APP [--size RxC] [--phases LIST] [-o FILE] [--no-diagram]\n"
        "\n"
        "Compiles APP for the estimates RxC (default the app's paper size) and prints what\n"
        "the compiler decided: its phases, the stage graph, the groups (inlined stages,\n"
        "fused groups with their tile sizes, redundant computation and footprints) and the\n"
        "storage (scratchpads, full buffers, shared slots). Per-step compile times go to\n"
        "stderr. The grouping diagram (one cluster per group, inlined stages dotted) is\n"
        "written as SVG through Graphviz's dot when it is on PATH, as DOT text otherwise.\n"
        "\n"
        "options:\n"
        "  --size RxC      the estimates (rows x cols of the picture)\n"
        "  --phases LIST   more texts: domains, schedule, ast, lower, llvm (comma-separated)\n"
        "                  or all\n"
        "  -o FILE         the diagram's file (default APP_groups.svg, or APP_groups.dot\n"
        "                  without dot); a name ending in .dot gets DOT text\n"
        "  --no-diagram    text only\n"
        "  --threads N, --unfused, --tile A,B, --limit N, --threshold X, --grouping G\n"
        "                  as for run\n");
}

static void help_bench(FILE *to)
{
    fprintf(to,
        "usage: polymage bench APP [--size RxC] [--runs N] [--threads N] [--unfused] [--tile A,B]\n"
        "\n"
        "Times PolyMage-JIT alone on APP with the generated photo at RxC (default the app's\n"
        "paper size): the compile (a fresh JIT, no kernel cache, no disk cache), one\n"
        "warm-up run, then N timed runs (default 10): median, interquartile range, min.\n"
        "The result line goes to stdout.\n");
}

static void help_apps(FILE *to)
{
    fprintf(to, "usage: polymage apps\n\nLists the bundled apps: name, title, what the app takes "
                "from a picture, the smallest picture it is run on, its paper size.\n");
}

/* What each app makes of a picture (samples/<app>/<app>.c, fill_from). */
static const char *app_input(const char *name)
{
    static const struct {
        const char *name, *input;
    } inputs[] = {
        {"unsharp_mask", "RGB f32 in [0, 1], a 2-pixel zero border"},
        {"bilateral_grid", "grey f32, clamp-padded"},
        {"harris", "grey f32 in [0, 1]"},
        {"camera_pipe", "a raw 10-bit Bayer mosaic (GRBG, i16) synthesised from the picture"},
        {"pyramid_blend", "RGB f32: the picture and its mirror image, blended under a mask"},
        {"interpolate", "RGBA f32: the picture's alpha as the known pixels, else one in four"},
        {"local_laplacian", "BGR u16 (8-bit level * 256), clamp-padded"},
    };
    for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
        if (strcmp(inputs[i].name, name) == 0)
            return inputs[i].input;
    return "";
}

/* ---- options ---------------------------------------------------------------------------- */

typedef struct options {
    const char *app;
    const char *in, *out;      /* run                                    */
    const char *out_dir;       /* sample                                 */
    const char *response;      /* run harris: the response map           */
    const char *diagram;       /* explain -o                             */
    const char *phases;        /* explain --phases                       */
    bool no_diagram;
    int64_t rows, cols;        /* sample --rows/--cols, explain/bench --size */
    int runs;                  /* bench                                  */
    int threads;
    bool interp, check, print, unfused;
    int tile[2];
    int group_limit;           /* --limit, 0 = the model's                */
    double threshold;          /* --threshold, negative = the model's     */
    int grouping;              /* --grouping, PM_GROUPING_*               */
} options;

static bool parse_int(const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || end == s || *end || x < lo || x > hi)
        return false;
    *v = x;
    return true;
}

static bool parse_size(const char *s, int64_t *rows, int64_t *cols)
{
    char *end;
    errno = 0;
    long long r = strtoll(s, &end, 10);
    if (errno || end == s || (*end != 'x' && *end != 'X') || r < 1)
        return false;
    const char *c = end + 1;
    long long k = strtoll(c, &end, 10);
    if (errno || end == c || *end || k < 1 || r > (1LL << 31) || k > (1LL << 31))
        return false;
    *rows = r;
    *cols = k;
    return true;
}

enum { CMD_RUN, CMD_SAMPLE, CMD_EXPLAIN, CMD_BENCH };

/* What an option parser made of argument a: not one of its options, a flag, an option
 * that took the next argument as its value, or a bad value (the message given). */
enum { OPT_NONE, OPT_FLAG, OPT_VALUE, OPT_BAD };

/* The engine's options, shared by the commands; v is the next argument or NULL. */
static int engine_option(int cmd, const char *a, const char *v, options *o)
{
    long long n;
    bool runs_app = cmd == CMD_RUN || cmd == CMD_SAMPLE; /* --interp, --check, --print */
    if (strcmp(a, "--threads") == 0) {
        if (!v || !parse_int(v, 0, PM_MAX_THREADS, &n)) {
            say("--threads needs a count 0..%d (PM_MAX_THREADS), got %s", PM_MAX_THREADS,
                v ? v : "nothing");
            return OPT_BAD;
        }
        o->threads = (int)n;
        return OPT_VALUE;
    } else if (strcmp(a, "--tile") == 0) {
        if (!v || sscanf(v, "%d,%d", &o->tile[0], &o->tile[1]) < 1 || o->tile[0] < 0 ||
            o->tile[1] < 0) {
            say("--tile needs sizes A,B, got %s", v ? v : "nothing");
            return OPT_BAD;
        }
        return OPT_VALUE;
    } else if (strcmp(a, "--limit") == 0) {
        if (!v || !parse_int(v, 0, 1 << 20, &n)) {
            say("--limit needs a stage count 0..%d, got %s", 1 << 20, v ? v : "nothing");
            return OPT_BAD;
        }
        o->group_limit = (int)n;
        return OPT_VALUE;
    } else if (strcmp(a, "--threshold") == 0) {
        char *end;
        errno = 0;
        double t = v ? strtod(v, &end) : -1;
        if (!v || errno || end == v || *end || !(t >= 0 && t <= 1)) {
            say("--threshold needs a fraction 0..1, got %s", v ? v : "nothing");
            return OPT_BAD;
        }
        o->threshold = t;
        return OPT_VALUE;
    } else if (strcmp(a, "--grouping") == 0) {
        static const char *const names[] = {"greedy", "capped-dp", "dp"};
        o->grouping = -1;
        for (int i = 0; v && i < 3; i++)
            if (strcmp(v, names[i]) == 0)
                o->grouping = PM_GROUPING_GREEDY + i;
        if (o->grouping < 0) {
            say("--grouping needs greedy, capped-dp or dp, got %s", v ? v : "nothing");
            return OPT_BAD;
        }
        return OPT_VALUE;
    } else if (strcmp(a, "--unfused") == 0) {
        o->unfused = true;
    } else if (runs_app && strcmp(a, "--interp") == 0) {
        o->interp = true;
    } else if (runs_app && strcmp(a, "--check") == 0) {
        o->check = true;
    } else if (runs_app && strcmp(a, "--print") == 0) {
        o->print = true;
    } else {
        return OPT_NONE;
    }
    return OPT_FLAG;
}

/* The options of one command (--response, --rows, --size, -o, ...); an option whose value
 * is missing is none of them, so that it is reported as incomplete. */
static int command_option(int cmd, const char *a, const char *v, options *o)
{
    long long n;
    if (cmd == CMD_RUN && strcmp(a, "--response") == 0 && v) {
        o->response = v;
    } else if (cmd == CMD_SAMPLE && (strcmp(a, "--rows") == 0 || strcmp(a, "--cols") == 0)) {
        if (!v || !parse_int(v, 1, 1LL << 31, &n)) {
            say("%s needs a positive integer, got %s", a, v ? v : "nothing");
            return OPT_BAD;
        }
        *(strcmp(a, "--rows") == 0 ? &o->rows : &o->cols) = n;
    } else if (cmd == CMD_SAMPLE && strcmp(a, "--out") == 0 && v) {
        o->out_dir = v;
    } else if ((cmd == CMD_EXPLAIN || cmd == CMD_BENCH) && strcmp(a, "--size") == 0) {
        if (!v || !parse_size(v, &o->rows, &o->cols)) {
            say("--size needs ROWSxCOLS such as 480x640, got %s", v ? v : "nothing");
            return OPT_BAD;
        }
    } else if (cmd == CMD_BENCH && strcmp(a, "--runs") == 0) {
        if (!v || !parse_int(v, 1, 100000, &n)) {
            say("--runs needs a count 1..100000, got %s", v ? v : "nothing");
            return OPT_BAD;
        }
        o->runs = (int)n;
    } else if (cmd == CMD_EXPLAIN && strcmp(a, "-o") == 0 && v) {
        o->diagram = v;
    } else if (cmd == CMD_EXPLAIN && strcmp(a, "--phases") == 0 && v) {
        o->phases = v;
    } else if (cmd == CMD_EXPLAIN && strcmp(a, "--no-diagram") == 0) {
        o->no_diagram = true;
        return OPT_FLAG;
    } else {
        return OPT_NONE;
    }
    return OPT_VALUE;
}

/* 0 on success, 2 with a message on a bad command line, -1 after printing help. */
static int parse(int cmd, int argc, char **argv, options *o, void (*help)(FILE *))
{
    int positional = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help(stdout);
            return -1;
        }
        int r = engine_option(cmd, a, v, o);
        if (r == OPT_NONE)
            r = command_option(cmd, a, v, o);
        if (r == OPT_BAD)
            return 2;
        if (r == OPT_VALUE)
            i++;
        if (r != OPT_NONE)
            continue;
        if (a[0] == '-' && a[1] != '\0') {
            say("unknown or incomplete option %s (see --help)", a);
            return 2;
        }
        if (positional >= (cmd == CMD_RUN ? 3 : 1)) {
            say("unexpected argument %s (see --help)", a);
            return 2;
        }
        *(positional == 0 ? &o->app : positional == 1 ? &o->in : &o->out) = a;
        positional++;
    }
    if (cmd == CMD_SAMPLE && !o->app)
        o->app = "harris";
    if (!o->app) {
        say("which app? (%s)", "see 'polymage apps'");
        help(stderr);
        return 2;
    }
    if (cmd == CMD_RUN && positional < 3) {
        say("run needs APP IN OUT, got %d of them", positional);
        help(stderr);
        return 2;
    }
    return 0;
}

static const pm_sample_app *find_app(const char *name)
{
    const pm_sample_app *app = pm_sample_find(name);
    if (!app) {
        fprintf(stderr, "%s: no app named %s; the apps are: ", prog, name);
        list_apps(stderr);
    }
    return app;
}

/* ---- files -------------------------------------------------------------------------------- */

/* Makes the folder and its parents (mkdir -p); 0, or -1 with a message. */
static int make_folder(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        say("%s: the path is too long", dir);
        return -1;
    }
    for (char *p = path + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            struct stat st;
            if (stat(path, &st) != 0) {
                if (mkdir(path, 0777) != 0 && errno != EEXIST) {
                    say("cannot create the folder %s: %s", path, strerror(errno));
                    return -1;
                }
                say("created the folder %s", path);
            } else if (!S_ISDIR(st.st_mode)) {
                say("%s is not a folder", path);
                return -1;
            }
            *p = keep;
            if (!keep)
                break;
        }
    }
    return 0;
}

/* The folder of a file path made if missing. */
static int make_parent(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (!slash || slash == file)
        return 0;
    char dir[4096];
    size_t n = (size_t)(slash - file);
    if (n >= sizeof dir) {
        say("%s: the path is too long", file);
        return -1;
    }
    memcpy(dir, file, n);
    dir[n] = '\0';
    return make_folder(dir);
}

static bool has_extension(const char *path, const char *ext)
{
    size_t n = strlen(path), m = strlen(ext);
    if (n < m)
        return false;
    for (size_t i = 0; i < m; i++) {
        char c = path[n - m + i];
        if ((c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c) != ext[i])
            return false;
    }
    return true;
}

static bool picture_name(const char *path)
{
    return has_extension(path, ".png") || has_extension(path, ".jpg") ||
           has_extension(path, ".jpeg");
}

/* Interleaved 8-bit pixels to a PNG or JPEG (by the name). 0, or -1 with a message. */
static int write_pixels(const char *path, const uint8_t *px, int64_t rows, int64_t cols, int ch)
{
    if (make_parent(path))
        return -1;
    int64_t extents[3] = {ch, rows, cols};
    pm_buffer b = pm_buffer_dense((void *)px, PM_U8, 3, extents);
    b.stride[0] = 1;
    b.stride[1] = cols * ch;
    b.stride[2] = ch;
    pm_io_error err;
    double t0 = now_ms();
    if (pm_io_write(path, &b, NULL, &err) != PM_IO_OK) {
        say("%s", err.message);
        return -1;
    }
    say("wrote %s (%lld x %lld, %s) in %.1f ms", path, (long long)rows, (long long)cols,
        ch == 3 ? "RGB" : "grey", now_ms() - t0);
    return 0;
}

/* A buffer rendered by the samples' rule (pm_sample_render, PM_RENDER_* flags) and
 * written. */
static int write_rendered(const char *path, const pm_buffer *b, int flags)
{
    int64_t rows, cols;
    int ch;
    uint8_t *px = pm_sample_render(b, flags, &rows, &cols, &ch);
    if (!px) {
        say("%s: the buffer cannot be shown as a picture", path);
        return -1;
    }
    int rc = write_pixels(path, px, rows, cols, ch);
    free(px);
    return rc;
}

/* Harris: the grey input dimmed, every corner (a 5x5 local maximum of the response above
 * 5% of the strongest) marked by a red square; and the response map (sign-preserving cube
 * root: 0.5 is zero, brighter corner-like, darker edge-like). */
static int write_harris(const char *path, const char *response_path, const pm_buffer *in,
                        const pm_buffer *out, int *ncorners)
{
    const float *gray = in->data, *resp = out->data;
    int64_t rows = out->extent[0], cols = out->extent[1];
    size_t n = (size_t)rows * (size_t)cols;
    uint8_t *mark = calloc(n + 1, 1), *rgb = malloc(n * 3 + 1), *map = malloc(n + 1);
    int rc = -1;
    if (!mark || !rgb || !map) {
        say("out of memory for the corners");
        goto done;
    }
    float best = 0;
    for (size_t i = 0; i < n; i++)
        best = fabsf(resp[i]) > best ? fabsf(resp[i]) : best;
    *ncorners = 0;
    for (int64_t x = 2; x + 2 < rows; x++)
        for (int64_t y = 2; y + 2 < cols; y++) {
            float v = resp[x * cols + y];
            bool peak = v > 0.05f * best;
            for (int dx = -2; dx <= 2 && peak; dx++)
                for (int dy = -2; dy <= 2 && peak; dy++)
                    if ((dx || dy) && resp[(x + dx) * cols + y + dy] >= v)
                        peak = false;
            if (!peak)
                continue;
            ++*ncorners;
            for (int64_t i = x - 2; i <= x + 2; i++)
                for (int64_t j = y - 2; j <= y + 2; j++)
                    if (i == x - 2 || i == x + 2 || j == y - 2 || j == y + 2)
                        mark[i * cols + j] = 1;
        }
    float scale = best > 0 ? 1 / best : 1;
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) {
            float v = mark[i] ? (c == 0 ? 1.0f : 0.0f) : 0.35f + 0.5f * gray[i];
            v = v < 0 ? 0 : v > 1 ? 1 : v;
            rgb[i * 3 + (size_t)c] = (uint8_t)(v * 255.0f + 0.5f);
        }
        float r = 0.5f + 0.5f * cbrtf(resp[i] * scale);
        r = r < 0 ? 0 : r > 1 ? 1 : r;
        map[i] = (uint8_t)(r * 255.0f + 0.5f);
    }
    rc = write_pixels(path, rgb, rows, cols, 3);
    if (!rc && response_path)
        rc = write_pixels(response_path, map, rows, cols, 1);
done:
    free(mark);
    free(rgb);
    free(map);
    return rc;
}

/* ---- an app's buffers ------------------------------------------------------------------ */

typedef struct app_run {
    const pm_sample_app *app;
    pm_ctx *ctx;
    pm_pipeline *p;
    int np, ni, no;
    pm_value *params;
    pm_buffer *in, *out;
} app_run;

static void app_free(app_run *r)
{
    for (int i = 0; r->in && i < r->ni; i++)
        free(r->in[i].data);
    for (int i = 0; r->out && i < r->no; i++)
        free(r->out[i].data);
    free(r->params);
    free(r->in);
    free(r->out);
    pm_ctx_free(r->ctx);
    memset(r, 0, sizeof *r);
}

/* A zeroed dense buffer of the pipeline's shape, its bytes checked against overflow,
 * 64-byte aligned. */
static int make_buffer(app_run *r, int is_output, int index, pm_buffer *b)
{
    pm_func *f = is_output ? pm_pipeline_output(r->p, index) : pm_pipeline_input(r->p, index);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    if (pm_pipeline_buffer_shape(r->p, is_output, index, r->params, &ndims, extents) != PM_OK) {
        say("%s: no buffer shape for %s: %s", r->app->name, pm_func_name(f), pm_ctx_errmsg(r->ctx));
        return -1;
    }
    size_t bytes = pm_type_size(pm_func_type(f));
    for (int d = 0; d < ndims; d++) {
        if (extents[d] < 1 || (uint64_t)extents[d] > SIZE_MAX / 2 / bytes) {
            say("%s: %s would not fit in memory", r->app->name, pm_func_name(f));
            return -1;
        }
        bytes *= (size_t)extents[d];
    }
    *b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    /* aligned to the cache line, as image libraries' and the benchmarks' buffers are
     * (calloc's 16-byte offset gave every streamed row cached stores at both ends) */
    size_t padded = (bytes + 63) / 64 * 64;
    b->data = aligned_alloc(64, padded);
    if (b->data)
        memset(b->data, 0, padded);
    if (!b->data) {
        say("%s: out of memory for %s (%zu bytes)", r->app->name, pm_func_name(f), bytes);
        return -1;
    }
    return 0;
}

/* Builds the app and its buffers for a rows x cols picture (NULL: the generated photo). */
static int app_prepare(app_run *r, const pm_sample_app *app, int64_t rows, int64_t cols,
                       const pm_sample_picture *pic, bool print)
{
    memset(r, 0, sizeof *r);
    r->app = app;
    r->ctx = pm_ctx_new();
    r->p = r->ctx ? app->build(r->ctx) : NULL;
    if (!r->p) {
        say("%s cannot be built: %s", app->name, r->ctx ? pm_ctx_errmsg(r->ctx) : "out of memory");
        return -1;
    }
    if (print) {
        char *text = pm_pipeline_to_string(r->p);
        printf("%s", text ? text : "");
        free(text);
    }
    r->np = pm_pipeline_nparams(r->p);
    r->ni = pm_pipeline_ninputs(r->p);
    r->no = pm_pipeline_noutputs(r->p);
    r->params = calloc((size_t)r->np + 1, sizeof *r->params);
    r->in = calloc((size_t)r->ni + 1, sizeof *r->in);
    r->out = calloc((size_t)r->no + 1, sizeof *r->out);
    if (!r->params || !r->in || !r->out) {
        say("out of memory");
        return -1;
    }
    app->params(rows, cols, r->params);
    for (int i = 0; i < r->ni; i++) {
        if (make_buffer(r, 0, i, &r->in[i]))
            return -1;
        if (pic)
            app->fill_from(i, &r->in[i], r->params, pic);
        else
            app->fill_input(i, &r->in[i], r->params);
    }
    for (int i = 0; i < r->no; i++)
        if (make_buffer(r, 1, i, &r->out[i]))
            return -1;
    return 0;
}

/* ---- compiling and running ----------------------------------------------------------------- */

static pm_jit *new_jit(const options *o)
{
    pm_error err;
    pm_jit_options jo = pm_jit_options_default();
    jo.threads = o->threads;
    pm_jit *jit = pm_jit_new(&jo, &err);
    if (!jit)
        say("cannot start the JIT: %s", err.message);
    return jit;
}

static pm_compile_options compile_options(const options *o)
{
    pm_compile_options co = pm_compile_options_default();
    co.fusion = !o->unfused;
    co.tile_size[0] = o->tile[0];
    co.tile_size[1] = o->tile[1];
    co.group_limit = o->group_limit;
    if (o->threshold >= 0)
        co.overlap_threshold = o->threshold;
    co.grouping = o->grouping;
    return co;
}

/* The jit found the kernel in the disk cache (PM_CACHE_DIR): its time is a load's. */
static bool loaded_from_disk(const pm_kernel *k)
{
    pm_compile_stats st;
    return pm_kernel_compile_stats(k, &st, sizeof st) == PM_OK && st.from_disk;
}

/* "compiled in 812.3 ms", or "loaded from the disk cache in 1.8 ms". */
static void say_ready(const char *name, const pm_kernel *k, const char *then)
{
    say("%s: %s in %.1f ms%s", name, loaded_from_disk(k) ? "loaded from the disk cache"
                                                         : "compiled",
        pm_kernel_compile_ms(k), then);
}

typedef struct timing {
    double compile_ms, first_ms, best_ms; /* compile_ms: or the disk cache's load */
    int runs;
    bool loaded;                          /* from the disk cache, not compiled      */
} timing;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Compiles for the run's own sizes and runs `runs` times (the interpreter once). */
static int run_app(const options *o, app_run *r, int runs, timing *t)
{
    memset(t, 0, sizeof *t);
    const char *name = r->app->name;
    if (o->interp) {
        say("%s: running the interpreter", name);
        double t0 = now_ms();
        pm_status st = pm_interpret(r->p, r->params, r->in, r->out);
        t->first_ms = t->best_ms = now_ms() - t0;
        t->runs = 1;
        if (st != PM_OK) {
            say("%s: %s: %s", name, pm_status_name(st), pm_ctx_errmsg(r->ctx));
            return -1;
        }
        say("%s: interpreter %.1f ms", name, t->first_ms);
        return 0;
    }
    pm_jit *jit = new_jit(o);
    if (!jit)
        return -1;
    pm_compile_options co = compile_options(o);
    pm_error err;
    say("%s: compiling", name);
    pm_kernel *k = pm_jit_compile(jit, r->p, r->params, &co, &err);
    pm_status st = k ? PM_OK : err.status;
    double *times = calloc((size_t)runs, sizeof *times);
    if (k && times) {
        t->compile_ms = pm_kernel_compile_ms(k);
        t->loaded = loaded_from_disk(k);
        say_ready(name, k, "");
        for (int i = 0; i < runs && st == PM_OK; i++) {
            double t0 = now_ms();
            st = pm_kernel_run(k, r->params, r->in, r->out, &err);
            times[i] = now_ms() - t0;
            t->runs = i + 1;
        }
        if (st == PM_OK) {
            t->first_ms = times[0];
            if (runs > 1)
                qsort(times + 1, (size_t)runs - 1, sizeof *times, compare_doubles);
            t->best_ms = runs > 1 ? times[1] : times[0];
            say("%s: %s %.2f ms", name, runs > 1 ? "first run" : "run", t->first_ms);
        }
    } else if (k) {
        st = PM_ERR_NOMEM;
        snprintf(err.message, sizeof err.message, "out of memory");
    }
    free(times);
    if (st != PM_OK)
        say("%s: %s: %s", name, pm_status_name(st), err.message);
    pm_kernel_free(k);
    pm_jit_free(jit);
    return st == PM_OK ? 0 : -1;
}

/* The largest difference from the interpreter; 0 when within the app's tolerance. */
static int check_against_interpreter(app_run *r)
{
    double worst = 0;
    int rc = 0;
    for (int i = 0; i < r->no && !rc; i++) {
        pm_buffer ref = r->out[i];
        size_t bytes = (size_t)pm_sample_buffer_count(&r->out[i]) * pm_type_size(r->out[i].type);
        ref.data = malloc(bytes ? bytes : 1);
        if (!ref.data) {
            say("out of memory for the check");
            return -1;
        }
        memcpy(ref.data, r->out[i].data, bytes); /* the same never-written points */
        pm_buffer *refs = calloc((size_t)r->no, sizeof *refs);
        if (!refs) {
            free(ref.data);
            return -1;
        }
        for (int j = 0; j < r->no; j++) { /* other outputs: scratch copies */
            refs[j] = r->out[j];
            if (j != i) {
                size_t b = (size_t)pm_sample_buffer_count(&r->out[j]) * pm_type_size(r->out[j].type);
                refs[j].data = malloc(b ? b : 1);
            }
        }
        refs[i] = ref;
        say("%s: checking against the interpreter", r->app->name);
        if (pm_interpret(r->p, r->params, r->in, refs) != PM_OK) {
            say("interpreter: %s", pm_ctx_errmsg(r->ctx));
            rc = -1;
        } else {
            double d = pm_sample_buffer_maxdiff(&ref, &r->out[i]);
            worst = d > worst ? d : worst;
        }
        for (int j = 0; j < r->no; j++)
            if (j != i)
                free(refs[j].data);
        free(refs);
        free(ref.data);
    }
    if (rc)
        return rc;
    printf("check: largest difference from the interpreter %g (tolerance %g)\n", worst,
           r->app->tolerance);
    return worst <= r->app->tolerance ? 0 : -1;
}

/* ---- run -------------------------------------------------------------------------------- */

/* The picture o->in as 8-bit interleaved pixels, what the apps' fill_from takes
 * (pm_bytes_picture): *ch channels, RGBA for interpolate when the picture has alpha (its
 * mask of known pixels). 0, or 1 after a message. */
static int read_picture(const options *o, const pm_sample_app *app, pm_io_info *info,
                        uint8_t **pixels, int *ch)
{
    double t0 = now_ms();
    pm_io_error err;
    if (pm_io_probe_file(o->in, info, &err) != PM_IO_OK) {
        say("%s", err.message);
        return 1;
    }
    if (info->rows < app->min_rows || info->cols < app->min_cols) {
        say("%s is %lld x %lld pixels (rows x cols); %s needs at least %lld x %lld", o->in,
            (long long)info->rows, (long long)info->cols, app->name, (long long)app->min_rows,
            (long long)app->min_cols);
        return 1;
    }
    bool alpha = strcmp(app->name, "interpolate") == 0 && (info->channels == 2 || info->channels == 4);
    *ch = alpha ? 4 : info->channels >= 3 ? 3 : 1;
    size_t bytes = (size_t)info->rows * (size_t)info->cols;
    if (bytes > SIZE_MAX / 4) {
        say("%s: too large", o->in);
        return 1;
    }
    uint8_t *px = malloc(bytes * (size_t)*ch);
    if (!px) {
        say("%s: out of memory for %lld x %lld pixels", o->in, (long long)info->rows,
            (long long)info->cols);
        return 1;
    }
    int64_t ext[3] = {*ch, info->rows, info->cols};
    pm_buffer b = pm_buffer_dense(px, PM_U8, 3, ext);
    b.stride[0] = 1;
    b.stride[1] = info->cols * *ch;
    b.stride[2] = *ch;
    if (pm_io_read_into(o->in, &b, &err) != PM_IO_OK) {
        say("%s", err.message);
        free(px);
        return 1;
    }
    say("read %s: %lld x %lld %s %s, %d-bit, in %.1f ms", o->in, (long long)info->rows,
        (long long)info->cols, info->format == PM_IO_PNG ? "PNG" : "JPEG",
        info->channels == 1 ? "grey" : info->channels == 2 ? "grey + alpha"
        : info->channels == 3 ? "RGB" : "RGBA", info->bit_depth, now_ms() - t0);
    *pixels = px;
    return 0;
}

/* The app's output picture into o->out: harris's marked corners (and its response with
 * --response), any other app's first output rendered. 0, or 1 after a message. */
static int write_output(const options *o, const app_run *r)
{
    if (strcmp(r->app->name, "harris") == 0) {
        int corners = 0;
        int rc = write_harris(o->out, o->response, &r->in[0], &r->out[0], &corners) ? 1 : 0;
        if (!rc)
            say("harris: %d corners marked", corners);
        return rc;
    }
    return write_rendered(o->out, &r->out[0], pm_sample_render_flags(r->app)) ? 1 : 0;
}

static int cmd_run(const options *o)
{
    const pm_sample_app *app = find_app(o->app);
    if (!app)
        return 2;
    if (!picture_name(o->out)) {
        say("%s: the output's name must end in .png, .jpg or .jpeg", o->out);
        return 2;
    }
    if (o->response && !picture_name(o->response)) {
        say("%s: the response's name must end in .png, .jpg or .jpeg", o->response);
        return 2;
    }
    pm_io_info info;
    uint8_t *px = NULL;
    int ch = 0;
    if (read_picture(o, app, &info, &px, &ch))
        return 1;
    pm_sample_picture pic = pm_bytes_picture(px, info.rows, info.cols, ch);
    app_run r;
    double t0 = now_ms();
    int rc = app_prepare(&r, app, info.rows, info.cols, &pic, o->print) ? 1 : 0;
    if (!rc)
        say("%s: inputs made in %.1f ms", app->name, now_ms() - t0);
    timing t;
    if (!rc && run_app(o, &r, 1, &t))
        rc = 1;
    if (!rc && o->check && !o->interp && check_against_interpreter(&r))
        rc = 1;
    if (!rc)
        rc = write_output(o, &r);
    if (!rc)
        printf("%s %s: %lld x %lld, %s %.1f ms, run %.2f ms -> %s\n", app->name, o->in,
               (long long)info.rows, (long long)info.cols,
               o->interp ? "interpreter" : t.loaded ? "disk cache load" : "compile",
               o->interp ? t.first_ms : t.compile_ms, t.first_ms, o->out);
    app_free(&r);
    free(px);
    return rc;
}

/* ---- sample (run_sample) ------------------------------------------------------------- */

static int cmd_sample(const options *o)
{
    const pm_sample_app *app = find_app(o->app);
    if (!app)
        return 2;
    const char *dir = o->out_dir ? o->out_dir : ".";
    int64_t rows = o->rows ? o->rows : app->quick_rows, cols = o->cols ? o->cols : app->quick_cols;
    if (make_folder(dir))
        return 1;
    app_run r;
    int rc = app_prepare(&r, app, rows, cols, NULL, o->print) ? 1 : 0;
    timing t;
    if (!rc && run_app(o, &r, o->interp ? 1 : 6, &t))
        rc = 1;
    if (!rc) {
        char threads[32];
        snprintf(threads, sizeof threads, o->threads ? "%d" : "all", o->threads);
        if (o->interp)
            printf("%s (%s) %lld x %lld: interpreter %.1f ms\n", app->name, app->title,
                   (long long)rows, (long long)cols, t.best_ms);
        else
            printf("%s (%s) %lld x %lld, %s threads: %s %.1f ms, first run %.2f ms, "
                   "best of %d runs %.2f ms\n", app->name, app->title, (long long)rows,
                   (long long)cols, threads, t.loaded ? "disk cache load" : "JIT compile",
                   t.compile_ms, t.first_ms, t.runs - 1, t.best_ms);
        if (o->check && !o->interp && check_against_interpreter(&r))
            rc = 1;
        char in_path[4096], out_path[4096], resp_path[4096];
        snprintf(in_path, sizeof in_path, "%s/%s_input.png", dir, app->name);
        snprintf(out_path, sizeof out_path, "%s/%s_output.png", dir, app->name);
        snprintf(resp_path, sizeof resp_path, "%s/%s_response.png", dir, app->name);
        /* local_laplacian's input is BGR; camera_pipe's and its output are (output_bgr) */
        bool bgr_in = strcmp(app->name, "local_laplacian") == 0;
        int wrc = write_rendered(in_path, &r.in[0], bgr_in ? PM_RENDER_BGR : 0);
        if (strcmp(app->name, "harris") == 0) {
            int corners = 0;
            wrc |= write_harris(out_path, resp_path, &r.in[0], &r.out[0], &corners);
            printf("%d corners marked\n", corners);
        } else {
            wrc |= write_rendered(out_path, &r.out[0], pm_sample_render_flags(app));
        }
        if (wrc)
            rc = 1;
        else
            printf("wrote %s and %s\n", in_path, out_path);
    }
    app_free(&r);
    return rc;
}

/* ---- explain --------------------------------------------------------------------------- */

/* The program's full path when it is an executable on PATH, else NULL. */
static bool on_path(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return false;
    while (*path) {
        size_t n = strcspn(path, ":");
        char file[4096];
        if (n > 0 && n + strlen(name) + 2 < sizeof file) {
            snprintf(file, sizeof file, "%.*s/%s", (int)n, path, name);
            if (access(file, X_OK) == 0)
                return true;
        }
        path += n;
        if (*path == ':')
            path++;
    }
    return false;
}

/* DOT text through `dot -Tsvg -o file`: 0 on success. */
static int dot_to_svg(const char *dot, const char *file)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        execlp("dot", "dot", "-Tsvg", "-o", file, (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    size_t len = strlen(dot), done = 0;
    while (done < len) {
        ssize_t n = write(fds[1], dot + done, len - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    close(fds[1]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return done == len && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int write_text(const char *file, const char *text)
{
    if (make_parent(file))
        return -1;
    FILE *f = fopen(file, "w");
    if (!f) {
        say("cannot write %s: %s", file, strerror(errno));
        return -1;
    }
    fputs(text, f);
    if (fclose(f) != 0) {
        say("cannot write %s: %s", file, strerror(errno));
        return -1;
    }
    return 0;
}

/* The explanation on stdout: the compiler's steps, then the kept texts (graph, groups,
 * storage, and the phases --phases asks for). */
static void print_explanation(const options *o, const pm_sample_app *app, pm_kernel *k,
                              int64_t rows, int64_t cols)
{
    printf("%s (%s), compiled for %lld x %lld%s in %.1f ms\n\n", app->name, app->title,
           (long long)rows, (long long)cols, o->unfused ? " with fusion off" : "",
           pm_kernel_compile_ms(k));
    printf("The compiler's steps (each one's time is on stderr, PM_TIME):\n");
    for (int i = 0; i < pm_codegen_step_count(); i++) { /* codegen/driver.c's table */
        const char *step, *what, *stat;
        pm_codegen_step_info(i, &step, &what, &stat);
        printf("  %2d %-9s %s\n", i + 1, step, what);
    }
    const char *shown[] = {"graph", "groups", "storage"};
    for (size_t i = 0; i < 3; i++)
        printf("\n== %s ==\n%s", shown[i], pm_kernel_dump(k, shown[i]));
    if (o->phases) {
        const char *more[] = {"domains", "schedule", "ast", "lower", "llvm"};
        bool all = strstr(o->phases, "all") != NULL;
        for (size_t i = 0; i < 5; i++) {
            const char *text = pm_kernel_dump(k, more[i]);
            if ((all || strstr(o->phases, more[i])) && text)
                printf("\n== %s ==\n%s", more[i], text);
        }
    }
    printf("\n");
}

/* The grouping diagram into -o's file or APP_groups.svg: SVG through Graphviz's dot when
 * it is on PATH, DOT text otherwise or for a .dot name. 0, or 1 after a message. */
static int write_diagram(const options *o, const pm_sample_app *app, pm_kernel *k)
{
    const char *dot = pm_kernel_dump(k, "dot");
    bool have_dot = on_path("dot");
    char file[4096];
    if (o->diagram)
        snprintf(file, sizeof file, "%s", o->diagram);
    else
        snprintf(file, sizeof file, "%s_groups.%s", app->name, have_dot ? "svg" : "dot");
    bool want_svg = !has_extension(file, ".dot");
    if (!dot) {
        say("%s: no grouping diagram was kept", app->name);
        return 1;
    }
    if (want_svg && have_dot) {
        if (make_parent(file) || dot_to_svg(dot, file)) {
            say("dot could not write %s", file);
            return 1;
        }
        say("wrote the grouping diagram %s (SVG, Graphviz dot)", file);
        return 0;
    }
    if (want_svg)
        say("Graphviz's dot is not on PATH: %s gets the DOT text (install graphviz "
            "for SVG)", file);
    if (write_text(file, dot))
        return 1;
    say("wrote the grouping diagram %s (DOT text)", file);
    return 0;
}

static int cmd_explain(const options *o)
{
    const pm_sample_app *app = find_app(o->app);
    if (!app)
        return 2;
    int64_t rows = o->rows ? o->rows : app->paper_rows, cols = o->cols ? o->cols : app->paper_cols;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? app->build(ctx) : NULL;
    if (!p) {
        say("%s cannot be built: %s", app->name, ctx ? pm_ctx_errmsg(ctx) : "out of memory");
        pm_ctx_free(ctx);
        return 1;
    }
    pm_value params[16];
    if (pm_pipeline_nparams(p) > 16) {
        pm_ctx_free(ctx);
        return 1;
    }
    app->params(rows, cols, params);
    pm_jit *jit = new_jit(o);
    if (!jit) {
        pm_ctx_free(ctx);
        return 1;
    }
    /* the compile's per-step times, on stderr; a compile, not a load from a disk cache
     * (which keeps no texts) */
    setenv("PM_TIME", "1", 0);
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = "";
    pm_jit_set_policy(jit, &policy, NULL);
    pm_compile_options co = compile_options(o);
    /* the texts shown below, kept (a compile makes none unless asked) */
    co.keep = o->phases ? "graph,groups,storage,dot,domains,schedule,ast,lower,llvm"
                        : "graph,groups,storage,dot";
    pm_error err;
    say("%s: compiling for %lld x %lld", app->name, (long long)rows, (long long)cols);
    pm_kernel *k = pm_jit_compile(jit, p, params, &co, &err);
    int rc = 0;
    if (!k) {
        say("%s: %s: %s", app->name, pm_status_name(err.status), err.message);
        rc = 1;
    }
    if (!rc && pm_kernel_dump(k, "groups") == NULL) {
        say("%s: the compiler's texts are not available", app->name);
        rc = 1;
    }
    if (!rc)
        print_explanation(o, app, k, rows, cols);
    if (!rc && !o->no_diagram)
        rc = write_diagram(o, app, k);
    pm_kernel_free(k);
    pm_jit_free(jit);
    pm_ctx_free(ctx);
    return rc;
}

/* ---- bench ------------------------------------------------------------------------------ */

/* The q-quantile of sorted values, linearly interpolated. */
static double quantile(const double *v, int n, double q)
{
    double at = q * (n - 1);
    int lo = (int)floor(at);
    int hi = lo + 1 < n ? lo + 1 : lo;
    return v[lo] + (v[hi] - v[lo]) * (at - lo);
}

static int cmd_bench(const options *o)
{
    const pm_sample_app *app = find_app(o->app);
    if (!app)
        return 2;
    int64_t rows = o->rows ? o->rows : app->paper_rows, cols = o->cols ? o->cols : app->paper_cols;
    int runs = o->runs ? o->runs : 10;
    if (rows < app->min_rows || cols < app->min_cols) {
        say("%s needs at least %lld x %lld, not %lld x %lld", app->name, (long long)app->min_rows,
            (long long)app->min_cols, (long long)rows, (long long)cols);
        return 2;
    }
    app_run r;
    say("%s: making the inputs at %lld x %lld", app->name, (long long)rows, (long long)cols);
    if (app_prepare(&r, app, rows, cols, NULL, false)) {
        app_free(&r);
        return 1;
    }
    pm_jit *jit = new_jit(o);
    if (!jit) {
        app_free(&r);
        return 1;
    }
    /* a compile, not a load: no disk cache */
    pm_cache_policy policy = pm_cache_policy_default();
    policy.disk_dir = "";
    pm_error err;
    pm_jit_set_policy(jit, &policy, &err);
    pm_compile_options co = compile_options(o);
    say("%s: compiling", app->name);
    pm_kernel *k = pm_jit_compile(jit, r.p, r.params, &co, &err);
    double *times = calloc((size_t)runs, sizeof *times);
    int rc = 0;
    if (!k || !times) {
        say("%s: %s", app->name, k ? "out of memory" : err.message);
        rc = 1;
    }
    double compile_ms = k ? pm_kernel_compile_ms(k) : 0;
    if (!rc) {
        say_ready(app->name, k, "; warm-up run");
        rc = pm_kernel_run(k, r.params, r.in, r.out, &err) == PM_OK ? 0 : 1;
    }
    for (int i = 0; i < runs && !rc; i++) {
        double t0 = now_ms();
        if (pm_kernel_run(k, r.params, r.in, r.out, &err) != PM_OK)
            rc = 1;
        times[i] = now_ms() - t0;
    }
    if (rc && k)
        say("%s: %s", app->name, err.message);
    if (!rc) {
        qsort(times, (size_t)runs, sizeof *times, compare_doubles);
        double med = quantile(times, runs, 0.5), q1 = quantile(times, runs, 0.25),
               q3 = quantile(times, runs, 0.75);
        char threads[32];
        snprintf(threads, sizeof threads, o->threads ? "%d" : "all", o->threads);
        printf("%s %lld x %lld, %s threads%s: compile %.1f ms; run median %.3f ms, IQR %.3f ms "
               "(%.3f .. %.3f), min %.3f ms, %d runs\n", app->name, (long long)rows,
               (long long)cols, threads, o->unfused ? ", unfused" : "", compile_ms, med, q3 - q1,
               q1, q3, times[0], runs);
    }
    free(times);
    pm_kernel_free(k);
    pm_jit_free(jit);
    app_free(&r);
    return rc;
}

/* ---- apps and main ------------------------------------------------------------------------- */

static int cmd_apps(void)
{
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    printf("%-16s %-25s %-10s %-10s %s\n", "app", "title", "smallest", "paper", "input from a picture");
    for (int i = 0; i < n; i++) {
        char small[32], paper[32];
        snprintf(small, sizeof small, "%lldx%lld", (long long)apps[i].min_rows,
                 (long long)apps[i].min_cols);
        snprintf(paper, sizeof paper, "%lldx%lld", (long long)apps[i].paper_rows,
                 (long long)apps[i].paper_cols);
        printf("%-16s %-25s %-10s %-10s %s\n", apps[i].name, apps[i].title, small, paper,
               app_input(apps[i].name));
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    options o;
    memset(&o, 0, sizeof o);
    o.threshold = -1;
    if (strcmp(base, "run_sample") == 0) { /* the old driver: `polymage sample` */
        prog = "run_sample";
        int rc = parse(CMD_SAMPLE, argc - 1, argv + 1, &o, help_sample);
        return rc < 0 ? 0 : rc ? rc : cmd_sample(&o);
    }
    if (argc < 2) {
        help_main(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        help_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("polymage %s (build %s)\n", pm_version(), pm_build_id());
        return 0;
    }
    static const struct {
        const char *name;
        int id;
        void (*help)(FILE *);
    } cmds[] = {{"run", CMD_RUN, help_run},
                {"sample", CMD_SAMPLE, help_sample},
                {"explain", CMD_EXPLAIN, help_explain},
                {"bench", CMD_BENCH, help_bench}};
    if (strcmp(cmd, "help") == 0) {
        const char *topic = argc > 2 ? argv[2] : NULL;
        if (!topic) {
            help_main(stdout);
            return 0;
        }
        if (strcmp(topic, "apps") == 0) {
            help_apps(stdout);
            return 0;
        }
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (strcmp(topic, cmds[i].name) == 0) {
                cmds[i].help(stdout);
                return 0;
            }
        say("no command named %s", topic);
        help_main(stderr);
        return 2;
    }
    if (strcmp(cmd, "apps") == 0) {
        if (argc > 2 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
            help_apps(stdout);
            return 0;
        }
        if (argc > 2) {
            say("apps takes no arguments");
            return 2;
        }
        return cmd_apps();
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(cmd, cmds[i].name) != 0)
            continue;
        int rc = parse(cmds[i].id, argc - 2, argv + 2, &o, cmds[i].help);
        if (rc)
            return rc < 0 ? 0 : rc;
        switch (cmds[i].id) {
        case CMD_RUN: return cmd_run(&o);
        case CMD_SAMPLE: return cmd_sample(&o);
        case CMD_EXPLAIN: return cmd_explain(&o);
        default: return cmd_bench(&o);
        }
    }
    say("no command named %s", cmd);
    help_main(stderr);
    return 2;
}
