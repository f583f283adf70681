/* test_bad_input.c — hostile input, one test per case below (each once a crash, a wrong
 * size or undefined behaviour).
 *
 * Every case checks the status and the message, for the interpreter and for a compiled
 * kernel where both apply, and that nothing reaches stderr (isl's messages included). The
 * suite runs under ASan + UBSan too (make test-asan): before the fixes these inputs
 * crashed in JIT code, wrapped sizes to 0, or were undefined behaviour in signature.c.
 *
 *  1. scratch size overflow (i32 R = C = 2^31 - 1; i64 R = C = 2^32)   -> PM_ERR_NOMEM;
 *     a size that fits but cannot be allocated (2^62 bytes; tile scratchpads of 2^48),
 *     named by its function                                             -> PM_ERR_NOMEM;
 *     an exported member's slot (full buffer + scratchpads) past 2^63 or too big -> NOMEM
 *  2. two functions named f (and image/parameter name clashes, twice-named variables)
 *  3. signature overflow: element count 2^64, output stride INT64_MAX / 4,
 *     i64 parameter INT64_MIN in R + -1                                 -> PM_ERR_ARGUMENT
 *  4. aliasing: an output aliasing itself (strides {1, 1}) is rejected; an output on the
 *     odd bytes next to an input on the even bytes is accepted; the 70th buffer is
 *     checked like the first
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "samples.h"

static pm_jit *jit;

/* Under ASan, a malloc beyond its limit must return NULL as the C library's does (the
 * library reports it), not end the process. Read by ASan at start-up only. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* ---- stderr capture: the library must say nothing there ---------------------------- */

static int saved_fd = -1;
static FILE *capture;

static void quiet_begin(void)
{
    fflush(stderr);
    capture = tmpfile();
    saved_fd = dup(2);
    dup2(fileno(capture), 2);
}

/* Restores stderr; checks nothing was written while captured. */
static void quiet_end(const char *what)
{
    fflush(stderr);
    dup2(saved_fd, 2);
    close(saved_fd);
    long n = ftell(capture) > 0 ? ftell(capture) : (fseek(capture, 0, SEEK_END), ftell(capture));
    char text[512] = "";
    if (n > 0) {
        rewind(capture);
        size_t got = fread(text, 1, sizeof text - 1, capture);
        text[got] = '\0';
        fprintf(stderr, "%s wrote to stderr: %s\n", what, text);
    }
    CHECK(n == 0);
    fclose(capture);
}

static pm_kernel *compile(pm_pipeline *p)
{
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile: %s\n", err.message);
    return k;
}

/* ---- 1. scratch size overflow in compiled code ---------------------------------------- */

/* g(x, y) = x + y over [0, R-1] x [0, C-1]. */
static pm_func *xy_sum(pm_ctx *ctx, pm_expr *R, pm_expr *C)
{
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *g = pm_func_new(ctx, "g", PM_I32, 2, pm_exprs(x, y),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)));
    pm_func_define_expr(g, pm_add(x, y));
    return g;
}

/* The one-element reduction s(0) += value. */
static pm_func *one_element_sum(pm_ctx *ctx, pm_expr *value)
{
    pm_func *s = pm_reduction_new(ctx, "s", PM_I32, 1, pm_exprs(pm_var(ctx, "i")),
                                  pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 0), 1)),
                                  1, pm_exprs(pm_var(ctx, "r")),
                                  pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_int(ctx, 0), 1)),
                                  PM_REDUCE_SUM, NULL);
    pm_reduction_define(s, 1, pm_exprs(pm_int(ctx, 0)), value);
    return s;
}

/* g = xy_sum, read at data-dependent points (so it must be stored whole) by a
 * one-element reduction s(0) += g(I(0), I(1)). */
static pm_pipeline *build_scratch(pm_ctx *ctx, pm_type ptype)
{
    pm_expr *R = pm_param(ctx, ptype, "R"), *C = pm_param(ctx, ptype, "C");
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 2));
    pm_func *g = xy_sum(ctx, R, C);
    pm_func *s = one_element_sum(ctx, pm_call(g, pm_call(I, pm_int(ctx, 0)),
                                              pm_call(I, pm_int(ctx, 1))));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "scratch", 2, pm_exprs(R, C), 1, &I, 1, &s, &p), PM_OK);
    return p;
}

