/* test_optimizer.c — every schedule the optimizer can produce equals the interpreter.
 *
 * Each sample app is compiled with a covering set of optimizer settings (every value of
 * each setting at least once per app, not the cross product): tile sizes 1, 3, 16, 64,
 * 256 and larger than the image, overlap thresholds, group limits, fusion off, vector
 * widths 1/4/16, 1..3 threads, streamed outputs and prefetched reads forced on or left
 * to the model; each kernel runs at edge sizes (1x1, 1xN, odd, smaller
 * than a tile or a vector, larger than a tile) against pm_interpret. Then structural
 * checks on the "groups" dump: unsharp mask is one group with sharpen inlined, Harris is
 * one group with its products and det inlined, a transpose is never grouped with its
 * producer, a conditional stage is inlined only where its reads stay inside its case,
 * fusion off gives no tiles.
 *
 *   test_optimizer                 the covering set
 *   test_optimizer --quick         three settings, three sizes (the sanitizer build)
 *   test_optimizer APP [T0 T1 THREADS WIDTH THRESHOLD]   one setting, for debugging
 *   PM_TEST_VERBOSE=1              print each case
 */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static pm_jit *jit;
static bool verbose;

typedef struct setting {
    int tile0, tile1;       /* 0 = model */
    int threads;
    int width;              /* 0 = host */
    double threshold;       /* < 0 = default */
    int group_limit;
    int fusion;
    int stream;             /* 1 = outputs written with non-temporal stores; 0 = model */
    int prefetch;           /* 1 = every leading read of a buffer prefetched; 0 = model */
    int grouping;           /* PM_GROUPING_*; 0 = default */
} setting;

static pm_compile_options options_of(const setting *s)
{
    pm_compile_options o = pm_compile_options_default();
    o.tile_size[0] = s->tile0;
    o.tile_size[1] = s->tile1;
    o.threads = s->threads;
    o.vector_width = s->width;
    o.overlap_threshold = s->threshold;
    o.group_limit = s->group_limit;
    o.fusion = s->fusion;
    o.stream_outputs = s->stream ? 1 : -1;
    o.prefetch_reads = s->prefetch ? 1 : -1;
    o.grouping = s->grouping;
    return o;
}

static void fill_sentinel(pm_buffer *b)
{
    memset(b->data, 0x5a, (size_t)check_buffer_count(b) * pm_type_size(b->type));
}

/* Runs k and the interpreter at params; returns the largest output difference (INFINITY
 * when something failed). */
static double differential(pm_pipeline *p, pm_kernel *k, const pm_sample_app *app,
                           const pm_value *params)
{
    int ni = pm_pipeline_ninputs(p), no = pm_pipeline_noutputs(p);
    pm_buffer in[8] = {{0}}, ref[8] = {{0}}, got[8] = {{0}};
    double worst = INFINITY;
    bool ok = true;
    for (int i = 0; i < ni && ok; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        ok = pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext) == PM_OK;
        if (ok) {
            in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
            app->fill_input(i, &in[i], params);
        }
    }
    for (int i = 0; i < no && ok; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        ok = pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext) == PM_OK;
        if (ok) {
            pm_type t = pm_func_type(pm_pipeline_output(p, i));
            ref[i] = check_buffer_new(t, nd, ext);
            got[i] = check_buffer_new(t, nd, ext);
            fill_sentinel(&ref[i]);
            fill_sentinel(&got[i]);
        }
    }
    pm_error err;
    if (ok && pm_interpret(p, params, in, ref) == PM_OK) {
        if (pm_kernel_run(k, params, in, got, &err) == PM_OK) {
            worst = 0;
            for (int i = 0; i < no; i++)
                worst = fmax(worst, check_buffer_maxdiff(&ref[i], &got[i]));
        } else {
            fprintf(stderr, "  kernel: %s\n", err.message);
        }
    }
    for (int i = 0; i < ni; i++)
        check_buffer_free(&in[i]);
    for (int i = 0; i < no; i++) {
        check_buffer_free(&ref[i]);
        check_buffer_free(&got[i]);
    }
    return worst;
}

/* Tolerance per app: integer apps exact, float apps a few ulps of their range (the
 * compiled code may contract a*b+c into an fma), local Laplacian 1 LSB (its LUT index
 * makes float rounding visible). */
static double tolerance(const pm_sample_app *app)
{
    if (strcmp(app->name, "camera_pipe") == 0)
        return 0;
    if (strcmp(app->name, "local_laplacian") == 0)
        return 1;
    return 1e-4;
}

static void check_app(const pm_sample_app *app, const setting *s, const int64_t (*sizes)[2],
                      int nsizes)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    if (!CHECK(p != NULL)) {
        pm_ctx_free(ctx);
        return;
    }
    pm_value est[16];
    app->params(app->quick_rows, app->quick_cols, est);
    pm_compile_options o = options_of(s);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  %s: compile: %s\n", app->name, err.message);
        pm_ctx_free(ctx);
        return;
    }
    for (int i = 0; i < nsizes; i++) {
        pm_value params[16];
        app->params(sizes[i][0], sizes[i][1], params);
        double d = differential(p, k, app, params);
        if (verbose || !(d <= tolerance(app)))
            fprintf(stderr, "  %s %lldx%lld tile %dx%d threads %d width %d threshold %g limit %d "
                            "fusion %d stream %d: max|diff| %g\n",
                    app->name, (long long)sizes[i][0], (long long)sizes[i][1], s->tile0, s->tile1,
                    s->threads, s->width, s->threshold, s->group_limit, s->fusion, s->stream, d);
        CHECK(d <= tolerance(app));
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- structural checks on the "groups" dump ---------------------------------------- */

static const char *groups_of(pm_pipeline *p, const pm_value *est, int fusion, pm_kernel **k)
{
    pm_compile_options o = pm_compile_options_default();
    o.fusion = fusion;
    o.threads = 2;
    o.keep = "groups,ast";
    pm_error err;
    *k = pm_jit_compile(jit, p, est, &o, &err);
    if (!CHECK(*k != NULL)) {
        fprintf(stderr, "  compile: %s\n", err.message);
        return "";
    }
    const char *g = pm_kernel_dump(*k, "groups");
    return g ? g : "";
}

/* In the AST text, statement `a` is directly followed by statement `b` (same loop body). */
static bool adjacent(const char *ast, const char *a, const char *b)
{
    const char *p = ast ? strstr(ast, a) : NULL;
    if (!p)
        return false;
    p += strlen(a);
    while (*p == ' ' || *p == '\n')
        p++;
    return strncmp(p, b, strlen(b)) == 0;
}

/* The AST dump of a sample compiled (fused) at the estimates for rows x cols; malloc'd,
 * NULL on failure. */
static char *sample_ast(const char *name, int64_t rows, int64_t cols)
{
    const pm_sample_app *app = pm_sample_find(name);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    char *copy = NULL;
    if (CHECK(p != NULL)) {
        pm_value est[16];
        app->params(rows, cols, est);
        pm_kernel *k;
        groups_of(p, est, 1, &k);
        const char *ast = k ? pm_kernel_dump(k, "ast") : NULL;
        copy = ast ? malloc(strlen(ast) + 1) : NULL;
        if (copy)
            memcpy(copy, ast, strlen(ast) + 1);
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    return copy;
}

/* Harris's producers of one shape share a point loop: Iy with Ix (schedule.c), in isl's
 * AST or as one box (ast.h); the rest is inlined into the live-out. */
static void check_shared_loops(void)
{
    char *ast = sample_ast("harris", 640, 640);
    bool ok = adjacent(ast, "Iy(c2, c3);", "Ix(c2, c3);") ||
              (ast && strstr(ast, "as a box: Iy(d0, d1) Ix(d0, d1):"));
    if (!CHECK(ok))
        fprintf(stderr, "  harris: producers not in shared loops:\n%s\n", ast ? ast : "(no ast)");
    free(ast);
}

/* Box bodies (schedule.h, ast.h): a tiled group's producers become loops over their
 * footprint boxes without isl's AST. Camera pipe's fused runs of six interpolation
 * stages are one box each, and their loop still runs with vectors (isl nests the
 * template's statements in blocks: the vector emitter must see through them);
 * pyramid blending's 26 producers (22 of its big group's) are boxes, Harris's in row
 * blocks. */
/* A sample compiled (fused, 2 threads) at the estimates for rows x cols, keeping its AST
 * and LLVM dumps; NULL on failure. The caller frees it, then *ctx. */
static pm_kernel *kernel_with_dumps(const char *name, int64_t rows, int64_t cols, pm_ctx **ctx)
{
    const pm_sample_app *app = pm_sample_find(name);
    *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(*ctx) : NULL;
    if (!CHECK(p != NULL))
        return NULL;
    pm_value est[16];
    app->params(rows, cols, est);
    pm_compile_options o = pm_compile_options_default();
    o.threads = 2;
    o.keep = "ast,llvm";
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  %s: %s\n", name, err.message);
    return k;
}

static void check_box_bodies(void)
{
    pm_ctx *ctx = NULL;
    pm_kernel *k = kernel_with_dumps("camera_pipe", 1920, 2528, &ctx);
    if (k) {
        const char *ast = pm_kernel_dump(k, "ast");
        const char *ll = pm_kernel_dump(k, "llvm");
        CHECK(ast && strstr(ast, "as a box: r_gr(d0, d1) b_gr(d0, d1) r_gb(d0, d1)"));
        const char *fn = ll ? strstr(ll, "_r_gr(ptr %0)") : NULL; /* its definition */
        const char *end = fn ? strstr(fn, "\n}\n") : NULL;
        bool vectors = false;
        for (const char *q = fn; q && end && q < end && !vectors; q++)
            vectors = q[0] == '<' && q[1] >= '1' && q[1] <= '9' && strstr(q, " x ") &&
                      strstr(q, " x ") < q + 5;
        if (!CHECK(vectors))
            fprintf(stderr, "  camera pipe: the box of r_gr .. b_r runs without vectors\n");
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    ctx = NULL;
    /* pyramid blending: every producer of a tiled group but at most one is a box (the
     * groups follow the host's L2: 25 producers with 1 MiB, 27 with 2 MiB) */
    const pm_sample_app *pb = pm_sample_find("pyramid_blend");
    ctx = pm_ctx_new();
    pm_pipeline *pp = pb ? pb->build(ctx) : NULL;
    if (CHECK(pp != NULL)) {
        pm_value est[16];
        pb->params(2048, 2048, est);
        pm_kernel *kb;
        const char *groups = groups_of(pp, est, 1, &kb);
        const char *ast = kb ? pm_kernel_dump(kb, "ast") : NULL;
        int boxes = 0, producers = 0;
        for (const char *q = ast; q && (q = strstr(q, "as a box:")); q++)
            boxes++;
        for (const char *q = groups; (q = strstr(q, "\ngroup ")); q++) {
            int members = 0;
            char tiled = 0;
            if (sscanf(q + 1, "group %*d: live-out %*[^,], %d stage%*[s], %c", &members,
                       &tiled) == 2 && tiled == 'o') /* "overlapped tiles", not "untiled" */
                producers += members - 1;
        }
        if (!CHECK(producers >= 20 && boxes >= producers - 1))
            fprintf(stderr, "  pyramid blending: %d of %d producers as boxes\n", boxes,
                    producers);
        pm_kernel_free(kb);
    }
    pm_ctx_free(ctx);
    ctx = NULL;
    /* bilateral grid's blurs: boxes whose innermost loop (11 bins) has constant bounds
     * only once LLVM folds the template's: still two overlapping vectors */
    const pm_sample_app *bg = pm_sample_find("bilateral_grid");
    k = bg ? kernel_with_dumps("bilateral_grid", bg->paper_rows, bg->paper_cols, &ctx) : NULL;
    CHECK(bg != NULL);
    if (k) {
        const char *ast = pm_kernel_dump(k, "ast");
        const char *ll = pm_kernel_dump(k, "llvm");
        const char *fn = ll ? strstr(ll, "_blurx(ptr %0)") : NULL;
        const char *end = fn ? strstr(fn, "\n}\n") : NULL;
        const char *vec = fn ? strstr(fn, " x float>") : NULL;
        if (!CHECK(ast && strstr(ast, "as a box: blurx(") && vec && end && vec < end))
            fprintf(stderr, "  bilateral grid: blurx not a box or not in vectors\n");
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    /* Harris's strips run in row blocks: its box computes each block's rows at the
     * "block" mark (the row blocks' differential checks are check_row_blocks) */
    char *harris = sample_ast("harris", 6400, 6400);
    if (!CHECK(harris && strstr(harris, "// block") &&
               strstr(harris, "as a box: Iy(d0, d1) Ix(d0, d1):") &&
               strstr(harris, "in each block of 8 rows, d0 from 8 * block + 1")))
        fprintf(stderr, "  harris: no box in row blocks:\n%s\n", harris ? harris : "(no ast)");
    free(harris);
}

/* A reduction's channel dimension whose updates never meet runs innermost, unrolled, so
 * what the channels share is computed once, and its cell column runs inside the 9 x 9
 * window of contributions in blocks of 16 whose rows of 15 bins accumulate in registers
 * (schedule.c, private_rows): bilateral grid's histogram. */
static void check_histogram_channels(void)
{
    char *ast = sample_ast("bilateral_grid", 256, 256);
    if (!CHECK(ast && strstr(ast, "c1 <= floord(C - 17, 128); c1 += 1) {\n      // private\n") &&
               strstr(ast, "c4 <= min(16 * c1 + 16, (C - 1) / 8 - 1); c4 += 1) {\n") &&
               strstr(ast, "grid_update(0, c0, c4, c2, c3);\n") &&
               strstr(ast, "grid_update(1, c0, c4, c2, c3);\n")))
        fprintf(stderr, "  bilateral_grid: histogram channel not innermost and unrolled, or "
                "its cell column not in private blocks inside the window:\n%s\n",
                ast ? ast : "(no ast)");
    free(ast);
}

static void check_small_dump(const char *what, pm_pipeline *p, const char *phase,
                             const char *want, const int64_t *sizes, int nsizes, double tolerance);

/* hist(gx, gy, z) sums a 4 x 4 window of pixels per cell into a data-dependent bin z,
 * with weights 1 and 1e6 so that float sums depend on their order. The cell column gy
 * runs inside the window (schedule.c) in blocks of 16 whose rows of 4 bins accumulate in
 * registers (private_rows), which must keep every cell's updates in their order: the
 * kernel equals the interpreter exactly, with 1 and 2 threads, at sizes of N / 4
 * columns: no full block (N <= 37), one (64), two (128), three and a partial one (200). */
static void check_histogram_window(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, N);
    pm_expr *gx = pm_var(ctx, "gx"), *gy = pm_var(ctx, "gy"), *z = pm_var(ctx, "z");
    pm_expr *rgx = pm_var(ctx, "rgx"), *rgy = pm_var(ctx, "rgy"), *ri = pm_var(ctx, "ri"),
            *rj = pm_var(ctx, "rj");
    pm_expr *cells = pm_addi(pm_divi(N, 4), -1);
    pm_interval *cell = pm_interval_new(pm_int(ctx, 0), cells, 1);
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_interval *win = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_F32, 3, pm_exprs(gx, gy, z),
                                     pm_intervals(cell, cell, bins), 4,
                                     pm_exprs(rgx, rgy, ri, rj),
                                     pm_intervals(cell, cell, win, win), PM_REDUCE_SUM, NULL);
    pm_expr *px = pm_call(in, pm_add(pm_muli(rgx, 4), ri), pm_add(pm_muli(rgy, 4), rj));
    pm_expr *bin = pm_clamp(pm_cast(PM_I32, pm_mulf(px, 4)), pm_int(ctx, 0), pm_int(ctx, 3));
    pm_expr *w = pm_select(pm_eq(pm_modi(pm_add(ri, rj), 2), pm_int(ctx, 0)), pm_float(ctx, 1),
                           pm_float(ctx, 1e6));
    pm_reduction_define(hist, 3, pm_exprs(rgx, rgy, bin), pm_mul(px, w));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 3, pm_exprs(gx, gy, z),
                               pm_intervals(cell, cell, bins));
    pm_func_define_expr(out, pm_call(hist, gx, gy, z));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "window_histogram", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        fprintf(stderr, "  window_histogram: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[] = {1, 4, 7, 16, 37, 64, 128, 200};
    check_small_dump("window_histogram", p, "ast", "// private\n      for (int c2 = 0; c2 <= 3; c2 += 1)\n        for (int c3 = 0; c3 <= 3; c3 += 1)\n          for (int c4 = 16 * c1; c4 <= min(16 * c1 + 15, N / 4 - 1); c4 += 1)\n            hist_update(c0, c4, c2, c3);", sizes,
                     (int)(sizeof sizes / sizeof sizes[0]), 0);
    pm_ctx_free(ctx);
}

/* hist(x, gy, z) as check_histogram_window's, summed over three layers r0 of the picture
 * (layer r0 at rows 4x + r0): the layer loop runs outside the blocks of columns, so a
 * block's rows of bins start from what the earlier layers left (loaded, not the initial
 * value) and every cell still receives its updates in the interpreter's order. */
static void check_histogram_layers(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_F32, pm_addi(N, 3), N);
    pm_expr *gx = pm_var(ctx, "gx"), *gy = pm_var(ctx, "gy"), *z = pm_var(ctx, "z");
    pm_expr *r0 = pm_var(ctx, "r0"), *rgx = pm_var(ctx, "rgx"), *rgy = pm_var(ctx, "rgy"),
            *rj = pm_var(ctx, "rj");
    pm_interval *cell = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_divi(N, 4), -1), 1);
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 5), 1);
    pm_interval *win = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_interval *layers = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 2), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_F32, 3, pm_exprs(gx, gy, z),
                                     pm_intervals(cell, cell, bins), 4,
                                     pm_exprs(r0, rgx, rgy, rj),
                                     pm_intervals(layers, cell, cell, win), PM_REDUCE_SUM,
                                     pm_float(ctx, 0.5));
    pm_expr *px = pm_call(in, pm_add(pm_muli(rgx, 4), r0), pm_add(pm_muli(rgy, 4), rj));
    pm_expr *bin = pm_addi(pm_cast(PM_I32, pm_mulf(px, 7)), -1);
    pm_expr *w = pm_select(pm_eq(pm_modi(pm_add(r0, rj), 2), pm_int(ctx, 0)), pm_float(ctx, 1),
                           pm_float(ctx, 1e6));
    pm_reduction_define(hist, 3, pm_exprs(rgx, rgy, bin), pm_mul(px, w));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 3, pm_exprs(gx, gy, z),
                               pm_intervals(cell, cell, bins));
    pm_func_define_expr(out, pm_call(hist, gx, gy, z));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "layer_histogram", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        fprintf(stderr, "  layer_histogram: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[] = {1, 7, 64, 128, 200};
    check_small_dump("layer_histogram", p, "ast", "// private\n", sizes,
                     (int)(sizeof sizes / sizeof sizes[0]), 0);
    pm_ctx_free(ctx);
}

