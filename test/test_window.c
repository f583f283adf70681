/* test_window.c — window forms (pm_pipeline_window, pm_kernel_run_window, frontend/window.h):
 *  - every sample app (and the blur and Sobel examples) at odd sizes: the whole output
 *    as one window, each window of a grid of odd windows, and a few at random offsets,
 *    their inputs cut from the whole inputs by the buffer origins and shapes, run by a
 *    window kernel, equal the same points of the interpreter's output bit for bit
 *    (integer and float outputs alike: a window form rounds as the interpreter does);
 *    (the halo against brute force: python/tests/test_dask.py);
 *    (unsharp mask, Harris, camera pipe here; pyramid blending in python/tests/test_dask.py);
 *  - refusals: histogram equalization and the bilateral grid name the stage that reads
 *    the whole image; local Laplacian names the stage where isl's demand analysis passed
 *    its budget; a window outside the outputs; a kernel of a whole-image pipeline;
 *  - the window form's canonical text is the base's plus `window`, and reads back.
 */
#include "check.h"
#include "samples.h"
#include "examples/examples.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies the block of `whole` starting at origin with the extents of `block`. */
static void cut(const pm_buffer *whole, const int64_t *origin, pm_buffer *block)
{
    int n = whole->ndims;
    int64_t count = check_buffer_count(block);
    size_t es = pm_type_size(whole->type);
    int64_t idx[PM_MAX_DIMS] = {0};
    for (int64_t i = 0; i < count; i++) {
        int64_t src = 0, dst = 0, ws = 1, bs = 1;
        for (int d = n - 1; d >= 0; d--) {
            src += (idx[d] + origin[d]) * ws;
            dst += idx[d] * bs;
            ws *= whole->extent[d];
            bs *= block->extent[d];
        }
        memcpy((char *)block->data + dst * (int64_t)es, (char *)whole->data + src * (int64_t)es, es);
        for (int d = n - 1; d >= 0; d--) {
            if (++idx[d] < block->extent[d])
                break;
            idx[d] = 0;
        }
    }
}

/* The window's part of `whole` (offset lo, the extents of `win`) equals `win`, bitwise. */
static bool window_equal(const pm_buffer *whole, const int64_t *lo, const pm_buffer *win)
{
    pm_buffer part = check_buffer_new(whole->type, whole->ndims, win->extent);
    cut(whole, lo, &part);
    size_t bytes = (size_t)check_buffer_count(win) * pm_type_size(win->type);
    bool same = memcmp(part.data, win->data, bytes) == 0;
    check_buffer_free(&part);
    return same;
}

typedef struct setup {
    pm_pipeline *p, *pw;
    int np;                  /* base parameters                                         */
    pm_value params[16];
    pm_buffer in[8], out[8]; /* whole inputs, the whole kernel's outputs                */
    int ndims;               /* output rank                                             */
    int64_t halo_lo[PM_MAX_DIMS], halo_hi[PM_MAX_DIMS];
} setup;

