/* test_stencil_nd.c — stencils over any dimensions and the 2x sampling helpers.
 *
 * - pm_stencil_nd with dims {1, 0} is pm_stencil (the same expression: bit-identical f32
 *   results, interpreted and compiled), and pm_stencil keeps its 2-D-only error.
 * - On a 3-D u8 "RGB" image I(x, y, c): a 3x3 kernel over the spatial dimensions {0, 1}
 *   (asymmetric, so a transposed kernel would fail), a 5-tap kernel along dimension 1,
 *   pm_downsample with [1 2 1]/4 and [1 3 3 1]/8 and pm_upsample over {0, 1}: compiled =
 *   interpreter = a plain C loop, exactly (every value is a small integer times a power
 *   of two, exact in f32 whatever the order of the sum).
 * - Misuse: a dimension out of range or chosen twice names the function and the cause. */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The reference value of output point x (domain coordinates) from the u8 input. */
typedef float (*ref_fn)(const uint8_t *in, const int64_t *n, const int64_t *x);

#define IN(a, b, c) ((float)in[((a) * n[1] + (b)) * n[2] + (c)])

static const double k33[9] = {1, 2, 0, /* rows move dimension 0, columns dimension 1 */
                              0, 1, 3,
                              4, 0, 1};
static float ref_k33(const uint8_t *in, const int64_t *n, const int64_t *x)
{
    float s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            s += (float)k33[i * 3 + j] * IN(x[0] + i - 1, x[1] + j - 1, x[2]);
    return s * 0.5f;
}

static const double k5[5] = {1, 4, 6, 4, 1};
static float ref_k5(const uint8_t *in, const int64_t *n, const int64_t *x)
{
    float s = 0;
    for (int j = 0; j < 5; j++)
        s += (float)k5[j] * IN(x[0], x[1] + j - 2, x[2]);
    return s / 16;
}

static float ref_down3(const uint8_t *in, const int64_t *n, const int64_t *x)
{
    static const float w[3] = {1, 2, 1};
    float s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            s += w[i] * w[j] * IN(2 * x[0] + i - 1, 2 * x[1] + j - 1, x[2]);
    return s / 16;
}

static float ref_down4(const uint8_t *in, const int64_t *n, const int64_t *x)
{
    static const float w[4] = {1, 3, 3, 1};
    float s = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            s += w[i] * w[j] * IN(2 * x[0] + i - 1, 2 * x[1] + j - 1, x[2]);
    return s / 64;
}

/* linear interpolation at pixel centres: output 2i+r sits between inputs i and i -+ 1 */
static float ref_up(const uint8_t *in, const int64_t *n, const int64_t *x)
{
    int64_t i0 = x[0] >> 1, i1 = x[1] >> 1; /* floor halves (x >= 1 here) */
    int64_t f0 = i0 + ((x[0] & 1) ? 1 : -1), f1 = i1 + ((x[1] & 1) ? 1 : -1);
    return 0.5625f * IN(i0, i1, x[2]) + 0.1875f * IN(f0, i1, x[2]) +
           0.1875f * IN(i0, f1, x[2]) + 0.0625f * IN(f0, f1, x[2]);
}

typedef struct helper_case {
    const char *name;
    ref_fn ref;
} helper_case;

