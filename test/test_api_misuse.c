/* test_api_misuse.c — the public API used wrongly: NULL handles to every builder, objects
 * of another context, definitions given twice, bad pipeline signatures. Nothing may crash;
 * every call returns NULL or a status, and the context keeps a message naming the cause. */
#include "check.h"

#include <stdlib.h>

#define MSG pm_ctx_errmsg(ctx)

/* The ctx holds exactly this error (status and message), then is cleared. */
static void expect_error(pm_ctx *ctx, pm_status status, const char *needle)
{
    CHECK_STATUS(pm_ctx_status(ctx), status);
    CHECK_CONTAINS(MSG, needle);
    pm_ctx_clear_error(ctx);
}

static void test_null_context(void)
{
    CHECK(pm_int(NULL, 1) == NULL);
    CHECK(pm_float(NULL, 1) == NULL);
    CHECK(pm_f64(NULL, 1) == NULL);
    CHECK(pm_const(NULL, PM_I32, 1) == NULL);
    CHECK(pm_var(NULL, "x") == NULL);
    CHECK(pm_param(NULL, PM_I32, "N") == NULL);
    CHECK(pm_image_new(NULL, "I", PM_F32, 0, NULL) == NULL);
    CHECK(pm_func_new(NULL, "f", PM_F32, 0, NULL, NULL) == NULL);
    CHECK(pm_reduction_new(NULL, "h", PM_I32, 0, NULL, NULL, 0, NULL, NULL, PM_REDUCE_SUM,
                           NULL) == NULL);
    pm_pipeline *p = (pm_pipeline *)&p; /* must be reset to NULL */
    CHECK_STATUS(pm_pipeline_new(NULL, "t", 0, NULL, 0, NULL, 0, NULL, &p), PM_ERR_MISUSE);
    CHECK(p == NULL);
    CHECK_STATUS(pm_ctx_status(NULL), PM_ERR_MISUSE);
    CHECK_CONTAINS(pm_ctx_errmsg(NULL), "NULL");
    pm_ctx_clear_error(NULL);
    pm_ctx_free(NULL);
}

/* A NULL operand with no other operand: nothing to record the error in, NULL comes back. */
static void test_null_operands_alone(void)
{
    CHECK(pm_add(NULL, NULL) == NULL);
    CHECK(pm_neg(NULL) == NULL);
    CHECK(pm_not(NULL) == NULL);
    CHECK(pm_abs(NULL) == NULL);
    CHECK(pm_addi(NULL, 1) == NULL);
    CHECK(pm_muli(NULL, 2) == NULL);
    CHECK(pm_divi(NULL, 2) == NULL);
    CHECK(pm_modi(NULL, 2) == NULL);
    CHECK(pm_addf(NULL, 1) == NULL);
    CHECK(pm_mulf(NULL, 1) == NULL);
    CHECK(pm_cast(PM_I32, NULL) == NULL);
    CHECK(pm_select(NULL, NULL, NULL) == NULL);
    CHECK(pm_math(PM_EXP, NULL) == NULL);
    CHECK(pm_sqrt(NULL) == NULL);
    CHECK(pm_pow(NULL, NULL) == NULL);
    CHECK(pm_atan2(NULL, NULL) == NULL);
    CHECK(pm_clamp(NULL, NULL, NULL) == NULL);
    CHECK(pm_between(NULL, NULL, NULL) == NULL);
    CHECK(pm_interval_new(NULL, NULL, 1) == NULL);
    CHECK(pm_case_new(NULL, NULL) == NULL);
    CHECK(pm_call_n(NULL, 0, NULL) == NULL);
    CHECK(pm_stencil(NULL, NULL, 1, 3, 3, NULL) == NULL);
    CHECK_STATUS(pm_func_define(NULL, 0, NULL), PM_ERR_MISUSE);
    CHECK_STATUS(pm_func_define_expr(NULL, NULL), PM_ERR_MISUSE);
    CHECK_STATUS(pm_reduction_define(NULL, 0, NULL, NULL), PM_ERR_MISUSE);
    CHECK(pm_func_name(NULL) == NULL);
    CHECK(pm_func_ndims(NULL) == -1);
    CHECK(pm_pipeline_name(NULL) == NULL);
    CHECK(pm_pipeline_nparams(NULL) == -1);
    CHECK(pm_pipeline_ninputs(NULL) == -1);
    CHECK(pm_pipeline_noutputs(NULL) == -1);
    CHECK(pm_pipeline_input(NULL, 0) == NULL);
    CHECK(pm_pipeline_output(NULL, 0) == NULL);
    CHECK(pm_pipeline_to_string(NULL) == NULL);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    CHECK_STATUS(pm_pipeline_buffer_shape(NULL, 1, 0, NULL, &ndims, extents), PM_ERR_MISUSE);
    CHECK_STATUS(pm_interpret(NULL, NULL, NULL, NULL), PM_ERR_MISUSE);
}