/* Runs window kernel kw at offset lo with window extents n; compares with the whole run. */
static bool run_window(pm_kernel *kw, setup *s, const int64_t *lo, const int64_t *n,
                       const char *what, bool poison)
{
    pm_value all[32];
    memcpy(all, s->params, sizeof *all * (size_t)s->np);
    for (int d = 0; d < s->ndims; d++) {
        all[s->np + 2 * d] = PM_I(lo[d]);
        all[s->np + 2 * d + 1] = PM_I(n[d]);
    }
    int ni = pm_pipeline_ninputs(s->pw), no = pm_pipeline_noutputs(s->pw);
    pm_buffer in[8], out[8];
    bool ok = true;
    for (int i = 0; i < ni; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS], org[PM_MAX_DIMS];
        ok &= pm_pipeline_buffer_shape(s->pw, 0, i, all, &nd, ext) == PM_OK;
        ok &= pm_pipeline_buffer_origin(s->pw, 0, i, all, &nd, org) == PM_OK;
        in[i] = check_buffer_new(s->in[i].type, nd, ext);
        cut(&s->in[i], org, &in[i]);
        (void)poison;
    }
    for (int o = 0; o < no; o++)
        out[o] = check_buffer_new(s->out[o].type, s->ndims, n);
    pm_error err;
    pm_status st = pm_kernel_run_window(kw, s->params, lo, in, out, &err);
    if (st != PM_OK) {
        fprintf(stderr, "  %s: %s\n", what, err.message);
        ok = false;
    }
    for (int o = 0; o < no && ok; o++)
        if (!window_equal(&s->out[o], lo, &out[o])) {
            pm_buffer part = check_buffer_new(out[o].type, out[o].ndims, out[o].extent);
            cut(&s->out[o], lo, &part);
            int64_t cnt = check_buffer_count(&part), bad = 0;
            for (int64_t i = 0; i < cnt; i++)
                if (pm_sample_element(&part, i) != pm_sample_element(&out[o], i) &&
                    !(isnan(pm_sample_element(&part, i)) && isnan(pm_sample_element(&out[o], i)))) {
                    if (bad++ < 3)
                        fprintf(stderr, "    element %lld: %g, window %g\n", (long long)i,
                                pm_sample_element(&part, i), pm_sample_element(&out[o], i));
                }
            fprintf(stderr, "    %lld of %lld differ\n", (long long)bad, (long long)cnt);
            check_buffer_free(&part);
            fprintf(stderr, "  %s: output %d differs at window", what, o);
            for (int d = 0; d < s->ndims; d++)
                fprintf(stderr, " [%lld, +%lld)", (long long)lo[d], (long long)n[d]);
            fprintf(stderr, "\n");
            ok = false;
        }
    for (int i = 0; i < ni; i++)
        check_buffer_free(&in[i]);
    for (int o = 0; o < no; o++)
        check_buffer_free(&out[o]);
    return ok;
}

/* The whole run and a grid of windows of `chunk` points (the last ones shorter). */
static bool windows_right(pm_jit *jit, setup *s, const int64_t *chunk, int threads,
                          const char *what)
{
    pm_error err;
    pm_compile_options o = pm_compile_options_default();
    o.threads = threads;
    /* The reference: the interpreter (a window form rounds every float operation as it
     * does, so windows equal it bit for bit). */
    if (pm_interpret(s->p, s->params, s->in, s->out) != PM_OK) {
        fprintf(stderr, "  %s: the interpreter failed\n", what);
        return false;
    }
    bool ok = true;
    pm_value est[32];
    memcpy(est, s->params, sizeof *est * (size_t)s->np);
    for (int d = 0; d < s->ndims; d++) {
        est[s->np + 2 * d] = PM_I(0);
        est[s->np + 2 * d + 1] = PM_I(chunk[d] < s->out[0].extent[d] ? chunk[d] : s->out[0].extent[d]);
    }
    pm_kernel *kw = pm_jit_compile(jit, s->pw, est, &o, &err);
    if (!kw) {
        fprintf(stderr, "  %s window form: %s\n", what, err.message);
        return false;
    }
    int64_t lo[PM_MAX_DIMS] = {0}, n[PM_MAX_DIMS];
    int count = 0;
    /* the whole output as one window first */
    ok &= run_window(kw, s, lo, s->out[0].extent, what, false);
    for (;;) {
        for (int d = 0; d < s->ndims; d++) {
            int64_t c = chunk[d] < s->out[0].extent[d] ? chunk[d] : s->out[0].extent[d];
            n[d] = lo[d] + c <= s->out[0].extent[d] ? c : s->out[0].extent[d] - lo[d];
        }
        ok &= run_window(kw, s, lo, n, what, false);
        count++;
        int d = s->ndims - 1;
        for (; d >= 0; d--) {
            int64_t c = chunk[d] < s->out[0].extent[d] ? chunk[d] : s->out[0].extent[d];
            lo[d] += c;
            if (lo[d] < s->out[0].extent[d])
                break;
            lo[d] = 0;
        }
        if (d < 0 || !ok)
            break;
    }
    /* A few windows at random offsets and of random extents. */
    unsigned seed = 12345u;
    for (int t = 0; t < 6 && ok; t++) {
        for (int d = 0; d < s->ndims; d++) {
            int64_t e = s->out[0].extent[d];
            seed = seed * 1103515245u + 12345u;
            n[d] = 1 + (int64_t)((seed >> 8) % (unsigned)e);
            seed = seed * 1103515245u + 12345u;
            lo[d] = (int64_t)((seed >> 8) % (unsigned)(e - n[d] + 1));
        }
        ok &= run_window(kw, s, lo, n, what, false);
        count++;
    }
    /* One point at each corner and at the centre (smaller than a vector and a tile). */
    for (int c = 0; c < 5 && ok; c++) {
        for (int d = 0; d < s->ndims; d++) {
            int64_t e = s->out[0].extent[d];
            n[d] = 1;
            lo[d] = c == 4 ? e / 2 : ((c >> (d & 1)) & 1) ? e - 1 : 0;
        }
        ok &= run_window(kw, s, lo, n, what, false);
    }
    pm_kernel_free(kw);
    return ok;
}

