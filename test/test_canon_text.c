/* test_canon_text.c — the canonical text read back (pm_pipeline_text,
 * pm_pipeline_from_text; docs/canonical-text.md):
 *  - the format: a 3x3 blur's text is the documented one, byte for byte (a change of the
 *    writer is a change of every cache key and stored pipeline: a new version);
 *  - round trips to byte-equal text: the seven apps, the three example filters, and a
 *    pipeline using every name of the table (every kind, type, operator and reduction),
 *    odd constants (INT64_MIN, -0.0, NaN payloads, f64, u8 300) and odd names (spaces,
 *    newlines, colons); the apps and the every-name pipeline also interpret to the same
 *    bytes (the fuzzer's random pipelines: pm_fuzz --canon-roundtrip, test_fuzz_canon);
 *  - one app compiled from the text gives the original kernel's output, and compiling
 *    the text's pipeline with the original's jit is a cache hit;
 *  - every class of malformed text is PM_ERR_ARGUMENT with a message naming the line and
 *    the cause; nesting and tree sizes past the limits are refused; the API's misuse;
 *  - 600 seeded mutations of valid texts never crash (run under ASan too) and are
 *    refused, or read back to themselves. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "check.h"
#include "examples/examples.h"
#include "samples.h"

#include "frontend/canon.h"
#include "frontend/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */

/* Unrelated objects, so the context's ids differ from a fresh one's. */
static void clutter(pm_ctx *ctx)
{
    pm_expr *junk = pm_param(ctx, PM_I32, "junk");
    for (int i = 0; i < 5; i++)
        junk = pm_add(junk, pm_var(ctx, "v"));
    pm_image(ctx, "unused", PM_U8, pm_int(ctx, 3));
}

/* p's text read back into ctx: the pipeline, or NULL (message printed). The texts must
 * be byte-equal. */
static pm_pipeline *round_trip(const char *what, pm_pipeline *p, pm_ctx *ctx)
{
    size_t len = 0, qlen = 0;
    const char *text = p ? pm_pipeline_text(p, &len) : NULL;
    pm_pipeline *q = NULL;
    if (!CHECK(text != NULL) || !CHECK_STATUS(pm_pipeline_from_text(ctx, text, len, &q), PM_OK)) {
        fprintf(stderr, "  %s: %s\n", what, pm_ctx_errmsg(ctx));
        return NULL;
    }
    const char *back = pm_pipeline_text(q, &qlen);
    if (!CHECK(back && qlen == len && memcmp(back, text, len) == 0))
        fprintf(stderr, "  %s: the text read back writes another text\n", what);
    CHECK(len == strlen(text) && pm_pipeline_text(p, NULL) == text); /* computed once */
    CHECK(pm_ctx_status(ctx) == PM_OK);
    return q;
}

/* Outputs of p and q interpreted on the same inputs are the same bytes. */
static void same_outputs(const char *what, pm_pipeline *p, pm_pipeline *q, const pm_value *params,
                         const pm_buffer *in)
{
    int nout = pm_pipeline_noutputs(p);
    pm_buffer a[32], b[32];
    for (int k = 0; k < nout; k++) {
        a[k] = pm_sample_buffer(p, 1, k, params);
        b[k] = pm_sample_buffer(q, 1, k, params);
    }
    CHECK_STATUS(pm_interpret(p, params, in, a), PM_OK);
    CHECK_STATUS(pm_interpret(q, params, in, b), PM_OK);
    for (int k = 0; k < nout; k++) {
        size_t bytes = (size_t)pm_sample_buffer_count(&a[k]) * pm_type_size(a[k].type);
        if (!CHECK(a[k].data && b[k].data && memcmp(a[k].data, b[k].data, bytes) == 0))
            fprintf(stderr, "  %s: output %d differs\n", what, k);
        free(a[k].data);
        free(b[k].data);
    }
}

/* text is refused with PM_ERR_ARGUMENT, *out NULL, and a message naming a line that
 * contains needle. */
static void refused_at(const char *text, size_t len, const char *needle, int line)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *q = (pm_pipeline *)ctx; /* not NULL: the call must clear it */
    pm_status s = pm_pipeline_from_text(ctx, text, len, &q);
    if (!check_report(s == PM_ERR_ARGUMENT && q == NULL, __FILE__, line, "PM_ERR_ARGUMENT"))
        fprintf(stderr, "  got %s: %s\n", pm_status_name(s), pm_ctx_errmsg(ctx));
    check_contains(pm_ctx_errmsg(ctx), "canonical text line ", __FILE__, line);
    check_contains(pm_ctx_errmsg(ctx), needle, __FILE__, line);
    pm_ctx_free(ctx);
}

#define REFUSED(text, needle) refused_at((text), strlen(text), (needle), __LINE__)

/* base with its first `old` replaced by `new` (malloc'd; the caller frees). */
static char *replaced(const char *base, const char *old, const char *new)
{
    const char *at = strstr(base, old);
    if (!CHECK(at != NULL)) {
        fprintf(stderr, "  no \"%s\" in the text\n", old);
        at = base;
        old = "";
    }
    size_t head = (size_t)(at - base), n = strlen(base) - strlen(old) + strlen(new);
    char *s = malloc(n + 1);
    memcpy(s, base, head);
    memcpy(s + head, new, strlen(new));
    strcpy(s + head + strlen(new), at + strlen(old));
    return s;
}

static void refused_replacing(const char *base, const char *old, const char *new,
                              const char *needle, int line)
{
    char *t = replaced(base, old, new);
    refused_at(t, strlen(t), needle, line);
    free(t);
}