static void check_sample_groups(const char *name, int64_t rows, int64_t cols,
                                const char *const *want, int nwant)
{
    const pm_sample_app *app = pm_sample_find(name);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    if (CHECK(p != NULL)) {
        pm_value est[16];
        app->params(rows, cols, est);
        pm_kernel *k;
        const char *g = groups_of(p, est, 1, &k);
        for (int i = 0; i < nwant; i++)
            if (!CHECK(strstr(g, want[i]) != NULL))
                fprintf(stderr, "  %s: no \"%s\" in\n%s\n", name, want[i], g);
        pm_kernel_free(k);
        g = groups_of(p, est, 0, &k);
        CHECK(strstr(g, "overlapped tiles") == NULL);
        CHECK(strstr(g, "inlined: none") != NULL);
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* out(x, y) = t(y, x) + 1 with t(x, y) = in(x, y) * 2 + in(x + 1, y): the transpose
 * must not be grouped with its producer. */
static void check_transpose(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_expr *one = pm_int(ctx, 1);
    pm_func *in = pm_image(ctx, "in", PM_F32, pm_add(N, one), N);
    pm_interval *r = pm_interval_new(pm_int(ctx, 0), pm_sub(N, one), 1);
    pm_func *t = pm_func_new(ctx, "t", PM_F32, 2, pm_exprs(x, y), pm_intervals(r, r));
    pm_define(t, pm_case_new(NULL, pm_add(pm_mul(pm_call(in, x, y), pm_float(ctx, 2)),
                                          pm_call(in, pm_add(x, one), y))));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(r, r));
    pm_define(out, pm_case_new(NULL, pm_add(pm_call(t, y, x), pm_float(ctx, 1))));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "transpose", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        pm_value est[1] = {PM_I(512)};
        pm_kernel *k;
        const char *g = groups_of(p, est, 1, &k);
        CHECK(strstr(g, "overlapped tiles") == NULL);
        pm_kernel_free(k);
    } else {
        fprintf(stderr, "  transpose: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

static void fill_any(int index, pm_buffer *b, const pm_value *params)
{
    (void)params;
    check_fill(b, 77u + (unsigned)index, false);
}

/* A one-parameter (N) pipeline compiled at N = 256 with 1 and 2 threads: its groups dump
 * holds `want`, and the kernel equals the interpreter at each of the sizes. */
static void check_small_pipeline(const char *what, pm_pipeline *p, const char *want,
                                 const int64_t *sizes, int nsizes, double tolerance)
{
    check_small_dump(what, p, "groups", want, sizes, nsizes, tolerance);
}

/* check_small_pipeline with the `phase` dump holding `want`. */
static void check_small_dump(const char *what, pm_pipeline *p, const char *phase,
                             const char *want, const int64_t *sizes, int nsizes, double tolerance)
{
    static const pm_sample_app app = {.name = "small", .fill_input = fill_any};
    pm_value est[1] = {PM_I(256)};
    for (int threads = 1; threads <= 2; threads++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.keep = phase;
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  %s: %s\n", what, err.message);
            continue;
        }
        const char *g = pm_kernel_dump(k, phase);
        if (!CHECK(g && strstr(g, want) != NULL))
            fprintf(stderr, "  %s: no \"%s\" in\n%s\n", what, want, g ? g : "");
        for (int i = 0; i < nsizes; i++) {
            pm_value params[1] = {PM_I(sizes[i])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d <= tolerance))
                fprintf(stderr, "  %s N=%lld threads=%d: max|diff| %g\n", what,
                        (long long)sizes[i], threads, d);
        }
        pm_kernel_free(k);
    }
}

/* One-dimensional stages run their parallel loop in shares, each share with vectors
 * (llvm/parallel.c, pm_llvm_vector_range: camera pipe's tone curve ran scalar): f(x) =
 * in(x) * 3 + x and out(x) = f(N - 1 - x), a reversal that stays a group of its own; the
 * IR holds i32 vectors, and the kernel equals the interpreter at sizes below, at and
 * around a vector and with shares of odd lengths, at 1 and 2 threads. */
static void check_vector_shares(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_I32, N);
    pm_expr *x = pm_var(ctx, "x");
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, &x, &all);
    pm_func_define_expr(f, pm_add(pm_muli(pm_call(in, x), 3), x));
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 1, &x, &all);
    pm_func_define_expr(out, pm_call(f, pm_sub(pm_addi(N, -1), x)));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "vector_shares", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 2, 5, 15, 16, 17, 33, 100, 1001};
        check_small_dump("vector shares", p, "llvm", " x i32>", sizes,
                         (int)(sizeof sizes / sizeof sizes[0]), 0);
    } else {
        fprintf(stderr, "  vector_shares: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* A border case (the image's first and last rows and columns: one case whose domain is a
 * union of four pieces) becomes one statement per piece (cases.c, split_pieces), and
 * those with the interior case are the parts of one statement over the box
 * (merge_parts): the dump lists the parts edge_c0 and edge_c1_p0..p3 with their
 * intervals at a row, the pieces each a border strip (scalar code), and the kernel, its
 * border stage fused with a stencil consumer, equals the interpreter exactly at sizes
 * where pieces are empty, a single point, overlap in a corner, or meet the tiles'
 * edges. The four pieces compute the same thing with the same proofs: they share one
 * scalar body, a loop over their intervals at each row (lower.c, share_scalar_bodies). */
static void check_border_pieces(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_I32, N, N);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_expr *last = pm_addi(N, -1);
    pm_expr *border = pm_or(pm_or(pm_eq(x, pm_int(ctx, 0)), pm_eq(x, last)),
                            pm_or(pm_eq(y, pm_int(ctx, 0)), pm_eq(y, last)));
    pm_expr *inner = pm_add(pm_add(pm_call(in, pm_addi(x, -1), y), pm_call(in, pm_addi(x, 1), y)),
                            pm_add(pm_call(in, x, pm_addi(y, -1)), pm_call(in, x, pm_addi(y, 1))));
    pm_func *edge = pm_func_new(ctx, "edge", PM_I32, 2, pm_exprs(x, y), pm_intervals(all, all));
    pm_define(edge, pm_case_new(pm_not(border), inner),
              pm_case_new(border, pm_muli(pm_call(in, x, y), 3)));
    pm_expr *cx = pm_clamp(pm_addi(x, 1), pm_int(ctx, 0), last);
    pm_expr *cy = pm_clamp(pm_addi(y, -1), pm_int(ctx, 0), last);
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, pm_exprs(x, y), pm_intervals(all, all));
    pm_func_define_expr(out, pm_sub(pm_call(edge, cx, y), pm_call(edge, x, cy)));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "border_pieces", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 2, 3, 5, 17, 64, 130, 257};
        check_small_dump("border pieces", p, "domains",
                         "    5 parts, one statement for isl; per row, each part's interval of dim 1 "
                         "(\"dim\"):\n"
                         "    part 0: -1 + x >= 0, -2 + N - x >= 0, dim >= 1, dim <= -2 + N\n"
                         "      case edge_c0: [N] -> { edge_c0[x, y] : 0 < x <= -2 + N and 0 < y <= -2 + N }\n",
                         sizes, (int)(sizeof sizes / sizeof sizes[0]), 0);
        check_small_dump("border pieces", p, "domains",
                         "    part 4: 1 - N + x == 0, dim >= 1, dim <= -2 + N\n"
                         "      case edge_c1_p3: [N] -> { edge_c1_p3[x = -1 + N, y] : 0 < y <= -2 + N }\n"
                         "        free of dependences in dims 0 1, vectorizable\n"
                         "        border strip along dims 0 (scalar code)\n", sizes,
                         (int)(sizeof sizes / sizeof sizes[0]), 0);
        check_small_dump("border pieces", p, "lower",
                         "  part 1: scalar: a border strip (scalar code)\n"
                         "  part 2: scalar: a border strip (scalar code), in part 1's loop (the same body)\n"
                         "  part 3: scalar: a border strip (scalar code), in part 1's loop (the same body)\n"
                         "  part 4: scalar: a border strip (scalar code), in part 1's loop (the same body)\n",
                         sizes, (int)(sizeof sizes / sizeof sizes[0]), 0);
    } else {
        fprintf(stderr, "  border_pieces: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* Cases split by the residue of an outer dimension (up-sampling's even and odd rows,
 * here modulo K) are one statement that branches per row (cases.c, merge_row_cases):
 * each case reads only on its own rows, the odd rows reading a row further that the
 * even ones would take outside the input at the last row. Fused with a stencil consumer,
 * exact at every size. A condition that involves the innermost dimension (y >= 0, true
 * but per point) keeps the cases apart. */
static void check_row_cases(int K, bool per_point)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_I32, N, N);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(N, K), -K - 1), 1);
    pm_expr *q = pm_divi(x, K);
    pm_case *cases[3];
    for (int r = 0; r < K; r++) {
        pm_expr *v = r == 0 ? pm_muli(pm_call(in, q, y), 3)
                            : pm_add(pm_muli(pm_call(in, q, y), r), pm_call(in, pm_addi(q, 1), y));
        pm_expr *cond = pm_eq(pm_modi(x, K), pm_int(ctx, r));
        if (per_point && r == K - 1)
            cond = pm_and(cond, pm_ge(y, pm_int(ctx, 0)));
        cases[r] = pm_case_new(cond, v);
    }
    pm_func *up = pm_func_new(ctx, "up", PM_I32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    if (K == 2)
        pm_define(up, cases[0], cases[1]);
    else
        pm_define(up, cases[0], cases[1], cases[2]);
    pm_interval *orows = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(N, K), -K - 2), 1);
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, pm_exprs(x, y), pm_intervals(orows, cols));
    pm_func_define_expr(out, pm_sub(pm_muli(pm_call(up, pm_addi(x, 1), y), 2), pm_call(up, x, y)));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "row_cases", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 2, 3, 5, 17, 64, 130};
        char want[64];
        if (per_point)
            snprintf(want, sizeof want, "case up_c%d: ", K - 1);
        else
            snprintf(want, sizeof want, "cases 0..%d chosen per row by a branch", K - 1);
        check_small_dump("row cases", p, "domains", want, sizes,
                         (int)(sizeof sizes / sizeof sizes[0]), 0);
        check_small_dump("row cases", p, "groups", "live-out out, 2 stages, overlapped tiles",
                         sizes, 2, 0);
    } else {
        fprintf(stderr, "  row_cases: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* An innermost loop of a constant trip count shorter than the vector width (bilateral
 * grid's 11 bins) runs as two overlapping vectors of the widest power of two lanes that
 * fits (vector.c): <8 x float> for 8..15 points, <4 x float> for 4..7; fewer than 4 stay
 * scalar. Each extent's kernel equals the interpreter exactly. */
/* Whether only the kernel's entry (the one function defined returning i32, the others
 * return void) carries optnone in optimized IR text: the tuned pipeline compiles a
 * loop-free entry so (runtime/jit_engine.c), and strength reduction marks the vector
 * functions optnone only while it runs on the others. */
static bool optnone_only_on_entry(const char *ir)
{
    bool ok = ir != NULL;
    for (const char *d = ir; ok && (d = strstr(d, "\ndefine ")) != NULL; d++) {
        const char *eol = strchr(d + 1, '\n'), *hash = strstr(d + 1, " #");
        if (!eol || !hash || hash > eol || strncmp(d, "\ndefine i32 ", strlen("\ndefine i32 ")) == 0)
            continue;
        char group[32];
        snprintf(group, sizeof group, "\nattributes #%d = {", atoi(hash + 2));
        const char *attrs = strstr(ir, group);
        const char *attrs_end = attrs ? strchr(attrs + 1, '\n') : NULL;
        const char *mark = attrs ? strstr(attrs, "optnone") : NULL;
        ok = !mark || (attrs_end && mark > attrs_end);
    }
    return ok;
}

static void check_short_rows(void)
{
    static const int extents[] = {3, 4, 5, 7, 8, 11, 15, 16, 17};
    static const pm_sample_app app = {.name = "short", .fill_input = fill_any};
    for (size_t e = 0; e < sizeof extents / sizeof extents[0]; e++) {
        int E = extents[e];
        pm_ctx *ctx = pm_ctx_new();
        pm_expr *N = pm_param(ctx, PM_I32, "N");
        pm_func *in = pm_image(ctx, "in", PM_F32, N, pm_int(ctx, E));
        pm_expr *x = pm_var(ctx, "x"), *z = pm_var(ctx, "z");
        pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
        pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, E - 1), 1);
        pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, z), pm_intervals(rows, bins));
        pm_expr *next = pm_min(pm_addi(z, 1), pm_int(ctx, E - 1));
        pm_func_define_expr(out, pm_add(pm_mulf(pm_call(in, x, z), 2), pm_call(in, x, next)));
        pm_pipeline *p = NULL;
        if (!CHECK(pm_pipeline_new(ctx, "short_rows", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
            fprintf(stderr, "  short_rows: %s\n", pm_ctx_errmsg(ctx));
            pm_ctx_free(ctx);
            continue;
        }
        pm_compile_options o = pm_compile_options_default();
        o.vector_width = 16;
        o.keep = "llvm";
        pm_value est[1] = {PM_I(64)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  short_rows E=%d: %s\n", E, err.message);
            pm_ctx_free(ctx);
            continue;
        }
        const char *ir = pm_kernel_dump(k, "llvm");
        const char *want = E >= 16 ? "<16 x float>" : E >= 8 ? "<8 x float>" : E >= 4 ? "<4 x float>" : NULL;
        bool vec = ir && strstr(ir, "x float>") != NULL;
        /* strength reduction marks the vector functions optnone while it runs on the
         * others (runtime/jit_engine.c): none may keep the mark */
        if (!CHECK(optnone_only_on_entry(ir)))
            fprintf(stderr, "  short_rows E=%d: a function left optnone\n", E);
        if (!CHECK(want ? ir && strstr(ir, want) != NULL : !vec))
            fprintf(stderr, "  short_rows E=%d: expected %s in the IR\n", E, want ? want : "no vector");
        static const int64_t sizes[] = {1, 2, 5, 33};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            pm_value params[1] = {PM_I(sizes[i])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d == 0))
                fprintf(stderr, "  short_rows E=%d N=%lld: max|diff| %g\n", E,
                        (long long)sizes[i], d);
        }
        pm_kernel_free(k);
        pm_ctx_free(ctx);
    }
}