static void test_scratch_overflow(pm_type ptype, int64_t big)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_scratch(ctx, ptype);
    pm_kernel *k = p ? compile(p) : NULL;
    int32_t in_data[2] = {1, 2}, out_data[1] = {-7};
    pm_buffer in = pm_buffer_dense(in_data, PM_I32, 1, (int64_t[]){2});
    pm_buffer out = pm_buffer_dense(out_data, PM_I32, 1, (int64_t[]){1});
    pm_value params[2] = {PM_I(big), PM_I(big)};
    pm_error err;
    if (k) {
        quiet_begin();
        pm_status st = pm_kernel_run(k, params, &in, &out, &err);
        quiet_end("kernel run, scratch overflow");
        CHECK_STATUS(st, PM_ERR_NOMEM);
        CHECK_STATUS(err.status, PM_ERR_NOMEM);
        CHECK_CONTAINS(err.message, "scratch: g: its buffer would need more than 2^63 bytes");
        CHECK(out_data[0] == -7); /* nothing written */
        /* small sizes still run and agree */
        pm_value small[2] = {PM_I(3), PM_I(4)};
        CHECK_STATUS(pm_kernel_run(k, small, &in, &out, &err), PM_OK);
        CHECK(out_data[0] == 3);
    }
    if (p) {
        out_data[0] = -7;
        CHECK_STATUS(pm_interpret(p, params, &in, &out), PM_ERR_NOMEM);
        CHECK_CONTAINS(pm_ctx_errmsg(ctx), "g: its domain is too large to store");
        CHECK(out_data[0] == -7);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* g's buffer fits in 64 bits (R = C = 2^30: 2^62 bytes) but no machine has that much:
 * the run fails before writing, naming g, not a slot number. */
static void test_scratch_allocation_fails(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_scratch(ctx, PM_I32);
    pm_kernel *k = p ? compile(p) : NULL;
    int32_t in_data[2] = {1, 2}, out_data[1] = {-7};
    pm_buffer in = pm_buffer_dense(in_data, PM_I32, 1, (int64_t[]){2});
    pm_buffer out = pm_buffer_dense(out_data, PM_I32, 1, (int64_t[]){1});
    pm_value params[2] = {PM_I(1 << 30), PM_I(1 << 30)};
    pm_error err;
    if (k) {
        /* (not quiet_begin: ASan warns on stderr of the allocation it refuses) */
        pm_status st = pm_kernel_run(k, params, &in, &out, &err);
        CHECK_STATUS(st, PM_ERR_NOMEM);
        CHECK_CONTAINS(err.message, "scratch: out of memory for g's buffer (4611686018427387904 "
                                    "bytes)");
        CHECK(strstr(err.message, "slot") == NULL);
        CHECK(out_data[0] == -7); /* nothing written */
        pm_value small[2] = {PM_I(3), PM_I(4)};
        CHECK_STATUS(pm_kernel_run(k, small, &in, &out, &err), PM_OK);
        CHECK(out_data[0] == 3);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* Tile scratchpads of 2^20 x 2^20 floats (at estimates that large) for 64 threads: their
 * size is fixed at compile time, over 2^48 bytes (more than the address space, whatever
 * the overcommit policy), so even a small picture's run cannot get them. */
static void test_tile_scratch_allocation_fails(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_harris.build(ctx);
    pm_value est[2], params[2];
    pm_sample_harris.params(1 << 22, 1 << 22, est);
    pm_sample_harris.params(20, 30, params);
    pm_compile_options o = pm_compile_options_default();
    o.threads = 64;
    o.tile_size[0] = o.tile_size[1] = 1 << 20;
    /* greedy fuses whatever tiles: the DP prices 16 such tiles on 64 threads above running
     * the stages alone, and there would be no scratchpad to fail */
    o.grouping = PM_GROUPING_GREEDY;
    pm_error err;
    pm_kernel *k = p ? pm_jit_compile(jit, p, est, &o, &err) : NULL;
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile: %s\n", p ? err.message : pm_ctx_errmsg(ctx));
    pm_buffer in = pm_sample_buffer(p, 0, 0, params), out = pm_sample_buffer(p, 1, 0, params);
    if (k && in.data && out.data) {
        pm_status st = pm_kernel_run(k, params, &in, &out, &err);
        CHECK_STATUS(st, PM_ERR_NOMEM);
        CHECK_CONTAINS(err.message, "harris: out of memory for ");
        CHECK_CONTAINS(err.message, "'s tile scratchpads for 64 threads (");
    }
    free(in.data);
    free(out.data);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* An exported member's slot: g = xy_sum, its stencil
 * h(x, y) = g(x, y-1) + g(x, y) + g(x, y+1) over [0, R-1] x [1, C-2], and a one-element
 * reduction s(0) += g(I(0), I(1)) + h(I(0), I(1)). At estimates of 2048 x 2048 the DP
 * fuses g into h's tiles and exports it to s: g's slot is its full buffer, then the
 * threads' scratchpads. */
static pm_pipeline *build_exported(pm_ctx *ctx)
{
    pm_expr *R = pm_param(ctx, PM_I64, "R"), *C = pm_param(ctx, PM_I64, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 2));
    pm_func *g = xy_sum(ctx, R, C);
    pm_func *h = pm_func_new(ctx, "h", PM_I32, 2, pm_exprs(x, y),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                                          pm_interval_new(pm_int(ctx, 1), pm_addi(C, -2), 1)));
    pm_func_define_expr(h, pm_add(pm_add(pm_call(g, x, pm_addi(y, -1)), pm_call(g, x, y)),
                                  pm_call(g, x, pm_addi(y, 1))));
    pm_expr *i0 = pm_call(I, pm_int(ctx, 0)), *i1 = pm_call(I, pm_int(ctx, 1));
    pm_func *s = one_element_sum(ctx, pm_add(pm_call(g, i0, i1), pm_call(h, i0, i1)));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "exported", 2, pm_exprs(R, C), 1, &I, 1, &s, &p), PM_OK);
    return p;
}