static bool setup_app(setup *s, pm_ctx *ctx, pm_pipeline *p, const pm_sample_app *app,
                      int64_t rows, int64_t cols)
{
    memset(s, 0, sizeof *s);
    s->p = p;
    s->np = pm_pipeline_nparams(p);
    if (app) {
        app->params(rows, cols, s->params);
    } else {
        s->params[0] = PM_I(rows);
        s->params[1] = PM_I(cols);
    }
    for (int i = 0; i < pm_pipeline_ninputs(p); i++) {
        s->in[i] = pm_sample_buffer(p, 0, i, s->params);
        if (app)
            app->fill_input(i, &s->in[i], s->params);
        else
            check_fill(&s->in[i], 7u + (unsigned)i, false);
    }
    for (int o = 0; o < pm_pipeline_noutputs(p); o++)
        s->out[o] = pm_sample_buffer(p, 1, o, s->params);
    s->ndims = s->out[0].ndims;
    pm_status st = pm_pipeline_window(p, &s->pw);
    if (st != PM_OK) {
        fprintf(stderr, "  %s: %s\n", pm_pipeline_name(p), pm_ctx_errmsg(ctx));
        return false;
    }
    return pm_pipeline_halo(p, s->ndims, s->halo_lo, s->halo_hi) == PM_OK;
}

static void setup_free(setup *s)
{
    for (int i = 0; i < pm_pipeline_ninputs(s->p); i++)
        free(s->in[i].data);
    for (int o = 0; o < pm_pipeline_noutputs(s->p); o++)
        free(s->out[o].data);
}

static void test_apps(pm_jit *jit)
{
    int napps;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    for (int a = 0; a < napps; a++) {
        const pm_sample_app *app = &apps[a];
        const char *only = getenv("PM_WINDOW_APP");
        if (only ? strcmp(only, app->name) != 0
                 : strcmp(app->name, "unsharp_mask") && strcmp(app->name, "harris") &&
                       strcmp(app->name, "camera_pipe"))
            continue; /* pyramid blending runs on windows in python/tests/test_dask.py */
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = app->build(ctx);
        int64_t rows = app->min_rows > 61 ? app->min_rows + 3 : 61;
        int64_t cols = app->min_cols > 83 ? app->min_cols + 5 : 83;
        setup s;
        char what[128];
        snprintf(what, sizeof what, "%s at %lldx%lld", app->name, (long long)rows,
                 (long long)cols);
        bool ok = setup_app(&s, ctx, p, app, rows, cols);
        if (ok) {
            fprintf(stderr, "  %s: halo", app->name);
            for (int d = 0; d < s.ndims; d++)
                fprintf(stderr, " %lld/%lld", (long long)s.halo_lo[d], (long long)s.halo_hi[d]);
            fprintf(stderr, "\n");
            int64_t chunk[PM_MAX_DIMS];
            for (int d = 0; d < s.ndims; d++)
                chunk[d] = d == s.ndims - 1 ? 37 : d == s.ndims - 2 ? 23 : 100;
            ok = windows_right(jit, &s, chunk, 2, what);
            setup_free(&s);
        }
        CHECK(ok);
        pm_ctx_free(ctx);
    }
}

static void test_examples(pm_jit *jit)
{
    pm_pipeline *(*builds[2])(pm_ctx **) = {blur_rgb_pipeline, sobel_pipeline};
    for (int b = 0; b < 2; b++) {
        static const int64_t sizes[][2] = {{45, 71}, {1, 1}, {2, 3}};
        for (int z = 0; z < 3; z++) { /* at one thread; 1x1 and 2x3 images too */
            pm_ctx *ctx = NULL;
            pm_pipeline *p = builds[b](&ctx);
            setup s;
            bool ok = setup_app(&s, ctx, p, NULL, sizes[z][0], sizes[z][1]);
            if (ok) {
                int64_t chunk[PM_MAX_DIMS] = {3, 13, 29};
                if (s.ndims == 2)
                    chunk[0] = 13, chunk[1] = 29;
                char what[96];
                snprintf(what, sizeof what, "%s at %lldx%lld", pm_pipeline_name(p),
                         (long long)sizes[z][0], (long long)sizes[z][1]);
                ok = windows_right(jit, &s, chunk, 1, what);
                setup_free(&s);
            }
            CHECK(ok);
            pm_ctx_free(ctx);
        }
    }
}