static void run(pm_jit *jit, const char *name, int which, ref_fn ref)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N[3] = {pm_param(ctx, PM_I32, "N0"), pm_param(ctx, PM_I32, "N1"),
                     pm_param(ctx, PM_I32, "N2")};
    pm_func *I = pm_image_new(ctx, "I", PM_U8, 3, N);
    pm_func *g = NULL;
    const int sp[2] = {0, 1};
    switch (which) {
    case 0:
        g = pm_stencil_func(I, "g", PM_F32, 0.5, 2, sp, (const int[]){3, 3}, k33);
        break;
    case 1:
        g = pm_stencil_func(I, "g", PM_F32, 1.0 / 16, 1, (const int[]){1}, (const int[]){5}, k5);
        break;
    case 2:
        g = pm_downsample(I, "g", PM_F32, 2, sp, 3, NULL, 0);
        break;
    case 3:
        g = pm_downsample(I, "g", PM_F32, 2, sp, 4, (const double[]){1, 3, 3, 1}, 1.0 / 64);
        break;
    case 4:
        g = pm_upsample(I, "g", PM_F32, 2, sp);
        break;
    }
    pm_pipeline *p = NULL;
    if (!CHECK_STATUS(pm_pipeline_new(ctx, name, 3, N, 1, &I, 1, &g, &p), PM_OK)) {
        fprintf(stderr, "  %s: %s\n", name, pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64), PM_I(3)}, NULL, &err);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  %s: %s\n", name, err.message);
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[][3] = {{5, 5, 3}, {6, 9, 3}, {13, 8, 1}, {40, 33, 3}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int64_t *n = sizes[s];
        pm_value params[3] = {PM_I(n[0]), PM_I(n[1]), PM_I(n[2])};
        pm_buffer in = check_buffer_new(PM_U8, 3, n);
        check_fill(&in, (unsigned)(n[0] * 31 + n[1]), true);
        int ond;
        int64_t oext[PM_MAX_DIMS];
        if (!CHECK_STATUS(pm_pipeline_buffer_shape(p, 1, 0, params, &ond, oext), PM_OK))
            continue;
        /* the domain's lower bounds: shrunk by the kernel (0, 1) or 2x sampling */
        int64_t lb[3] = {0, 0, 0};
        if (which == 0)
            lb[0] = lb[1] = 1;
        else if (which == 1)
            lb[1] = 2;
        else if (which == 2 || which == 3)
            lb[0] = lb[1] = 1;
        else
            lb[0] = lb[1] = 1;
        pm_buffer got = check_buffer_new(PM_F32, 3, oext), want = check_buffer_new(PM_F32, 3, oext);
        CHECK_STATUS(pm_interpret(p, params, &in, &want), PM_OK);
        if (!CHECK_STATUS(pm_kernel_run(k, params, &in, &got, &err), PM_OK))
            fprintf(stderr, "  %s: %s\n", name, err.message);
        int64_t bad = 0, count = 0;
        for (int64_t a = 0; a < oext[0]; a++)
            for (int64_t b = 0; b < oext[1]; b++)
                for (int64_t c = 0; c < oext[2]; c++, count++) {
                    int64_t x[3] = {a + lb[0], b + lb[1], c + lb[2]};
                    float r = ref(in.data, n, x);
                    int64_t i = (a * oext[1] + b) * oext[2] + c;
                    bad += ((float *)got.data)[i] != r || ((float *)want.data)[i] != r;
                }
        if (!CHECK(bad == 0 && count > 0))
            fprintf(stderr, "  %s at %lldx%lldx%lld: %lld of %lld points differ\n", name,
                    (long long)n[0], (long long)n[1], (long long)n[2], (long long)bad,
                    (long long)count);
        check_buffer_free(&in);
        check_buffer_free(&got);
        check_buffer_free(&want);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* pm_stencil_nd(dims {1, 0}) is pm_stencil: the same definitions, bit-identical f32 from
 * the two kernels, and the interpreter's within 1e-5. */
static void test_same_as_pm_stencil(pm_jit *jit)
{
    static const double w[15] = {1, -2, 0.5, 3, 0.25, -1, 2, 7, 0.125, 1, 0, -3, 1, 1, 2};
    pm_pipeline *p[2] = {NULL, NULL};
    pm_ctx *ctx[2];
    for (int v = 0; v < 2; v++) {
        ctx[v] = pm_ctx_new();
        pm_expr *R = pm_param(ctx[v], PM_I32, "R"), *C = pm_param(ctx[v], PM_I32, "C");
        pm_func *I = pm_image(ctx[v], "I", PM_F32, pm_addi(R, 4), pm_addi(C, 2));
        pm_expr *x = pm_var(ctx[v], "x"), *y = pm_var(ctx[v], "y");
        /* 3 rows x 5 columns: rows move y (dimension 1) by -1..1, columns x by -2..2 */
        pm_interval *ix = pm_interval_new(pm_int(ctx[v], 2), pm_addi(R, 1), 1);
        pm_interval *iy = pm_interval_new(pm_int(ctx[v], 1), C, 1);
        pm_func *f = pm_func_new(ctx[v], "f", PM_F32, 2, pm_exprs(x, y), pm_intervals(ix, iy));
        pm_expr *e = v == 0 ? pm_stencil(I, pm_exprs(x, y), 0.3, 3, 5, w)
                            : pm_stencil_nd(I, pm_exprs(x, y), 0.3, 2, (const int[]){1, 0},
                                            (const int[]){3, 5}, w);
        pm_func_define_expr(f, e);
        if (!CHECK_STATUS(pm_pipeline_new(ctx[v], "same", 2, pm_exprs(R, C), 1, &I, 1, &f, &p[v]),
                          PM_OK))
            fprintf(stderr, "  %s\n", pm_ctx_errmsg(ctx[v]));
    }
    if (p[0] && p[1]) {
        char *a = pm_pipeline_to_string(p[0]), *b = pm_pipeline_to_string(p[1]);
        CHECK(strcmp(a, b) == 0); /* the same definitions */
        free(a);
        free(b);
        pm_value params[2] = {PM_I(21), PM_I(17)};
        pm_buffer in = check_buffer_new(PM_F32, 2, (const int64_t[]){25, 19});
        check_fill(&in, 5, false);
        pm_buffer out[3];
        for (int v = 0; v < 3; v++)
            out[v] = check_buffer_new(PM_F32, 2, (const int64_t[]){21, 17});
        pm_error err;
        for (int v = 0; v < 2; v++) {
            pm_kernel *k = pm_jit_compile(jit, p[v], params, NULL, &err);
            if (CHECK(k != NULL))
                CHECK_STATUS(pm_kernel_run(k, params, &in, &out[v], &err), PM_OK);
            pm_kernel_free(k);
        }
        CHECK_STATUS(pm_interpret(p[1], params, &in, &out[2]), PM_OK);
        CHECK(memcmp(out[0].data, out[1].data, 21 * 17 * sizeof(float)) == 0);
        /* compiled multiply-adds may fuse: one rounding where the interpreter has two */
        CHECK(check_buffer_maxdiff(&out[0], &out[2]) <= 1e-5);
        for (int v = 0; v < 3; v++)
            check_buffer_free(&out[v]);
        check_buffer_free(&in);
    }
    pm_ctx_free(ctx[0]);
    pm_ctx_free(ctx[1]);
}

/* The helpers composed on functions: one level of a pyramid down and back up, with
 * clamped edges at each level, cropped to the input's size. D = [1 3 3 1]/8 down-sampling
 * of pm_pad(I) (domain [0, (R-1)/2] in each dimension: floor divisions in the bounds), U =
 * linear up-sampling of pm_pad(D) (domain [-1, 2 ((R-1)/2) + 2]), K = pm_crop(U) to
 * [0, R-1] x [0, C-1]. Exact against plain C (every value is a multiple of 1/1024). */
static int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void test_pyramid_level(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, C);
    static const int xy[] = {0, 1};
    pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, xy, 2);
    pm_func *D = pm_downsample(E, "D", PM_F32, 2, xy, 4, NULL, 0);
    pm_func *P = pm_pad(D, "P", PM_BOUNDARY_CLAMP, NULL, 2, xy, 1);
    pm_func *U = pm_upsample(P, "U", PM_F32, 2, xy);
    pm_func *K = pm_crop(U, "K", pm_intervals(pm_func_interval(I, 0), pm_func_interval(I, 1)));
    pm_pipeline *p = NULL;
    if (!CHECK_STATUS(pm_pipeline_new(ctx, "level", 2, pm_exprs(R, C), 1, &I, 2,
                                      (pm_func *const[]){K, D}, &p), PM_OK)) {
        fprintf(stderr, "  %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(200), PM_I(300)}, NULL, &err);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  %s\n", err.message);
        pm_ctx_free(ctx);
        return;
    }
    static const int64_t sizes[][2] = {{1, 1}, {2, 3}, {7, 8}, {33, 50}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t r = sizes[s][0], c = sizes[s][1], dr = (r - 1) / 2 + 1, dc = (c - 1) / 2 + 1;
        pm_value params[] = {PM_I(r), PM_I(c)};
        pm_buffer in = check_buffer_new(PM_U8, 2, (const int64_t[]){r, c});
        check_fill(&in, (unsigned)(r * 3 + c), true);
        const uint8_t *px = in.data;
        float *dref = malloc(sizeof(float) * (size_t)(dr * dc));
        float *kref = malloc(sizeof(float) * (size_t)(r * c));
        static const float w[4] = {1, 3, 3, 1};
        for (int64_t i = 0; i < dr; i++)
            for (int64_t j = 0; j < dc; j++) {
                float sum = 0;
                for (int a = 0; a < 4; a++)
                    for (int b = 0; b < 4; b++)
                        sum += w[a] * w[b] * px[clamp64(2 * i + a - 1, 0, r - 1) * c +
                                               clamp64(2 * j + b - 1, 0, c - 1)];
                dref[i * dc + j] = sum / 64;
            }
#define PD(i, j) dref[clamp64((i), 0, dr - 1) * dc + clamp64((j), 0, dc - 1)]
        for (int64_t x = 0; x < r; x++)
            for (int64_t y = 0; y < c; y++) {
                int64_t i0 = x / 2, j0 = y / 2;
                int64_t i1 = i0 + (x % 2 ? 1 : -1), j1 = j0 + (y % 2 ? 1 : -1);
                kref[x * c + y] = 0.5625f * PD(i0, j0) + 0.1875f * PD(i1, j0) +
                                  0.1875f * PD(i0, j1) + 0.0625f * PD(i1, j1);
            }
#undef PD
        for (int v = 0; v < 2; v++) {
            pm_buffer out[2] = {check_buffer_new(PM_F32, 2, (const int64_t[]){r, c}),
                                check_buffer_new(PM_F32, 2, (const int64_t[]){dr, dc})};
            pm_status st = v == 0 ? pm_interpret(p, params, &in, out)
                                  : pm_kernel_run(k, params, &in, out, &err);
            if (!CHECK_STATUS(st, PM_OK))
                fprintf(stderr, "  %s\n", v ? err.message : pm_ctx_errmsg(ctx));
            int64_t bad = 0;
            for (int64_t i = 0; i < r * c; i++)
                bad += ((float *)out[0].data)[i] != kref[i];
            for (int64_t i = 0; i < dr * dc; i++)
                bad += ((float *)out[1].data)[i] != dref[i];
            if (!CHECK(bad == 0))
                fprintf(stderr, "  pyramid level %lldx%lld (%s): %lld values differ\n",
                        (long long)r, (long long)c, v ? "compiled" : "interpreted",
                        (long long)bad);
            check_buffer_free(&out[0]);
            check_buffer_free(&out[1]);
        }
        free(dref);
        free(kref);
        check_buffer_free(&in);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

static void test_misuse(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R");
    pm_func *I = pm_image(ctx, "I", PM_U8, R, R, pm_int(ctx, 3));
    pm_expr *x = pm_var(ctx, "x");
    CHECK(pm_stencil_nd(I, pm_exprs(x, x, x), 1, 1, (const int[]){3}, (const int[]){3},
                        (const double[]){1, 1, 1}) == NULL);
    CHECK_STATUS(pm_ctx_status(ctx), PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "dimension 3 does not exist");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "I has 3");
    pm_ctx_clear_error(ctx);
    CHECK(pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, (const int[]){1, 1}, 2) == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "dimension 1 is chosen twice");
    pm_ctx_clear_error(ctx);
    CHECK(pm_pad(I, "E", PM_BOUNDARY_CLAMP, pm_int(ctx, 1), 1, (const int[]){0}, 2) == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "only for PM_BOUNDARY_CONSTANT");
    pm_ctx_clear_error(ctx);
    CHECK(pm_stencil(I, pm_exprs(x, x), 1, 1, 1, (const double[]){1}) == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "a stencil needs 2"); /* pm_stencil keeps its meaning */
    pm_ctx_clear_error(ctx);
    CHECK(pm_func_var(I, 0) == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "I is an image");
    pm_ctx_free(ctx);
}