/* g exported (the groups dump says so), then run where its slot cannot be had:
 * - R = C = 2^30: its full buffer (2^62 bytes) fits in 64 bits but in no machine; the
 *   message names the buffer and the scratchpads it shares a slot with;
 * - R = 1, C = 2^61 - 1: the full buffer is 2^63 - 4 bytes, which its rounding up to 64
 *   bytes would take past 2^63; C = 2^61 - 16: 2^63 - 64 bytes, which the scratchpads
 *   after it would.
 * Each fails before writing; a small run still agrees with the interpreter's sum. */
static void test_exported_slot_fails(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_exported(ctx);
    pm_value est[2] = {PM_I(2048), PM_I(2048)};
    pm_compile_options o = pm_compile_options_default();
    o.dump = "";
    o.keep = "groups";
    pm_error err;
    pm_kernel *k = p ? pm_jit_compile(jit, p, est, &o, &err) : NULL;
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile: %s\n", p ? err.message : pm_ctx_errmsg(ctx));
    const char *groups = k ? pm_kernel_dump(k, "groups") : NULL;
    if (!CHECK(groups && strstr(groups, "exported")))
        fprintf(stderr, "  groups:\n%s\n", groups ? groups : "(none)");
    int32_t in_data[2] = {2, 3}, out_data[1] = {-7};
    pm_buffer in = pm_buffer_dense(in_data, PM_I32, 1, (int64_t[]){2});
    pm_buffer out = pm_buffer_dense(out_data, PM_I32, 1, (int64_t[]){1});
    if (k) {
        pm_value huge[2] = {PM_I(1 << 30), PM_I(1 << 30)};
        CHECK_STATUS(pm_kernel_run(k, huge, &in, &out, &err), PM_ERR_NOMEM);
        CHECK_CONTAINS(err.message, "exported: out of memory for g's buffer and tile "
                                    "scratchpads (");
        CHECK(out_data[0] == -7);
        for (int64_t short_of = 1; short_of <= 16; short_of += 15) {
            pm_value past[2] = {PM_I(1), PM_I(((int64_t)1 << 61) - short_of)};
            quiet_begin();
            CHECK_STATUS(pm_kernel_run(k, past, &in, &out, &err), PM_ERR_NOMEM);
            quiet_end("kernel run, exported slot past 2^63");
            CHECK_CONTAINS(err.message, "exported: g: its buffer would need more than 2^63 "
                                        "bytes");
            CHECK(out_data[0] == -7);
        }
        pm_value small[2] = {PM_I(5), PM_I(7)};
        in_data[0] = 4, in_data[1] = 2;
        CHECK_STATUS(pm_kernel_run(k, small, &in, &out, &err), PM_OK);
        /* g(4, 2) + h(4, 2) = 6 + (5 + 6 + 7) */
        CHECK(out_data[0] == 24);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- 2. names -------------------------------------------------------------------------- */

static pm_interval *range(pm_ctx *ctx, int64_t n)
{
    return pm_interval_new(pm_int(ctx, 0), pm_int(ctx, n - 1), 1);
}

static void test_duplicate_function_names(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *f1 = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 8)));
    pm_func_define_expr(f1, pm_muli(pm_addi(x, 1), 10));
    pm_func *f2 = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 8)));
    pm_func_define_expr(f2, pm_call(f1, x));
    pm_pipeline *p = (pm_pipeline *)&p;
    quiet_begin();
    pm_status st = pm_pipeline_new(ctx, "dup", 0, NULL, 0, NULL, 1, &f2, &p);
    quiet_end("pm_pipeline_new, duplicate names");
    CHECK_STATUS(st, PM_ERR_INVALID);
    CHECK(p == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "two definitions are named f");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "function f (i32, 1 dimension, made 1st)");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "function f (i32, 1 dimension, made 2nd)");
    pm_ctx_free(ctx);
}