#define REFUSED_WITH(base, old, new, needle) \
    refused_replacing((base), (old), (new), (needle), __LINE__)

/* ---- the format ----------------------------------------------------------------------------- */

/* docs/canonical-text.md's example: blurx averages 3 columns of I, blury 3 rows of blurx. */
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

static const char blur3_text[] =
    "pm-canon 2\n"
    "pipeline 5:blur3 2 1 1 3\n"
    "param 0 i32 1:R\n"
    "param 1 i32 1:C\n"
    "e0 param i32 w0 s0\n"
    "e1 param i32 w0 s1\n"
    "f0 image f32 n2 1:I e0 e1\n"
    "e2 var i32 w0 1:x\n"
    "e3 int i32 w1 i1\n"
    "e4 int i32 w0 i-2\n"
    "e5 binary i32 w0 add a0 b4\n"
    "e6 var i32 w0 1:y\n"
    "e7 int i32 w1 i0\n"
    "e8 int i32 w0 i-1\n"
    "e9 binary i32 w0 add a1 b8\n"
    "domain 2 (e2 e3 e5 1) (e6 e7 e9 1)\n"
    "f1 function f32 n2 5:blurx cases 1\n"
    "e10 int i32 w0 i-1\n"
    "e11 binary i32 w0 add a2 b10\n"
    "e12 call f32 w0 f0 n2 e11 e6\n"
    "e13 call f32 w0 f0 n2 e2 e6\n"
    "e14 binary f32 w0 add a12 b13\n"
    "e15 int i32 w0 i1\n"
    "e16 binary i32 w0 add a2 b15\n"
    "e17 call f32 w0 f0 n2 e16 e6\n"
    "e18 binary f32 w0 add a14 b17\n"
    "e19 float f32 w0 x3fd5555560000000\n"
    "e20 binary f32 w0 mul a18 b19\n"
    "case - e20\n"
    "e21 int i32 w1 i1\n"
    "e22 int i32 w0 i-2\n"
    "e23 binary i32 w0 add a1 b22\n"
    "domain 2 (e2 e3 e5 1) (e6 e21 e23 1)\n"
    "f2 function f32 n2 5:blury cases 1\n"
    "e24 int i32 w0 i-1\n"
    "e25 binary i32 w0 add a6 b24\n"
    "e26 call f32 w0 f1 n2 e2 e25\n"
    "e27 call f32 w0 f1 n2 e2 e6\n"
    "e28 binary f32 w0 add a26 b27\n"
    "e29 int i32 w0 i1\n"
    "e30 binary i32 w0 add a6 b29\n"
    "e31 call f32 w0 f1 n2 e2 e30\n"
    "e32 binary f32 w0 add a28 b31\n"
    "e33 float f32 w0 x3fd5555560000000\n"
    "e34 binary f32 w0 mul a32 b33\n"
    "case - e34\n"
    "output f2\n";

static void test_format(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur3(ctx);
    size_t len = 0;
    const char *text = p ? pm_pipeline_text(p, &len) : NULL;
    if (CHECK(text != NULL) && !CHECK(len == strlen(blur3_text) && strcmp(text, blur3_text) == 0))
        fprintf(stderr, "  the 3x3 blur's text is not the documented one:\n%s", text);
    CHECK(text && strncmp(text, "pm-canon 2\n", 11) == 0 && PM_CANON_VERSION == 2);
    pm_ctx_free(ctx);
    CHECK(pm_pipeline_text(NULL, &len) == NULL && len == 0);
}

/* Every name in the table maps back to its value, and names are unique in a field. */
static void test_name_table(void)
{
    static const struct { pm_canon_field field; int lo, hi; } ranges[] = {
        {PM_CANON_KIND, PM_EXPR_INT, PM_EXPR_CALL}, {PM_CANON_TYPE, PM_BOOL, PM_F64},
        {PM_CANON_UNOP, PM_OP_NEG, PM_OP_ABS},      {PM_CANON_BINOP, PM_OP_ADD, PM_OP_OR},
        {PM_CANON_MATH, PM_EXP, PM_TRUNC},          {PM_CANON_MATH, PM_MATH_POW, PM_MATH_ATAN2},
        {PM_CANON_REDUCE, PM_REDUCE_SUM, PM_REDUCE_OR},
        {PM_CANON_FUNC, PM_FUNC_IMAGE, PM_FUNC_REDUCTION},
    };
    int named = 0;
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        for (int v = ranges[i].lo; v <= ranges[i].hi; v++) {
            const char *name = pm_canon_name(ranges[i].field, v);
            int back = -1;
            if (CHECK(name != NULL) &&
                CHECK(pm_canon_value(ranges[i].field, name, strlen(name), &back)))
                named += CHECK(back == v);
        }
    CHECK(named == 10 + 10 + 3 + 23 + 14 + 6 + 3);
    int v;
    CHECK(pm_canon_name(PM_CANON_TYPE, 99) == NULL && !pm_canon_value(PM_CANON_TYPE, "f16", 3, &v));
    CHECK(!pm_canon_value(PM_CANON_BINOP, "add", 2, &v)); /* "ad": whole names only */
}

/* ---- round trips ---------------------------------------------------------------------------- */