/* The shapes of a vector loop (codegen/llvm/vector.c): a body of many reads runs its
 * last, overlapping vector through the loop's own body (one copy: the start of each
 * vector is a select, "vat"); a body of few reads, or one whose lanes follow the
 * start's parity (in(x, y / 2)), keeps a tail of its own ("vtail"), unless it also
 * reads at data-dependent indices (lev: its last vector's lanes set by its own start).
 * All equal the interpreter at row lengths around the vector width (1, 2, 6, 15, 16,
 * 17, 21-23, 32, 33, 50), one or three rows, 1 and 2 threads. Level 0 keeps the IR's
 * names for the structural checks. */
static void check_vector_tails(void)
{
    static const pm_sample_app app = {.name = "tails", .fill_input = fill_any};
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_interval *wide = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -11), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_interval *twice = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_muli(C, 2), -1), 1);
    pm_func *many = pm_func_new(ctx, "many", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, wide));
    pm_expr *sum = pm_call(in, x, y);
    for (int k = 1; k <= 10; k++)
        sum = pm_add(sum, pm_mulf(pm_call(in, x, pm_addi(y, k)), k + 1));
    pm_func_define_expr(many, sum);
    pm_func *few = pm_func_new(ctx, "few", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(few, pm_addf(pm_mulf(pm_call(in, x, y), 2), 1));
    pm_func *up = pm_func_new(ctx, "up", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, twice));
    pm_expr *taps = pm_call(in, x, pm_divi(y, 2));
    for (int k = 1; k <= 10; k++) /* many reads, yet the lanes pair by the start's parity */
        taps = pm_add(taps, pm_mulf(pm_call(in, x, pm_divi(y, 2)), k));
    pm_func_define_expr(up, taps);
    /* up's taps at a row chosen by the data (clamped into the image) */
    pm_func *lev = pm_func_new(ctx, "lev", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, twice));
    pm_expr *row = pm_clamp(pm_cast(PM_I32, pm_call(in, x, pm_divi(y, 2))), pm_int(ctx, 0),
                            pm_addi(N, -1));
    pm_expr *lev_taps = pm_call(in, row, pm_divi(y, 2));
    for (int k = 1; k <= 10; k++)
        lev_taps = pm_add(lev_taps, pm_mulf(pm_call(in, row, pm_divi(y, 2)), k));
    pm_func_define_expr(lev, lev_taps);
    pm_pipeline *p = NULL;
    pm_func *outs[4] = {many, few, up, lev};
    if (!CHECK(pm_pipeline_new(ctx, "tails", 2, pm_exprs(N, C), 1, &in, 4, outs, &p) == PM_OK)) {
        fprintf(stderr, "  tails: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    for (int run = 0; run < 4; run++) {
        int level = run % 2, threads = 1 + run / 2;
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.vector_width = 16;
        o.keep = "llvm";
        o.opt_level = level == 0 ? 0 : PM_OPT_TUNED;
        pm_value est[2] = {PM_I(64), PM_I(64)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  tails: %s\n", err.message);
            continue;
        }
        const char *ir = pm_kernel_dump(k, "llvm");
        if (level == 0) {
            /* selects of the start (many, lev) and two tails of their own (few, up) */
            int vat = 0, vtail = 0;
            for (const char *q = ir; q && (q = strstr(q, "%vat = ")) != NULL; q++)
                vat++;
            for (const char *q = ir; q && (q = strstr(q, "\nvtail")) != NULL; q++)
                vtail++;
            if (!CHECK(vat > 0 && vtail == 2))
                fprintf(stderr, "  tails: %d uses of vat, %d tails (want some, 2)\n", vat, vtail);
        }
        static const int64_t lens[] = {11, 12, 16, 25, 26, 27, 31, 32, 33, 42, 43, 60};
        for (int r = 1; r <= 3; r += 2)
            for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
                pm_value params[2] = {PM_I(r), PM_I(lens[i])};
                double d = differential(p, k, &app, params);
                if (!CHECK(d <= 1e-4)) /* sums of products: multiply-adds may fuse */
                    fprintf(stderr, "  tails level %d, %d threads, N=%d C=%lld: max|diff| %g\n",
                            level, threads, r, (long long)lens[i], d);
            }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* A reduction whose affine written index leaves the function's box for some updates
 * (sums(r - 3, c) over r in [0, N + 2]: the first three and last three rows of r skip)
 * keeps that dimension's run-time check, while the proven one (c) drops it (poly.c);
 * both equal the interpreter exactly. */
static void check_update_bounds(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_I32, pm_addi(N, 3), N);
    pm_expr *x = pm_var(ctx, "x"), *c = pm_var(ctx, "c"), *r = pm_var(ctx, "r"),
            *rc = pm_var(ctx, "rc");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *sums = pm_reduction_new(ctx, "sums", PM_I32, 2, pm_exprs(x, c),
                                     pm_intervals(rows, cols), 2, pm_exprs(r, rc),
                                     pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, 2), 1),
                                                  cols),
                                     PM_REDUCE_SUM, NULL);
    pm_reduction_define(sums, 2, pm_exprs(pm_addi(r, -3), rc), pm_call(in, r, rc));
    pm_func *out = pm_func_new(ctx, "out", PM_I32, 2, pm_exprs(x, c), pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_call(sums, x, c));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "update_bounds", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 2, 5, 33};
        check_small_dump("update bounds", p, "domains",
                         "written index checked at run time in dims 0\n", sizes,
                         (int)(sizeof sizes / sizeof sizes[0]), 0);
    } else {
        fprintf(stderr, "  update_bounds: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* Tables of 8- and 16-bit entries that the kernel computes (a reduction, so they are
 * stored, never inlined) read at data-dependent points by a vector loop: on AVX-512
 * hosts a 32-bit gather reads each entry with the bytes after it (access.c), the last
 * entry's from the scratch buffer's tail. Every entry, the last included, is read; the
 * kernel equals the interpreter exactly. */
static void check_narrow_gather(pm_type type)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_U8, N, N);
    pm_expr *v = pm_var(ctx, "v"), *r = pm_var(ctx, "r"), *x = pm_var(ctx, "x"),
            *y = pm_var(ctx, "y");
    pm_interval *entries = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_func *table = pm_reduction_new(ctx, "table", type, 1, pm_exprs(v), pm_intervals(entries),
                                      1, pm_exprs(r), pm_intervals(entries), PM_REDUCE_SUM,
                                      NULL);
    pm_reduction_define(table, 1, pm_exprs(r),
                        pm_cast(type, pm_add(pm_muli(r, type == PM_U8 ? 7 : 2311), pm_int(ctx, 3))));
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *out = pm_func_new(ctx, "out", type, 2, pm_exprs(x, y), pm_intervals(all, all));
    pm_func_define_expr(out, pm_call(table, pm_cast(PM_I32, pm_call(in, x, y))));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "narrow_gather", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 15, 16, 17, 33, 100};
        check_small_pipeline(type == PM_U8 ? "u8 table" : "u16 table", p, "table", sizes,
                             (int)(sizeof sizes / sizeof sizes[0]), 0);
        pm_value est[1] = {PM_I(512)};
        pm_compile_options o = pm_compile_options_default();
        o.keep = "llvm";
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        const char *ir = k ? pm_kernel_dump(k, "llvm") : NULL;
        /* the hosts here have AVX-512; elsewhere the generic gather is the right code */
        if (CHECK(ir) && strstr(ir, "avx512f") &&
            !CHECK(strstr(ir, "@llvm.x86.avx512.mask.gather.dpi.512") ||
                   strstr(ir, "@llvm.x86.avx512.mask.gather3siv8.si")))
            fprintf(stderr, "  narrow_gather: no 32-bit gather of the table\n");
        pm_kernel_free(k);
    } else {
        fprintf(stderr, "  narrow_gather: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* f(x, y) = in(x, y) * 2 + 1 only where 1 <= x <= N (its box is [0, N+1] x [0, N-1]);
 * out(x, y) over [1, N] x [0, N-1] reads f(x + shift, y) (the value dropped where x + shift
 * < 1). With shift 0 every read lands where f's case holds: f is inlined. With shift -1
 * out reads f(0, y), outside the case: f must stay stored. Both equal the interpreter. */
static void check_conditional_inline(int shift, const char *want)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_expr *one = pm_int(ctx, 1);
    pm_func *in = pm_image(ctx, "in", PM_F32, pm_add(N, pm_int(ctx, 2)), N);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_add(N, one), 1);
    pm_interval *inner = pm_interval_new(one, N, 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_sub(N, one), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_define(f, pm_case_new(pm_and(pm_ge(x, one), pm_le(x, N)),
                             pm_add(pm_mul(pm_call(in, x, y), pm_float(ctx, 2)), pm_float(ctx, 1))));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(inner, cols));
    /* f's value where no case holds is undefined: the select drops it */
    pm_expr *at = pm_add(x, pm_int(ctx, shift));
    pm_define(out, pm_case_new(NULL, pm_add(pm_select(pm_ge(at, one), pm_call(f, at, y),
                                                      pm_float(ctx, 0)),
                                            pm_call(in, x, y))));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "conditional", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {1, 2, 17, 300};
        check_small_pipeline(shift ? "conditional inline (shift -1)" : "conditional inline",
                             p, want, sizes, 4, 1e-6);
    } else {
        fprintf(stderr, "  conditional: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* Prefetched reads (storage.h, llvm/access.c): out(x, y) = in(x - 1, y) + in(x, y) +
 * in(x + 1, y), a light stencil, and the same with 32 `heavy` sines after it (more work per
 * byte read than the model's bound). The prefetch of the leading row (x + 1, one of the
 * three reads) is in the code when prefetch_reads is 1; with -1 when the input at the
 * estimates outgrows the L2s (4096 x 4096) and the light stencil reads enough bytes per
 * unit of work; never with 0 nor at 64 x 64. Every kernel, at 1 and 2 threads, equals
 * the interpreter at sizes below a vector and around one, and rows shorter than the
 * prefetch distance. */
static void check_prefetched_reads(bool heavy)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *in = pm_image(ctx, "in", PM_F32, pm_addi(R, 2), C);
    pm_expr *const xy[] = {x, y};
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy,
                               pm_intervals(pm_interval_new(pm_int(ctx, 1), R, 1),
                                            pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)));
    pm_expr *v = pm_add(pm_add(pm_call(in, pm_addi(x, -1), y), pm_call(in, x, y)),
                        pm_call(in, pm_addi(x, 1), y));
    for (int i = 0; heavy && i < 32; i++)
        v = pm_sin(v);
    pm_func_define_expr(out, v);
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "prefetched", 2, (pm_expr *[]){R, C}, 1, &in, 1, &out, &p) ==
               PM_OK)) {
        fprintf(stderr, "  prefetched: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const struct { int prefetch; int64_t est; bool light, heavy; } modes[] = {
        {1, 64, true, true}, {0, 4096, false, false}, {-1, 4096, true, false},
        {-1, 64, false, false}};
    static const pm_sample_app app = {.name = "prefetched", .fill_input = fill_any};
    for (int mt = 0; mt < 8; mt++) {
        int m = mt % 4, threads = 1 + mt / 4;
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.prefetch_reads = modes[m].prefetch;
        o.keep = "llvm,storage";
        pm_value est[2] = {PM_I(modes[m].est), PM_I(modes[m].est)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  prefetched: %s\n", err.message);
            continue;
        }
        const char *ll = pm_kernel_dump(k, "llvm"), *st = pm_kernel_dump(k, "storage");
        bool want = heavy ? modes[m].heavy : modes[m].light;
        bool pf = ll && strstr(ll, "@llvm.prefetch");
        bool says = st && strstr(st, "in (1 leading reads)");
        if (!CHECK(pf == want && says == want))
            fprintf(stderr, "  prefetched%s: prefetch_reads %d at %lld: prefetch %d, storage "
                            "dump says %d, want %d\n%s", heavy ? " (heavy)" : "",
                    modes[m].prefetch, (long long)modes[m].est, pf, says, want, st ? st : "");
        static const int64_t sizes[][2] = {{1, 1}, {3, 15}, {4, 16}, {5, 17}, {9, 700}};
        for (int i = 0; i < 5; i++) {
            pm_value params[2] = {PM_I(sizes[i][0]), PM_I(sizes[i][1])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d <= (heavy ? 1e-6 : 0)))
                fprintf(stderr, "  prefetched%s: prefetch_reads %d, %d threads, %lld x %lld: "
                                "max|diff| %g\n", heavy ? " (heavy)" : "", modes[m].prefetch,
                        threads, (long long)sizes[i][0], (long long)sizes[i][1], d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* Streamed outputs (storage.h, llvm/vector.c): out(x, y) = 3 in(x, y + 1) - in(x, y),
 * f32 or u8 (16-byte vectors). The non-temporal stores are in the code when
 * stream_outputs is 1, or -1 at estimates whose output outgrows the L2s (4096 x 4096),
 * and not with 0 or at 64 x 64. The streamed kernel, at every row length around one and
 * two vectors and with the output's rows starting at every element offset from a
 * 64-byte boundary (a row stride of C + pad, the data `shift` elements in), equals the
 * values computed here, and writes nothing outside its rows. */
static void check_streamed_outputs(pm_type type)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *in = pm_image(ctx, "in", type, R, pm_addi(C, 1));
    pm_expr *const xy[] = {x, y};
    pm_func *out = pm_func_new(ctx, "out", type, 2, xy,
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                                            pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)));
    pm_func_define_expr(out, pm_sub(pm_mul(pm_call(in, x, pm_addi(y, 1)), pm_int(ctx, 3)),
                                    pm_call(in, x, y)));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "streamed", 2, (pm_expr *[]){R, C}, 1, &in, 1, &out, &p) ==
               PM_OK)) {
        fprintf(stderr, "  streamed: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const struct { int stream; int64_t est; bool want; } modes[] = {
        {1, 64, true}, {0, 4096, false}, {-1, 4096, true}, {-1, 64, false}};
    pm_kernel *streamed = NULL;
    for (int m = 0; m < 4; m++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = 2;
        o.stream_outputs = modes[m].stream;
        o.keep = "llvm,storage";
        pm_value est[2] = {PM_I(modes[m].est), PM_I(modes[m].est)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  streamed: %s\n", err.message);
            continue;
        }
        const char *ll = pm_kernel_dump(k, "llvm"), *st = pm_kernel_dump(k, "storage");
        bool nt = ll && strstr(ll, "!nontemporal");
        bool says = st && strstr(st, "output, streamed");
        if (!CHECK(nt == modes[m].want && says == modes[m].want))
            fprintf(stderr, "  streamed %s: stream_outputs %d at %lld: non-temporal stores %d, "
                            "storage dump says %d, want %d\n", pm_type_name(type),
                    modes[m].stream, (long long)modes[m].est, nt, says, modes[m].want);
        if (m == 0)
            streamed = k;
        else
            pm_kernel_free(k);
    }
    int esize = type == PM_F32 ? 4 : 1;
    static const int64_t cols[] = {1, 15, 16, 17, 31, 32, 33, 47, 64, 65, 100};
    for (int ci = 0; streamed && ci < (int)(sizeof cols / sizeof cols[0]); ci++) {
        for (int pad = 0; pad < 64 / esize; pad += (type == PM_F32 ? 1 : 5)) {
            int64_t rows = 5, c = cols[ci], stride = c + pad, shift = pad % 3;
            int64_t in_ext[2] = {rows, c + 1}, out_ext[2] = {rows, c};
            unsigned char *inb = calloc((size_t)(rows * (c + 1)), (size_t)esize);
            size_t bytes = (size_t)((rows * stride + shift) * esize) + 64;
            unsigned char *raw = aligned_alloc(64, (bytes + 63) / 64 * 64);
            if (!inb || !raw) {
                free(inb);
                free(raw);
                CHECK(false);
                return;
            }
            memset(raw, 0x5A, bytes);
            for (int64_t i = 0; i < rows * (c + 1); i++) {
                if (type == PM_F32)
                    ((float *)inb)[i] = (float)(i % 97) * 0.5f;
                else
                    inb[i] = (unsigned char)(i * 7 % 251);
            }
            pm_buffer ib = pm_buffer_dense(inb, type, 2, in_ext);
            pm_buffer ob = pm_buffer_dense(raw + shift * esize, type, 2, out_ext);
            ob.stride[0] = stride;
            ob.stride[1] = 1;
            pm_value params[2] = {PM_I(rows), PM_I(c)};
            pm_error err;
            bool ran = pm_kernel_run(streamed, params, &ib, &ob, &err) == PM_OK;
            bool same = ran;
            for (int64_t r = 0; same && r < rows; r++)
                for (int64_t j = 0; j < stride && same; j++) {
                    unsigned char *at = raw + (shift + r * stride + j) * esize;
                    if (j >= c) { /* the padding: untouched */
                        for (int b = 0; b < esize; b++)
                            same = same && at[b] == 0x5A;
                        continue;
                    }
                    int64_t a = r * (c + 1) + j;
                    if (type == PM_F32) {
                        float want = ((float *)inb)[a + 1] * 3 - ((float *)inb)[a], got;
                        memcpy(&got, at, sizeof got);
                        same = got == want;
                    } else {
                        same = *at == (unsigned char)(inb[a + 1] * 3 - inb[a]);
                    }
                }
            if (!CHECK(same))
                fprintf(stderr, "  streamed %s: %lld columns, row stride %lld, %lld elements in: "
                                "%s\n", pm_type_name(type), (long long)c, (long long)stride,
                        (long long)shift, ran ? "wrong values or padding written" : err.message);
            free(inb);
            free(raw);
        }
    }
    pm_kernel_free(streamed);
    pm_ctx_free(ctx);
}