static void test_other_name_clashes(void)
{
    /* an image and a function */
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "A", PM_U8, pm_int(ctx, 4));
    pm_func *f = pm_func_new(ctx, "A", PM_U8, 1, pm_exprs(x), pm_intervals(range(ctx, 4)));
    pm_func_define_expr(f, pm_call(I, x));
    pm_pipeline *p;
    CHECK_STATUS(pm_pipeline_new(ctx, "clash", 0, NULL, 1, &I, 1, &f, &p), PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "image A (u8, 1 dimension");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "function A (u8, 1 dimension");
    pm_ctx_free(ctx);

    /* a parameter and a function */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    f = pm_func_new(ctx, "N", PM_I32, 1, pm_exprs(x),
                    pm_intervals(pm_interval_new(pm_int(ctx, 0), N, 1)));
    pm_func_define_expr(f, x);
    CHECK_STATUS(pm_pipeline_new(ctx, "clash", 1, &N, 0, NULL, 1, &f, &p), PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "parameter N (i32) and function N");
    pm_ctx_free(ctx);

    /* two parameters */
    ctx = pm_ctx_new();
    x = pm_var(ctx, "x");
    pm_expr *N1 = pm_param(ctx, PM_I32, "N"), *N2 = pm_param(ctx, PM_I64, "N");
    f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x),
                    pm_intervals(pm_interval_new(N1, N2, 1)));
    pm_func_define_expr(f, x);
    CHECK_STATUS(pm_pipeline_new(ctx, "clash", 2, pm_exprs(N1, N2), 0, NULL, 1, &f, &p),
                 PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "two parameters are named N");
    pm_ctx_free(ctx);

    /* two variables of one function named alike; another function may reuse the name */
    ctx = pm_ctx_new();
    pm_expr *xa = pm_var(ctx, "x"), *xb = pm_var(ctx, "x");
    CHECK(pm_func_new(ctx, "g", PM_I32, 2, pm_exprs(xa, xb),
                      pm_intervals(range(ctx, 2), range(ctx, 2))) == NULL);
    CHECK_STATUS(pm_ctx_status(ctx), PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "g: variable x names two dimensions (0 and 1");
    pm_ctx_free(ctx);

    ctx = pm_ctx_new();
    xa = pm_var(ctx, "x");
    xb = pm_var(ctx, "x");
    pm_func *g = pm_func_new(ctx, "g", PM_I32, 1, pm_exprs(xa), pm_intervals(range(ctx, 3)));
    pm_func_define_expr(g, pm_muli(xa, 2));
    pm_func *h = pm_func_new(ctx, "h", PM_I32, 1, pm_exprs(xb), pm_intervals(range(ctx, 3)));
    pm_func_define_expr(h, pm_add(pm_call(g, xb), xb));
    CHECK_STATUS(pm_pipeline_new(ctx, "reuse", 0, NULL, 0, NULL, 1, &h, &p), PM_OK);
    int32_t data[3];
    pm_buffer out = pm_buffer_dense(data, PM_I32, 1, (int64_t[]){3});
    CHECK_STATUS(pm_interpret(p, NULL, NULL, &out), PM_OK);
    CHECK(data[0] == 0 && data[1] == 3 && data[2] == 6);
    pm_kernel *k = compile(p);
    memset(data, 0, sizeof data);
    pm_error err;
    if (k)
        CHECK_STATUS(pm_kernel_run(k, NULL, NULL, &out, &err), PM_OK);
    CHECK(data[0] == 0 && data[1] == 3 && data[2] == 6);
    pm_kernel_free(k);

    /* a reduction variable named like a variable of its own domain */
    pm_expr *i = pm_var(ctx, "i"), *i2 = pm_var(ctx, "i");
    CHECK(pm_reduction_new(ctx, "hist", PM_I32, 1, pm_exprs(i), pm_intervals(range(ctx, 4)), 1,
                           pm_exprs(i2), pm_intervals(range(ctx, 4)), PM_REDUCE_SUM,
                           NULL) == NULL);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "variable i is in both");
    pm_ctx_free(ctx);
}

