/* test_boundary.c — the boundary-condition, pad and crop helpers (polymage.h "Helpers").
 *
 * Differential: every condition (clamp, mirror, mirror-interior, wrap, constant) on 1-, 2-
 * and 3-D images (the 3-D one padded in its first two dimensions only, as an RGB image's
 * spatial ones), at sizes 1, 2, odd and larger, padded further than the image is wide;
 * each run compiled (pm_jit_compile) against the interpreter against a plain C loop
 * that finds the source pixel by reflecting step by step (not by the helpers' modulo
 * formulas). Exact (i32 pixels). The padded function is checked as an output and as the
 * input of a 3-tap stencil (so it is also fused into a consumer's tiles).
 *
 * Structural: the interior case is a statement of its own whose read of the image is
 * proved in bounds (no clamp), and in the AST it is a loop nest whose bounds are the
 * image's (no min/max per point). */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PAD = 3, CONSTANT = -7 };

static const char *kind_name[] = {"clamp", "mirror", "mirror_interior", "wrap", "constant"};

/* The source coordinate of x in a dimension of n points, or -1 for the constant. */
static int64_t reference_index(pm_boundary kind, int64_t x, int64_t n)
{
    if (x >= 0 && x < n)
        return x;
    switch (kind) {
    case PM_BOUNDARY_CLAMP:
        return x < 0 ? 0 : n - 1;
    case PM_BOUNDARY_WRAP:
        while (x < 0)
            x += n;
        while (x >= n)
            x -= n;
        return x;
    case PM_BOUNDARY_MIRROR:
        while (x < 0 || x >= n)
            x = x < 0 ? -x - 1 : 2 * n - 1 - x;
        return x;
    case PM_BOUNDARY_MIRROR_INTERIOR:
        if (n == 1)
            return 0;
        while (x < 0 || x >= n)
            x = x < 0 ? -x : 2 * n - 2 - x;
        return x;
    default:
        return -1;
    }
}

typedef struct shape {
    int nd;
    int64_t n[3];
} shape;

/* The pipeline: I (nd dimensions, i32), E = pm_pad(I) in the first min(nd, 2) dimensions,
 * and either E itself or S(x) = E(x-1) + 2 E(x) + E(x+1) along dimension 0 as output. */
static pm_pipeline *build(pm_ctx *ctx, pm_boundary kind, int nd, bool stencil)
{
    pm_expr *N[3];
    char name[8];
    for (int d = 0; d < nd; d++) {
        snprintf(name, sizeof name, "N%d", d);
        N[d] = pm_param(ctx, PM_I32, name);
    }
    pm_func *I = pm_image_new(ctx, "I", PM_I32, nd, N);
    int npad = nd < 2 ? nd : 2;
    pm_func *E = pm_pad(I, "E", kind, kind == PM_BOUNDARY_CONSTANT ? pm_int(ctx, CONSTANT) : NULL,
                        npad, (const int[]){0, 1}, PAD);
    pm_func *out = E;
    if (stencil)
        out = pm_stencil_func(E, "S", PM_I32, 1, 1, (const int[]){0}, (const int[]){3},
                              (const double[]){1, 2, 1});
    pm_pipeline *p = NULL;
    if (pm_pipeline_new(ctx, "boundary", nd, N, 1, &I, 1, &out, &p) != PM_OK)
        fprintf(stderr, "  %s %dD: %s\n", kind_name[kind], nd, pm_ctx_errmsg(ctx));
    return p;
}