/* in (N x N), and D(x, y) = in(x, 2y) / 2 + 1 stored over the rows and half the
 * columns: the producer of the up-sampling checks below. */
typedef struct half_width {
    pm_ctx *ctx;
    pm_expr *N, *x, *y;
    pm_func *in, *D;
    pm_interval *rows;
} half_width;

static half_width half_width_new(void)
{
    half_width h;
    h.ctx = pm_ctx_new();
    pm_ctx *ctx = h.ctx;
    h.N = pm_param(ctx, PM_I32, "N");
    h.x = pm_var(ctx, "x");
    h.y = pm_var(ctx, "y");
    h.in = pm_image(ctx, "in", PM_F32, h.N, h.N);
    h.rows = pm_interval_new(pm_int(ctx, 0), pm_addi(h.N, -1), 1);
    pm_interval *half = pm_interval_new(pm_int(ctx, 0), pm_divi(pm_addi(h.N, -1), 2), 1);
    h.D = pm_func_new(ctx, "D", PM_F32, 2, pm_exprs(h.x, h.y), pm_intervals(h.rows, half));
    pm_func_define_expr(h.D, pm_addf(pm_mulf(pm_call(h.in, h.x, pm_muli(h.y, 2)), 0.5), 1));
    return h;
}

/* U(x, y), pyramid blending's up-sampling of a stored half-width D: the even case
 * reads D(y/2 - 1 .. y/2 + 1), the odd one D((y - 1)/2) and D((y + 1)/2); U starts at
 * column 1 and is inlined into out = U + in, so its even case is evaluated at the odd
 * lane of column 1 too, reading D(-1): not proven inside D's box. Such row reads check
 * that their elements lie inside the buffer and then load the row ("row_read"), else
 * gather clamped indices ("clamped_read"; llvm/access.c). Level 0 keeps the blocks'
 * names; at every size both levels equal the interpreter (the first vector of each row
 * takes the gathers; at N = 5 every vector). */