static void test_apps(void)
{
    int napps = 0;
    const pm_sample_app *apps = pm_sample_apps(&napps);
    CHECK(napps == 7);
    for (int i = 0; i < napps; i++) {
        const pm_sample_app *app = &apps[i];
        pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
        clutter(b);
        pm_pipeline *p = app->build(a), *q = round_trip(app->name, p, b);
        if (q) {
            pm_value params[16];
            app->params(app->min_rows + 5, app->min_cols + 7, params);
            pm_buffer in[8];
            for (int k = 0; k < pm_pipeline_ninputs(p); k++) {
                in[k] = pm_sample_buffer(p, 0, k, params);
                app->fill_input(k, &in[k], params);
            }
            same_outputs(app->name, p, q, params, in);
            for (int k = 0; k < pm_pipeline_ninputs(p); k++)
                free(in[k].data);
        }
        pm_ctx_free(a);
        pm_ctx_free(b);
    }
}

static void test_examples(void)
{
    pm_pipeline *(*builders[])(pm_ctx **) = {blur_rgb_pipeline, sobel_pipeline, hist_eq_pipeline};
    const char *names[] = {"blur_rgb", "sobel", "hist_eq"};
    for (int i = 0; i < 3; i++) {
        pm_ctx *a, *b = pm_ctx_new();
        pm_pipeline *p = builders[i](&a);
        CHECK(round_trip(names[i], p, b) != NULL);
        pm_ctx_free(a);
        pm_ctx_free(b);
    }
}

/* ---- a pipeline with every name of the table ------------------------------------------------ */

typedef struct every {
    pm_ctx *ctx;
    pm_expr *R, *x, *gain;
    pm_interval *row;      /* [0, R-1] */
    pm_func *in[9];        /* one 1-D image of each storage type, u8 .. f64 */
    pm_func *outs[32];
    int nouts;
} every;

static pm_expr *in_at(every *e, pm_type t) { return pm_call(e->in[t - PM_U8], e->x); }

static void output(every *e, const char *name, pm_type type, pm_expr *value)
{
    pm_func *f = pm_func_new(e->ctx, name, type, 1, &e->x, &e->row);
    pm_func_define_expr(f, value);
    e->outs[e->nouts++] = f;
}

/* Every integer and logical operator, the unary ones, a case with conditions. */
static void every_int_op(every *e)
{
    pm_expr *a = pm_cast(PM_I32, in_at(e, PM_I16)), *b = pm_cast(PM_I32, in_at(e, PM_U8));
    pm_expr *(*ops[])(pm_expr *, pm_expr *) = {pm_add, pm_sub, pm_mul, pm_div, pm_mod, pm_cdiv,
                                               pm_cmod, pm_min, pm_max, pm_absd, pm_band, pm_bor,
                                               pm_bxor, pm_shl, pm_shr};
    pm_expr *sum = pm_neg(pm_abs(a));
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        sum = pm_add(sum, ops[i](a, b));
    pm_expr *(*cmps[])(pm_expr *, pm_expr *) = {pm_lt, pm_le, pm_eq, pm_ne, pm_ge, pm_gt};
    for (size_t i = 0; i < 6; i += 2)
        sum = pm_add(sum, pm_cast(PM_I32, pm_or(pm_and(cmps[i](a, b), cmps[i + 1](a, b)),
                                                  pm_not(cmps[i](b, a)))));
    output(e, "int ops", PM_I32, sum);
    pm_func *f = pm_func_new(e->ctx, "cases:\n2", PM_I16, 1, &e->x, &e->row);
    pm_expr *five = pm_int(e->ctx, 5);
    pm_define(f, pm_case_new(pm_lt(e->x, five), pm_select(pm_gt(a, b), a, b)),
              pm_case_new(pm_ge(e->x, five), pm_int(e->ctx, -7)));
    e->outs[e->nouts++] = f;
}

/* Every math function and float operator, in f32 and f64. */
static void every_float_op(every *e)
{
    pm_expr *a = in_at(e, PM_F32), *d = in_at(e, PM_F64);
    pm_math_fn fns[] = {PM_EXP, PM_LOG, PM_SQRT, PM_SIN, PM_COS, PM_TAN, PM_ATAN, PM_TANH,
                        PM_FLOOR, PM_CEIL, PM_ROUND, PM_TRUNC};
    pm_expr *s = pm_add(pm_pow(a, a), pm_atan2(a, pm_float(e->ctx, 0.5)));
    for (int i = 0; i < 12; i++)
        s = pm_add(s, pm_math(fns[i], a));
    s = pm_add(s, pm_mod(pm_div(pm_sub(pm_min(a, pm_neg(a)), pm_max(a, pm_abs(a))),
                                pm_absd(a, pm_float(e->ctx, 2))), pm_float(e->ctx, 0.75)));
    output(e, "float ops", PM_F32, s);
    uint64_t payload = UINT64_C(0x7ff8000000012345); /* a NaN with a payload */
    double v;
    memcpy(&v, &payload, sizeof v);
    pm_expr *nan = pm_f64(e->ctx, v);
    output(e, "f64", PM_F64, pm_add(pm_mul(pm_add(d, pm_f64(e->ctx, -0.0)), e->gain),
                                    pm_select(pm_lt(d, pm_f64(e->ctx, 0.5)), nan,
                                              pm_exp(pm_f64(e->ctx, 1e-300)))));
}

/* Casts to every type; constants the builders make of weak literals next to every type
 * (u8 300, INT64_MIN beside an i64); weak nodes whose stored operands are strong. */
