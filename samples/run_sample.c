/* run_sample.c — runs a sample app on the generated default photo and writes PNGs.
 *
 *   run_sample [app] [--rows N --cols N] [--out DIR] [--threads N] [--interp] [--check]
 *              [--print]
 *
 * Builds the app (default harris), makes its inputs at the app's quick size (or the
 * given one), JIT-compiles it (or, with --interp, runs the reference interpreter),
 * prints the compile time and the run time, and writes DIR/<app>_input.png and
 * DIR/<app>_output.png (Harris also writes <app>_response.png). --check also runs the
 * interpreter and reports the largest difference from the compiled output. --print lists
 * the pipeline first. The engine is chosen in run_engine(). */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include "samples.h"
#include "image_io.h"

#include <errno.h>
#include <sys/stat.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum engine { ENGINE_JIT, ENGINE_INTERP } engine;

typedef struct options {
    const char *app;
    int64_t rows, cols; /* 0 = the app's quick size */
    const char *out_dir;
    engine engine;
    int threads;       /* 0 = all cores */
    bool check, print;
    bool unfused;      /* compile with fusion off                     */
    int tile[2];       /* tile sizes, 0 = the model's                  */
} options;

static void usage(FILE *to)
{
    fprintf(to, "usage: run_sample [app] [--rows N --cols N] [--out DIR] [--threads N] [--interp] "
                "[--check] [--print] [--unfused] [--tile A,B]\n"
                "apps:");
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    for (int i = 0; i < n; i++)
        fprintf(to, " %s", apps[i].name);
    fprintf(to, "\n");
}