static void check_guarded_rows(void)
{
    static const pm_sample_app app = {.name = "small", .fill_input = fill_any};
    half_width hw = half_width_new();
    pm_ctx *ctx = hw.ctx;
    pm_expr *N = hw.N, *x = hw.x, *y = hw.y;
    pm_func *in = hw.in, *D = hw.D;
    pm_interval *rows = hw.rows;
    pm_interval *cols = pm_interval_new(pm_int(ctx, 1), pm_addi(N, -3), 1);
    pm_expr *const xy[] = {x, y};
    pm_func *U = pm_func_new(ctx, "U", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_expr *h = pm_divi(y, 2), *lo = pm_divi(pm_addi(y, -1), 2), *hi = pm_divi(pm_addi(y, 1), 2);
    pm_expr *even = pm_add(pm_add(pm_call(D, x, pm_addi(h, -1)), pm_mulf(pm_call(D, x, h), 6)),
                           pm_call(D, x, pm_addi(h, 1)));
    pm_expr *odd = pm_mulf(pm_add(pm_call(D, x, lo), pm_call(D, x, hi)), 4);
    pm_define(U, pm_case_new(pm_eq(pm_modi(y, 2), pm_int(ctx, 0)), pm_mulf(even, 0.125)),
              pm_case_new(pm_eq(pm_modi(y, 2), pm_int(ctx, 1)), pm_mulf(odd, 0.125)));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_add(pm_call(U, x, y), pm_call(in, x, y)));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "guarded", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        fprintf(stderr, "  guarded rows: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[] = {5, 6, 7, 18, 37, 40, 300};
    for (int run = 0; run < 4; run++) {
        int level = run % 2, threads = 1 + run / 2;
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.vector_width = 16;
        o.keep = "llvm,groups";
        o.opt_level = level == 0 ? 0 : PM_OPT_TUNED;
        pm_value est[1] = {PM_I(256)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  guarded rows: %s\n", err.message);
            continue;
        }
        const char *ir = pm_kernel_dump(k, "llvm"), *groups = pm_kernel_dump(k, "groups");
        if (!CHECK(groups && strstr(groups, "inlined: U\n")))
            fprintf(stderr, "  guarded rows: U not inlined:\n%s\n", groups ? groups : "");
        if (level == 0 && !CHECK(ir && strstr(ir, "\nrow_read") && strstr(ir, "\nclamped_read")))
            fprintf(stderr, "  guarded rows: no row_read and clamped_read blocks in the IR\n");
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            pm_value params[1] = {PM_I(sizes[i])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d <= 1e-5))
                fprintf(stderr, "  guarded rows level %d, %d threads, N=%lld: max|diff| %g\n",
                        level, threads, (long long)sizes[i], d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* Every pixel is 1 + 2^-12, whose square, 1 + 2^-11 + 2^-24, rounds to 1 + 2^-11. */
static void fill_near_one(int index, pm_buffer *b, const pm_value *params)
{
    (void)index;
    (void)params;
    int64_t n = 1;
    for (int d = 0; d < b->ndims; d++)
        n *= b->extent[d];
    for (int64_t i = 0; i < n; i++)
        ((float *)b->data)[i] = 1.0f + 0x1p-12f;
}

/* prod = in * in - (1 + 2^-11) is 0 rounded twice, as the interpreter does, and 2^-24
 * as one fused multiply-add. sign = select(prod > 0, 1, 0) reads prod in a comparison,
 * so prod (an output, stored) rounds twice and sign is 0 everywhere; loose, the same
 * expression read by nothing discrete, may fuse ("contract" in the IR, "multiply-adds
 * may fuse" in the domains dump). Equal to the interpreter within 1e-6 (sign within
 * it exactly) at 1 x 1, 3 x 5 and 17 x 40, 1 and 2 threads. */
static void check_exact_floats(void)
{
    static const pm_sample_app app = {.name = "near_one", .fill_input = fill_near_one};
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *in = pm_image(ctx, "in", PM_F32, R, C);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_expr *const xy[] = {x, y};
    pm_interval *const dom[] = {rows, cols};
    pm_func *fn[3];
    static const char *const names[3] = {"prod", "sign", "loose"};
    for (int i = 0; i < 3; i++)
        fn[i] = pm_func_new(ctx, names[i], PM_F32, 2, xy, dom);
    pm_expr *v = pm_call(in, x, y);
    pm_func_define_expr(fn[0], pm_addf(pm_mul(v, v), -(1.0 + 0x1p-11)));
    pm_func_define_expr(fn[1], pm_select(pm_gt(pm_call(fn[0], x, y), pm_float(ctx, 0)),
                                         pm_float(ctx, 1), pm_float(ctx, 0)));
    pm_func_define_expr(fn[2], pm_addf(pm_mul(v, v), -(1.0 + 0x1p-11)));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "exact_floats", 2, pm_exprs(R, C), 1, &in, 3, fn, &p) ==
               PM_OK)) {
        fprintf(stderr, "  exact floats: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {17, 40}};
    for (int threads = 1; threads <= 2; threads++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.keep = "domains,llvm";
        pm_value est[2] = {PM_I(64), PM_I(64)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  exact floats: %s\n", err.message);
            continue;
        }
        const char *dom_text = pm_kernel_dump(k, "domains"), *ir = pm_kernel_dump(k, "llvm");
        if (!CHECK(dom_text && strstr(dom_text, "prod (float arithmetic exact") &&
                   strstr(dom_text, "loose (multiply-adds may fuse)")))
            fprintf(stderr, "  exact floats: domains dump:\n%s\n", dom_text ? dom_text : "");
        if (!CHECK(ir && strstr(ir, " contract ")))
            fprintf(stderr, "  exact floats: no contract flag in the IR\n");
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            pm_value params[2] = {PM_I(sizes[i][0]), PM_I(sizes[i][1])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d <= 1e-6))
                fprintf(stderr, "  exact floats %lldx%lld, %d threads: max|diff| %g\n",
                        (long long)sizes[i][0], (long long)sizes[i][1], threads, d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* The gathers of lut (a stored float table, read at in(x, y)) in the IR at level 0 of
 * out = select(test, 100 / lut(in), 0), the test on that read's value (one call node in
 * both places) or on in's. */
static int count_table_gathers(bool test_on_table)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_U8, N, N);
    pm_expr *v = pm_var(ctx, "v"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *lut = pm_func_new(ctx, "lut", PM_F32, 1, pm_exprs(v),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1)));
    pm_func_define_expr(lut, pm_addf(pm_mulf(pm_cast(PM_F32, v), 0.5), 0.25));
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(all, all));
    pm_expr *at = pm_cast(PM_I32, pm_call(in, x, y)), *entry = pm_call(lut, at);
    pm_expr *test = test_on_table ? pm_gt(entry, pm_float(ctx, 10)) : pm_gt(at, pm_int(ctx, 20));
    pm_func_define_expr(out, pm_select(test, pm_div(pm_float(ctx, 100), entry), pm_float(ctx, 0)));
    pm_pipeline *p = NULL;
    int n = -1;
    if (CHECK(pm_pipeline_new(ctx, "table_test", 1, &N, 1, &in, 2, (pm_func *const[]){lut, out},
                              &p) == PM_OK)) {
        pm_compile_options o = pm_compile_options_default();
        o.keep = "llvm";
        o.opt_level = 0;
        pm_value est[1] = {PM_I(256)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        const char *ir = k ? pm_kernel_dump(k, "llvm") : NULL;
        if (CHECK(ir != NULL)) {
            n = 0;
            for (const char *q = ir; (q = strstr(q, "= call <16 x float> @llvm.")) != NULL; q++)
                n += strncmp(q + 26, "x86.avx512.mask.gather", 22) == 0 ||
                     strncmp(q + 26, "masked.gather", 13) == 0;
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    return n;
}

/* T(g, z) over [0, N/8 + 2] x [0, 6], an output (so stored), read by
 * out(x, y) = T((y + shift)/8, bin) + T((y + shift)/8 + 1, bin + 1) with bin =
 * clamp((i32)(in(x, y) * 7), 0, 5): short rows at a data-dependent column, bilateral
 * grid's reads of blury. With shift 0 a vector of 16 (or 8) lanes along y starts at a
 * multiple of its width and reads two rows: two masked loads and a two-table permute
 * ("looked_up" in the IR); with shift 3 most vectors read three and gather
 * ("table_gather"), as do the last vectors that end at the row's last point. Both equal
 * the interpreter exactly, for f32 and i32 tables at 16 lanes, f32 at 8 and f64 at 8,
 * at sizes from 1 x 1 to 300 x 300 (odd, and not multiples of the width), 1 and 2
 * threads. */
static void check_table_reads(pm_type type, int width, int shift)
{
    static const pm_sample_app app = {.name = "tables", .fill_input = fill_any};
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y"), *g = pm_var(ctx, "g"), *z = pm_var(ctx, "z");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, N);
    pm_func *T = pm_func_new(ctx, "T", type, 2, pm_exprs(g, z),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(pm_divi(N, 8), 2), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 6), 1)));
    pm_func_define_expr(T, pm_cast(type, pm_add(pm_muli(g, 13), pm_muli(z, 3))));
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_func *out = pm_func_new(ctx, "out", type, 2, pm_exprs(x, y), pm_intervals(all, all));
    pm_expr *bin = pm_clamp(pm_cast(PM_I32, pm_mulf(pm_call(in, x, y), 7)), pm_int(ctx, 0),
                            pm_int(ctx, 5));
    pm_expr *row = pm_divi(pm_addi(y, shift), 8);
    pm_func_define_expr(out, pm_add(pm_call(T, row, bin),
                                    pm_call(T, pm_addi(row, 1), pm_addi(bin, 1))));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "table_reads", 1, &N, 1, &in, 2, (pm_func *const[]){T, out},
                               &p) == PM_OK)) {
        fprintf(stderr, "  table reads: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[] = {1, 5, 16, 37, 40, 300};
    for (int threads = 1; threads <= 2; threads++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.vector_width = width;
        o.keep = "llvm";
        pm_value est[1] = {PM_I(256)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  table reads: %s\n", err.message);
            continue;
        }
        const char *ir = pm_kernel_dump(k, "llvm");
        /* the hosts here have AVX-512 (and VL); elsewhere gathers are the right code */
        if (CHECK(ir) && strstr(ir, "avx512vl") &&
            !CHECK(strstr(ir, "@llvm.x86.avx512.vpermi2var.") && strstr(ir, "looked_up") &&
                   strstr(ir, "\ntable_gather")))
            fprintf(stderr, "  table reads: no two-table permute with its gather in the IR\n");
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            pm_value params[1] = {PM_I(sizes[i])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d == 0))
                fprintf(stderr, "  table reads (%s, %d lanes, shift %d), %d threads, N=%lld: max|diff| %g\n",
                        pm_type_name(type), width, shift, threads, (long long)sizes[i], d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* H(c, gx, gy, bin), bilateral grid's histogram in small: cell (gx, gy) collects the
 * 3 x 3 window at (3gx + i, 3gy + j), each pixel p adding p (channel 0, of type `type`)
 * and 1 (channel 1) at bin (i32)(12p) - 1 in [0, nbins - 1] (bins -1 and nbins .. 11
 * are skipped). Two updates of one cell agree in gy, so the update loop along gy runs
 * with vectors: with at most `width` bins, blocks of `width` columns whose rows of bins
 * are loaded once before the window, accumulated in registers and stored after it
 * (a private mark in the AST), else the lanes' cells gathered, added to and scattered
 * per update; the out-of-range bins masked, and points short of a full vector or block
 * scalar (no lane runs twice). Equal to the interpreter exactly (each cell's updates in
 * their order) from 1 x 1 to 100 x 100 (up to 33 columns: full and partial blocks) with
 * 1 to 3 threads, 16 and 8 lanes; a scatter in the IR where the host has AVX-512. */
static void check_vector_histogram(pm_type type, int width, int nbins)
{
    static const pm_sample_app app = {.name = "histogram", .fill_input = fill_any};
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, N);
    pm_expr *c = pm_var(ctx, "c"), *gx = pm_var(ctx, "gx"), *gy = pm_var(ctx, "gy"),
            *b = pm_var(ctx, "b");
    pm_expr *rc = pm_var(ctx, "rc"), *rx = pm_var(ctx, "rx"), *ry = pm_var(ctx, "ry"),
            *ri = pm_var(ctx, "ri"), *rj = pm_var(ctx, "rj");
    pm_interval *ch = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 1), 1);
    pm_interval *cells = pm_interval_new(pm_int(ctx, 0), pm_addi(pm_divi(N, 3), -1), 1);
    pm_interval *win = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 2), 1);
    pm_func *H = pm_reduction_new(ctx, "H", type, 4, pm_exprs(c, gx, gy, b),
                                  pm_intervals(ch, cells, cells, pm_interval_new(pm_int(ctx, 0), pm_int(ctx, nbins - 1), 1)),
                                  5, pm_exprs(rc, rx, ry, ri, rj),
                                  pm_intervals(ch, cells, cells, win, win), PM_REDUCE_SUM, NULL);
    pm_expr *p = pm_call(in, pm_add(pm_muli(rx, 3), ri), pm_add(pm_muli(ry, 3), rj));
    pm_expr *bin = pm_addi(pm_cast(PM_I32, pm_mulf(p, 12)), -1);
    pm_expr *value = pm_select(pm_eq(rc, pm_int(ctx, 0)), pm_cast(type, pm_mulf(p, 100)),
                               pm_cast(type, pm_int(ctx, 1)));
    pm_pipeline *pl = NULL;
    if (!CHECK(pm_reduction_define(H, 4, pm_exprs(rc, rx, ry, bin), value) == PM_OK) ||
        !CHECK(pm_pipeline_new(ctx, "vector_histogram", 1, &N, 1, &in, 1, &H, &pl) == PM_OK)) {
        fprintf(stderr, "  vector histogram: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[] = {1, 5, 17, 48, 50, 100};
    for (int threads = 1; threads <= 3; threads++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.vector_width = width;
        o.keep = "llvm,ast";
        pm_value est[1] = {PM_I(300)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, pl, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  vector histogram: %s\n", err.message);
            continue;
        }
        const char *ir = pm_kernel_dump(k, "llvm");
        if (CHECK(ir) && strstr(ir, "avx512vl") &&
            !CHECK(strstr(ir, "@llvm.x86.avx512.mask.scatter") || strstr(ir, "@llvm.masked.scatter")))
            fprintf(stderr, "  vector histogram: no scatter in the IR\n");
        /* rows of at most `width` bins accumulate in registers (schedule.c, private_rows) */
        const char *ast = pm_kernel_dump(k, "ast");
        if (!CHECK(ast && (strstr(ast, "// private") != NULL) == (nbins <= width)))
            fprintf(stderr, "  vector histogram (%d bins, %d lanes): private mark %s\n%s\n", nbins,
                    width, nbins <= width ? "missing" : "unexpected", ast ? ast : "");
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            pm_value params[1] = {PM_I(sizes[i])};
            double d = differential(pl, k, &app, params);
            if (!CHECK(d == 0))
                fprintf(stderr, "  vector histogram (%s, %d lanes, %d bins), %d threads, N=%lld: max|diff| %g\n",
                        pm_type_name(type), width, nbins, threads, (long long)sizes[i], d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* A read both in a comparison (exact) and elsewhere is gathered once: the exact value
 * serves where a fused one would do (bilateral grid's weight gathered its eight corners
 * twice when the memo kept the two apart). */
static void check_exact_reuse(void)
{
    int on_table = count_table_gathers(true), on_input = count_table_gathers(false);
    if (!CHECK(on_table > 0 && on_table == on_input))
        fprintf(stderr, "  exact reuse: %d gathers with the test on the table, %d without\n",
                on_table, on_input);
}

/* U(x, y), an up-sampling of a stored half-width D with a case per residue of its
 * column, read once by out(x, y) = U(x, y) + in(x, y). Every lane evaluates every case:
 * with two cases (pyramid blending's Uy) that is at most the inline limit (2) times the
 * dearest, and U is inlined; with three of equal cost it would be three times, and U
 * stays stored. Both equal the interpreter, at sizes that leave U one to a few hundred
 * columns. */
static void check_residue_inline(int ncases, const char *want)
{
    half_width hw = half_width_new();
    pm_ctx *ctx = hw.ctx;
    pm_expr *N = hw.N, *x = hw.x, *y = hw.y;
    pm_func *in = hw.in, *D = hw.D;
    pm_interval *rows = hw.rows;
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -5), 1);
    pm_expr *const xy[] = {x, y};
    pm_func *U = pm_func_new(ctx, "U", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_case *cases[3];
    for (int r = 0; r < ncases && r < 3; r++) {
        pm_expr *at = pm_divi(pm_addi(y, r), 2);
        pm_expr *v = pm_add(pm_mulf(pm_call(D, x, at), 0.25 + 0.25 * r),
                            pm_mulf(pm_call(D, x, pm_addi(at, 1)), 0.75 - 0.25 * r));
        cases[r] = pm_case_new(pm_eq(pm_modi(y, ncases), pm_int(ctx, r)), v);
    }
    if (ncases == 2)
        pm_define(U, cases[0], cases[1]);
    else
        pm_define(U, cases[0], cases[1], cases[2]);
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_add(pm_call(U, x, y), pm_call(in, x, y)));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "residue", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {5, 6, 7, 18, 37, 300};
        check_small_pipeline(ncases == 2 ? "residue inline (2 cases)" : "residue inline (3 cases)",
                             p, want, sizes, 6, 1e-5);
    } else {
        fprintf(stderr, "  residue: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* S(x, y), a 3-tap stencil, read by A(x, y) = 2 S(x, y) and B(x, y) = S(x + shift, y) + 1,
 * both read by out(x, y) = A(x, y) + B(x, y) * B(x, y). A and B are inlined (B's two
 * equal calls are one read). With shift 0 they pass S's points on unchanged, so S is
 * read once, at out's own point, and is inlined too; with shift 1 out reads S at (x, y)
 * and (x + 1, y): S stays stored. Both equal the interpreter. */
static void check_transparent_inline(int shift, const char *want)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, N);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_interval *srows = pm_interval_new(pm_int(ctx, 1), pm_addi(N, -2), 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 1), pm_addi(N, -3), 1);
    pm_expr *const xy[] = {x, y};
    pm_func *S = pm_func_new(ctx, "S", PM_F32, 2, xy, pm_intervals(srows, cols));
    pm_func_define_expr(S, pm_add(pm_add(pm_call(in, pm_addi(x, -1), y), pm_call(in, x, y)),
                                  pm_call(in, pm_addi(x, 1), y)));
    pm_func *A = pm_func_new(ctx, "A", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(A, pm_mulf(pm_call(S, x, y), 2));
    pm_func *B = pm_func_new(ctx, "B", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(B, pm_addf(pm_call(S, shift ? pm_addi(x, shift) : x, y), 1));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, xy, pm_intervals(rows, cols));
    pm_func_define_expr(out, pm_add(pm_call(A, x, y), pm_mul(pm_call(B, x, y), pm_call(B, x, y))));
    pm_pipeline *p = NULL;
    if (CHECK(pm_pipeline_new(ctx, "transparent", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {4, 5, 17, 300};
        check_small_pipeline(shift ? "transparent inline (shift 1)" : "transparent inline",
                             p, want, sizes, 4, 1e-4);
    } else {
        fprintf(stderr, "  transparent: %s\n", pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* Local Laplacian's shape in small: a level L(k, x, y) of two cases (x even or odd) is
 * read by out at the two levels around each pixel's own, l = clamp(int(3 in), 0, 2) and
 * l + 1 (data-dependent, proven inside L's box by the clamp): each of L's points is read
 * at most once, so L is inlined, its cases evaluated per lane. L reads G(k, x, y), a
 * point-wise stage with a table lookup, which a stencil H also reads: G stays stored for
 * H, and L's read of it (at the data-dependent level) recomputes G in place. (H, read
 * once by out, is inlined.) With `offset` 2 out reads l and l + 2, still once per point;
 * with -1, l - 1 may fall outside L's box (the language clamps it), so L stays stored;
 * with `stencil` out reads L(l, x + 1, y) too: L's points are read twice, so it stays
 * stored, then in out's group (with G) when its levels are read inside its box. Every
 * variant equals the interpreter (N from 3 to 300, 1 and 2 threads). */
static void check_dynamic_inline(int offset, bool stencil, const char *want)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y"), *k = pm_var(ctx, "k"), *r = pm_var(ctx, "r");
    pm_func *in = pm_image(ctx, "in", PM_F32, N, N);
    pm_interval *all = pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1);
    pm_interval *inner = pm_interval_new(pm_int(ctx, 1), pm_addi(N, -2), 1);
    pm_interval *levels = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 4), 1);
    pm_func *lut = pm_func_new(ctx, "lut", PM_F32, 1, pm_exprs(r),
                               pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 79), 1)));
    pm_func_define_expr(lut, pm_mulf(pm_cast(PM_F32, pm_mul(r, r)), 0.01));
    pm_expr *v = pm_call(in, x, y);
    pm_expr *idx = pm_clamp(pm_cast(PM_I32, pm_mulf(v, 16)), pm_int(ctx, 0), pm_int(ctx, 15));
    pm_func *G = pm_func_new(ctx, "G", PM_F32, 3, pm_exprs(k, x, y), pm_intervals(levels, all, all));
    pm_func_define_expr(G, pm_add(pm_mul(v, pm_cast(PM_F32, k)),
                                  pm_call(lut, pm_add(idx, pm_muli(k, 16)))));
    pm_func *H = pm_func_new(ctx, "H", PM_F32, 3, pm_exprs(k, x, y), pm_intervals(levels, inner, all));
    pm_func_define_expr(H, pm_add(pm_call(G, k, pm_addi(x, -1), y), pm_call(G, k, pm_addi(x, 1), y)));
    pm_func *L = pm_func_new(ctx, "L", PM_F32, 3, pm_exprs(k, x, y), pm_intervals(levels, all, all));
    pm_expr *even = pm_eq(pm_modi(x, 2), pm_int(ctx, 0));
    pm_define(L, pm_case_new(even, pm_mulf(pm_call(G, k, x, y), 2)),
              pm_case_new(pm_not(even), pm_addf(pm_call(G, k, x, y), 1)));
    pm_expr *lev = pm_mulf(pm_call(in, x, y), 2);
    pm_expr *l = pm_clamp(pm_cast(PM_I32, lev), pm_int(ctx, 0), pm_int(ctx, 2));
    pm_expr *f = pm_sub(lev, pm_cast(PM_F32, l));
    pm_expr *value = pm_add(pm_mul(pm_sub(pm_float(ctx, 1), f), pm_call(L, l, x, y)),
                            pm_mul(f, pm_call(L, pm_addi(l, offset), x, y)));
    if (stencil)
        value = pm_add(value, pm_call(L, l, pm_addi(x, 1), y));
    value = pm_add(value, pm_call(H, pm_int(ctx, 1), x, y));
    pm_func *out = pm_func_new(ctx, "out", PM_F32, 2, pm_exprs(x, y), pm_intervals(inner, all));
    pm_func_define_expr(out, value);
    pm_pipeline *p = NULL;
    char what[64];
    snprintf(what, sizeof what, "dynamic inline (offset %d%s)", offset, stencil ? ", stencil" : "");
    if (CHECK(pm_pipeline_new(ctx, "dynamic", 1, &N, 1, &in, 1, &out, &p) == PM_OK)) {
        static const int64_t sizes[] = {3, 4, 17, 300};
        check_small_pipeline(what, p, want, sizes, 4, 1e-4);
    } else {
        fprintf(stderr, "  %s: %s\n", what, pm_ctx_errmsg(ctx));
    }
    pm_ctx_free(ctx);
}