/* A NULL next to a valid operand: the context records it (MISUSE, "NULL"). */
static void test_null_operands_recorded(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x"), *c = pm_lt(x, pm_int(ctx, 1));
    CHECK(pm_add(x, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "+: operand is NULL");
    CHECK(pm_sub(NULL, x) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "-: operand is NULL");
    CHECK(pm_and(c, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "&&: operand is NULL");
    CHECK(pm_select(c, x, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "select: operand is NULL");
    CHECK(pm_pow(x, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "pow: operand is NULL");
    CHECK(pm_interval_new(x, NULL, 1) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "interval: bound is NULL");
    CHECK(pm_case_new(c, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "case: value is NULL");
    CHECK(pm_var(ctx, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "pm_var: a variable needs a name");
    CHECK(pm_param(ctx, PM_I32, "") == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "pm_param: a parameter needs a name");
    CHECK(pm_image_new(ctx, NULL, PM_F32, 0, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "image needs a name");
    CHECK(pm_image_new(ctx, "I", PM_F32, 2, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "image I: extent list is NULL");
    CHECK(pm_image_new(ctx, "I", PM_F32, 2, pm_exprs(x, NULL)) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "image I: the extent of dimension 1 is NULL");
    CHECK(pm_func_new(ctx, "f", PM_F32, 1, NULL, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "f: variable domain variable or interval list is NULL");
    CHECK(pm_func_new(ctx, "f", PM_F32, 1, pm_exprs(x), (pm_interval *const[]){NULL}) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "f: variable domain dimension 0 has a NULL interval");

    pm_interval *iv = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_F32, 1, pm_exprs(x), pm_intervals(iv));
    CHECK(pm_call_n(f, 1, NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "call of f: argument list is NULL");
    CHECK(pm_call_n(f, 1, (pm_expr *const[]){NULL}) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "call of f: argument 1 is NULL");
    CHECK(pm_stencil(f, NULL, 1, 3, 3, NULL) == NULL);
    expect_error(ctx, PM_ERR_INVALID, "stencil over f: it has 1 dimensions");
    CHECK_STATUS(pm_func_define(f, 0, NULL), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f: a definition needs at least one case");
    CHECK_STATUS(pm_func_define(f, 1, (pm_case *const[]){NULL}), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f: case 1 is NULL");
    CHECK_STATUS(pm_func_define_expr(f, NULL), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f: definition is NULL");

    pm_expr *r = pm_var(ctx, "r");
    pm_func *h = pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(x), pm_intervals(iv), 1,
                                  pm_exprs(r), pm_intervals(iv), PM_REDUCE_SUM, NULL);
    CHECK(h != NULL);
    CHECK_STATUS(pm_reduction_define(h, 1, pm_exprs(r), NULL), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "reduce into h: value is NULL");
    CHECK_STATUS(pm_reduction_define(h, 1, NULL, pm_int(ctx, 1)), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "reduce into h: index list is NULL");
    CHECK_STATUS(pm_reduction_define(h, 1, (pm_expr *const[]){NULL}, pm_int(ctx, 1)),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "reduce into h: index 1 is NULL");
    CHECK_STATUS(pm_reduction_define(h, 2, pm_exprs(r, r), pm_int(ctx, 1)), PM_ERR_INVALID);
    expect_error(ctx, PM_ERR_INVALID, "reduce into h with 2 indices: h has 1 dimension");
    pm_ctx_free(ctx);
}

/* The first error sticks: a NULL that results from an earlier failure is not re-reported,
 * and pm_pipeline_new returns that first error. */
static void test_first_error_sticks(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_expr *bad = pm_band(pm_float(ctx, 1.5), x); /* TYPE */
    CHECK(bad == NULL);
    CHECK(pm_add(x, bad) == NULL); /* NULL from the failure: no new error */
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1)));
    CHECK_STATUS(pm_func_define_expr(f, pm_add(x, bad)), PM_ERR_TYPE);
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 0, NULL, 0, NULL, 1, (pm_func *const[]){f}, &p),
                 PM_ERR_TYPE);
    CHECK(p == NULL);
    CHECK_CONTAINS(MSG, "'&' needs integer operands");
    pm_ctx_free(ctx);
}

/* Objects of two contexts must not meet. */
static void test_cross_context(void)
{
    pm_ctx *ctx = pm_ctx_new(), *other = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x"), *ox = pm_var(other, "x");
    pm_interval *iv = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_interval *oiv = pm_interval_new(pm_int(other, 0), pm_int(other, 3), 1);

    /* expressions */
    CHECK(pm_add(x, ox) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "+: operands belong to different contexts");
    CHECK(pm_select(pm_lt(x, pm_int(ctx, 1)), x, ox) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "select: operands belong to different contexts");
    CHECK(pm_interval_new(pm_int(ctx, 0), pm_int(other, 3), 1) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "interval: bounds belong to different contexts");
    CHECK(pm_case_new(pm_lt(x, pm_int(ctx, 1)), ox) == NULL);
    expect_error(other, PM_ERR_MISUSE, "case: condition and value belong to different contexts");

    /* intervals and variables of a domain */
    CHECK(pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(oiv)) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "f: variable domain dimension 0 belongs to another context");
    CHECK(pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(ox), pm_intervals(iv)) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "f: variable domain dimension 0 belongs to another context");
    CHECK(pm_image_new(ctx, "I", PM_F32, 1, pm_exprs(pm_int(other, 4))) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "image I: the extent of dimension 0 belongs to another context");

    /* functions and calls */
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(iv));
    pm_func *g = pm_func_new(other, "g", PM_I32, 1, pm_exprs(ox), pm_intervals(oiv));
    CHECK(f && g);
    CHECK(pm_call(g, x) == NULL);
    expect_error(other, PM_ERR_MISUSE, "call of g: argument 1 belongs to another context");

    /* cases and definitions */
    pm_case *oc = pm_case_new(NULL, pm_int(other, 1));
    CHECK_STATUS(pm_define(f, oc), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f: case 1 belongs to another context");
    CHECK_STATUS(pm_func_define_expr(f, ox), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "another context");
    pm_expr *r = pm_var(ctx, "r");
    pm_func *h = pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(x), pm_intervals(iv), 1,
                                  pm_exprs(r), pm_intervals(iv), PM_REDUCE_SUM, NULL);
    CHECK_STATUS(pm_reduction_define(h, 1, pm_exprs(ox), pm_int(ctx, 1)), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "reduce into h: index 1 belongs to another context");
    CHECK(pm_reduction_new(ctx, "h2", PM_I32, 1, pm_exprs(x), pm_intervals(iv), 1, pm_exprs(r),
                           pm_intervals(iv), PM_REDUCE_SUM, pm_int(other, 0)) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "reduction h2: initial value belongs to another context");

    /* pipelines */
    CHECK_STATUS(pm_func_define_expr(g, ox), PM_OK);
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 0, NULL, 0, NULL, 1, (pm_func *const[]){g}, &p),
                 PM_ERR_MISUSE);
    CHECK(p == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: output g belongs to another context");
    pm_expr *N = pm_param(other, PM_I32, "N");
    CHECK_STATUS(pm_func_define_expr(f, x), PM_OK);
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 0, NULL, 1, (pm_func *const[]){f}, &p),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: parameter 1 belongs to another context");
    pm_func *I = pm_image(other, "I", PM_I32, N);
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 0, NULL, 1, (pm_func *const[]){I}, 1,
                                 (pm_func *const[]){f}, &p),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: input I belongs to another context");
    pm_ctx_free(other);
    pm_ctx_free(ctx);
}