/* 0 on success, 2 (with a message) on a bad command line. */
static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.app = "harris", .out_dir = ".", .engine = ENGINE_JIT};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if ((strcmp(a, "--rows") == 0 || strcmp(a, "--cols") == 0) && has_value) {
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 1) {
                fprintf(stderr, "run_sample: %s needs a positive integer, got %s\n", a, argv[i]);
                return 2;
            }
            *(strcmp(a, "--rows") == 0 ? &o->rows : &o->cols) = v;
        } else if (strcmp(a, "--out") == 0 && has_value) {
            o->out_dir = argv[++i];
        } else if (strcmp(a, "--threads") == 0 && has_value) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 1024) {
                fprintf(stderr, "run_sample: --threads needs a count, got %s\n", argv[i]);
                return 2;
            }
            o->threads = (int)v;
        } else if (strcmp(a, "--unfused") == 0) {
            o->unfused = true;
        } else if (strcmp(a, "--tile") == 0 && has_value) {
            if (sscanf(argv[++i], "%d,%d", &o->tile[0], &o->tile[1]) < 1 || o->tile[0] < 0 ||
                o->tile[1] < 0) {
                fprintf(stderr, "run_sample: --tile needs sizes A,B, got %s\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "--interp") == 0) {
            o->engine = ENGINE_INTERP;
        } else if (strcmp(a, "--check") == 0) {
            o->check = true;
        } else if (strcmp(a, "--print") == 0) {
            o->print = true;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (a[0] != '-') {
            o->app = a;
        } else {
            fprintf(stderr, "run_sample: unknown or incomplete option %s\n", a);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

static double now_ms(void)
{
    struct timespec t; /* C11's clock; no POSIX feature macros needed */
    timespec_get(&t, TIME_UTC);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* ---- buffers --------------------------------------------------------------------------- */

static size_t buffer_bytes(const pm_buffer *b)
{
    return (size_t)pm_sample_buffer_count(b) * pm_type_size(b->type);
}

/* ---- pictures ---------------------------------------------------------------------------- */

/* A buffer as a picture: pm_sample_render's rule (the image service's too), written
 * through pm_write_png. */
typedef struct rendered {
    uint8_t *px;
    int64_t rows, cols;
    int channels;
} rendered;

static float rendered_pixel(void *user, int c, int64_t x, int64_t y)
{
    const rendered *r = user;
    return (float)r->px[(x * r->cols + y) * r->channels + c] / 255.0f;
}

static int write_picture(const char *path, const pm_buffer *b, bool bgr)
{
    rendered r = {0};
    r.px = pm_sample_render(b, bgr, &r.rows, &r.cols, &r.channels);
    if (!r.px)
        return -1;
    int rc = pm_write_png(path, r.rows, r.cols, r.channels, rendered_pixel, &r);
    free(r.px);
    return rc;
}

/* Harris: the grey input, dimmed, with every corner (a 5x5 local maximum of the response
 * above 5% of the strongest) marked by a red square, so corners are visible at a glance
 * (weaker thresholds mark every brick of the sample photo's house). */
typedef struct corners {
    const float *gray, *response;
    uint8_t *mark;
    int64_t rows, cols;
    float scale; /* 1 / the strongest |response| */
} corners;

static float corners_pixel(void *user, int c, int64_t x, int64_t y)
{
    const corners *k = user;
    if (k->mark[x * k->cols + y])
        return c == 0 ? 1.0f : 0.0f;
    return 0.35f + 0.5f * k->gray[x * k->cols + y];
}

/* The response map: sign-preserving cube root, so weak edges and strong corners both show
 * (0.5 is zero, brighter is corner-like, darker is edge-like). */
static float response_pixel(void *user, int c, int64_t x, int64_t y)
{
    (void)c;
    const corners *k = user;
    return 0.5f + 0.5f * cbrtf(k->response[x * k->cols + y] * k->scale);
}

static int write_harris(const char *dir, const char *name, const pm_buffer *in,
                        const pm_buffer *out, int *ncorners)
{
    corners k = {in->data, out->data, NULL, out->extent[0], out->extent[1], 1};
    k.mark = calloc((size_t)(k.rows * k.cols) + 1, 1);
    if (!k.mark)
        return -1;
    float best = 0;
    for (int64_t i = 0; i < k.rows * k.cols; i++)
        best = fabsf(k.response[i]) > best ? fabsf(k.response[i]) : best;
    *ncorners = 0;
    for (int64_t x = 2; x + 2 < k.rows; x++)
        for (int64_t y = 2; y + 2 < k.cols; y++) {
            float v = k.response[x * k.cols + y];
            bool peak = v > 0.05f * best;
            for (int dx = -2; dx <= 2 && peak; dx++)
                for (int dy = -2; dy <= 2 && peak; dy++)
                    if ((dx || dy) && k.response[(x + dx) * k.cols + y + dy] >= v)
                        peak = false;
            if (!peak)
                continue;
            ++*ncorners;
            for (int64_t i = x - 2; i <= x + 2; i++)
                for (int64_t j = y - 2; j <= y + 2; j++)
                    if (i >= 0 && i < k.rows && j >= 0 && j < k.cols &&
                        (i == x - 2 || i == x + 2 || j == y - 2 || j == y + 2))
                        k.mark[i * k.cols + j] = 1;
        }
    k.scale = best > 0 ? 1 / best : 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s_output.png", dir, name);
    int rc = pm_write_png(path, k.rows, k.cols, 3, corners_pixel, &k);
    snprintf(path, sizeof path, "%s/%s_response.png", dir, name);
    rc |= pm_write_png(path, k.rows, k.cols, 1, response_pixel, &k);
    free(k.mark);
    return rc;
}

/* ---- running ------------------------------------------------------------------------------- */

/* Times of one engine's work, for the report. */
typedef struct timing {
    double compile_ms;  /* JIT only                                   */
    double first_ms;    /* the first run (JIT: includes first-touch)  */
    double best_ms;     /* best of the timed runs                     */
    int runs;
} timing;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Runs the pipeline with the chosen engine. The JIT compiles for these very sizes, runs
 * once, then five more times to show the steady state (scratch buffers reused). */
static pm_status run_engine(const options *o, pm_pipeline *p, const pm_value *params,
                            pm_buffer *inputs, pm_buffer *outputs, pm_ctx *ctx, char *msg,
                            size_t msg_size, timing *t)
{
    memset(t, 0, sizeof *t);
    switch (o->engine) {
    case ENGINE_INTERP: {
        double t0 = now_ms();
        pm_status st = pm_interpret(p, params, inputs, outputs);
        t->first_ms = t->best_ms = now_ms() - t0;
        t->runs = 1;
        snprintf(msg, msg_size, "%s", pm_ctx_errmsg(ctx));
        return st;
    }
    case ENGINE_JIT: {
        pm_error err;
        pm_jit_options jo = pm_jit_options_default();
        jo.threads = o->threads;
        pm_jit *jit = pm_jit_new(&jo, &err);
        if (!jit) {
            snprintf(msg, msg_size, "%s", err.message);
            return err.status;
        }
        pm_compile_options co = pm_compile_options_default();
        co.fusion = !o->unfused;
        co.tile_size[0] = o->tile[0];
        co.tile_size[1] = o->tile[1];
        pm_kernel *k = pm_jit_compile(jit, p, params, &co, &err);
        pm_status st = k ? PM_OK : err.status;
        if (k) {
            t->compile_ms = pm_kernel_compile_ms(k);
            double times[6];
            for (int r = 0; r < 6 && st == PM_OK; r++) {
                double t0 = now_ms();
                st = pm_kernel_run(k, params, inputs, outputs, &err);
                times[r] = now_ms() - t0;
                t->runs = r + 1;
            }
            if (st == PM_OK) {
                t->first_ms = times[0];
                qsort(times + 1, 5, sizeof times[0], compare_doubles);
                t->best_ms = times[1];
            }
        }
        if (st != PM_OK)
            snprintf(msg, msg_size, "%s", err.message);
        pm_kernel_free(k);
        pm_jit_free(jit);
        return st;
    }
    }
    snprintf(msg, msg_size, "unknown engine");
    return PM_ERR_MISUSE;
}

/* Largest difference between the compiled outputs and the interpreter's. */
static double check_against_interpreter(pm_pipeline *p, const pm_value *params,
                                        pm_buffer *inputs, const pm_buffer *outputs, int nout,
                                        pm_ctx *ctx)
{
    double worst = 0;
    pm_buffer *ref = calloc((size_t)nout, sizeof *ref);
    bool ok = ref != NULL;
    for (int i = 0; i < nout && ok; i++) {
        ref[i] = pm_sample_buffer(p, 1, i, params);
        ok = ref[i].data != NULL;
        if (ok) /* the same "never written" points as the compiled output */
            memcpy(ref[i].data, outputs[i].data, buffer_bytes(&outputs[i]));
    }
    if (!ok || pm_interpret(p, params, inputs, ref) != PM_OK) {
        fprintf(stderr, "run_sample: interpreter: %s\n", pm_ctx_errmsg(ctx));
        worst = INFINITY;
    }
    for (int i = 0; i < nout && ok && worst != INFINITY; i++) {
        double d = pm_sample_buffer_maxdiff(&ref[i], &outputs[i]);
        worst = d > worst ? d : worst;
    }
    for (int i = 0; ref && i < nout; i++)
        free(ref[i].data);
    free(ref);
    return worst;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_options(argc, argv, &o);
    if (rc)
        return rc;
    const pm_sample_app *app = pm_sample_find(o.app);
    if (!app) {
        fprintf(stderr, "run_sample: no sample named %s\n", o.app);
        usage(stderr);
        return 2;
    }
    int64_t rows = o.rows ? o.rows : app->quick_rows, cols = o.cols ? o.cols : app->quick_cols;
    /* --out into a missing folder: make it (and its parents), or say why not */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", o.out_dir);
    if (!*dir) {
        fprintf(stderr, "run_sample: --out needs a folder\n");
        return 2;
    }
    for (char *q = dir + 1;; q++)
        if (*q == '/' || !*q) {
            char c = *q;
            *q = 0;
            if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                fprintf(stderr, "run_sample: cannot make the output folder %s: %s\n", dir,
                        strerror(errno));
                return 1;
            }
            if (!(*q = c))
                break;
        }

    pm_ctx *ctx = pm_ctx_new();
    if (!ctx)
        return 1;
    pm_pipeline *p = app->build(ctx);
    if (!p) {
        fprintf(stderr, "run_sample: %s: %s\n", app->name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return 1;
    }
    if (o.print) {
        char *text = pm_pipeline_to_string(p);
        printf("%s", text ? text : "");
        free(text);
    }
    int nparams = pm_pipeline_nparams(p), nin = pm_pipeline_ninputs(p);
    int nout = pm_pipeline_noutputs(p);
    pm_value *params = calloc((size_t)nparams + 1, sizeof *params);
    pm_buffer *inputs = calloc((size_t)nin + 1, sizeof *inputs);
    pm_buffer *outputs = calloc((size_t)nout + 1, sizeof *outputs);
    if (!params || !inputs || !outputs) {
        fprintf(stderr, "run_sample: out of memory\n");
        return 1;
    }
    app->params(rows, cols, params);
    rc = 0;
    for (int i = 0; i < nin && !rc; i++) {
        inputs[i] = pm_sample_buffer(p, 0, i, params);
        if (!inputs[i].data)
            rc = 1;
        else
            app->fill_input(i, &inputs[i], params);
    }
    for (int i = 0; i < nout && !rc; i++) {
        outputs[i] = pm_sample_buffer(p, 1, i, params);
        rc = outputs[i].data ? 0 : 1;
    }
    if (rc) {
        fprintf(stderr, "run_sample: %s: cannot make buffers for %lld x %lld: %s\n", app->name,
                (long long)rows, (long long)cols, pm_ctx_errmsg(ctx));
    } else {
        char msg[1024] = "";
        timing t;
        pm_status st = run_engine(&o, p, params, inputs, outputs, ctx, msg, sizeof msg, &t);
        if (st != PM_OK) {
            fprintf(stderr, "run_sample: %s: %s: %s\n", app->name, pm_status_name(st), msg);
            rc = 1;
        } else {
            if (o.engine == ENGINE_JIT)
            {
                char threads[32];
                snprintf(threads, sizeof threads, o.threads ? "%d" : "all", o.threads);
                printf("%s (%s) %lld x %lld, %s threads: JIT compile %.1f ms, first run %.2f ms, "
                       "best of %d runs %.2f ms\n", app->name, app->title, (long long)rows,
                       (long long)cols, threads, t.compile_ms, t.first_ms, t.runs - 1, t.best_ms);
            }
            else
                printf("%s (%s) %lld x %lld: interpreter %.1f ms\n", app->name, app->title,
                       (long long)rows, (long long)cols, t.best_ms);
            if (o.check && o.engine == ENGINE_JIT) {
                double d = check_against_interpreter(p, params, inputs, outputs, nout, ctx);
                printf("check: largest difference from the interpreter %g (tolerance %g)\n", d,
                       app->tolerance);
                if (!(d <= app->tolerance))
                    rc = 1;
            }
            char path[4096];
            snprintf(path, sizeof path, "%s/%s_input.png", o.out_dir, app->name);
            /* camera_pipe's output and local_laplacian's input and output are BGR */
            bool bgr_in = strcmp(app->name, "local_laplacian") == 0;
            bool bgr_out = bgr_in || strcmp(app->name, "camera_pipe") == 0;
            int wrc = write_picture(path, &inputs[0], bgr_in);
            if (strcmp(app->name, "harris") == 0) {
                int ncorners = 0;
                wrc |= write_harris(o.out_dir, app->name, &inputs[0], &outputs[0], &ncorners);
                printf("%d corners marked\n", ncorners);
            } else {
                snprintf(path, sizeof path, "%s/%s_output.png", o.out_dir, app->name);
                wrc |= write_picture(path, &outputs[0], bgr_out);
            }
            if (wrc) {
                fprintf(stderr, "run_sample: could not write the PNGs into %s\n", o.out_dir);
                rc = 1;
            } else {
                printf("wrote %s/%s_input.png and %s/%s_output.png\n", o.out_dir, app->name,
                       o.out_dir, app->name);
            }
        }
    }
    for (int i = 0; i < nin; i++)
        free(inputs[i].data);
    for (int i = 0; i < nout; i++)
        free(outputs[i].data);
    free(params);
    free(inputs);
    free(outputs);
    pm_ctx_free(ctx);
    return rc;
}