static void every_type(every *e)
{
    pm_ctx *ctx = e->ctx;
    static const char *names[] = {"to u8", "to i8", "to u16", "to i16", "to u32", "to i32",
                                  "to i64", "to f32", "to f64"};
    for (int t = PM_U8; t <= PM_F64; t++)
        output(e, names[t - PM_U8], (pm_type)t,
               pm_add(pm_cast((pm_type)t, in_at(e, (pm_type)(PM_F64 - (t - PM_U8)))),
                      pm_add(in_at(e, (pm_type)t), pm_int(ctx, 300))));
    pm_expr *i64 = in_at(e, PM_I64);
    output(e, "i64 ends", PM_I64, pm_bxor(pm_add(i64, pm_int(ctx, INT64_MIN)),
                                          pm_add(i64, pm_int(ctx, INT64_MAX))));
    pm_expr *three = pm_add(pm_int(ctx, 1), pm_int(ctx, 2));            /* weak i32 */
    pm_expr *half = pm_mul(three, pm_float(ctx, 0.5));                  /* weak f32 */
    pm_expr *pick = pm_select(pm_lt(e->x, three), pm_int(ctx, 4), pm_neg(pm_int(ctx, 6)));
    output(e, "weak", PM_F32, pm_add(pm_mul(pm_cast(PM_F32, pm_add(pick, pm_cast(PM_I32, three))),
                                            half),
                                     pm_add(in_at(e, PM_U8), three)));
}

/* Every reduction operator: a histogram, and zero-dimensional totals. */
static void every_reduction(every *e)
{
    pm_ctx *ctx = e->ctx;
    pm_expr *r = pm_var(ctx, "r"), *v = pm_var(ctx, "v");
    pm_interval *bins = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 255), 1);
    pm_func *hist = pm_reduction_new(ctx, "hist", PM_I32, 1, &v, &bins, 1, &r, &e->row,
                                     PM_REDUCE_SUM, NULL);
    pm_reduction_define(hist, 1, pm_exprs(pm_cast(PM_I32, pm_call(e->in[0], r))), pm_int(ctx, 1));
    e->outs[e->nouts++] = hist;
    pm_reduce_op ops[] = {PM_REDUCE_PRODUCT, PM_REDUCE_MIN, PM_REDUCE_MAX, PM_REDUCE_AND,
                          PM_REDUCE_OR};
    static const char *names[] = {"product", "min", "max", "and", "or"};
    for (int i = 0; i < 5; i++) {
        pm_func *t = pm_reduction_new(ctx, names[i], PM_U16, 0, NULL, NULL, 1, &r, &e->row,
                                      ops[i], i == 0 ? pm_const(ctx, PM_U16, 1) : NULL);
        pm_reduction_define(t, 0, NULL, pm_call(e->in[PM_U16 - PM_U8], r));
        e->outs[e->nouts++] = t;
    }
}

/* A stage over every other point, reading the histogram: steps and calls of stages. */
static void every_step(every *e)
{
    pm_ctx *ctx = e->ctx;
    pm_expr *y = pm_var(ctx, "y");
    pm_interval *evens = pm_interval_new(pm_int(ctx, 0), pm_addi(e->R, -1), 2);
    pm_func *f = pm_func_new(ctx, "evens", PM_I32, 1, &y, &evens);
    pm_func_define_expr(f, pm_add(pm_call(e->outs[e->nouts - 6], pm_modi(y, 256)),
                                  pm_call_n(e->outs[e->nouts - 1], 0, NULL)));
    e->outs[e->nouts++] = f;
}

static pm_pipeline *build_every(pm_ctx *ctx)
{
    every e = {.ctx = ctx};
    e.R = pm_param(ctx, PM_I32, "R");
    e.gain = pm_param(ctx, PM_F64, "gain x");
    e.x = pm_var(ctx, "x");
    e.row = pm_interval_new(pm_int(ctx, 0), pm_addi(e.R, -1), 1);
    for (int t = PM_U8; t <= PM_F64; t++) {
        char name[16];
        snprintf(name, sizeof name, "I:%s", pm_type_name((pm_type)t));
        e.in[t - PM_U8] = pm_image(ctx, name, (pm_type)t, e.R);
    }
    every_int_op(&e);
    every_float_op(&e);
    every_type(&e);
    every_reduction(&e);
    every_step(&e);
    pm_pipeline *p = NULL;
    if (pm_pipeline_new(ctx, "every name", 2, pm_exprs(e.R, e.gain), 9, e.in, e.nouts, e.outs,
                        &p) != PM_OK)
        fprintf(stderr, "  every name: %s\n", pm_ctx_errmsg(ctx));
    return p;
}

static void test_every_name(void)
{
    pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
    pm_pipeline *p = build_every(a), *q = round_trip("every name", p, b);
    const char *text = p ? pm_pipeline_text(p, NULL) : "";
    /* the weak nodes of stored strong operands: the reader's one inference */
    CHECK(strstr(text, " binary i32 w1 add ") && strstr(text, " binary f32 w1 mul ") &&
          strstr(text, " select i32 w1 ") && strstr(text, " int u8 w0 i300\n") &&
          strstr(text, " int i64 w0 i-9223372036854775808\n") &&
          strstr(text, " float f64 w0 x7ff8000000012345\n") &&
          strstr(text, " float f64 w0 x8000000000000000\n") && strstr(text, " 6:gain x\n"));
    if (q) {
        pm_value params[2] = {PM_I(300), PM_F(0.75)};
        pm_buffer in[9];
        for (int k = 0; k < 9; k++) {
            in[k] = pm_sample_buffer(p, 0, k, params);
            check_fill(&in[k], (unsigned)k + 1, k < 3);
        }
        same_outputs("every name", p, q, params, in);
        for (int k = 0; k < 9; k++)
            free(in[k].data);
    }
    pm_ctx_free(a);
    pm_ctx_free(b);
}