/* Plain C: E over the padded box, then (stencil) S. */
static void reference(pm_boundary kind, const shape *s, bool stencil, const int32_t *in,
                      int32_t *out, int64_t *oext)
{
    int nd = s->nd, npad = nd < 2 ? nd : 2;
    int64_t eext[3] = {1, 1, 1}, n[3] = {1, 1, 1};
    for (int d = 0; d < nd; d++) {
        n[d] = s->n[d];
        eext[d] = n[d] + (d < npad ? 2 * PAD : 0);
    }
    int32_t *E = malloc(sizeof *E * (size_t)(eext[0] * eext[1] * eext[2]));
    for (int64_t a = 0; a < eext[0]; a++)
        for (int64_t b = 0; b < eext[1]; b++)
            for (int64_t c = 0; c < eext[2]; c++) {
                int64_t at[3] = {a, b, c}, src[3];
                bool outside = false;
                for (int d = 0; d < 3; d++) {
                    int64_t x = at[d] - (d < npad ? PAD : 0);
                    src[d] = d < npad ? reference_index(kind, x, n[d]) : x;
                    outside |= src[d] < 0;
                }
                E[(a * eext[1] + b) * eext[2] + c] =
                    outside ? CONSTANT : in[(src[0] * n[1] + src[1]) * n[2] + src[2]];
            }
    for (int d = 0; d < 3; d++)
        oext[d] = eext[d] - (stencil && d == 0 ? 2 : 0);
    for (int64_t a = 0; a < oext[0]; a++)
        for (int64_t b = 0; b < oext[1]; b++)
            for (int64_t c = 0; c < oext[2]; c++) {
#define AT(i) E[((i) * eext[1] + b) * eext[2] + c]
                out[(a * oext[1] + b) * oext[2] + c] =
                    stencil ? AT(a) + 2 * AT(a + 1) + AT(a + 2) : AT(a);
#undef AT
            }
    free(E);
}

static void run_shape(pm_ctx *ctx, pm_pipeline *p, pm_kernel *k, pm_boundary kind,
                      const shape *s, bool stencil)
{
    int nd = s->nd;
    pm_value params[3];
    for (int d = 0; d < nd; d++)
        params[d] = PM_I(s->n[d]);
    pm_buffer in = check_buffer_new(PM_I32, nd, s->n);
    check_fill(&in, (unsigned)(s->n[0] * 7 + s->n[nd - 1]), true);
    int ond;
    int64_t oext[PM_MAX_DIMS], rext[3];
    if (!CHECK_STATUS(pm_pipeline_buffer_shape(p, 1, 0, params, &ond, oext), PM_OK))
        return;
    pm_buffer got = check_buffer_new(PM_I32, nd, oext), want = check_buffer_new(PM_I32, nd, oext);
    int32_t *ref = malloc(sizeof *ref * (size_t)check_buffer_count(&got) + 4);
    reference(kind, s, stencil, in.data, ref, rext);
    for (int d = 0; d < nd; d++)
        CHECK(rext[d] == oext[d]);
    pm_status st = pm_interpret(p, params, &in, &want);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  interpret: %s\n", pm_ctx_errmsg(ctx));
    pm_error err;
    st = pm_kernel_run(k, params, &in, &got, &err);
    if (!CHECK_STATUS(st, PM_OK))
        fprintf(stderr, "  run: %s\n", err.message);
    int64_t count = check_buffer_count(&got), bad_i = 0, bad_c = 0;
    for (int64_t i = 0; i < count; i++) {
        bad_i += ((int32_t *)want.data)[i] != ref[i];
        bad_c += ((int32_t *)got.data)[i] != ref[i];
    }
    if (!CHECK(bad_i == 0 && bad_c == 0))
        fprintf(stderr, "  %s %dD %s n = %lld x %lld x %lld: %lld interpreted and %lld "
                "compiled points differ from plain C\n", kind_name[kind], nd,
                stencil ? "stencil" : "padded", (long long)s->n[0],
                (long long)(nd > 1 ? s->n[1] : 1), (long long)(nd > 2 ? s->n[2] : 1),
                (long long)bad_i, (long long)bad_c);
    free(ref);
    check_buffer_free(&in);
    check_buffer_free(&got);
    check_buffer_free(&want);
}