/* ---- 3. signature overflow -------------------------------------------------------------- */

/* f(x, y) = x + y over [0, R-1] x [0, C-1], with i64 parameters */
static pm_pipeline *build_plain(pm_ctx *ctx, pm_type ptype)
{
    pm_expr *R = pm_param(ctx, ptype, "R"), *C = pm_param(ctx, ptype, "C");
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 2, pm_exprs(x, y),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1),
                                          pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1)));
    pm_func_define_expr(f, pm_cast(PM_I32, pm_add(x, y)));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "plain", 2, pm_exprs(R, C), 0, NULL, 1, &f, &p), PM_OK);
    return p;
}

/* Runs both the interpreter and the kernel; both must answer status with needle. */
static void expect_both(pm_pipeline *p, pm_kernel *k, const pm_value *params, pm_buffer *out,
                        pm_status status, const char *needle)
{
    quiet_begin();
    pm_status si = pm_interpret(p, params, NULL, out);
    pm_error err;
    pm_status sk = k ? pm_kernel_run(k, params, NULL, out, &err) : status;
    quiet_end("bad run");
    CHECK_STATUS(si, status);
    CHECK_STATUS(sk, status);
    if (k)
        CHECK_CONTAINS(err.message, needle);
}

static void test_signature_overflow(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_plain(ctx, PM_I64);
    pm_kernel *k = p ? compile(p) : NULL;
    if (!p)
        return;
    /* (a) count 2^32 * 2^32 wraps to 0: a NULL output was accepted */
    int64_t two32 = (int64_t)1 << 32;
    pm_value params[2] = {PM_I(two32), PM_I(two32)};
    pm_buffer out = pm_buffer_dense(NULL, PM_I32, 2, (int64_t[]){two32, two32});
    expect_both(p, k, params, &out, PM_ERR_ARGUMENT, "more than 2^63 bytes");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer f (i32[4294967296][4294967296]) would "
                                       "hold more than 2^63 bytes");

    /* (b) a stride of INT64_MAX / 4: its byte span overflowed in byte_span */
    int32_t data[4] = {0};
    pm_value p22[2] = {PM_I(2), PM_I(2)};
    pm_buffer wide = pm_buffer_dense(data, PM_I32, 2, (int64_t[]){2, 2});
    wide.stride[0] = INT64_MAX / 4;
    wide.stride[1] = 1;
    expect_both(p, k, p22, &wide, PM_ERR_ARGUMENT, "reach beyond the address space");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer f: its strides {2305843009213693951, 1}");

    /* (c) R = INT64_MIN: R + -1 overflows */
    pm_value pmin[2] = {PM_I(INT64_MIN), PM_I(2)};
    pm_buffer empty = pm_buffer_dense(NULL, PM_I32, 2, (int64_t[]){0, 2});
    expect_both(p, k, pmin, &empty, PM_ERR_ARGUMENT, "R = -9223372036854775808");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "make the extent of f in dimension 0 ([0, (R + -1)]) "
                                       "overflow 64-bit integers");

    /* pm_pipeline_buffer_shape says so too */
    int nd;
    int64_t ext[PM_MAX_DIMS];
    CHECK_STATUS(pm_pipeline_buffer_shape(p, 1, 0, pmin, &nd, ext), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "the extent of f in dimension 0 overflows 64-bit integers");
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* An intermediate's domain that overflows (not a buffer the caller passes): rejected
 * before anything runs, naming the function and the parameter. */
