/* A program built against an installed PolyMage-JIT (CMake: find_package(PolyMage)):
 * doubles the brightness of an 8-bit image, saturating at 255, JIT-compiled in the
 * installed compile helper (isolate_compiles), run, and checked against a plain C loop. */
#include <polymage.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enum { ROWS = 600, COLS = 800 };
    /* bright(x, y) = u8(min(2 * i32(I(x, y)), 255)) over the whole image */
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *bright = pm_func_new(ctx, "bright", PM_U8, 2, pm_exprs(x, y),
                                  pm_intervals(rows, cols));
    pm_expr *doubled = pm_muli(pm_cast(PM_I32, pm_call(I, x, y)), 2);
    pm_func_define_expr(bright, pm_min(doubled, pm_int(ctx, 255)));
    pm_pipeline *p;
    if (pm_pipeline_new(ctx, "bright", 2, pm_exprs(R, C), 1, &I, 1, &bright, &p) != PM_OK) {
        fprintf(stderr, "consumer-cmake: %s\n", pm_ctx_errmsg(ctx));
        return 1;
    }

    pm_error err;
    pm_jit_options jo = pm_jit_options_default(); /* start from the defaults (ABI rule) */
    jo.threads = 2;
    jo.isolate_compiles = 1; /* compiled by the installed helper, libexec/polymage/ */
    pm_jit *jit = pm_jit_new(&jo, &err);
    pm_value sizes[] = {PM_I(ROWS), PM_I(COLS)};
    pm_kernel *k = jit ? pm_jit_compile(jit, p, sizes, NULL, &err) : NULL;
    uint8_t *in = malloc(ROWS * COLS), *out = malloc(ROWS * COLS);
    int status = 1;
    if (k && in && out) {
        for (int i = 0; i < ROWS * COLS; i++)
            in[i] = (uint8_t)(i * 31 + i / COLS);
        pm_buffer bin = pm_buffer_dense(in, PM_U8, 2, (int64_t[]){ROWS, COLS});
        pm_buffer bout = pm_buffer_dense(out, PM_U8, 2, (int64_t[]){ROWS, COLS});
        if (pm_kernel_run(k, sizes, &bin, &bout, &err) == PM_OK) {
            int wrong = 0;
            for (int i = 0; i < ROWS * COLS; i++)
                wrong += out[i] != (in[i] * 2 > 255 ? 255 : in[i] * 2);
            status = wrong ? 1 : 0;
            printf("consumer-cmake: polymage %s, %d x %d brighten, %d wrong pixels: %s\n",
                   pm_version(), ROWS, COLS, wrong, status ? "WRONG" : "ok");
        }
    }
    if (err.status != PM_OK)
        fprintf(stderr, "consumer-cmake: %s\n", err.message);
    free(in);
    free(out);
    pm_kernel_free(k);
    pm_jit_free(jit);
    pm_ctx_free(ctx);
    return status;
}