/* pm_stencil_func's exact integer form (integer taps of a u8/i16 function, a scale of
 * 2^-k, an integer result: sums in u16/i16/u32/i32, a shift, a clamp) against the float
 * arithmetic polymage.h describes: the weighted sum times the scale, truncated toward zero
 * and saturated into the result type, exactly, for the interpreter and a compiled kernel,
 * at 1x1, odd and wider-than-a-vector sizes. Cases the form does not take (a negative sum
 * with a shift, a fractional weight, a scale not 2^-k) keep the float sum: the canonical
 * text shows which was taken. */
typedef struct int_case {
    const char *name;
    pm_type in, out;
    double scale, w[5];
    bool integer; /* the integer form expected */
} int_case;

static void test_integer_stencils(pm_jit *jit)
{
    static const int_case cases[] = {
        {"u8_to_u16", PM_U8, PM_U16, 1, {1, 4, 6, 4, 1}, true},
        {"u16_to_u8_shift8", PM_U16, PM_U8, 1.0 / 256, {1, 4, 6, 4, 1}, true},
        {"u8_saturating", PM_U8, PM_U8, 0.25, {1, 4, 6, 4, 1}, true},
        {"i16_to_i8_both_ends", PM_I16, PM_I8, 1, {-1, 0, 2, 0, -1}, true},
        {"u8_negative_shift", PM_U8, PM_I16, 0.5, {-1, -2, 0, 2, 1}, false},
        {"u8_fraction", PM_U8, PM_U8, 1, {1, 0.5, 0, 0.5, 1}, false},
        {"u8_scale3", PM_U8, PM_U16, 3, {1, 4, 6, 4, 1}, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const int_case *ic = &cases[c];
        pm_ctx *ctx = pm_ctx_new();
        pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
        pm_func *I = pm_image(ctx, "I", ic->in, R, C);
        pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 1, (const int[]){1}, 2);
        pm_func *g = pm_stencil_func(E, "g", ic->out, ic->scale, 1, (const int[]){1},
                                     (const int[]){5}, ic->w);
        pm_pipeline *p = NULL;
        if (!CHECK_STATUS(pm_pipeline_new(ctx, ic->name, 2, pm_exprs(R, C), 1, &I, 1, &g, &p),
                          PM_OK)) {
            fprintf(stderr, "  %s: %s\n", ic->name, pm_ctx_errmsg(ctx));
            pm_ctx_free(ctx);
            continue;
        }
        char *text = pm_pipeline_to_string(p);
        if (!CHECK((strstr(text, "f32") == NULL) == ic->integer))
            fprintf(stderr, "  %s: the %s sum was expected:\n%s\n", ic->name,
                    ic->integer ? "integer" : "float", text);
        free(text);
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(17), PM_I(70)}, NULL, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  %s: %s\n", ic->name, err.message);
            pm_ctx_free(ctx);
            continue;
        }
        static const int64_t sizes[][2] = {{1, 1}, {3, 7}, {17, 70}, {2, 131}};
        int bits = (int)pm_type_size(ic->out) * 8;
        bool sign = ic->out == PM_I8 || ic->out == PM_I16 || ic->out == PM_I32;
        double tmin = sign ? -ldexp(1, bits - 1) : 0, tmax = ldexp(1, bits - sign) - 1;
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            const int64_t *n = sizes[s];
            pm_value params[2] = {PM_I(n[0]), PM_I(n[1])};
            pm_buffer in = check_buffer_new(ic->in, 2, n);
            check_fill(&in, (unsigned)(c * 7 + s), false);
            pm_buffer got = check_buffer_new(ic->out, 2, n), want = check_buffer_new(ic->out, 2, n);
            CHECK_STATUS(pm_interpret(p, params, &in, &want), PM_OK);
            if (!CHECK_STATUS(pm_kernel_run(k, params, &in, &got, &err), PM_OK))
                fprintf(stderr, "  %s: %s\n", ic->name, err.message);
            int64_t bad = 0, clamped = 0;
            for (int64_t a = 0; a < n[0]; a++)
                for (int64_t b = 0; b < n[1]; b++) {
                    double sum = 0;
                    for (int j = 0; j < 5; j++) {
                        int64_t col = clamp64(b + j - 2, 0, n[1] - 1);
                        sum += ic->w[j] * (double)check_int_element(&in, a * n[1] + col);
                    }
                    double r = trunc(sum * ic->scale);
                    clamped += r < tmin || r > tmax;
                    r = r < tmin ? tmin : r > tmax ? tmax : r;
                    int64_t i = a * n[1] + b;
                    bad += (double)check_int_element(&got, i) != r ||
                           (double)check_int_element(&want, i) != r;
                }
            if (!CHECK(bad == 0))
                fprintf(stderr, "  %s at %lldx%lld: %lld points differ\n", ic->name,
                        (long long)n[0], (long long)n[1], (long long)bad);
            if (s == 2 && (c == 2 || c == 3)) /* the saturating cases do saturate */
                CHECK(clamped > 0);
            check_buffer_free(&in);
            check_buffer_free(&got);
            check_buffer_free(&want);
        }
        pm_kernel_free(k);
        pm_ctx_free(ctx);
    }
}

int main(void)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "%s\n", err.message);
        return check_finish("stencil_nd");
    }
    test_misuse();
    test_same_as_pm_stencil(jit);
    run(jit, "stencil_3x3_xy", 0, ref_k33);
    run(jit, "stencil_5_y", 1, ref_k5);
    run(jit, "down_121", 2, ref_down3);
    run(jit, "down_1331", 3, ref_down4);
    run(jit, "up_linear", 4, ref_up);
    test_pyramid_level(jit);
    test_integer_stencils(jit);
    pm_jit_free(jit);
    return check_finish("stencil_nd");
}