/* A sample compiled at its paper estimates (with the overlap threshold `threshold`, < 0
 * the default) with threads 1, 1 + thread_step, ... up to max_threads has a group whose dump line
 * contains `want`, and that kernel equals the interpreter (within the app's own
 * tolerance, or this file's tolerance() when own_tolerance is false) at sizes far below
 * the estimates (its tiles clipped to a small image). */
static void check_at_paper_tiled(const char *name, double threshold, int64_t tile_rows,
                                 const char *want, const int64_t (*sizes)[2], int nsizes,
                                 int max_threads, int thread_step, bool own_tolerance,
                                 int grouping)
{
    const pm_sample_app *app = pm_sample_find(name);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    if (CHECK(p != NULL)) {
        pm_value est[16];
        app->params(app->paper_rows, app->paper_cols, est);
        double tol = own_tolerance ? app->tolerance : tolerance(app);
        for (int threads = 1; threads <= max_threads; threads += thread_step) {
            pm_compile_options o = pm_compile_options_default();
            o.threads = threads;
            o.overlap_threshold = threshold;
            o.tile_size[0] = tile_rows;
            o.grouping = grouping;
            o.keep = "groups";
            pm_error err;
            pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
            if (!CHECK(k != NULL)) {
                fprintf(stderr, "  %s: %s\n", name, err.message);
                continue;
            }
            const char *g = pm_kernel_dump(k, "groups");
            if (!CHECK(g && strstr(g, want) != NULL))
                fprintf(stderr, "  %s: no \"%s\" in\n%s\n", name, want, g ? g : "");
            for (int i = 0; i < nsizes; i++) {
                pm_value params[16];
                app->params(sizes[i][0], sizes[i][1], params);
                double d = differential(p, k, app, params);
                if (!CHECK(d <= tol))
                    fprintf(stderr, "  %s %lldx%lld threads=%d at paper estimates: "
                            "max|diff| %g\n", name, (long long)sizes[i][0],
                            (long long)sizes[i][1], threads, d);
            }
            pm_kernel_free(k);
        }
    }
    pm_ctx_free(ctx);
}