static void test_differential(pm_jit *jit)
{
    static const shape shapes[] = {
        {1, {1}}, {1, {2}}, {1, {5}}, {1, {37}},
        {2, {1, 1}}, {2, {2, 2}}, {2, {5, 3}}, {2, {2, 7}}, {2, {37, 20}},
        {3, {1, 1, 3}}, {3, {2, 5, 3}}, {3, {7, 4, 1}}, {3, {23, 17, 3}},
    };
    for (int kind = PM_BOUNDARY_CLAMP; kind <= PM_BOUNDARY_CONSTANT; kind++)
        for (int nd = 1; nd <= 3; nd++)
            for (int stencil = 0; stencil < 2; stencil++) {
                pm_ctx *ctx = pm_ctx_new();
                pm_pipeline *p = build(ctx, (pm_boundary)kind, nd, stencil);
                if (!CHECK(p != NULL)) {
                    pm_ctx_free(ctx);
                    continue;
                }
                pm_value est[3] = {PM_I(64), PM_I(64), PM_I(3)};
                pm_error err;
                pm_kernel *k = pm_jit_compile(jit, p, est, NULL, &err);
                if (!CHECK(k != NULL)) {
                    fprintf(stderr, "  compile %s %dD: %s\n", kind_name[kind], nd, err.message);
                    pm_ctx_free(ctx);
                    continue;
                }
                for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
                    if (shapes[i].nd == nd)
                        run_shape(ctx, p, k, (pm_boundary)kind, &shapes[i], stencil);
                pm_kernel_free(k);
                pm_ctx_free(ctx);
            }
}