/* A 3-D histogram whose index lines are far apart: hundreds of nodes come between them
 * (the reader's node table grows meanwhile). */
static void test_long_reduction(void)
{
    pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
    pm_expr *R = pm_param(a, PM_I32, "R"), *r = pm_var(a, "r");
    pm_func *I = pm_image(a, "I", PM_U8, R);
    pm_expr *v[3] = {pm_var(a, "u"), pm_var(a, "v"), pm_var(a, "w")}, *index[3];
    pm_interval *bins = pm_interval_new(pm_int(a, 0), pm_int(a, 7), 1);
    pm_interval *row = pm_interval_new(pm_int(a, 0), pm_addi(R, -1), 1);
    for (int d = 0; d < 3; d++) {
        index[d] = pm_cast(PM_I32, pm_call(I, r));
        for (int i = 0; i < 70; i++)
            index[d] = pm_addi(index[d], d - 1);
        index[d] = pm_modi(index[d], 8);
    }
    pm_func *h = pm_reduction_new(a, "h", PM_I32, 3, v, pm_intervals(bins, bins, bins), 1, &r,
                                  &row, PM_REDUCE_SUM, NULL);
    pm_reduction_define(h, 3, index, pm_int(a, 1));
    pm_pipeline *p = NULL;
    pm_pipeline_new(a, "long", 1, &R, 1, &I, 1, &h, &p);
    pm_pipeline *q = round_trip("long reduction", p, b);
    if (q) {
        pm_value params[1] = {PM_I(50)};
        pm_buffer in = pm_sample_buffer(p, 0, 0, params);
        check_fill(&in, 3, false);
        same_outputs("long reduction", p, q, params, &in);
        free(in.data);
    }
    pm_ctx_free(a);
    pm_ctx_free(b);
}

/* ---- the JIT: same kernel output, same cache key -------------------------------------------- */

/* Runs k on the app's inputs at params; the outputs (caller frees their data). */
static void run_kernel(pm_kernel *k, pm_pipeline *p, const pm_value *params, const pm_buffer *in,
                       pm_buffer *out)
{
    pm_error err;
    for (int i = 0; i < pm_pipeline_noutputs(p); i++)
        out[i] = pm_sample_buffer(p, 1, i, params);
    if (!CHECK_STATUS(pm_kernel_run(k, params, in, out, &err), PM_OK))
        fprintf(stderr, "  pm_kernel_run: %s\n", err.message);
}

static void test_jit(void)
{
    const pm_sample_app *app = pm_sample_find("harris");
    pm_ctx *a = pm_ctx_new(), *b = pm_ctx_new();
    pm_pipeline *p = app->build(a), *q = round_trip("harris", p, b);
    pm_error err;
    pm_jit *j1 = pm_jit_new(NULL, &err), *j2 = pm_jit_new(NULL, &err);
    if (!q || !CHECK(j1 && j2))
        goto out;
    pm_value params[16];
    app->params(48, 64, params);
    pm_buffer in[8], want[8], got[8];
    in[0] = pm_sample_buffer(p, 0, 0, params);
    app->fill_input(0, &in[0], params);
    /* compiled apart (two jits): the text's pipeline makes the original's kernel */
    pm_kernel *k1 = pm_jit_compile(j1, p, params, NULL, &err);
    pm_kernel *k2 = pm_jit_compile(j2, q, params, NULL, &err);
    if (CHECK(k1 && k2)) {
        run_kernel(k1, p, params, in, want);
        run_kernel(k2, q, params, in, got);
        size_t bytes = (size_t)pm_sample_buffer_count(&want[0]) * pm_type_size(want[0].type);
        CHECK(memcmp(want[0].data, got[0].data, bytes) == 0);
        free(want[0].data);
        free(got[0].data);
    }
    /* one key: the text's pipeline finds the original's kernel in j1's cache */
    pm_cache_stats before, after;
    pm_jit_stats(j1, &before, sizeof before);
    pm_kernel *k3 = pm_jit_compile(j1, q, params, NULL, &err);
    pm_jit_stats(j1, &after, sizeof after);
    CHECK(k3 == k1 && after.hits == before.hits + 1 && after.misses == before.misses &&
          after.sync_compiles == before.sync_compiles);
    pm_kernel_free(k1);
    pm_kernel_free(k2);
    pm_kernel_free(k3);
    free(in[0].data);
out:
    pm_jit_free(j1);
    pm_jit_free(j2);
    pm_ctx_free(a);
    pm_ctx_free(b);
}

/* ---- malformed texts ------------------------------------------------------------------------ */

