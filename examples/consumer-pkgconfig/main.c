/* A program built against an installed PolyMage-JIT (pkg-config): a 3-point vertical
 * blur of a float image, JIT-compiled, run, and checked against a plain C loop. */
#include <polymage.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
    enum { ROWS = 512, COLS = 768 };
    /* blur(x, y) = (I(x, y-1) + I(x, y) + I(x, y+1)) / 3 for 0 <= x < R, 1 <= y <= C-2 */
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 1), pm_addi(C, -2), 1);
    pm_func *blur = pm_func_new(ctx, "blur", PM_F32, 2, pm_exprs(x, y),
                                pm_intervals(rows, cols));
    pm_expr *sum = pm_add(pm_add(pm_call(I, x, pm_addi(y, -1)), pm_call(I, x, y)),
                          pm_call(I, x, pm_addi(y, 1)));
    pm_func_define_expr(blur, pm_mulf(sum, 1.0 / 3));
    pm_pipeline *p;
    if (pm_pipeline_new(ctx, "blur", 2, pm_exprs(R, C), 1, &I, 1, &blur, &p) != PM_OK) {
        fprintf(stderr, "consumer-pkgconfig: %s\n", pm_ctx_errmsg(ctx));
        return 1;
    }

    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err); /* threads: all cores (libgomp) */
    pm_value sizes[] = {PM_I(ROWS), PM_I(COLS)};
    pm_kernel *k = jit ? pm_jit_compile(jit, p, sizes, NULL, &err) : NULL;
    float *in = malloc(sizeof(float) * ROWS * COLS);
    float *out = malloc(sizeof(float) * ROWS * (COLS - 2));
    int status = 1;
    if (k && in && out) {
        for (int i = 0; i < ROWS * COLS; i++)
            in[i] = (float)((unsigned)i * 7919u % 1000u) / 1000.0f;
        pm_buffer bin = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){ROWS, COLS});
        pm_buffer bout = pm_buffer_dense(out, PM_F32, 2, (int64_t[]){ROWS, COLS - 2});
        if (pm_kernel_run(k, sizes, &bin, &bout, &err) == PM_OK) {
            double worst = 0;
            for (int r = 0; r < ROWS; r++)
                for (int c = 1; c <= COLS - 2; c++) {
                    const float *row = in + (size_t)r * COLS;
                    float want = (row[c - 1] + row[c] + row[c + 1]) * (float)(1.0 / 3);
                    worst = fmax(worst, fabs(out[(size_t)r * (COLS - 2) + c - 1] - want));
                }
            status = worst <= 1e-6 ? 0 : 1;
            printf("consumer-pkgconfig: polymage %s, %d x %d blur, max error %g: %s\n",
                   pm_version(), ROWS, COLS, worst, status ? "WRONG" : "ok");
        }
    }
    if (err.status != PM_OK)
        fprintf(stderr, "consumer-pkgconfig: %s\n", err.message);
    free(in);
    free(out);
    pm_kernel_free(k);
    pm_jit_free(jit);
    pm_ctx_free(ctx);
    return status;
}
