/* blur_rgb_plain.c — samples/examples/blur_rgb.c without the helpers: every tap of both
 * passes clamps its index to the image by hand, and the taps are summed in a loop. */
#include "plain.h"

pm_pipeline *blur_rgb_plain_pipeline(pm_ctx **ctx_out)
{
    pm_ctx *ctx = *ctx_out = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, pm_int(ctx, 3), R, C);
    pm_expr *c = pm_var(ctx, "c"), *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *dom[] = {pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 2), 1),
                          pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                          pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)};
    pm_func *bx = pm_func_new(ctx, "bx", PM_U16, 3, pm_exprs(c, x, y), dom);
    pm_func *by = pm_func_new(ctx, "by", PM_U8, 3, pm_exprs(c, x, y), dom);
    static const int g[] = {1, 4, 6, 4, 1};
    pm_expr *sx = NULL, *sy = NULL;
    for (int k = 0; k < 5; k++) {
        pm_expr *xk = pm_clamp(pm_addi(x, k - 2), pm_int(ctx, 0), pm_addi(R, -1));
        pm_expr *yk = pm_clamp(pm_addi(y, k - 2), pm_int(ctx, 0), pm_addi(C, -1));
        pm_expr *tx = pm_muli(pm_cast(PM_U16, pm_call(I, c, xk, y)), g[k]);
        pm_expr *ty = pm_muli(pm_call(bx, c, x, yk), g[k]);
        sx = sx ? pm_add(sx, tx) : tx;
        sy = sy ? pm_add(sy, ty) : ty;
    }
    pm_func_define_expr(bx, sx);
    pm_func_define_expr(by, pm_divi(sy, 256));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "blur_rgb_plain", 2, pm_exprs(R, C), 1, &I, 1, &by, &p);
    return p;
}