static void test_intermediate_extent_overflow(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I64, "R");
    pm_expr *x = pm_var(ctx, "x");
    pm_func *g = pm_func_new(ctx, "g", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_muli(R, 4), 1)));
    pm_func_define_expr(g, pm_cast(PM_I32, x));
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 1)));
    pm_define(f, pm_case_new(pm_ge(R, pm_int(ctx, 0)), pm_call(g, x)));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "mid", 1, &R, 0, NULL, 1, &f, &p), PM_OK);
    if (!p) {
        fprintf(stderr, "  %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    pm_kernel *k = compile(p);
    int32_t data[1] = {0};
    pm_buffer out = pm_buffer_dense(data, PM_I32, 1, (int64_t[]){1});
    pm_value params[1] = {PM_I(INT64_MAX / 2)};
    expect_both(p, k, params, &out, PM_ERR_ARGUMENT, "make the extent of g in dimension 0");
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "R = 4611686018427387903");
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- 4. aliasing -------------------------------------------------------------------------- */

/* out(x) = I(x) + 1 over [0, N-1], u8 */
static pm_pipeline *build_copy(pm_ctx *ctx)
{
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_expr *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_U8, N);
    pm_func *f = pm_func_new(ctx, "out", PM_U8, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -1), 1)));
    pm_func_define_expr(f, pm_addi(pm_call(I, x), 1));
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "copy", 1, &N, 1, &I, 1, &f, &p), PM_OK);
    return p;
}