/* The interior case: its own statement, its read in bounds, a loop nest of its own. */
static void test_structure(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 2, (const int[]){0, 1}, 2);
    pm_pipeline *p = NULL;
    if (!CHECK_STATUS(pm_pipeline_new(ctx, "structure", 2, pm_exprs(R, C), 1, &I, 1, &E, &p),
                      PM_OK)) {
        fprintf(stderr, "  %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    pm_compile_options co = pm_compile_options_default();
    co.dump = "";              /* print nothing, whatever PM_DUMP says */
    co.keep = "domains,ast";   /* but keep these texts for pm_kernel_dump */
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(512), PM_I(512)}, &co, &err);
    if (CHECK(k != NULL)) {
        const char *dom = pm_kernel_dump(k, "domains"), *ast = pm_kernel_dump(k, "ast");
        if (getenv("PM_TEST_VERBOSE"))
            fprintf(stderr, "%s\n%s\n", dom, ast);
        CHECK(dom && ast);
        if (dom && ast) {
            /* the interior piece: x in [0, R-1], y in [0, C-1], reading I(x, y) in bounds,
             * the first part of E, a row's columns 0 .. C-1 where it holds */
            CHECK_CONTAINS(dom, "    part 0: x0 >= 0, -1 + R - x0 >= 0, dim >= 0, dim <= -1 + C\n"
                                "      case E_c0: [R, C] -> { E_c0[x0, x1] : 0 <= x0 < R and "
                                "0 <= x1 < C }\n");
            CHECK_CONTAINS(dom, "read I(x0, x1): [R, C] -> { E_c0[x0, x1] -> I[x0, x1] } "
                                "(in bounds)");
            /* in the AST the merged statement E runs under loops over exactly the padded
             * box (no min/max), each row split at its parts' intervals in LLVM IR: the
             * clamp is gone from the hot loop */
            const char *call = strstr(ast, "E(");
            if (CHECK(call != NULL)) {
                /* the loop header just above the call: the last "for" before it */
                const char *loop = NULL;
                for (const char *q = strstr(ast, "for ("); q && q < call;
                     q = strstr(q + 1, "for ("))
                    loop = q;
                if (CHECK(loop != NULL)) {
                    const char *eol = strchr(loop, '\n');
                    char header[256] = {0};
                    size_t len = eol ? (size_t)(eol - loop) : strlen(loop);
                    memcpy(header, loop, len < 255 ? len : 255);
                    CHECK(strstr(header, "min(") == NULL && strstr(header, "max(") == NULL);
                    if (getenv("PM_TEST_VERBOSE"))
                        fprintf(stderr, "interior loop: %s\n", header);
                }
            }
        }
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* On a function (not an image) whose domain starts at 3, over an asymmetric domain given
 * with pm_boundary_new, then cropped: K(t) for t in [-2, N+6] is B(t), B extends F over
 * [-4, N+9], F(x) = 3 I(x-3) + 1 over [3, N+2]. Also pm_pad by 0 (empty border cases). */
static void test_function_source(pm_jit *jit)
{
    for (int kind = PM_BOUNDARY_CLAMP; kind <= PM_BOUNDARY_CONSTANT; kind++) {
        pm_ctx *ctx = pm_ctx_new();
        pm_expr *N = pm_param(ctx, PM_I32, "N");
        pm_func *I = pm_image(ctx, "I", PM_I32, N);
        pm_expr *x = pm_var(ctx, "x");
        pm_interval *fd = pm_interval_new(pm_int(ctx, 3), pm_addi(N, 2), 1);
        pm_func *F = pm_func_new(ctx, "F", PM_I32, 1, &x, &fd);
        pm_func_define_expr(F, pm_addi(pm_muli(pm_call(I, pm_addi(x, -3)), 3), 1));
        pm_interval *bd = pm_interval_new(pm_int(ctx, -4), pm_addi(N, 9), 1);
        pm_func *B = pm_boundary_new(F, "B", (pm_boundary)kind,
                                     kind == PM_BOUNDARY_CONSTANT ? pm_int(ctx, CONSTANT) : NULL,
                                     &bd);
        pm_interval *kd = pm_interval_new(pm_int(ctx, -2), pm_addi(N, 6), 1);
        pm_func *K = pm_crop(B, "K", &kd);
        pm_func *Z = pm_pad(F, "Z", (pm_boundary)kind, NULL, 1, (const int[]){0}, 0);
        pm_pipeline *p = NULL;
        if (!CHECK_STATUS(pm_pipeline_new(ctx, "fsource", 1, &N, 1, &I, 2,
                                          (pm_func *const[]){K, Z}, &p), PM_OK)) {
            fprintf(stderr, "  %s: %s\n", kind_name[kind], pm_ctx_errmsg(ctx));
            pm_ctx_free(ctx);
            continue;
        }
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(100)}, NULL, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  %s: %s\n", kind_name[kind], err.message);
            pm_ctx_free(ctx);
            continue;
        }
        for (int64_t n = 1; n <= 9; n += 2) {
            int32_t in[16], ko[2][32], zo[2][16];
            for (int i = 0; i < n; i++)
                in[i] = (int32_t)(i * 5 - 7);
            pm_buffer bi = pm_buffer_dense(in, PM_I32, 1, &n);
            int64_t kn = n + 9;
            pm_value params[] = {PM_I(n)};
            for (int v = 0; v < 2; v++) {
                pm_buffer bo[2] = {pm_buffer_dense(ko[v], PM_I32, 1, &kn),
                                   pm_buffer_dense(zo[v], PM_I32, 1, &n)};
                pm_status st = v == 0 ? pm_interpret(p, params, &bi, bo)
                                      : pm_kernel_run(k, params, &bi, bo, &err);
                CHECK_STATUS(st, PM_OK);
            }
            int bad = 0;
            for (int64_t t = -2; t <= n + 6; t++) {
                int64_t src = reference_index((pm_boundary)kind, t - 3, n);
                int32_t want = src < 0 ? CONSTANT : in[src] * 3 + 1;
                bad += ko[0][t + 2] != want || ko[1][t + 2] != want;
            }
            for (int64_t i = 0; i < n; i++) /* Z over F's own domain [3, n+2]: F itself */
                bad += zo[0][i] != in[i] * 3 + 1 || zo[1][i] != in[i] * 3 + 1;
            if (!CHECK(bad == 0))
                fprintf(stderr, "  function source %s n = %lld: %d values differ\n",
                        kind_name[kind], (long long)n, bad);
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
        return check_finish("boundary");
    }
    test_structure(jit);
    test_function_source(jit);
    test_differential(jit);
    pm_jit_free(jit);
    return check_finish("boundary");
}