static void check_at_paper(const char *name, double threshold, const char *want,
                           const int64_t (*sizes)[2], int nsizes, int max_threads,
                           int thread_step, bool own_tolerance)
{
    check_at_paper_tiled(name, threshold, 0, want, sizes, nsizes, max_threads, thread_step,
                         own_tolerance, 0);
}

/* At 1 and 2 threads, at three sizes of about 100 x 100. */
static void check_paper_group(const char *name, double threshold, const char *want)
{
    static const int64_t sizes[][2] = {{96, 128}, {97, 131}, {160, 100}};
    check_at_paper(name, threshold, want, sizes, 3, 2, 1, true);
}

/* Harris at the paper's sizes runs in strips of whole rows, in blocks of rows (tile.c,
 * schedule.c); so does unsharp mask in strips of 32 rows set by the options (the model
 * makes its blocks, which reach no row past their own, strips of a block's rows: `want`
 * at tile_rows 0); compiled for those estimates and run at edge sizes (one pixel, odd,
 * fewer rows than a block, a strip or a tile, several strips), with 1, 2 and 3 threads,
 * the kernels equal the interpreter. */
static void check_row_blocks(const char *name, int64_t tile_rows, const char *want)
{
    static const int64_t sizes[][2] = {{1, 1}, {5, 3}, {7, 40}, {17, 33}, {70, 93},
                                       {97, 131}, {203, 64}};
    check_at_paper_tiled(name, -1, tile_rows, want, sizes,
                         (int)(sizeof sizes / sizeof sizes[0]), 3, 1, false, 0);
}

/* Tiles and row blocks counted from the live-out's first row when it is not 0 (tile.c's
 * origin, schedule.c's block band, the box runs' first row): g(x, y) = 2 f(x - 1, y) +
 * f(x + 1, y) on rows 11 .. R + 9 (an origin above a block's 8 rows), f a 3-row stencil of
 * the input, in strips of 32 whole rows in blocks of 8 at 2048 x 2048 estimates. Tiles from
 * 0 would also pass here; blocks numbered from 0 while the tile's first block counts from
 * the origin would not. The kernel, at 1, 2 and 3 threads, equals the interpreter at edge
 * sizes (one row, fewer rows than a block or a strip, odd, several strips). */
