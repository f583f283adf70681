/* hist_eq_plain.c — samples/examples/hist_eq.c without the helpers: the image's domain is
 * written out as intervals (pm_func_interval reads it off the image). */
#include "plain.h"

#include <stdint.h>

pm_pipeline *hist_eq_plain_pipeline(pm_ctx **ctx_out)
{
    pm_ctx *ctx = *ctx_out = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y"), *v = pm_var(ctx, "v");
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_interval *pixels[] = {pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                             pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)};
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, &v, &bins, 2, pm_exprs(x, y),
                                     pixels, PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_call(I, x, y)), pm_int(ctx, 1));
    pm_func *cdf = pm_func_new(ctx, "cdf", PM_I32, 1, &v, &bins);
    pm_define(cdf, pm_case_new(pm_eq(v, pm_int(ctx, 0)), pm_call(hist, v)),
              pm_case_new(pm_ge(v, pm_int(ctx, 1)), pm_add(pm_call(cdf, pm_addi(v, -1)),
                                                           pm_call(hist, v))));
    pm_func *cmin = pm_reduction_new(ctx, "cmin", PM_I32, 0, NULL, NULL, 2, pm_exprs(x, y),
                                     pixels, PM_REDUCE_MIN, pm_const(ctx, PM_I32, INT32_MAX));
    pm_reduction_define(cmin, 0, NULL, pm_call(cdf, pm_call(I, x, y)));
    pm_expr *lo = pm_cast(PM_I64, pm_call_n(cmin, 0, NULL));
    pm_expr *n = pm_mul(pm_cast(PM_I64, R), pm_cast(PM_I64, C));
    pm_expr *num = pm_muli(pm_sub(pm_cast(PM_I64, pm_call(cdf, pm_call(I, x, y))), lo), 255);
    pm_func *out = pm_func_new(ctx, "out", PM_U8, 2, pm_exprs(x, y), pixels);
    pm_func_define_expr(out, pm_div(num, pm_max(pm_sub(n, lo), pm_const(ctx, PM_I64, 1))));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "hist_eq_plain", 2, pm_exprs(R, C), 1, &I, 1, &out, &p);
    return p;
}