static void test_header_errors(void)
{
    const char *t = blur3_text;
    REFUSED("", "not a canonical text");
    REFUSED("hello\n", "not a canonical text: it begins with \"hello\"");
    REFUSED_WITH(t, "pm-canon 2", "pm-canon 1", "line 1: version 1; this library reads version 2");
    REFUSED_WITH(t, "pm-canon 2", "pm-canon 3", "version 3; this library reads version 2");
    REFUSED_WITH(t, "pm-canon 2", "pm-canon 02", "leading zero");
    REFUSED_WITH(t, "pm-canon 2", "pm-canon  2",
                 "expected a version (a number), found another space");
    REFUSED_WITH(t, "blur3 2 1 1 3", "blur3 2000000 1 1 3",
                 "line 2: a parameter count \"2000000\" is too large (at most 1024)");
    REFUSED_WITH(t, "blur3 2 1 1 3", "blur3 2 1 1 900",
                 "a function count 900 is more than the text's 47 lines can hold");
    REFUSED_WITH(t, "blur3 2 1 1 3", "blur3 2 1 1 99999999999999999999", "too large");
    REFUSED_WITH(t, "blur3 2 1 1 3", "blur3 2 1 0 3", "at least one");
    REFUSED_WITH(t, "blur3 2 1 1 3", "blur3 2 2 1 3",
                 "line 17: f1 is a function, but f0..f1 are the pipeline's inputs");
    REFUSED_WITH(t, "pipeline 5:blur3", "pipeline 99999:blur3",
                 "the pipeline's name \"99999\" is too large");
    REFUSED_WITH(t, "param 1 i32 1:C", "param 0 i32 1:C",
                 "line 4: param 0 is out of order: the next is param 1");
    REFUSED_WITH(t, "param 1 i32 1:C", "param 1 bool 1:C",
                 "line 4: param: parameter C: type must be");
    /* a NUL byte, in a name */
    char *nul = replaced(t, "1:C", "1:?");
    *strchr(strstr(nul, "1:?"), '?') = '\0';
    refused_at(nul, strlen(blur3_text), "line 4: a NUL byte (at offset", __LINE__);
    free(nul);
}

static void test_node_errors(void)
{
    const char *t = blur3_text;
    REFUSED_WITH(t, "e8 int i32", "e8 integer i32",
                 "line 14: expected a kind, found the unknown name \"integer\"");
    REFUSED_WITH(t, "f0 image f32", "f0 image f16",
                 "line 7: expected a type, found the unknown name \"f16\"");
    REFUSED_WITH(t, "e9 binary i32 w0 add", "e9 binary i32 w0 plus", "unknown name \"plus\"");
    REFUSED_WITH(t, "f1 function", "f1 stage", "expected image, function or reduction");
    REFUSED_WITH(t, "e20 binary f32 w0 mul a18 b19", "e20 binary f32 w0 mul a18 b29",
                 "line 28: e20 refers to e29, not yet defined");
    REFUSED_WITH(t, "e12 call f32 w0 f0", "e12 call f32 w0 f2",
                 "line 20: e12 refers to f2, not yet defined");
    REFUSED_WITH(t, "e10 int i32 w0 i-1\n", "e10 int i32 w0 i-1\ne10 int i32 w0 i-1\n",
                 "line 19: e10 is defined twice");
    REFUSED_WITH(t, "e10 int i32 w0 i-1", "e11 int i32 w0 i-1",
                 "e11 is out of order: the next node is e10");
    REFUSED_WITH(t, "e14 binary f32 w0 add", "e14 binary i32 w0 add",
                 "e14: the builders make it binary f32 w0, not binary i32 w0");
    REFUSED_WITH(t, "e3 int i32 w1 i1", "e3 int u8 w1 i1",
                 "the builders make it int i32 w1, not int u8 w1");
    REFUSED_WITH(t, "e3 int i32 w1 i1", "e3 int f32 w0 i1", "e3: an int node of type f32");
    REFUSED_WITH(t, "e3 int i32 w1 i1", "e3 int i32 w2 i1", "expected w0 or w1, found \"w2\"");
    REFUSED_WITH(t, "e0 param i32 w0 s0", "e0 param f32 w0 s0",
                 "e0: parameter R is i32 w0, not f32 w0");
    REFUSED_WITH(t, "e1 param i32 w0 s1", "e1 param i32 w0 s0", "e1 is parameter 0 again");
    REFUSED_WITH(t, "e1 param i32 w0 s1", "e1 param i32 w0 s7",
                 "e1 refers to parameter 7, but the pipeline has 2");
    REFUSED_WITH(t, "e13 call f32 w0 f0 n2 e2 e6", "e13 call f32 w0 f0 n2 e3 e6",
                 "e13: the builders store an argument e3 converted to i32");
    REFUSED_WITH(t, "e12 call f32 w0 f0 n2 e11 e6", "e12 call f32 w0 f0 n3 e11 e6 e6",
                 "e12: call of I with 3 arguments");
    REFUSED_WITH(t, "e12 call f32 w0 f0 n2 e11 e6", "e12 call f32 w0 f0 n9 e11 e6",
                 "an argument count \"9\" is too large (at most 8)");
    REFUSED_WITH(t, "x3fd5555560000000", "x3fd5555555555555",
                 "e19: x3fd5555555555555 is not an f32 value");
    REFUSED_WITH(t, "x3fd5555560000000", "x3fd55555600000", "16 lower-case hex digits");
    REFUSED_WITH(t, "e4 int i32 w0 i-2", "e4 int i32 w0 i99999999999999999999",
                 "line 10: integer \"99999999999999999999\" is too large");
    REFUSED_WITH(t, "e4 int i32 w0 i-2", "e4 int i32 w0 i-02", "leading zero");
    REFUSED_WITH(t, "e4 int i32 w0 i-2", "e4 int i32 w0 i-0", "-0 is written 0");
    REFUSED_WITH(t, "add a0 b4", "add a0 b99999999999999999999", "too large");
    REFUSED_WITH(t, "add a0 b4", "add a0", "e5: a binary node has operands a and b");
    REFUSED_WITH(t, "add a0 b4", "add b4 a0", "e5: expected an operand a, b or c (in that order)");
    REFUSED_WITH(t, "e0 param i32", "e0 param  i32", "expected a type, found another space");
}

