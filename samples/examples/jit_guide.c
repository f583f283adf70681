/* jit_guide.c — every code fragment of docs/jit.md, compiled and run by
 * test/test_examples.c (scripts/check_doc_fragments.sh checks that each fragment of the
 * guide appears here or in the examples verbatim). Returns 0 when every step did what the
 * guide says, or the number of the step that did not. */
#include "examples/examples.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 2-D box filter: out(x, y) = mean of in over the 3x3 window, edges mirrored. */
static pm_pipeline *box3(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *in = pm_image(ctx, "in", PM_F32, R, C);   /* extents: 0 .. R-1, 0 .. C-1 */
    pm_func *E = pm_pad(in, "E", PM_BOUNDARY_MIRROR, NULL, 2, (const int[]){0, 1}, 1);
    static const double ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    pm_func *out = pm_stencil_func(E, "out", PM_F32, 1.0 / 9, 2, (const int[]){0, 1},
                                   (const int[]){3, 3}, ones);
    pm_pipeline *p = NULL;
    if (pm_pipeline_new(ctx, "box3", 2, pm_exprs(R, C), 1, &in, 1, &out, &p) != PM_OK)
        fprintf(stderr, "box3: %s\n", pm_ctx_errmsg(ctx));
    return p;
}

int jit_guide_demo(void)
{
    int step = 0;
    enum { ROWS = 48, COLS = 64 };
    float *pixels = malloc(sizeof(float) * ROWS * COLS);
    float *result = malloc(sizeof(float) * ROWS * COLS);
    float *again = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++)
        pixels[i] = (float)((i * 37) % 101) / 100;

    /* [compile and run] */
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);               /* one per process */
    if (!jit) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = box3(ctx);
    pm_value sizes[] = {PM_I(ROWS), PM_I(COLS)};        /* R, C: the pipeline's parameters */
    pm_kernel *k = pm_jit_compile(jit, p, sizes, NULL, &err);
    pm_ctx_free(ctx);                                   /* the kernel does not need it */
    if (!k) {
        fprintf(stderr, "compile: %s\n", err.message);
        return 2;
    }
    pm_buffer in = pm_buffer_dense(pixels, PM_F32, 2, (const int64_t[]){ROWS, COLS});
    pm_buffer out = pm_buffer_dense(result, PM_F32, 2, (const int64_t[]){ROWS, COLS});
    pm_status st = pm_kernel_run(k, sizes, &in, &out, &err);  /* PM_OK, or why not */
    if (st != PM_OK)
        fprintf(stderr, "run: %s\n", err.message);
    /* [end] */
    step++;
    float want = (pixels[0] + pixels[0] + pixels[1] + pixels[0] + pixels[0] + pixels[1] +
                  pixels[COLS] + pixels[COLS] + pixels[COLS + 1]) / 9; /* mirrored corner */
    if (st != PM_OK)
        goto done;
    if (result[0] < want - 1e-5f || result[0] > want + 1e-5f)
        goto done;

    /* Any size works with the same kernel: sizes were estimates. */
    step++;
    {
        /* [other sizes] */
        pm_value small[] = {PM_I(5), PM_I(7)};
        pm_buffer in2 = pm_buffer_dense(pixels, PM_F32, 2, (const int64_t[]){5, 7});
        pm_buffer out2 = pm_buffer_dense(again, PM_F32, 2, (const int64_t[]){5, 7});
        st = pm_kernel_run(k, small, &in2, &out2, &err);   /* no recompile */
        /* [end] */
        if (st != PM_OK)
            goto done;
    }

    /* Strides: the same filter on the top-left 20 x 30 window of the picture, in place in
     * its memory, written into the middle of a bigger output picture. */
    step++;
    {
        memset(again, 0, sizeof(float) * ROWS * COLS);
        /* [strides] */
        pm_value window[] = {PM_I(20), PM_I(30)};
        pm_buffer in3 = {.data = pixels, .type = PM_F32, .ndims = 2,
                         .extent = {20, 30}, .stride = {COLS, 1}};  /* elements, not bytes */
        pm_buffer out3 = {.data = again + 10 * COLS + 5, .type = PM_F32, .ndims = 2,
                          .extent = {20, 30}, .stride = {COLS, 1}};
        st = pm_kernel_run(k, window, &in3, &out3, &err);
        /* [end] */
        if (st != PM_OK)
            goto done;
        /* an interior pixel of the window equals the full picture's */
        if (again[(10 + 5) * COLS + 5 + 7] != result[5 * COLS + 7])
            goto done;
    }

    /* Output shapes and the error of a wrong one. */
    step++;
    {
        pm_ctx *c2 = pm_ctx_new();
        pm_pipeline *p2 = box3(c2);
        /* [shapes] */
        int ndims;
        int64_t extent[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p2, 1, 0, sizes, &ndims, extent); /* output 0: 48 x 64 */
        pm_buffer wrong = pm_buffer_dense(result, PM_F32, 2, (const int64_t[]){ROWS - 1, COLS});
        st = pm_kernel_run(k, sizes, &in, &wrong, &err);
        /* st == PM_ERR_ARGUMENT; err.message: "box3: output buffer out is f32[47][64];
         * expected f32[48][64] (dimension 0 of out is the interval [0, 47] ...)" */
        /* [end] */
        bool ok = ndims == 2 && extent[0] == ROWS && extent[1] == COLS &&
                  st == PM_ERR_ARGUMENT && strstr(err.message, "expected f32[48][64]") &&
                  strstr(err.message, "(dimension 0 of out is the interval [0, 47]");
        pm_ctx_free(c2);
        if (!ok)
            goto done;
    }

    /* Builder errors are sticky: build everything, check once. */
    step++;
    {
        /* [builder errors] */
        pm_ctx *c3 = pm_ctx_new();
        pm_expr *R = pm_param(c3, PM_I32, "R");
        pm_func *in1 = pm_image(c3, "in", PM_U8, R);
        pm_expr *x = pm_var(c3, "x");
        pm_interval *all = pm_interval_new(pm_int(c3, 0), pm_addi(R, -1), 1);
        pm_func *f = pm_func_new(c3, "f", PM_U8, 1, &x, &all);
        pm_func_define_expr(f, pm_call(in1, pm_addi(x, 1)));  /* reads in(R) at x = R-1 */
        pm_pipeline *bad;
        if (pm_pipeline_new(c3, "bad", 1, &R, 1, &in1, 1, &f, &bad) != PM_OK)
            printf("%s\n", pm_ctx_errmsg(c3));   /* names f, the access in(x + 1), a point */
        /* [end] */
        bool ok = bad == NULL && pm_ctx_status(c3) == PM_ERR_INVALID &&
                  strstr(pm_ctx_errmsg(c3), "f") != NULL;
        pm_ctx_free(c3);
        if (!ok)
            goto done;
    }

    /* Threads: a jit with 2 worker threads, and the kernel cache. */
    step++;
    {
        /* [threads] */
        pm_jit_options jo = pm_jit_options_default();
        jo.threads = 2;                       /* 0 = one per core */
        jo.compile_threads = 2;               /* machine code in 2 parts at once; 1 = serial */
        pm_jit *jit2 = pm_jit_new(&jo, &err);
        pm_compile_options co = pm_compile_options_default();
        co.threads = 1;                       /* this kernel runs on the calling thread */
        /* [end] */
        pm_ctx *c4 = pm_ctx_new();
        pm_kernel *k1 = jit2 ? pm_jit_compile(jit2, box3(c4), sizes, &co, &err) : NULL;
        pm_ctx_free(c4);
        /* [cache] */
        pm_ctx *c5 = pm_ctx_new();
        pm_kernel *k2 = pm_jit_compile(jit2, box3(c5), sizes, &co, &err);  /* a cache hit */
        pm_ctx_free(c5);
        /* k2 == k1: one kernel, two references; each pm_kernel_free drops one */
        /* [end] */
        bool ok = k1 && k2 == k1 && pm_kernel_run(k2, sizes, &in, &out, &err) == PM_OK;
        pm_kernel_free(k1);
        pm_kernel_free(k2);
        pm_jit_free(jit2);
        if (!ok)
            goto done;
    }

    /* Isolated compiles: the kernel comes from a helper process (PM_COMPILE_HELPER, or
     * the installed libexec/polymage/polymage-compile). */
    step++;
    {
        /* [isolated] */
        pm_jit_options jo = pm_jit_options_default();
        jo.isolate_compiles = 1;                 /* each compile in a helper process */
        jo.compile_memory_bytes = 2LL << 30;     /* its address space; 0 = 8 GiB */
        jo.compile_seconds = 120;                /* its wall time; 0 = 300 s */
        pm_jit *safe = pm_jit_new(&jo, &err);    /* fails, naming it, if the helper is missing */
        /* [end] */
        pm_ctx *c6 = pm_ctx_new();
        pm_kernel *k3 = safe ? pm_jit_compile(safe, box3(c6), sizes, NULL, &err) : NULL;
        pm_ctx_free(c6);
        bool ok = k3 && pm_kernel_run(k3, sizes, &in, &out, &err) == PM_OK;
        pm_kernel_free(k3);
        pm_jit_free(safe);
        if (!ok)
            goto done;
    }
    step = 0;
done:
    /* [free] */
    pm_kernel_free(k);
    pm_jit_free(jit);    /* in any order with the kernels */
    /* [end] */
    free(pixels);
    free(result);
    free(again);
    return step;
}