static void test_define_twice(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x"), *r = pm_var(ctx, "r");
    pm_interval *iv = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(iv));
    CHECK_STATUS(pm_func_define_expr(f, x), PM_OK);
    CHECK_STATUS(pm_func_define_expr(f, pm_addi(x, 1)), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f is already defined");
    CHECK_STATUS(pm_define(f, pm_case_new(NULL, x)), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f is already defined");

    pm_func *h = pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(x), pm_intervals(iv), 1,
                                  pm_exprs(r), pm_intervals(iv), PM_REDUCE_SUM, NULL);
    CHECK_STATUS(pm_reduction_define(h, 1, pm_exprs(r), pm_int(ctx, 1)), PM_OK);
    CHECK_STATUS(pm_reduction_define(h, 1, pm_exprs(r), pm_int(ctx, 2)), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "h is already defined");

    /* The wrong definer for the kind of function. */
    CHECK_STATUS(pm_func_define_expr(h, x), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "h is a reduction, not a function");
    CHECK_STATUS(pm_reduction_define(f, 1, pm_exprs(x), x), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "f is not a reduction");
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 4));
    CHECK_STATUS(pm_func_define_expr(I, x), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "I is an image, not a function");

    /* The first definition is still the one in force. */
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 0, NULL, 0, NULL, 2, (pm_func *const[]){f, h}, &p),
                 PM_OK);
    char *text = pm_pipeline_to_string(p);
    CHECK_CONTAINS(text, "case (everywhere):\n    x\n");
    CHECK_CONTAINS(text, "h(r) += 1\n");
    free(text);
    pm_ctx_free(ctx);
}