static void test_structure_errors(void)
{
    const char *t = blur3_text;
    REFUSED_WITH(t, "(e2 e3 e5 1)", "(e2 e3 e50 1)",
                 "line 16: domain refers to e50, not yet defined");
    REFUSED_WITH(t, "(e2 e3 e5 1)", "(e2 e3 e5 0)",
                 "domain: interval [1, R - 2]: step 0 must be at least 1");
    REFUSED_WITH(t, "(e2 e3 e5 1)", "(e5 e3 e5 1)",
                 "line 17: f1: blurx: variable domain dimension 0 is R - 2, not a variable");
    REFUSED_WITH(t, "f0 image f32 n2 1:I e0 e1\n",
                 "f0 image f32 n2 1:I e0 e1\nf0 image f32 n2 1:I e0 e1\n", "f0 is defined twice");
    REFUSED_WITH(t, "cases 1", "cases 100000",
                 "a case count \"100000\" is too large (at most 512)");
    REFUSED_WITH(t, "cases 1", "cases 2",
                 "line 33: blurx has 2 cases, but only 1 case lines come before this line");
    REFUSED_WITH(t, "case - e20", "case e19 e20", "line 29: case: case: condition");
    REFUSED_WITH(t, "case - e20", "case - e18\ncase - e20",
                 "line 30: a case line outside a function's definition");
    REFUSED_WITH(t, "f0 image", "case - e0\nf0 image",
                 "line 7: a case line outside a function's definition");
    REFUSED_WITH(t, "f0 image", "index e0\nf0 image",
                 "an index line outside a reduction's definition");
    REFUSED_WITH(t, "f0 image", "value e0\nf0 image",
                 "a value line outside a reduction's definition");
    REFUSED_WITH(t, "f0 image", "foo\nf0 image", "line 7: a line cannot begin with \"foo\"");
    REFUSED_WITH(t, "f0 image", "param 2 i32 1:D\nf0 image", "a line cannot begin with \"param\"");
    REFUSED_WITH(t, "domain 2 (e2 e3 e5 1) (e6 e7 e9 1)\n", "",
                 "line 16: f1: no domain line before it");
    REFUSED_WITH(t, "domain 2 (e2 e3 e5 1) (e6 e7 e9 1)", "domain 1 (e2 e3 e5 1)",
                 "f1 has 2 dimensions, but its domain line 1");
    REFUSED_WITH(t, "domain 2 (e2 e3 e5 1) (e6 e7 e9 1)", "domain 9",
                 "a dimension count \"9\" is too large (at most 8)");
    REFUSED_WITH(t, "output f2", "output f1", "line 2: f2 (blury) is not reached from any output");
    REFUSED_WITH(t, "output f2", "output f3", "line 47: output refers to f3, not yet defined");
    REFUSED_WITH(t, "output f2\n", "e35 int i32 w0 i7\noutput f2\n",
                 "line 47: not in canonical form: the pipeline it describes writes "
                 "\"output f2\" here");
    REFUSED_WITH(t, "e22 int i32 w0 i-2", "e22 int i32 w0 i-1",
                 "line 2: the pipeline is not valid: blury");
    REFUSED_WITH(t, "output f2\n", "output f2\noutput f2\n",
                 "line 48: text after the last output line");
    REFUSED_WITH(t, "output f2\n", "output f2\nx", "text after the last output line: \"x\"");
    REFUSED_WITH(t, "output f2\n", "output f2",
                 "line 47: expected the end of the line, found the end of the text");
    REFUSED_WITH(t, "output f2\n", "",
                 "line 47: the text ends early: 3 of its 3 functions and 0 of its 1 outputs");
    size_t cut = (size_t)(strstr(t, "e24 int") - t);
    refused_at(t, cut, "line 35: the text ends early: 3 of its 3 functions and 0 of its 1 outputs",
               __LINE__);
    refused_at(t, cut + 7, "line 35: expected a space, found the end of the text", __LINE__);
    refused_at(t, cut - 1, "line 34: expected the end of the line, found the end of the text",
               __LINE__);
}

/* ---- limits --------------------------------------------------------------------------------- */

/* The text of out(x) = a value nesting `depth` levels (adds of a constant over I(x)), or
 * of `levels` of shared minimums (min(v, v) of min(v, v) of ...), in `stages` stages. */
static char *shape_text(int depth, int levels, int stages)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_F32, R);
    pm_interval *row = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_func *outs[4];
    for (int s = 0; s < stages; s++) {
        pm_expr *v = pm_call(I, x);
        for (int i = 0; i + 2 < depth; i++)
            v = pm_add(v, pm_const(ctx, PM_F32, 1));
        for (int i = 0; i < levels; i++)
            v = pm_min(v, v);
        char name[16];
        snprintf(name, sizeof name, "out%d", s);
        outs[s] = pm_func_new(ctx, name, PM_F32, 1, &x, &row);
        pm_func_define_expr(outs[s], v);
    }
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "shape", 1, &R, 1, &I, stages, outs, &p);
    char *text = p ? strdup(pm_pipeline_text(p, NULL)) : NULL;
    pm_ctx_free(ctx);
    return text;
}

static void test_limits(void)
{
    char *ok = shape_text(PM_CANON_MAX_DEPTH, 0, 1);
    char *deep = shape_text(PM_CANON_MAX_DEPTH + 1, 0, 1);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *q;
    if (CHECK(ok && deep)) {
        CHECK_STATUS(pm_pipeline_from_text(ctx, ok, strlen(ok), &q), PM_OK);
        REFUSED(deep, "nests 1025 levels deep; the reader takes at most 1024");
    }
    free(ok);
    free(deep);
    /* 3 * 2^19 nodes as a tree in one definition; 2 * 3 * 2^18 in two */
    char *wide = shape_text(2, 19, 1), *two = shape_text(2, 18, 2), *fine = shape_text(2, 17, 2);
    if (CHECK(wide && two && fine)) {
        REFUSED(wide, "has more than 1048576 nodes written out as a tree");
        REFUSED(two, "the definitions have more than 1048576 nodes written out as trees");
        CHECK_STATUS(pm_pipeline_from_text(ctx, fine, strlen(fine), &q), PM_OK);
    }
    free(wide);
    free(two);
    free(fine);
    pm_ctx_free(ctx);
}