static void check_offset_row_blocks(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *in = pm_image(ctx, "in", PM_F32, pm_addi(R, 20), pm_addi(C, 4));
    pm_expr *const xy[] = {x, y};
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 2, xy,
                             pm_intervals(pm_interval_new(pm_int(ctx, 10), pm_addi(R, 10), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_addi(C, 3), 1)));
    pm_func_define_expr(f, pm_add(pm_add(pm_call(in, pm_addi(x, -1), y), pm_call(in, x, y)),
                                  pm_call(in, pm_addi(x, 1), y)));
    pm_func *g = pm_func_new(ctx, "g", PM_F32, 2, xy,
                             pm_intervals(pm_interval_new(pm_int(ctx, 11), pm_addi(R, 9), 1),
                                          pm_interval_new(pm_int(ctx, 1), pm_addi(C, 2), 1)));
    pm_func_define_expr(g, pm_add(pm_mul(pm_call(f, pm_addi(x, -1), y), pm_int(ctx, 2)),
                                  pm_call(f, pm_addi(x, 1), y)));
    pm_pipeline *p = NULL;
    if (!CHECK(pm_pipeline_new(ctx, "offset_blocks", 2, (pm_expr *[]){R, C}, 1, &in, 1, &g,
                               &p) == PM_OK)) {
        fprintf(stderr, "  offset_blocks: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    static const pm_sample_app app = {.name = "offset_blocks", .fill_input = fill_any};
    static const int64_t sizes[][2] = {{1, 1}, {5, 3}, {7, 40}, {33, 17}, {70, 93}, {97, 131}};
    for (int threads = 1; threads <= 3; threads++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        o.tile_size[0] = 32;
        o.keep = "groups,ast";
        pm_value est[2] = {PM_I(2048), PM_I(2048)};
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  offset_blocks: %s\n", err.message);
            continue;
        }
        const char *gd = pm_kernel_dump(k, "groups"), *ast = pm_kernel_dump(k, "ast");
        if (!CHECK(gd && strstr(gd, "[x:32 x y:") && strstr(gd, "blocks of 8 rows") && ast &&
                   strstr(ast, "8 * c2 + 11;") &&
                   strstr(ast, "in each block of 8 rows, d0 from 8 * block + 12")))
            fprintf(stderr, "  offset_blocks: want strips of 32 rows from row 11 in blocks of "
                            "8:\n%s\n%s\n", gd ? gd : "", ast ? ast : "");
        for (int i = 0; i < (int)(sizeof sizes / sizeof sizes[0]); i++) {
            pm_value params[2] = {PM_I(sizes[i][0]), PM_I(sizes[i][1])};
            double d = differential(p, k, &app, params);
            if (!CHECK(d <= 0))
                fprintf(stderr, "  offset_blocks %lldx%lld, %d threads: max|diff| %g\n",
                        (long long)sizes[i][0], (long long)sizes[i][1], threads, d);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* Each app grouped by the full DP at its paper's estimates (group_dp.c: its grouping is
 * kept only when the model prices it lower than greedy's), run at edge sizes with one
 * thread: the kernel equals the interpreter. */
static void check_dp_at_paper(void)
{
    static const int64_t sizes[][2] = {{1, 1}, {17, 33}, {97, 131}};
    int napps;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    for (int a = 0; a < napps; a++)
        check_at_paper_tiled(apps[a].name, -1, 0, "grouping: DP, cost", sizes, 3, 1, 1, true,
                             PM_GROUPING_DP);
}

/* Groups with exported members (plan.h's pm_group.exported: a member read after its group
 * too, whose tiles copy their own parts to its full buffer): the DP picks them for the
 * pyramids at paper estimates, and the kernels equal the interpreter at sizes that leave
 * a first and a last tile, or one tile for all, at 1 and 2 threads (quick: interpolate,
 * the default grouping, 2 threads, three sizes). */
static void check_exports(bool quick)
{
    static const int64_t sizes[][2] = {{1, 1}, {97, 131}, {5, 3}, {17, 33}, {260, 390}};
    static const char *const apps[] = {"interpolate", "local_laplacian"};
    for (int a = 0; a < (quick ? 1 : 2); a++)
        for (int grouping = 0; grouping <= (quick ? 0 : PM_GROUPING_DP); grouping += PM_GROUPING_DP)
            check_at_paper_tiled(apps[a], -1, 0, "exported: each tile copies its part out",
                                 sizes, quick ? 3 : 5, 2, quick ? 2 : 1, true, grouping);
}

static void check_structure(void)
{
    /* blury's points are each read once, through sharpen (inlined, reading blury at its
     * own point): inlined too */
    static const char *const unsharp[] = {"inlined: blury sharpen\n",
                                          "live-out mask, 2 stages, overlapped tiles"};
    check_sample_groups("unsharp_mask", 2048, 2048, unsharp, 2);
    /* the products and det are read inside their cases' conditions: inlined; the box
     * sums are read once, at one point of harris, through det and trace */
    static const char *const harris[] = {"inlined: Ixx Iyy Ixy Sxx Syy Sxy det trace\n",
                                         "live-out harris, 3 stages, overlapped tiles"};
    check_sample_groups("harris", 6400, 6400, harris, 2);
    check_shared_loops();
    check_box_bodies();
    /* a point-wise stage read at 2x + k (downsampling) is inlined, evaluated on every
     * second lane */
    static const char *const interpolate[] = {"inlined: downsampled_L0"};
    check_sample_groups("interpolate", 2560, 1536, interpolate, 1);
    /* a stage whose points are each read once is inlined whatever it reads: bilateral
     * grid's trilinear interpolation (two channels told apart by a constant) into the
     * output, which then groups with the blurs it reads at data-dependent bins (11 of
     * them, computed whole in every tile); camera pipe's colour correction into the tone curve, but not red, green
     * and blue, each point of which the three channels read */
    static const char *const bilateral[] = {"inlined: interpolated\n",
                                            "live-out filtered, 4 stages"};
    check_sample_groups("bilateral_grid", 1536, 2560, bilateral, 2);
    /* a data-dependent read of a stage outside the group (the tone curve LUT) does not
     * keep a stage out of a group; the Bayer planes, a case per constant plane index and
     * each plane read once, are inlined (a read reaches one case) */
    static const char *const camera[] = {"inlined: deinterleaved corrected\n",
                                         "live-out process, 23 stages"};
    check_sample_groups("camera_pipe", 1920, 2528, camera, 2);
    check_histogram_channels();
    check_histogram_window();
    check_row_blocks("harris", 0, ", blocks of 8 rows");
    check_offset_row_blocks();
    check_row_blocks("unsharp_mask", 32, "[x:32 x y:2048], redundant computation 0.0%, "
                                         "scratch 198144 bytes per tile, blocks of 8 rows");
    check_row_blocks("unsharp_mask", 0, "[x:8 x y:2048], redundant computation 0.0%, "
                                        "scratch 198144 bytes per tile, cost ");
    check_update_bounds();
    check_border_pieces();
    check_vector_shares();
    check_row_cases(2, false);
    check_row_cases(3, false);
    check_row_cases(2, true);
    check_short_rows();
    check_vector_tails();
    check_narrow_gather(PM_U8);
    check_narrow_gather(PM_U16);
    check_transpose();
    check_conditional_inline(0, "inlined: f\n");
    check_conditional_inline(-1, "inlined: none");
    check_streamed_outputs(PM_F32);
    check_streamed_outputs(PM_U8);
    check_prefetched_reads(false);
    check_prefetched_reads(true);
    check_residue_inline(2, "inlined: U\n");
    check_residue_inline(3, "inlined: none");
    check_guarded_rows();
    check_exact_floats();
    check_exact_reuse();
    check_table_reads(PM_F32, 16, 0);
    check_table_reads(PM_F32, 16, 3);
    check_table_reads(PM_I32, 16, 0);
    check_table_reads(PM_F32, 8, 0);
    check_table_reads(PM_F64, 8, 0);
    check_histogram_layers();
    check_vector_histogram(PM_F32, 16, 10);
    check_vector_histogram(PM_I32, 16, 10);
    check_vector_histogram(PM_I32, 16, 16);
    check_vector_histogram(PM_F32, 8, 10);
    check_vector_histogram(PM_F32, 8, 8);
    check_vector_histogram(PM_F64, 8, 10);
    check_vector_histogram(PM_F64, 8, 4);
    check_vector_histogram(PM_F64, 16, 10); /* 20 registers of bins a channel: a pass each */
    check_transparent_inline(0, "inlined: S A B\n");
    check_transparent_inline(1, "inlined: A B\n");
    check_dynamic_inline(1, false, "inlined: H L\nrecomputed where read at data-dependent points: G\n");
    check_dynamic_inline(2, false, "inlined: H L\nrecomputed where read at data-dependent points: G\n");
    /* L read at l - 1, which may leave its box (clamped): L stays out of out's group
     * (a scratch holds a footprint, not the box a clamp needs) */
    check_dynamic_inline(-1, false, "inlined: H\n");
    check_dynamic_inline(-1, false, "live-out out, 1 stage");
    /* L read at l and l + 1 (proven inside its 5 levels) and at x + 1: not inlined, but
     * grouped with out and G, computed whole along k in every tile (align.h) */
    check_dynamic_inline(1, true, "live-out out, 3 stages");
    /* local Laplacian: the Laplacian levels inlined into the output levels' reads at two
     * data-dependent intensity levels, the remapped picture recomputed there (and so
     * fused with the first level of its Gaussian pyramid) */
    static const char *const laplacian[] = {
        "inlined: D_inGPyramid_L7 lPyramid_L0 lPyramid_L1",
        "recomputed where read at data-dependent points: gPyramid_L0\n",
        "live-out D_gPyramid_L1, 3 stages, overlapped tiles"};
    check_sample_groups("local_laplacian", 2560, 1536, laplacian, 3);
    /* pyramid blending with the threshold at 0.5: one group as large as the group limit
     * allows, 23 stages (29 with a limit of 32; its footprint bounds are taken over the
     * tiles that exist: over all tiles, a small image's clipped pieces left them
     * unbounded and the group fell apart into single stages) */
    check_paper_group("pyramid_blend", 0.5, "live-out blend, 23 stages, overlapped tiles");
    /* its up-sampled levels, two cases by column parity read once by the blend, inlined */
    static const char *const pyramid[] = {
        "inlined: Uy_img1_L0 Uy_img1_L1 Uy_img1_L2 Uy_img2_L0 Uy_img2_L1 Uy_img2_L2 Res_0 "
        "Res_1 Res_2\n"};
    check_sample_groups("pyramid_blend", 2048, 2048, pyramid, 1);
    /* interpolate's output group in strips of whole rows (tile.c's candidates; how many
     * rows depends on the host's L2, the only group with 1536-point rows) */
    check_paper_group("interpolate", -1, " y:1536], redundant computation");
    /* strips of whole rows may use more scratch than other tiles (codegen/costs.c's
     * pm_costs.strip_budget): pyramid blending's and camera pipe's big groups in strips
     * (with half an L2, as other tiles, they were 32 x 128 and 32 x 512 tiles; the only
     * groups with 2048- and 2528-point rows) */
    check_paper_group("pyramid_blend", -1, " y:2048], redundant computation");
    check_paper_group("camera_pipe", -1, " y:2528], redundant computation");
}

static const setting kCovering[] = {
    /* tile0 tile1 threads width threshold limit fusion stream prefetch grouping */
    {0, 0, 2, 0, -1, 0, 1, 0, 0, 0},       /* the model's choice */
    {1, 1, 1, 16, 100, 0, 1, 0, 1, 0},     /* 1x1 tiles, everything fused, prefetched reads */
    {3, 3, 3, 4, 100, 0, 1, 1, 1, 0},      /* odd tiles, odd thread count, narrow vectors,
                                           streamed outputs (16-byte vectors), prefetches */
    {16, 16, 2, 1, 100, 0, 1, 0, 0, 0},    /* scalar code */
    {64, 64, 1, 16, 100, 3, 1, 1, 0, 0},   /* small groups, streamed outputs */
    {256, 256, 2, 16, 0.05, 0, 1, 0, 1, 0},/* tight threshold, prefetched reads */
    {4096, 4096, 2, 16, 100, 0, 1, 1, 0, 0}, /* tiles larger than the image, streamed outputs */
    {0, 0, 2, 16, -1, 0, 0, 1, 1, 0},      /* fusion off, streamed outputs, prefetches */
    {0, 0, 2, 0, -1, 0, 1, 0, 0, PM_GROUPING_DP},        /* the DP's grouping and tiles */
    {0, 0, 3, 16, 0.5, 0, 1, 0, 1, PM_GROUPING_DP_CAPPED}, /* the capped DP, 3 threads */
};

static const int64_t kSizes[][2] = {{1, 1}, {1, 37}, {5, 3}, {17, 33}, {70, 93}};

int main(int argc, char **argv)
{
    verbose = getenv("PM_TEST_VERBOSE") != NULL;
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL))
        return check_finish("optimizer");
    bool quick = argc >= 2 && strcmp(argv[1], "--quick") == 0;
    if (argc >= 2 && !quick) { /* one app, one setting */
        const pm_sample_app *app = pm_sample_find(argv[1]);
        setting s = {argc > 2 ? atoi(argv[2]) : 0, argc > 3 ? atoi(argv[3]) : 0,
                     argc > 4 ? atoi(argv[4]) : 2, argc > 5 ? atoi(argv[5]) : 0,
                     argc > 6 ? atof(argv[6]) : -1, 0, 1, 0, 0, 0};
        verbose = true;
        if (CHECK(app != NULL))
            check_app(app, &s, kSizes, (int)(sizeof kSizes / sizeof kSizes[0]));
        pm_jit_free(jit);
        return check_finish("optimizer");
    }
    check_structure();
    if (!quick)
        check_dp_at_paper();
    check_exports(quick);
    int napps;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    /* --quick (the sanitizer build, where compiles are slow): three settings that still
     * cover forced 1x1 and odd tiles, 1..3 threads and the model, at three sizes */
    size_t nset = quick ? 3 : sizeof kCovering / sizeof kCovering[0];
    int nsizes = quick ? 3 : (int)(sizeof kSizes / sizeof kSizes[0]);
    static const int64_t kQuickSizes[][2] = {{1, 1}, {5, 3}, {17, 33}};
    for (int a = 0; a < napps; a++)
        for (size_t s = 0; s < nset; s++)
            check_app(&apps[a], &kCovering[s], quick ? kQuickSizes : kSizes, nsizes);
    pm_jit_free(jit);
    return check_finish("optimizer");
}