static void test_pipeline_signature(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *N = pm_param(ctx, PM_I32, "N"), *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, N);
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    CHECK_STATUS(pm_func_define_expr(f, pm_call(I, x)), PM_OK);
    pm_func *const in[] = {I}, *const out[] = {f};
    pm_pipeline *p = (pm_pipeline *)&p;

    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 1, out, NULL), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pm_pipeline_new: out is NULL");
    CHECK_STATUS(pm_pipeline_new(ctx, NULL, 1, pm_exprs(N), 1, in, 1, out, &p), PM_ERR_MISUSE);
    CHECK(p == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "a pipeline needs a name");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 0, out, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: needs at least one output");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 1, NULL, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: a list is NULL");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 1, in, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: output I is an image; outputs are functions");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, out, 1, out, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: input f is not an image");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 2, (pm_func *const[]){f, f}, &p),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: f is listed twice");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 2, pm_exprs(N, N), 1, in, 1, out, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: parameter N is listed twice");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(x), 1, in, 1, out, &p), PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: parameter 1 (x) is not a parameter");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, (pm_expr *const[]){NULL}, 1, in, 1, out, &p),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: parameter 1 is NULL");
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 1, (pm_func *const[]){NULL}, &p),
                 PM_ERR_MISUSE);
    expect_error(ctx, PM_ERR_MISUSE, "pipeline t: output 1 is NULL");

    /* After all that, the right call works and the context holds no error. */
    CHECK_STATUS(pm_pipeline_new(ctx, "t", 1, pm_exprs(N), 1, in, 1, out, &p), PM_OK);
    CHECK(p != NULL && p != (pm_pipeline *)&p);
    CHECK_STATUS(pm_ctx_status(ctx), PM_OK);
    CHECK(pm_pipeline_output(p, 0) == f);
    CHECK(pm_pipeline_output(p, 1) == NULL);
    CHECK(pm_pipeline_input(p, -1) == NULL);

    /* The interpreter rejects missing buffers rather than reading through NULL. */
    CHECK(pm_interpret(p, NULL, NULL, NULL) != PM_OK);
    pm_ctx_free(ctx);
}