static void test_aliasing(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_copy(ctx);
    pm_kernel *k = p ? compile(p) : NULL;
    pm_error err;
    uint8_t mem[64];
    for (int i = 0; i < 64; i++)
        mem[i] = (uint8_t)i;
    pm_value params[1] = {PM_I(16)};

    /* odd bytes out, even bytes in: nothing shared, accepted, and right */
    pm_buffer in = pm_buffer_dense(mem, PM_U8, 1, (int64_t[]){16});
    in.stride[0] = 2;
    pm_buffer out = pm_buffer_dense(mem + 1, PM_U8, 1, (int64_t[]){16});
    out.stride[0] = 2;
    CHECK_STATUS(pm_interpret(p, params, &in, &out), PM_OK);
    int bad = 0;
    for (int i = 0; i < 16; i++)
        bad += mem[2 * i + 1] != (uint8_t)(2 * i + 1) || mem[2 * i] != (uint8_t)(2 * i);
    CHECK(bad == 0);
    if (k) {
        CHECK_STATUS(pm_kernel_run(k, params, &in, &out, &err), PM_OK);
        bad = 0;
        for (int i = 0; i < 16; i++)
            bad += mem[2 * i + 1] != (uint8_t)(2 * i + 1);
        CHECK(bad == 0);
    }

    /* an output that shares even one element with the input is refused */
    out = pm_buffer_dense(mem + 30, PM_U8, 1, (int64_t[]){16});
    out.stride[0] = 2;
    CHECK_STATUS(pm_interpret(p, params, &in, &out), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "copy: output buffer out overlaps input buffer I");
    if (k) {
        CHECK_STATUS(pm_kernel_run(k, params, &in, &out, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "overlaps input buffer I");
    }

    pm_kernel_free(k);
    pm_ctx_free(ctx);

    /* an output aliasing itself: 2-D strides {1, 1} */
    ctx = pm_ctx_new();
    p = build_plain(ctx, PM_I32);
    k = p ? compile(p) : NULL;
    int32_t data[16];
    pm_value p44[2] = {PM_I(4), PM_I(4)};
    pm_buffer self = pm_buffer_dense(data, PM_I32, 2, (int64_t[]){4, 4});
    self.stride[0] = 1;
    self.stride[1] = 1;
    expect_both(p, k, p44, &self, PM_ERR_ARGUMENT, "its strides {1, 1} put two of its elements");
    /* a transposed view (column-major) does not alias: accepted */
    pm_buffer tr = pm_buffer_dense(data, PM_I32, 2, (int64_t[]){4, 4});
    tr.stride[0] = 1;
    tr.stride[1] = 4;
    CHECK_STATUS(pm_interpret(p, p44, NULL, &tr), PM_OK);
    CHECK(data[1] == 1 && data[4] == 1 && data[7] == 4);
    /* strides {5, 3} over 2 x 3 are injective though not "sorted": accepted */
    pm_value p23[2] = {PM_I(2), PM_I(3)};
    pm_buffer odd = pm_buffer_dense(data, PM_I32, 2, (int64_t[]){2, 3});
    odd.stride[0] = 5;
    odd.stride[1] = 3;
    CHECK_STATUS(pm_interpret(p, p23, NULL, &odd), PM_OK);
    /* strides {2, 3} over 4 x 3 reach one element twice (3*2 == 2*3): refused */
    pm_value p34[2] = {PM_I(4), PM_I(3)};
    pm_buffer twice = pm_buffer_dense(data, PM_I32, 2, (int64_t[]){4, 3});
    twice.stride[0] = 2;
    twice.stride[1] = 3;
    CHECK_STATUS(pm_interpret(p, p34, NULL, &twice), PM_ERR_ARGUMENT);
    /* a negative stride walking back over itself: {-1} and {1} dims */
    pm_buffer neg = pm_buffer_dense(data + 8, PM_I32, 2, (int64_t[]){2, 2});
    neg.stride[0] = -1;
    neg.stride[1] = 1;
    CHECK_STATUS(pm_interpret(p, (pm_value[]){PM_I(2), PM_I(2)}, NULL, &neg), PM_ERR_ARGUMENT);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* Seventy inputs and the output overlapping the last: the old check looked at 64. */
static void test_many_buffers(void)
{
    enum { N = 70 };
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *in[N];
    pm_expr *sum = NULL;
    for (int i = 0; i < N; i++) {
        char name[16];
        snprintf(name, sizeof name, "I%d", i);
        in[i] = pm_image(ctx, name, PM_I32, pm_int(ctx, 4));
        pm_expr *c = pm_call(in[i], x);
        sum = sum ? pm_add(sum, c) : c;
    }
    pm_func *f = pm_func_new(ctx, "out", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 4)));
    pm_func_define_expr(f, sum);
    pm_pipeline *p;
    CHECK_STATUS(pm_pipeline_new(ctx, "many", 0, NULL, N, in, 1, &f, &p), PM_OK);
    int32_t mem[N + 1][4];
    pm_buffer bufs[N];
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < 4; j++)
            mem[i][j] = i;
        bufs[i] = pm_buffer_dense(mem[i], PM_I32, 1, (int64_t[]){4});
    }
    pm_buffer out = pm_buffer_dense(mem[N - 1] + 2, PM_I32, 1, (int64_t[]){4});
    CHECK_STATUS(pm_interpret(p, NULL, bufs, &out), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer out overlaps input buffer I69");
    pm_kernel *k = compile(p);
    pm_error err;
    if (k) {
        CHECK_STATUS(pm_kernel_run(k, NULL, bufs, &out, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "overlaps input buffer I69");
        out = pm_buffer_dense(mem[N], PM_I32, 1, (int64_t[]){4});
        CHECK_STATUS(pm_kernel_run(k, NULL, bufs, &out, &err), PM_OK);
        CHECK(mem[N][3] == N * (N - 1) / 2);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* Two outputs interleaved on alternate elements share nothing: accepted. Two outputs
 * whose f32 elements straddle each other's bytes (offset 2 bytes) do share: refused. */
static void test_output_pairs(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *x = pm_var(ctx, "x");
    pm_func *a = pm_func_new(ctx, "a", PM_F32, 1, pm_exprs(x), pm_intervals(range(ctx, 8)));
    pm_func_define_expr(a, pm_cast(PM_F32, x));
    pm_func *b = pm_func_new(ctx, "b", PM_F32, 1, pm_exprs(x), pm_intervals(range(ctx, 8)));
    pm_func_define_expr(b, pm_cast(PM_F32, pm_muli(x, 2)));
    pm_pipeline *p;
    CHECK_STATUS(pm_pipeline_new(ctx, "pair", 0, NULL, 0, NULL, 2, (pm_func *[]){a, b}, &p), PM_OK);
    float mem[24];
    pm_buffer outs[2] = {pm_buffer_dense(mem, PM_F32, 1, (int64_t[]){8}),
                         pm_buffer_dense(mem + 1, PM_F32, 1, (int64_t[]){8})};
    outs[0].stride[0] = outs[1].stride[0] = 2;
    CHECK_STATUS(pm_interpret(p, NULL, NULL, outs), PM_OK);
    CHECK(mem[6] == 3.0f && mem[7] == 6.0f);
    pm_kernel *k = compile(p);
    pm_error err;
    if (k)
        CHECK_STATUS(pm_kernel_run(k, NULL, NULL, outs, &err), PM_OK);
    outs[1] = pm_buffer_dense((char *)mem + 2 + 32, PM_F32, 1, (int64_t[]){8});
    CHECK_STATUS(pm_interpret(p, NULL, NULL, outs), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "output buffer b overlaps output buffer a");
    if (k) {
        CHECK_STATUS(pm_kernel_run(k, NULL, NULL, outs, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "output buffer b overlaps output buffer a");
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* A data-dependent read of a function whose domain is empty gives 0 (polymage.h); the
 * compiled code used to read its (garbage, or NULL for an empty output) buffer: fuzz
 * seeds 1000065, 1000226, 1000868. Here the empty function is an output passed with
 * data = NULL, which is allowed. */
static void test_read_of_empty_function(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R");
    pm_expr *x = pm_var(ctx, "x");
    pm_func *I = pm_image(ctx, "I", PM_I32, pm_int(ctx, 4));
    pm_func *f = pm_func_new(ctx, "f", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1)));
    pm_func_define_expr(f, pm_addi(x, 50));
    pm_func *g = pm_func_new(ctx, "g", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 4)));
    pm_func_define_expr(g, pm_addi(pm_call(f, pm_call(I, x)), 1));
    pm_func *h = pm_func_new(ctx, "h", PM_I32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1)));
    pm_func_define_expr(h, pm_addi(x, 7));
    pm_func *k2 = pm_func_new(ctx, "k2", PM_I32, 1, pm_exprs(x), pm_intervals(range(ctx, 4)));
    pm_func_define_expr(k2, pm_addi(pm_call(h, pm_call(I, x)), 2)); /* h is scratch */
    pm_pipeline *p = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "empty_read", 1, &R, 1, &I, 3,
                                 (pm_func *[]){f, g, k2}, &p), PM_OK);
    if (!p) {
        pm_ctx_free(ctx);
        return;
    }
    int32_t in[4] = {0, 3, -5, 100}, gd[4], kd[4];
    pm_buffer bin = pm_buffer_dense(in, PM_I32, 1, (int64_t[]){4});
    pm_buffer outs[3] = {pm_buffer_dense(NULL, PM_I32, 1, (int64_t[]){0}),
                         pm_buffer_dense(gd, PM_I32, 1, (int64_t[]){4}),
                         pm_buffer_dense(kd, PM_I32, 1, (int64_t[]){4})};
    pm_value params[1] = {PM_I(0)};
    memset(gd, 0x5a, sizeof gd);
    memset(kd, 0x5a, sizeof kd);
    CHECK_STATUS(pm_interpret(p, params, &bin, outs), PM_OK);
    CHECK(gd[0] == 1 && gd[3] == 1 && kd[0] == 2 && kd[3] == 2);
    static const int widths[] = {1, 16};
    for (int w = 0; w < 2; w++) {
        pm_compile_options co = pm_compile_options_default();
        co.vector_width = widths[w];
        co.threads = 2;
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
        if (!CHECK(k != NULL))
            continue;
        memset(gd, 0x5a, sizeof gd);
        memset(kd, 0x5a, sizeof kd);
        CHECK_STATUS(pm_kernel_run(k, params, &bin, outs, &err), PM_OK);
        CHECK(gd[0] == 1 && gd[1] == 1 && gd[2] == 1 && gd[3] == 1);
        CHECK(kd[0] == 2 && kd[1] == 2 && kd[2] == 2 && kd[3] == 2);
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

int main(void)
{
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "%s\n", err.message);
        return check_finish("bad_input");
    }
    test_scratch_overflow(PM_I32, INT32_MAX);
    test_scratch_overflow(PM_I64, (int64_t)1 << 32);
    test_scratch_allocation_fails();
    test_tile_scratch_allocation_fails();
    test_exported_slot_fails();
    test_duplicate_function_names();
    test_other_name_clashes();
    test_signature_overflow();
    test_intermediate_extent_overflow();
    test_aliasing();
    test_many_buffers();
    test_output_pairs();
    test_read_of_empty_function();
    pm_jit_free(jit);
    return check_finish("bad_input");
}
