/* canon_text.c — prints the canonical text (pm_pipeline_text) of a pipeline built in C,
 * for the Python tests to compare with the same pipeline built in Python (test_python,
 * python/tests/test_builder.py, test_apps.py): `pm_py_canon_text blur3` is
 * docs/canonical-text.md's 3x3 blur (test_canon_text checks that text too),
 * `pm_py_canon_text APP` a sample app (samples/, e.g. harris; python/polymage/apps.py
 * builds the same ones), `pm_py_canon_text blur_rgb|sobel|hist_eq` a filter of
 * samples/examples (python/polymage/filters.py builds the same ones). Comparing with a C
 * program, not a stored golden text, keeps the check true when the canonical form changes.
 *
 * For polymage.apps it also prints what the C registry (samples.h) holds:
 * `pm_py_canon_text apps` the apps' names in its order; `pm_py_canon_text app APP ROWS
 * COLS` the app's parameter values for a picture of ROWS x COLS (the 64 bits of each
 * pm_value in hex: .i for an integer parameter, .f for a float one), its smallest, quick
 * and paper sizes and its tolerance; `pm_py_canon_text inputs APP ROWS COLS` its inputs
 * as fill_input makes them, raw bytes one after another (each a dense buffer, row-major,
 * native byte order), for test_apps to compare with apps.inputs(); `pm_py_canon_text
 * outputs APP ROWS COLS` its outputs likewise, computed from those inputs by a kernel
 * compiled with the default options (the parameters as estimates). */
#include <polymage.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/examples.h"
#include "samples.h"

static pm_pipeline *build_blur3(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *inner_x = pm_interval_new(pm_int(ctx, 1), pm_addi(R, -2), 1);
    pm_interval *all_y = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_interval *inner_y = pm_interval_new(pm_int(ctx, 1), pm_addi(C, -2), 1);
    pm_func *bx = pm_func_new(ctx, "blurx", PM_F32, 2, pm_exprs(x, y),
                              pm_intervals(inner_x, all_y));
    pm_func_define_expr(bx, pm_mulf(pm_add(pm_add(pm_call(I, pm_addi(x, -1), y), pm_call(I, x, y)),
                                           pm_call(I, pm_addi(x, 1), y)), 1.0 / 3));
    pm_func *by = pm_func_new(ctx, "blury", PM_F32, 2, pm_exprs(x, y),
                              pm_intervals(inner_x, inner_y));
    pm_func_define_expr(by, pm_mulf(pm_add(pm_add(pm_call(bx, x, pm_addi(y, -1)),
                                                  pm_call(bx, x, y)),
                                           pm_call(bx, x, pm_addi(y, 1))), 1.0 / 3));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "blur3", 2, pm_exprs(R, C), 1, &I, 1, &by, &p);
    return p;
}

/* Writes the bytes of a dense buffer to stdout; 0 on success. */
static int write_buffer(const pm_buffer *b)
{
    size_t count = (size_t)pm_sample_buffer_count(b);
    return fwrite(b->data, pm_type_size(b->type), count, stdout) == count ? 0 : -1;
}

/* The app's inputs as fill_input makes them, or (outputs) its outputs as a kernel of the
 * default options compiled for these parameters computes them from those inputs, each
 * output zeroed first. */
static int dump_buffers(const pm_sample_app *app, pm_pipeline *p, const pm_value *params,
                        int outputs)
{
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p), status = 0;
    pm_buffer in[8] = {{0}}, out[8] = {{0}};
    if (nin > 8 || nout > 8)
        return fprintf(stderr, "%s: %d inputs, %d outputs\n", app->name, nin, nout), 1;
    for (int i = 0; i < nin && !status; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        if (in[i].data)
            app->fill_input(i, &in[i], params);
        status = !in[i].data;
    }
    for (int i = 0; outputs && i < nout && !status; i++) {
        out[i] = pm_sample_buffer(p, 1, i, params);
        status = !out[i].data;
    }
    if (status)
        fprintf(stderr, "%s: out of memory\n", app->name);
    pm_error err = {0};
    pm_jit *jit = outputs && !status ? pm_jit_new(NULL, &err) : NULL;
    pm_kernel *k = jit ? pm_jit_compile(jit, p, params, NULL, &err) : NULL;
    if (outputs && !status && (!k || pm_kernel_run(k, params, in, out, &err) != PM_OK)) {
        fprintf(stderr, "%s: %s\n", app->name, err.message);
        status = 1;
    }
    for (int i = 0; i < (outputs ? nout : nin) && !status; i++)
        if (write_buffer(outputs ? &out[i] : &in[i]) != 0) {
            fprintf(stderr, "%s: write failed\n", app->name);
            status = 1;
        }
    pm_kernel_free(k);
    pm_jit_free(jit);
    for (int i = 0; i < 8; i++) {
        free(in[i].data);
        free(out[i].data);
    }
    return status;
}