/* Values that are not types, operations or ranks. */
static void test_bad_enums_and_shapes(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    CHECK(pm_const(ctx, PM_BOOL, 1) == NULL);
    expect_error(ctx, PM_ERR_TYPE, "pm_const: 0 is not a storage type");
    CHECK(pm_param(ctx, (pm_type)99, "N") == NULL);
    expect_error(ctx, PM_ERR_TYPE, "parameter N: type must be an integer or float type");
    CHECK(pm_cast((pm_type)99, x) == NULL);
    expect_error(ctx, PM_ERR_TYPE, "cast of x: target 99 is not a storage type");
    CHECK(pm_math((pm_math_fn)77, x) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "pm_math: unknown function 77");
    CHECK(pm_image_new(ctx, "I", PM_F32, PM_MAX_DIMS + 1, NULL) == NULL);
    expect_error(ctx, PM_ERR_INVALID, "I: 9 dimensions (at most 8)");
    CHECK(pm_func_new(ctx, "f", PM_BOOL, 0, NULL, NULL) == NULL);
    expect_error(ctx, PM_ERR_TYPE, "f: element type 0 is not a storage type");
    CHECK(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 0) == NULL);
    expect_error(ctx, PM_ERR_INVALID, "interval [0, 3]: step 0 must be at least 1");
    CHECK(pm_interval_new(pm_float(ctx, 0), pm_int(ctx, 3), 1) == NULL);
    expect_error(ctx, PM_ERR_TYPE, "bounds must be integer expressions");
    pm_interval *iv = pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 3), 1);
    CHECK(pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(x, x), pm_intervals(iv, iv)) == NULL);
    expect_error(ctx, PM_ERR_INVALID, "f: variable x names two dimensions (0 and 1 of its");
    CHECK(pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(pm_addi(x, 1)), pm_intervals(iv)) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "f: variable domain dimension 0 is x + 1, not a variable");
    CHECK(pm_reduction_new(ctx, "h", PM_I32, 1, pm_exprs(x), pm_intervals(iv), 1, pm_exprs(x),
                           pm_intervals(iv), PM_REDUCE_SUM, NULL) == NULL);
    expect_error(ctx, PM_ERR_INVALID, "variable x is in both the variable and the reduction domain");
    CHECK(pm_reduction_new(ctx, "h", PM_I32, 0, NULL, NULL, 0, NULL, NULL, (pm_reduce_op)42,
                           NULL) == NULL);
    expect_error(ctx, PM_ERR_MISUSE, "reduction h: unknown operation 42");
    CHECK(pm_reduction_new(ctx, "h", PM_F32, 0, NULL, NULL, 0, NULL, NULL, PM_REDUCE_AND,
                           NULL) == NULL);
    expect_error(ctx, PM_ERR_TYPE, "reduction h: and/or need an integer type, not f32");
    pm_ctx_free(ctx);
}

int main(void)
{
    test_null_context();
    test_null_operands_alone();
    test_null_operands_recorded();
    test_first_error_sticks();
    test_cross_context();
    test_define_twice();
    test_pipeline_signature();
    test_bad_enums_and_shapes();
    return check_finish("test_api_misuse");
}
