/* sobel_plain.c — samples/examples/sobel.c without the helpers: a function over the image
 * and a 1-pixel frame reads the image at clamped indices (the edge), and pm_stencil's
 * kernels are pictures of the (y, x) plane, so the derivative across columns (y) is the
 * kernel whose rows differ. */
#include "plain.h"

pm_pipeline *sobel_plain_pipeline(pm_ctx **ctx_out)
{
    pm_ctx *ctx = *ctx_out = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y"), *const xy[] = {x, y};
    pm_interval *dom[] = {pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                          pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)};
    pm_interval *framed[] = {pm_interval_new(pm_int(ctx, -1), R, 1),
                             pm_interval_new(pm_int(ctx, -1), C, 1)};
    pm_func *E = pm_func_new(ctx, "E", PM_F32, 2, xy, framed);
    pm_expr *xc = pm_clamp(x, pm_int(ctx, 0), pm_addi(R, -1));
    pm_expr *yc = pm_clamp(y, pm_int(ctx, 0), pm_addi(C, -1));
    pm_func_define_expr(E, pm_cast(PM_F32, pm_call(I, xc, yc)));
    static const double kx[] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
    static const double ky[] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
    pm_func *gx = pm_func_new(ctx, "gx", PM_F32, 2, xy, dom);
    pm_func_define_expr(gx, pm_stencil(E, xy, 1, 3, 3, kx));
    pm_func *gy = pm_func_new(ctx, "gy", PM_F32, 2, xy, dom);
    pm_func_define_expr(gy, pm_stencil(E, xy, 1, 3, 3, ky));
    pm_func *mag = pm_func_new(ctx, "mag", PM_U8, 2, xy, dom);
    pm_expr *dx = pm_call(gx, x, y), *dy = pm_call(gy, x, y);
    pm_func_define_expr(mag, pm_sqrt(pm_add(pm_mul(dx, dx), pm_mul(dy, dy))));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "sobel_plain", 2, pm_exprs(R, C), 1, &I, 1, &mag, &p);
    return p;
}