/* `app`, `inputs` and `outputs`: the registry's view of APP at ROWS x COLS (see the
 * header). */
static int app_command(const char *what, const char *name, const char *rows_s, const char *cols_s)
{
    const pm_sample_app *app = pm_sample_find(name);
    char *end_r, *end_c;
    long long rows = strtoll(rows_s, &end_r, 10), cols = strtoll(cols_s, &end_c, 10);
    if (!app || *end_r || *end_c || rows < 1 || cols < 1)
        return fprintf(stderr, "%s %s %s %s: no such app or size\n", what, name, rows_s, cols_s), 2;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? app->build(ctx) : NULL;
    if (!p)
        return fprintf(stderr, "%s: %s\n", name, ctx ? pm_ctx_errmsg(ctx) : "out of memory"), 1;
    pm_value params[16];
    int n = pm_pipeline_nparams(p);
    if (n > 16)
        return fprintf(stderr, "%s: %d parameters\n", name, n), 1;
    app->params(rows, cols, params);
    int status = 0;
    if (!strcmp(what, "app")) {
        printf("params");
        for (int i = 0; i < n; i++) {
            uint64_t bits;
            memcpy(&bits, &params[i], sizeof bits);
            printf(" %016" PRIx64, bits);
        }
        printf("\nmin %" PRId64 " %" PRId64 "\nquick %" PRId64 " %" PRId64
               "\npaper %" PRId64 " %" PRId64 "\ntolerance %a\n",
               app->min_rows, app->min_cols, app->quick_rows, app->quick_cols,
               app->paper_rows, app->paper_cols, app->tolerance);
    }
    if (!strcmp(what, "inputs") || !strcmp(what, "outputs"))
        status = dump_buffers(app, p, params, !strcmp(what, "outputs"));
    pm_ctx_free(ctx);
    return status;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "apps")) {
        int n = 0;
        const pm_sample_app *apps = pm_sample_apps(&n);
        for (int i = 0; i < n; i++)
            printf("%s\n", apps[i].name);
        return 0;
    }
    if (argc == 5 && (!strcmp(argv[1], "app") || !strcmp(argv[1], "inputs") ||
                      !strcmp(argv[1], "outputs")))
        return app_command(argv[1], argv[2], argv[3], argv[4]);
    if (argc != 2)
        return fprintf(stderr, "usage: pm_py_canon_text blur3|APP|blur_rgb|sobel|hist_eq|apps\n"
                               "       pm_py_canon_text app|inputs|outputs APP ROWS COLS\n"), 2;
    static const struct { const char *name; pm_pipeline *(*build)(pm_ctx **); } filters[] = {
        {"blur_rgb", blur_rgb_pipeline}, {"sobel", sobel_pipeline}, {"hist_eq", hist_eq_pipeline}};
    pm_ctx *ctx = pm_ctx_new();
    const pm_sample_app *app = pm_sample_find(argv[1]);
    pm_pipeline *p = !strcmp(argv[1], "blur3") ? build_blur3(ctx) : app ? app->build(ctx) : NULL;
    for (size_t i = 0; i < sizeof filters / sizeof filters[0] && !p; i++)
        if (!strcmp(argv[1], filters[i].name)) {
            pm_ctx_free(ctx);
            p = filters[i].build(&ctx);
        }
    size_t len;
    const char *text = p ? pm_pipeline_text(p, &len) : NULL;
    if (!text)
        return fprintf(stderr, "%s: %s\n", argv[1], p ? pm_ctx_errmsg(ctx) : "no such pipeline"), 1;
    fwrite(text, 1, len, stdout);
    pm_ctx_free(ctx);
    return 0;
}
