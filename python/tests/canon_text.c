/* canon_text.c — prints the canonical text (pm_pipeline_text) of a pipeline built in C,
 * for the Python tests to compare with the same pipeline built in Python (test_python,
 * python/tests/test_builder.py): `pm_py_canon_text blur3` is docs/canonical-text.md's
 * 3x3 blur (test_canon_text checks that text too), `pm_py_canon_text APP` a sample app
 * (samples/, e.g. harris), `pm_py_canon_text blur_rgb|sobel|hist_eq` a filter of
 * samples/examples (python/polymage/filters.py builds the same ones). Comparing with a C program, not a stored golden text, keeps
 * the check true when the canonical form changes. */
#include <polymage.h>
#include <stdio.h>
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

int main(int argc, char **argv)
{
    if (argc != 2)
        return fprintf(stderr, "usage: pm_py_canon_text blur3|APP|blur_rgb|sobel|hist_eq\n"), 2;
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