static void test_refusals(void)
{
    {   /* the bilateral grid's data-dependent cell index: refused (frontend/window.h) */
        pm_ctx *c = pm_ctx_new();
        pm_pipeline *g = pm_sample_bilateral_grid.build(c), *gw = NULL;
        CHECK(pm_pipeline_window(g, &gw) == PM_ERR_UNSUPPORTED);
        CHECK_CONTAINS(pm_ctx_errmsg(c), "stage grid");
        pm_ctx_free(c);
    }
    {   /* local Laplacian: isl's demand analysis passes its budget (frontend/window.h) in
         * seconds, and the refusal names the stage it was at */
        pm_ctx *c = pm_ctx_new();
        pm_pipeline *g = pm_sample_local_laplacian.build(c), *gw = NULL;
        CHECK(pm_pipeline_window(g, &gw) == PM_ERR_UNSUPPORTED && !gw);
        CHECK_CONTAINS(pm_ctx_errmsg(c), "budget");
        CHECK_CONTAINS(pm_ctx_errmsg(c), "of stage ");
        pm_ctx_free(c);
    }
    pm_ctx *ctx = NULL;
    pm_pipeline *p = hist_eq_pipeline(&ctx), *pw = NULL;
    CHECK(pm_pipeline_window(p, &pw) == PM_ERR_UNSUPPORTED && !pw);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "cannot run on windows");
    CHECK(strstr(pm_ctx_errmsg(ctx), "stage hist") || strstr(pm_ctx_errmsg(ctx), "stage cmin"));
    int64_t lo[2], hi[2];
    CHECK(pm_pipeline_halo(p, 2, lo, hi) == PM_ERR_UNSUPPORTED);
    pm_ctx_free(ctx);

    p = sobel_pipeline(&ctx);
    CHECK(pm_pipeline_window(p, &pw) == PM_OK);
    size_t n = 0, nw = 0;
    const char *t = pm_pipeline_text(p, &n), *tw = pm_pipeline_text(pw, &nw);
    CHECK(nw == n + 7 && memcmp(t, tw, n) == 0 && strcmp(tw + n, "window\n") == 0);
    pm_ctx *c2 = pm_ctx_new();
    pm_pipeline *back = NULL;
    CHECK(pm_pipeline_from_text(c2, tw, nw, &back) == PM_OK);
    size_t nb = 0;
    const char *tb = back ? pm_pipeline_text(back, &nb) : "";
    CHECK(nb == nw && memcmp(tb, tw, nw) == 0);
    CHECK(pm_pipeline_halo(p, 2, lo, hi) == PM_OK && lo[0] == 1 && hi[0] == 1 && lo[1] == 1);
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    pm_value est[6] = {PM_I(20), PM_I(20), PM_I(0), PM_I(8), PM_I(0), PM_I(8)};
    pm_kernel *kw = pm_jit_compile(jit, pw, est, NULL, &err);
    pm_kernel *k = pm_jit_compile(jit, p, est, NULL, &err);
    CHECK(kw && k);
    pm_buffer in = check_buffer_new(PM_U8, 2, (int64_t[]){20, 20});
    pm_buffer out = check_buffer_new(PM_U8, 2, (int64_t[]){8, 8});
    int64_t off[2] = {16, 0}; /* 16 + 8 > 20: outside */
    CHECK(pm_kernel_run_window(kw, est, off, &in, &out, &err) == PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "is not inside output");
    CHECK(pm_kernel_run_window(k, est, off, &in, &out, &err) == PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "not a kernel of a window form");
    check_buffer_free(&in);
    check_buffer_free(&out);
    pm_kernel_free(kw);
    pm_kernel_free(k);
    pm_jit_free(jit);
    pm_ctx_free(c2);
    pm_ctx_free(ctx);
}

int main(void)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    CHECK(jit != NULL);
    if (!getenv("PM_WINDOW_APP")) {
        test_refusals();
        test_examples(jit);
    }
    test_apps(jit);
    pm_jit_free(jit);
    return check_finish("test_window");
}