/* ---- the API -------------------------------------------------------------------------------- */

static void test_misuse(void)
{
    pm_pipeline *q = (pm_pipeline *)&q;
    CHECK_STATUS(pm_pipeline_from_text(NULL, blur3_text, strlen(blur3_text), &q), PM_ERR_MISUSE);
    CHECK(q == NULL);
    pm_ctx *ctx = pm_ctx_new();
    CHECK_STATUS(pm_pipeline_from_text(ctx, blur3_text, strlen(blur3_text), NULL), PM_ERR_MISUSE);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "pm_pipeline_from_text: out is NULL");
    CHECK_STATUS(pm_pipeline_from_text(ctx, NULL, 5, &q), PM_ERR_MISUSE);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "text is NULL");
    CHECK_STATUS(pm_pipeline_from_text(ctx, NULL, 0, &q), PM_ERR_ARGUMENT);
    /* an earlier builder error is forgotten; a failed call leaves the context usable */
    pm_ctx_clear_error(ctx);
    CHECK(pm_var(ctx, "") == NULL && pm_ctx_status(ctx) == PM_ERR_MISUSE);
    CHECK_STATUS(pm_pipeline_from_text(ctx, blur3_text, strlen(blur3_text), &q), PM_OK);
    CHECK(q && pm_ctx_status(ctx) == PM_OK && strcmp(pm_pipeline_name(q), "blur3") == 0);
    CHECK_STATUS(pm_pipeline_from_text(ctx, blur3_text, 100, &q), PM_ERR_ARGUMENT);
    CHECK_STATUS(pm_pipeline_from_text(ctx, blur3_text, strlen(blur3_text), &q), PM_OK);
    CHECK(q && pm_pipeline_ninputs(q) == 1 && pm_pipeline_noutputs(q) == 1);
    CHECK(build_blur3(ctx) != NULL); /* and the builders still work in it */
    pm_ctx_free(ctx);
}

/* ---- mutations ------------------------------------------------------------------------------ */

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The first digit at or after `at` changed (references, counts and constants: mutants
 * that still read as lines, for the checks behind the syntax). */
static void change_digit(char *m, size_t n, size_t at, uint64_t r)
{
    while (at < n && !(m[at] >= '0' && m[at] <= '9'))
        at++;
    if (at < n)
        m[at] = (char)('0' + (m[at] - '0' + 1 + r % 9) % 10);
}

/* A byte flipped, deleted, doubled or inserted, or a digit changed, at a seeded position:
 * the text is refused (PM_ERR_ARGUMENT, a message naming a line) or read back to itself. */
static int mutate(const char *text, size_t len, int count, uint64_t seed)
{
    int accepted = 0;
    char *m = malloc(len + 2);
    for (int i = 0; i < count; i++) {
        size_t at = (size_t)(next(&seed) % len), n = len;
        memcpy(m, text, len);
        switch (next(&seed) % 5) {
        case 0: m[at] = (char)(m[at] ^ (1 << next(&seed) % 8)); break;
        case 1: memmove(m + at, m + at + 1, len - at - 1); n--; break;
        case 2: memmove(m + at + 1, m + at, len - at); n++; break;
        case 3: memmove(m + at + 1, m + at, len - at); m[at] = (char)next(&seed); n++; break;
        default: change_digit(m, n, at, next(&seed)); break;
        }
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *q = NULL;
        pm_status s = pm_pipeline_from_text(ctx, m, n, &q);
        size_t qlen = 0;
        const char *back = q ? pm_pipeline_text(q, &qlen) : NULL;
        if (s == PM_OK)
            accepted += CHECK(back && qlen == n && memcmp(back, m, n) == 0);
        else if (!CHECK(s == PM_ERR_ARGUMENT && q == NULL &&
                        strncmp(pm_ctx_errmsg(ctx), "canonical text line ", 20) == 0))
            fprintf(stderr, "  mutant %d: %s: %s\n", i, pm_status_name(s), pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
    }
    free(m);
    return accepted;
}

static void test_mutations(void)
{
    int accepted = mutate(blur3_text, strlen(blur3_text), 300, 42);
    char *every = NULL;
    pm_ctx *e = pm_ctx_new();
    pm_pipeline *pe = build_every(e);
    if (CHECK(pe != NULL))
        every = strdup(pm_pipeline_text(pe, NULL));
    pm_ctx_free(e);
    if (every)
        accepted += mutate(every, strlen(every), 200, 9);
    free(every);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_find("harris")->build(ctx);
    size_t len = 0;
    const char *text = p ? pm_pipeline_text(p, &len) : NULL;
    if (CHECK(text != NULL))
        accepted += mutate(text, len, 100, 7);
    printf("mutations: 600 tried, %d read back (names and constants changed), the rest refused\n",
           accepted);
    pm_ctx_free(ctx);
}

int main(void)
{
    test_format();
    test_name_table();
    test_apps();
    test_examples();
    test_every_name();
    test_long_reduction();
    test_jit();
    test_header_errors();
    test_node_errors();
    test_structure_errors();
    test_limits();
    test_misuse();
    test_mutations();
    return check_finish("canon_text");
}
