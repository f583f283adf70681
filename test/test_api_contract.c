/* test_api_contract.c — the public JIT API's contract (pm_jit_*, pm_kernel_*): options
 * and their errors (the optimizer's too: fusion, tile sizes, group limit, overlap
 * threshold), a valid non-default optimizer setting against the interpreter, compile
 * errors, argument checks before any code runs (the output
 * left untouched, the kernel usable afterwards), strided views, a kernel outliving its
 * pipeline's context, dumps and the IR they show, many compiles and frees (ASan), runs
 * of one kernel from 4 threads at once and compiles from 2 threads at once, pm_jit_free
 * before its kernels, a context that built, compiled and ran a valid pipeline after a
 * refused one. Compiled-vs-interpreter results are test_compiled.c; hostile
 * inputs are test_bad_input.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pm_jit *jit;

/* ---- options ------------------------------------------------------------------------- */

static void test_options(void)
{
    pm_jit_options jo = pm_jit_options_default();
    CHECK(jo.threads == 0 && jo.opt_level == PM_OPT_TUNED && jo.dump == NULL);
    pm_compile_options co = pm_compile_options_default();
    CHECK(co.vector_width == 0 && co.threads == 0 && co.opt_level == PM_OPT_JIT && co.dump == NULL);

    pm_error err;
    jo.threads = -1;
    CHECK(pm_jit_new(&jo, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "threads = -1");
    jo = pm_jit_options_default();
    jo.opt_level = 7;
    CHECK(pm_jit_new(&jo, &err) == NULL);
    CHECK_CONTAINS(err.message, "opt_level = 7");
    CHECK(pm_jit_new(&jo, NULL) == NULL); /* no error struct: still just NULL */
    jo.opt_level = PM_OPT_JIT; /* a compile option's value: a jit has no jit to defer to */
    CHECK(pm_jit_new(&jo, &err) == NULL);
    CHECK_CONTAINS(err.message, "opt_level = -2");

    pm_jit *jit = pm_jit_new(NULL, &err);
    CHECK(jit != NULL);
    CHECK_STATUS(err.status, PM_OK);
    pm_jit_free(jit);
    pm_jit_free(NULL);
}

/* The options structs' size field (the ABI rule in polymage.h): the defaults set it; a
 * size that is no version of the struct (0 from an initializer without the _default()
 * function, a smaller or garbage value, a struct from a newer header) is PM_ERR_ARGUMENT
 * naming the struct and the size, and nothing past the size field is read (the oversized
 * claims below sit in heap blocks of exactly one struct: ASan would see a read beyond). */
static void test_options_size(pm_jit *jit)
{
    pm_jit_options jo = pm_jit_options_default();
    CHECK(jo.size == sizeof(pm_jit_options));
    pm_compile_options co = pm_compile_options_default();
    CHECK(co.size == sizeof(pm_compile_options));
    pm_error err;

    const size_t bad_sizes[] = {0, 8, sizeof(pm_jit_options) - 4, sizeof(pm_jit_options) + 8,
                                (size_t)1 << 40};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        pm_jit_options *heap = malloc(sizeof *heap);
        *heap = pm_jit_options_default();
        heap->size = bad_sizes[i];
        CHECK(pm_jit_new(heap, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        char want[96];
        snprintf(want, sizeof want, "pm_jit_new: pm_jit_options.size = %zu is not", bad_sizes[i]);
        CHECK_CONTAINS(err.message, want);
        CHECK_CONTAINS(err.message, "start from pm_jit_options_default()");
        CHECK(pm_jit_new(heap, NULL) == NULL); /* no error struct: still just NULL */
        free(heap);
    }
    pm_jit_options literal = {.threads = 1}; /* size 0: not started from the defaults */
    CHECK(pm_jit_new(&literal, &err) == NULL);
    CHECK_CONTAINS(err.message, "pm_jit_options.size = 0");

    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    const size_t bad_compile_sizes[] = {0, sizeof(pm_compile_options) - 4,
                                        sizeof(pm_compile_options) + 8, (size_t)-1};
    for (size_t i = 0; i < sizeof bad_compile_sizes / sizeof bad_compile_sizes[0]; i++) {
        pm_compile_options *heap = malloc(sizeof *heap);
        *heap = pm_compile_options_default();
        heap->size = bad_compile_sizes[i];
        CHECK(pm_jit_compile(jit, p, NULL, heap, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        char want[96];
        snprintf(want, sizeof want, "blur: pm_compile_options.size = %zu is not",
                 bad_compile_sizes[i]);
        CHECK_CONTAINS(err.message, want);
        /* The serving call checks it the same way, before any kernel is looked up. */
        pm_value params[] = {PM_I(8), PM_I(8)};
        float in[64] = {0}, out[48];
        pm_buffer bin = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){8, 8});
        pm_buffer bout = pm_buffer_dense(out, PM_F32, 2, (int64_t[]){6, 8});
        CHECK_STATUS(pm_jit_run(jit, p, heap, params, &bin, &bout, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "pm_compile_options.size");
        free(heap);
    }
    pm_compile_options literal_co = {.fusion = 0};
    CHECK(pm_jit_compile(jit, p, NULL, &literal_co, &err) == NULL);
    CHECK_CONTAINS(err.message, "start from pm_compile_options_default()");
    /* A caller built against 0.1's header (96 bytes, before stream_outputs) or the next
     * (104, before prefetch_reads; its last 4 bytes were padding, here not zero) compiles,
     * the later fields at their defaults; its block holds just those bytes (ASan). */
    static const size_t old_sizes[] = {96, 104};
    for (int i = 0; i < 2; i++) {
        size_t n = old_sizes[i];
        unsigned char *old = malloc(n);
        pm_compile_options full = pm_compile_options_default();
        full.size = n;
        memcpy(old, &full, n);
        if (n == 104)
            memset(old + 100, 0x7f, 4);
        pm_kernel *ko = pm_jit_compile(jit, p, NULL, (pm_compile_options *)old, &err);
        if (!CHECK(ko != NULL))
            fprintf(stderr, "  %zu-byte options: %s\n", n, err.message);
        pm_kernel_free(ko);
        free(old);
    }
    /* The same options started from the defaults compile. */
    co.fusion = 0;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
    CHECK(k != NULL);
    CHECK_STATUS(err.status, PM_OK);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- compile errors ----------------------------------------------------------------- */

static void test_compile_errors(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;

    CHECK(pm_jit_compile(NULL, p, NULL, NULL, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_MISUSE);
    CHECK_CONTAINS(err.message, "jit is NULL");
    CHECK(pm_jit_compile(jit, NULL, NULL, NULL, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_MISUSE);
    CHECK_CONTAINS(err.message, "pipeline is NULL");
    CHECK(pm_jit_compile(jit, NULL, NULL, NULL, NULL) == NULL);

    pm_compile_options co = pm_compile_options_default();
    co.vector_width = 3;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: vector_width = 3");
    co = pm_compile_options_default();
    co.threads = -2;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_CONTAINS(err.message, "blur: threads = -2");
    co = pm_compile_options_default();
    co.opt_level = 4;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_CONTAINS(err.message, "blur: opt_level = 4");

    /* The optimizer's options: each bad value is PM_ERR_ARGUMENT, no kernel, and a
     * message naming the pipeline, the option and the value. */
    co = pm_compile_options_default();
    co.fusion = 2;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: fusion = 2");
    co = pm_compile_options_default();
    co.tile_size[0] = -3;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: tile_size[0] = -3");
    co = pm_compile_options_default();
    co.tile_size[1] = (1 << 20) + 1;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: tile_size[1] = 1048577");
    co = pm_compile_options_default();
    co.group_limit = -1;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: group_limit = -1");
    co = pm_compile_options_default();
    co.grouping = 4; /* the tiered default's internal value is not a public one */
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: grouping = 4 (0 = default, 1 = greedy, 2 = capped DP, 3 = DP)");
    co = pm_compile_options_default();
    co.dp_budget = -1;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: dp_budget = -1 (0 = default, or a count)");
    co = pm_compile_options_default();
    co.stream_outputs = 2;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: stream_outputs = 2 (-1 = from the model, 0 = never, 1 = always)");
    co = pm_compile_options_default();
    co.prefetch_reads = -2;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: prefetch_reads = -2 (-1 = from the model, 0 = never, 1 = always)");
    co = pm_compile_options_default();
    co.overlap_threshold = NAN;
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "blur: overlap_threshold is not a number");

    /* Kernel calls on NULL. */
    CHECK_STATUS(pm_kernel_run(NULL, NULL, NULL, NULL, &err), PM_ERR_MISUSE);
    CHECK_CONTAINS(err.message, "kernel is NULL");
    CHECK(pm_kernel_dump(NULL, "llvm") == NULL);
    CHECK(pm_kernel_compile_ms(NULL) == 0.0);
    pm_kernel_free(NULL);
    pm_ctx_free(ctx);
}

/* A valid non-default option set (fusion off; tile sizes 8 x 64; overlap threshold 0.2;
 * group limit 2) compiles, and the kernel equals the interpreter at sizes smaller than,
 * equal to and not a multiple of the tiles; the same set with fusion on (where the tile
 * sizes are used) too. */
static void test_nondefault_options(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    static const int64_t sizes[][2] = {{3, 1}, {10, 64}, {37, 150}, {9, 200}};
    for (int fusion = 0; fusion <= 1; fusion++) {
        pm_compile_options co = pm_compile_options_default();
        co.fusion = fusion;
        co.tile_size[0] = 8;
        co.tile_size[1] = 64;
        co.overlap_threshold = 0.2;
        co.group_limit = 2;
        pm_error err;
        pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(256)}, &co, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  compile (fusion %d): %s\n", fusion, err.message);
            continue;
        }
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            check_blur_case c;
            check_blur_case_new(&c, p, sizes[i][0], sizes[i][1], 7u + (unsigned)i);
            CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK);
            double d = check_buffer_maxdiff(&c.want, &c.got);
            if (!CHECK(d <= 1e-6))
                fprintf(stderr, "  fusion %d, %lld x %lld: max|diff| %g\n", fusion,
                        (long long)sizes[i][0], (long long)sizes[i][1], d);
            check_blur_case_free(&c);
        }
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* ---- runs: results and argument checks ---------------------------------------------- */

/* threads: PM_MAX_THREADS (1024) is the most any options struct takes. Above it (where
 * libgomp once exited the process at 50000 and crashed at 100000) the call fails, naming
 * the field, the value and the limit; at it, a kernel runs right. */
static void test_threads_limit(pm_jit *jit)
{
    pm_error err;
    const int too_many[] = {PM_MAX_THREADS + 1, 50000, 100000, 2147483647};
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    for (size_t i = 0; i < sizeof too_many / sizeof too_many[0]; i++) {
        char want[64];
        pm_jit_options jo = pm_jit_options_default();
        jo.threads = too_many[i];
        CHECK(pm_jit_new(&jo, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        snprintf(want, sizeof want, "pm_jit_new: threads = %d", too_many[i]);
        CHECK_CONTAINS(err.message, want);
        CHECK_CONTAINS(err.message, "1..1024");
        pm_compile_options co = pm_compile_options_default();
        co.threads = too_many[i];
        CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        snprintf(want, sizeof want, "blur: threads = %d", too_many[i]);
        CHECK_CONTAINS(err.message, want);
        CHECK_CONTAINS(err.message, "1..1024");
    }
    pm_compile_options co = pm_compile_options_default();
    co.threads = PM_MAX_THREADS;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, &co, &err);
    if (CHECK(k != NULL)) {
        check_blur_case c;
        check_blur_case_new(&c, p, 70, 33, 5u);
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK);
        CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
        check_blur_case_free(&c);
    } else {
        fprintf(stderr, "  threads = 1024: %s\n", err.message);
    }
    pm_kernel_free(k);
    pm_jit_options jo = pm_jit_options_default();
    jo.threads = PM_MAX_THREADS;
    pm_jit *at_limit = pm_jit_new(&jo, &err);
    CHECK(at_limit != NULL);
    pm_jit_free(at_limit);
    pm_ctx_free(ctx);
}

/* One rule for every versioned struct's size, in every call that takes one (polymage.h,
 * "Versioned structs and the ABI"): 0, SIZE_MAX, a size between versions and one past the
 * newest are PM_ERR_ARGUMENT; each release's size works and touches just its bytes. */
static void test_size_rule(pm_jit *jit)
{
    const size_t bad[] = {0, (size_t)-1, 7, 56, sizeof(pm_cache_policy) + 8,
                          sizeof(pm_cache_stats) + 8, sizeof(pm_compile_stats) + 8};
    pm_error err;
    pm_cache_stats stats;
    pm_cache_policy policy;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pm_cache_policy *heap = malloc(sizeof *heap);
        *heap = pm_cache_policy_default();
        heap->size = bad[i];
        CHECK_STATUS(pm_jit_set_policy(jit, heap, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "pm_jit_set_policy: pm_cache_policy.size = ");
        CHECK_CONTAINS(err.message, "48, 64");
        free(heap);
        CHECK_STATUS(pm_jit_get_policy(jit, &policy, bad[i]), PM_ERR_ARGUMENT);
        CHECK_STATUS(pm_jit_stats(jit, &stats, bad[i]), PM_ERR_ARGUMENT);
    }
    /* Each release's sizes: the stats' older prefixes, the policy's older struct. */
    const size_t stats_sizes[] = {104, 128, sizeof(pm_cache_stats)};
    for (size_t i = 0; i < 3; i++) {
        memset(&stats, 0xAB, sizeof stats);
        CHECK_STATUS(pm_jit_stats(jit, &stats, stats_sizes[i]), PM_OK);
        const unsigned char *rest = (const unsigned char *)&stats + stats_sizes[i];
        CHECK(stats_sizes[i] == sizeof stats || rest[0] == 0xAB);
    }
    memset(&policy, 0xAB, sizeof policy);
    CHECK_STATUS(pm_jit_get_policy(jit, &policy, 48), PM_OK);
    CHECK(policy.size == 48 && policy.max_kernels >= 0 &&
          ((const unsigned char *)&policy)[48] == 0xAB);
    CHECK_STATUS(pm_jit_set_policy(jit, &policy, &err), PM_OK); /* an old caller's own */
    pm_jit_options old_jo = pm_jit_options_default();
    old_jo.size = 32; /* before isolate_compiles */
    pm_jit *old = pm_jit_new(&old_jo, &err);
    CHECK(old != NULL);
    pm_jit_free(old);
}

static void test_blur(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, (pm_value[]){PM_I(64), PM_I(64)}, NULL, &err);
    if (!CHECK(k != NULL)) {
        fprintf(stderr, "  compile: %s\n", err.message);
        pm_ctx_free(ctx);
        return;
    }
    /* The kernel does not keep the pipeline: free the context first. */
    pm_ctx_free(ctx);
    ctx = pm_ctx_new();
    p = check_blur_pipeline(ctx);
    CHECK(pm_kernel_compile_ms(k) > 0);

    /* (results at many sizes: test_compiled.c, test_blur_sizes) */

    /* A strided view: the output is the left half of a wider buffer; the right half
     * must stay untouched. */
    {
        check_blur_case c;
        check_blur_case_new(&c, p, 20, 10, 3u);
        pm_buffer wide = check_buffer_new(PM_F32, 2, (int64_t[]){18, 20});
        for (int i = 0; i < 18 * 20; i++)
            ((float *)wide.data)[i] = -1.0f;
        pm_buffer view = pm_buffer_dense(wide.data, PM_F32, 2, (int64_t[]){18, 10});
        view.stride[0] = 20;
        view.stride[1] = 1;
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &view, &err), PM_OK);
        bool ok = true;
        for (int x = 0; x < 18; x++)
            for (int y = 0; y < 20; y++) {
                float got = ((float *)wide.data)[x * 20 + y];
                float want = y < 10 ? ((float *)c.want.data)[x * 10 + y] : -1.0f;
                ok = ok && fabsf(got - want) <= 1e-6f;
            }
        CHECK(ok);
        check_buffer_free(&wide);
        check_blur_case_free(&c);
    }

    /* Argument errors: reported before any code runs, naming the buffer or parameter. */
    {
        check_blur_case c;
        check_blur_case_new(&c, p, 10, 12, 5u);
        for (int i = 0; i < 8 * 12; i++)
            ((float *)c.got.data)[i] = 42.0f;
        pm_buffer bad_ext = c.got;
        bad_ext.extent[0] = 9;
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &bad_ext, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "blur");
        pm_buffer bad_type = c.in;
        bad_type.type = PM_U8;
        CHECK_STATUS(pm_kernel_run(k, c.params, &bad_type, &c.got, &err), PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "I");
        pm_buffer bad_dims = c.in;
        bad_dims.ndims = 3;
        CHECK_STATUS(pm_kernel_run(k, c.params, &bad_dims, &c.got, &err), PM_ERR_ARGUMENT);
        pm_buffer null_data = c.in;
        null_data.data = NULL;
        CHECK_STATUS(pm_kernel_run(k, c.params, &null_data, &c.got, &err), PM_ERR_ARGUMENT);
        CHECK_STATUS(pm_kernel_run(k, NULL, &c.in, &c.got, &err), PM_ERR_ARGUMENT);
        CHECK_STATUS(pm_kernel_run(k, c.params, NULL, &c.got, &err), PM_ERR_ARGUMENT);
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, NULL, &err), PM_ERR_ARGUMENT);
        /* Input bigger than the parameters say is rejected too (extents must match). */
        pm_value wrong[2] = {PM_I(11), PM_I(12)};
        CHECK_STATUS(pm_kernel_run(k, wrong, &c.in, &c.got, &err), PM_ERR_ARGUMENT);
        /* Output overlapping the input. */
        pm_buffer alias = pm_buffer_dense(c.in.data, PM_F32, 2, (int64_t[]){8, 12});
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &alias, &err), PM_ERR_ARGUMENT);
        /* No error struct: the status alone. */
        CHECK_STATUS(pm_kernel_run(k, NULL, &c.in, &c.got, NULL), PM_ERR_ARGUMENT);
        bool untouched = true;
        for (int i = 0; i < 8 * 12; i++)
            untouched = untouched && ((float *)c.got.data)[i] == 42.0f;
        CHECK(untouched);
        /* And the kernel still works afterwards. */
        CHECK_STATUS(pm_kernel_run(k, c.params, &c.in, &c.got, &err), PM_OK);
        CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
        check_blur_case_free(&c);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);
}

/* ---- dumps -------------------------------------------------------------------------- */

static void test_dumps(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_compile_options co = pm_compile_options_default();
    co.dump = ""; /* print nothing, whatever PM_DUMP says */
    /* Nothing asked for: no text made (printing a module costs as much as a pass). */
    pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
    if (CHECK(k != NULL)) {
        for (int i = 0; i < 10; i++)
            CHECK(pm_kernel_dump(k, (const char *[]){"graph", "domains", "groups", "dot",
                                                     "storage", "schedule", "ast", "sizes",
                                                     "llvm", "asm"}[i]) == NULL);
        pm_compile_stats st;
        CHECK_STATUS(pm_kernel_compile_stats(k, &st, sizeof st), PM_OK);
        CHECK(st.dump_ms < 0.5); /* no texts: only the timer reads */
        pm_kernel_free(k);
    }
    /* Kept without printing. */
    co.keep = "graph,domains,schedule,ast,sizes,llvm";
    k = pm_jit_compile(jit, p, NULL, &co, &err);
    if (CHECK(k != NULL)) {
        /* code size: the statement's AST copies, the entry's IR before the passes */
        CHECK_CONTAINS(pm_kernel_dump(k, "sizes"), "statement copies of");
        CHECK_CONTAINS(pm_kernel_dump(k, "sizes"), "  blur\n");
        CHECK_CONTAINS(pm_kernel_dump(k, "sizes"), "LLVM IR as built");
        CHECK_CONTAINS(pm_kernel_dump(k, "sizes"), "pm_entry");
        CHECK_CONTAINS(pm_kernel_dump(k, "graph"), "blur");
        CHECK(pm_kernel_dump(k, "domains") != NULL);
        CHECK(pm_kernel_dump(k, "schedule") != NULL);
        CHECK(pm_kernel_dump(k, "ast") != NULL);
        CHECK_CONTAINS(pm_kernel_dump(k, "llvm"), "define");
        CHECK_CONTAINS(pm_kernel_dump(k, "llvm"), "blur_k"); /* the unique entry name */
        CHECK(pm_kernel_dump(k, "asm") == NULL);             /* not asked for */
        CHECK(pm_kernel_dump(k, "nonsense") == NULL);
        CHECK(pm_kernel_dump(k, NULL) == NULL);
        pm_kernel_free(k);
    }
    /* Keeping asm makes it, printing nothing. */
    co.keep = "asm";
    k = pm_jit_compile(jit, p, NULL, &co, &err);
    if (CHECK(k != NULL)) {
        CHECK_CONTAINS(pm_kernel_dump(k, "asm"), "blur_k");
        CHECK(pm_kernel_dump(k, "llvm") == NULL);
        pm_kernel_free(k);
    }
    /* Asking for asm keeps it (and prints it: stderr of this test). */
    co.keep = NULL;
    co.dump = "asm";
    k = pm_jit_compile(jit, p, NULL, &co, &err);
    if (CHECK(k != NULL)) {
        CHECK_CONTAINS(pm_kernel_dump(k, "asm"), "blur_k");
        CHECK_CONTAINS(pm_kernel_dump(k, "asm"), "ret");
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
}

/* Every step's name is a dump name (and a pm_kernel_dump name); an unknown name in
 * dump, keep, PM_DUMP or the jit's dump is PM_ERR_ARGUMENT listing the valid ones. */
static void test_dump_names(pm_jit *jit)
{
    static const char *const steps[] = {"graph", "poly",  "cases",    "inline", "group", "align",
                                        "tile",  "storage", "schedule", "ast",  "lower", "llvm"};
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_compile_options co = pm_compile_options_default();
    co.dump = "";
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        co.keep = steps[i];
        pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
        if (!CHECK(k != NULL))
            continue;
        if (!CHECK(pm_kernel_dump(k, steps[i]) != NULL))
            fprintf(stderr, "  no text kept for the step name \"%s\"\n", steps[i]);
        pm_kernel_free(k);
    }
    const char *bad[] = {"bogus", "ast,nope", "graph domainz"};
    const char *named[] = {"\"bogus\"", "\"nope\"", "\"domainz\""};
    for (int i = 0; i < 3; i++) {
        co.dump = bad[i];
        co.keep = NULL;
        CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, named[i]);
        CHECK_CONTAINS(err.message, "dump");
        CHECK_CONTAINS(err.message, "inline, group, align"); /* the valid names */
        CHECK_CONTAINS(err.message, "domains");
        co.dump = "";
        co.keep = bad[i];
        CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
        CHECK_CONTAINS(err.message, named[i]);
        CHECK_CONTAINS(err.message, "keep");
    }
    co.dump = NULL; /* the jit's: PM_DUMP */
    co.keep = NULL;
    const char *saved = getenv("PM_DUMP");
    char *copy = saved ? strdup(saved) : NULL;
    setenv("PM_DUMP", "asts", 1);
    CHECK(pm_jit_compile(jit, p, NULL, &co, &err) == NULL);
    CHECK_CONTAINS(err.message, "PM_DUMP");
    CHECK_CONTAINS(err.message, "\"asts\"");
    if (copy)
        setenv("PM_DUMP", copy, 1);
    else
        unsetenv("PM_DUMP");
    free(copy);
    pm_jit_options jo = pm_jit_options_default();
    jo.dump = "graph,tiles";
    CHECK(pm_jit_new(&jo, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "pm_jit_new");
    CHECK_CONTAINS(err.message, "\"tiles\"");
    pm_ctx_free(ctx);
}

/* ---- compile statistics --------------------------------------------------------------- */

/* The parts are each inside the total, add up to it with other_ms, and the sizes are
 * there; a shorter struct gets only its own bytes; misuse is refused. LLVM's passes and
 * machine code count with their wall time (llvm_wall_ms): with compile_parts > 1 the
 * two are sums over parts that ran at once, each at most the wall time times the parts;
 * serially the wall time is their sum. Used by test_parallel_codegen too. */
void check_stats_consistent(const char *what, const pm_kernel *k);
void check_stats_consistent(const char *what, const pm_kernel *k)
{
    pm_compile_stats st;
    memset(&st, 0xAB, sizeof st);
    if (!CHECK_STATUS(pm_kernel_compile_stats(k, &st, sizeof st), PM_OK))
        return;
    const double parts[] = {st.poly_ms, st.inline_ms, st.group_ms, st.align_ms, st.tile_ms,
                            st.storage_ms, st.schedule_ms, st.isl_ast_ms, st.ir_build_ms,
                            st.dump_ms, st.llvm_wall_ms, st.link_ms};
    double sum = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!CHECK(parts[i] >= 0 && parts[i] <= st.total_ms))
            fprintf(stderr, "  %s: part %zu = %f of %f ms\n", what, i, parts[i], st.total_ms);
        sum += parts[i];
    }
    double sched = st.poly_ms + st.inline_ms + st.group_ms + st.align_ms + st.tile_ms +
                   st.storage_ms + st.schedule_ms;
    CHECK(fabs(st.isl_schedule_ms - sched) < 1e-6);
    CHECK(st.total_ms == pm_kernel_compile_ms(k));
    if (!CHECK(fabs(sum + st.other_ms - st.total_ms) < 1e-6 &&
               st.other_ms >= -1e-6))
        fprintf(stderr, "  %s: parts %f + other %f != total %f\n", what, sum, st.other_ms,
                st.total_ms);
    CHECK(st.isl_ast_ms > 0 && st.llvm_opt_ms > 0 && st.machine_code_ms > 0);
    CHECK(st.compile_parts >= 1 && st.compile_parts <= 64);
    double parts_ms = st.llvm_wall_ms * (double)st.compile_parts + 1e-6;
    CHECK(st.llvm_opt_ms <= parts_ms && st.machine_code_ms <= parts_ms);
    if (st.compile_parts == 1)
        CHECK(fabs(st.llvm_wall_ms - (st.llvm_opt_ms + st.machine_code_ms)) < 1e-6);
    CHECK(st.ir_instructions_before > 0 && st.ir_instructions_after > 0);
    CHECK(st.ir_functions >= 1 && st.code_bytes > 0 && st.from_disk == 0);
    /* An older caller's shorter struct: its bytes only. */
    pm_compile_stats part;
    memset(&part, 0xAB, sizeof part);
    size_t size = offsetof(pm_compile_stats, llvm_wall_ms); /* the first version's */
    CHECK(size == 168);
    CHECK_STATUS(pm_kernel_compile_stats(k, &part, size), PM_OK);
    CHECK(part.total_ms == st.total_ms && part.poly_ms == st.poly_ms &&
          part.from_disk == st.from_disk);
    const unsigned char *rest = (const unsigned char *)&part + size;
    bool untouched = true;
    for (size_t i = 0; i < sizeof part - size; i++)
        untouched = untouched && rest[i] == 0xAB;
    CHECK(untouched);
    CHECK_STATUS(pm_kernel_compile_stats(k, &part, 0), PM_ERR_ARGUMENT);
    CHECK_STATUS(pm_kernel_compile_stats(k, &part, sizeof part + 1), PM_ERR_ARGUMENT);
    CHECK_STATUS(pm_kernel_compile_stats(k, NULL, sizeof part), PM_ERR_MISUSE);
    CHECK_STATUS(pm_kernel_compile_stats(NULL, &part, sizeof part), PM_ERR_MISUSE);
}

static void test_compile_stats(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
    if (CHECK(k != NULL)) {
        check_stats_consistent("blur", k);
        pm_kernel_free(k);
    }
    pm_ctx_free(ctx);
    /* A fused sample (a tiled group: every phase has work). */
    const pm_sample_app *app = pm_sample_find("unsharp_mask");
    ctx = pm_ctx_new();
    p = app ? app->build(ctx) : NULL;
    if (CHECK(p != NULL)) {
        pm_value est[8];
        app->params(256, 256, est);
        k = pm_jit_compile(jit, p, est, NULL, &err);
        if (CHECK(k != NULL)) {
            check_stats_consistent("unsharp_mask", k);
            pm_compile_stats st;
            CHECK_STATUS(pm_kernel_compile_stats(k, &st, sizeof st), PM_OK);
            CHECK(st.tile_ms > 0 && st.dump_ms < 0.5);
            pm_kernel_free(k);
        }
    }
    pm_ctx_free(ctx);
}

static pm_kernel *compile(pm_pipeline *p, const pm_value *estimates, int threads)
{
    pm_compile_options o = pm_compile_options_default();
    o.threads = threads;
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, estimates, &o, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile %s: %s\n", pm_pipeline_name(p), err.message);
    return k;
}

static void test_errors(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_harris.build(ctx);
    pm_value params[2];
    pm_sample_harris.params(20, 30, params);
    pm_kernel *k = compile(p, params, 1);
    if (!k) {
        pm_ctx_free(ctx);
        return;
    }
    float *in = calloc(20 * 30, sizeof(float)), *out = calloc(20 * 30, sizeof(float));
    pm_buffer bin = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){20, 30});
    pm_buffer bout = pm_buffer_dense(out, PM_F32, 2, (int64_t[]){20, 30});
    pm_error err;
    CHECK_STATUS(pm_kernel_run(k, params, &bin, &bout, &err), PM_OK);

    pm_buffer wrong = pm_buffer_dense(in, PM_F32, 2, (int64_t[]){20, 29});
    CHECK_STATUS(pm_kernel_run(k, params, &wrong, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "I");
    CHECK_CONTAINS(err.message, "f32[20][30]");

    pm_buffer wrong_type = pm_buffer_dense(in, PM_U8, 2, (int64_t[]){20, 30});
    CHECK_STATUS(pm_kernel_run(k, params, &wrong_type, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "u8");

    pm_buffer no_data = pm_buffer_dense(NULL, PM_F32, 2, (int64_t[]){20, 30});
    CHECK_STATUS(pm_kernel_run(k, params, &bin, &no_data, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "harris");

    pm_value bad[2] = {PM_I(-10), PM_I(28)};
    CHECK_STATUS(pm_kernel_run(k, bad, &bin, &bout, &err), PM_ERR_ARGUMENT);
    pm_value huge[2] = {PM_I(1LL << 40), PM_I(28)};
    CHECK_STATUS(pm_kernel_run(k, huge, &bin, &bout, &err), PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "R");

    CHECK_STATUS(pm_kernel_run(NULL, params, &bin, &bout, &err), PM_ERR_MISUSE);
    CHECK_STATUS(pm_kernel_run(k, params, NULL, &bout, &err), PM_ERR_ARGUMENT);
    CHECK(pm_jit_compile(jit, NULL, NULL, NULL, &err) == NULL);
    CHECK(err.status != PM_OK);
    pm_kernel_free(k);
    free(in);
    free(out);
    pm_ctx_free(ctx);
}

/* ---- a failed pm_pipeline_new leaves its context usable ------------------------------- */

/* G(x, y) = the mean of E(x-1..x+1, y), E = I padded by one clamped row above and below:
 * R x C over R x C (pm_pad is one of the helpers that stops at a recorded error). */
static pm_func *build_padded_blur(pm_ctx *ctx, pm_expr *R, pm_expr *C, pm_func *I)
{
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_func *E = pm_pad(I, "E", PM_BOUNDARY_CLAMP, NULL, 1, (const int[]){0}, 1);
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *G = pm_func_new(ctx, "G", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_expr *sum = pm_add(pm_add(pm_call(E, pm_addi(x, -1), y), pm_call(E, x, y)),
                          pm_call(E, pm_addi(x, 1), y));
    pm_func_define_expr(G, pm_mulf(sum, 1.0 / 3.0));
    return G;
}

/* The header's promise: a refused pipeline (a cycle, a read outside a domain, a failed
 * pm_interpret) is about that call; the same context then builds, compiles and runs a
 * valid pipeline, one that reuses a function the refused one reached. */
static void test_failed_pipeline_keeps_context(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_expr *R = pm_param(ctx, PM_I32, "R"), *C = pm_param(ctx, PM_I32, "C");
    pm_func *I = pm_image(ctx, "I", PM_F32, R, C);
    pm_expr *x = pm_var(ctx, "x"), *y = pm_var(ctx, "y");
    pm_interval *rows = pm_interval_new(pm_int(ctx, 0), pm_addi(R, -1), 1);
    pm_interval *cols = pm_interval_new(pm_int(ctx, 0), pm_addi(C, -1), 1);
    pm_func *A = pm_func_new(ctx, "A", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func *B = pm_func_new(ctx, "B", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(A, pm_call(B, x, y));
    pm_func_define_expr(B, pm_addf(pm_call(A, x, y), 1.0));
    pm_pipeline *bad = (pm_pipeline *)&bad;
    CHECK_STATUS(pm_pipeline_new(ctx, "cyclic", 2, pm_exprs(R, C), 1, &I, 1, &B, &bad),
                 PM_ERR_INVALID);
    CHECK(bad == NULL);
    CHECK_STATUS(pm_ctx_status(ctx), PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "cycle between functions");

    pm_func *G = build_padded_blur(ctx, R, C, I);
    if (!CHECK(G != NULL))
        fprintf(stderr, "  after a refused pipeline: %s\n", pm_ctx_errmsg(ctx));
    pm_func *S = pm_func_new(ctx, "S", PM_F32, 2, pm_exprs(x, y), pm_intervals(rows, cols));
    pm_func_define_expr(S, pm_call(G, pm_addi(x, 1), y));
    CHECK_STATUS(pm_pipeline_new(ctx, "shifted", 2, pm_exprs(R, C), 1, &I, 1, &S, &bad),
                 PM_ERR_INVALID);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "S: access G(x + 1, y) reads outside G's domain");

    pm_pipeline *p = NULL;
    pm_status st = pm_pipeline_new(ctx, "padded_blur", 2, pm_exprs(R, C), 1, &I, 1, &G, &p);
    if (!CHECK_STATUS(st, PM_OK) || !CHECK(p != NULL)) {
        fprintf(stderr, "  the valid pipeline: %s\n", pm_ctx_errmsg(ctx));
        pm_ctx_free(ctx);
        return;
    }
    CHECK_STATUS(pm_ctx_status(ctx), PM_OK); /* the message was about the refused call */
    pm_value params[2] = {PM_I(9), PM_I(13)};
    pm_buffer in = check_buffer_new(PM_F32, 2, (int64_t[]){9, 13});
    pm_buffer want = check_buffer_new(PM_F32, 2, (int64_t[]){9, 13});
    pm_buffer got = check_buffer_new(PM_F32, 2, (int64_t[]){9, 13});
    check_fill(&in, 5u, false);
    CHECK_STATUS(pm_interpret(p, params, &in, &got), PM_OK);
    /* a refused run is about that call too: the next pipeline is built as before */
    pm_buffer small = pm_buffer_dense(in.data, PM_F32, 2, (int64_t[]){9, 12});
    CHECK_STATUS(pm_interpret(p, params, &small, &got), PM_ERR_ARGUMENT);
    pm_pipeline *again = NULL;
    CHECK_STATUS(pm_pipeline_new(ctx, "again", 2, pm_exprs(R, C), 1, &I, 1, &G, &again),
                 PM_OK);
    CHECK_STATUS(pm_interpret(again, params, &in, &want), PM_OK);

    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, params, NULL, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  compile: %s\n", err.message);
    if (k && CHECK_STATUS(pm_kernel_run(k, params, &in, &got, &err), PM_OK))
        CHECK(check_buffer_maxdiff(&got, &want) <= 1e-5);
    /* a builder's error, though, stays until cleared, through refused calls */
    CHECK(pm_call(G, x, NULL) == NULL);
    CHECK_STATUS(pm_interpret(p, params, &small, &got), PM_ERR_ARGUMENT);
    CHECK_STATUS(pm_pipeline_new(ctx, "later", 2, pm_exprs(R, C), 1, &I, 1, &G, &again),
                 PM_ERR_MISUSE);
    CHECK_CONTAINS(pm_ctx_errmsg(ctx), "call of G: argument");
    pm_kernel_free(k);
    check_buffer_free(&in);
    check_buffer_free(&want);
    check_buffer_free(&got);
    pm_ctx_free(ctx);
}

static void test_unsharp_ir(void)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = pm_sample_unsharp_mask.build(ctx);
    pm_value est[4];
    pm_sample_unsharp_mask.params(2048, 2048, est);
    pm_compile_options o = pm_compile_options_default();
    o.vector_width = 16; /* 16 lanes of f32: AVX-512 (the default on this host) */
    o.keep = "llvm";
    pm_error err;
    pm_kernel *k = pm_jit_compile(jit, p, est, &o, &err);
    if (CHECK(k != NULL)) {
        const char *ir = pm_kernel_dump(k, "llvm");
        CHECK(ir != NULL);
        CHECK_CONTAINS(ir, "<16 x float>");
        CHECK_CONTAINS(ir, "GOMP_parallel");
        CHECK(pm_kernel_compile_ms(k) > 0);
        pm_kernel_free(k);
    } else {
        fprintf(stderr, "  unsharp compile: %s\n", err.message);
    }
    pm_ctx_free(ctx);
}

/* ---- many compiles, frees, and the jit freed before its kernels ----------------------- */

static void test_lifetimes(void)
{
    pm_error err;
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL))
        return;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    check_blur_case c;
    check_blur_case_new(&c, p, 9, 9, 1u);
    int ok = 0;
    for (int i = 0; i < 30; i++) {
        pm_compile_options co = pm_compile_options_default();
        co.opt_level = i % 2 ? 1 : 0; /* fast to compile */
        pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
        if (k && pm_kernel_run(k, c.params, &c.in, &c.got, &err) == PM_OK &&
            check_buffer_maxdiff(&c.want, &c.got) <= 1e-6)
            ok++;
        pm_kernel_free(k);
    }
    CHECK(ok == 30);

    /* Two kernels alive, the jit freed first: they still run; the last free releases. */
    pm_kernel *k1 = pm_jit_compile(jit, p, NULL, NULL, &err);
    pm_kernel *k2 = pm_jit_compile(jit, p, NULL, NULL, &err);
    CHECK(k1 && k2);
    pm_jit_free(jit);
    if (k1)
        CHECK_STATUS(pm_kernel_run(k1, c.params, &c.in, &c.got, &err), PM_OK);
    pm_kernel_free(k1);
    if (k2)
        CHECK_STATUS(pm_kernel_run(k2, c.params, &c.in, &c.got, &err), PM_OK);
    CHECK(check_buffer_maxdiff(&c.want, &c.got) <= 1e-6);
    pm_kernel_free(k2);
    check_blur_case_free(&c);
    pm_ctx_free(ctx);
}

/* ---- concurrency ------------------------------------------------------------------- */

enum { NRUNNERS = 4, RUNS = 20 };

typedef struct runner {
    pm_kernel *k;
    pm_pipeline *p; /* read-only here: only pm_interpret in the main thread uses ctx */
    check_blur_case c;
    int failures;
} runner;

static void *runner_main(void *arg)
{
    runner *r = arg;
    for (int i = 0; i < RUNS; i++) {
        memset(r->c.got.data, 0, (size_t)check_buffer_count(&r->c.got) * sizeof(float));
        pm_error err;
        if (pm_kernel_run(r->k, r->c.params, &r->c.in, &r->c.got, &err) != PM_OK ||
            check_buffer_maxdiff(&r->c.want, &r->c.got) > 1e-6)
            r->failures++;
    }
    return NULL;
}

typedef struct compiler {
    pm_jit *jit;
    int failures;
} compiler;

/* Each compiling thread has its own context and pipeline (a context is one thread's). */
static void *compiler_main(void *arg)
{
    compiler *cm = arg;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    check_blur_case c;
    check_blur_case_new(&c, p, 31, 45, 2u);
    for (int i = 0; i < 4; i++) {
        pm_error err;
        pm_compile_options co = pm_compile_options_default();
        co.opt_level = 1;
        pm_kernel *k = pm_jit_compile(cm->jit, p, NULL, &co, &err);
        if (!k || pm_kernel_run(k, c.params, &c.in, &c.got, &err) != PM_OK ||
            check_buffer_maxdiff(&c.want, &c.got) > 1e-6)
            cm->failures++;
        pm_kernel_free(k);
    }
    check_blur_case_free(&c);
    pm_ctx_free(ctx);
    return NULL;
}

static void test_concurrency(pm_jit *jit)
{
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = check_blur_pipeline(ctx);
    pm_error err;
    pm_compile_options co = pm_compile_options_default();
    co.threads = 2;
    pm_kernel *k = pm_jit_compile(jit, p, NULL, &co, &err);
    if (!CHECK(k != NULL)) {
        pm_ctx_free(ctx);
        return;
    }
    runner runners[NRUNNERS];
    pthread_t tids[NRUNNERS];
    for (int i = 0; i < NRUNNERS; i++) {
        runners[i] = (runner){.k = k, .p = p};
        check_blur_case_new(&runners[i].c, p, 40 + 13 * i, 50 + 7 * i, 100u + (unsigned)i);
    }
    for (int i = 0; i < NRUNNERS; i++)
        CHECK(pthread_create(&tids[i], NULL, runner_main, &runners[i]) == 0);
    for (int i = 0; i < NRUNNERS; i++) {
        pthread_join(tids[i], NULL);
        CHECK(runners[i].failures == 0);
        check_blur_case_free(&runners[i].c);
    }
    pm_kernel_free(k);
    pm_ctx_free(ctx);

    compiler compilers[2] = {{.jit = jit}, {.jit = jit}};
    pthread_t ctids[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&ctids[i], NULL, compiler_main, &compilers[i]) == 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(ctids[i], NULL);
        CHECK(compilers[i].failures == 0);
    }
}

int main(void)
{
    test_options();
    pm_error err;
    jit = pm_jit_new(NULL, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "pm_jit_new: %s\n", err.message);
        return check_finish("api_contract");
    }
    test_options_size(jit);
    test_threads_limit(jit);
    test_size_rule(jit);
    test_compile_errors(jit);
    test_nondefault_options(jit);
    test_blur(jit);
    test_errors();
    test_failed_pipeline_keeps_context(jit);
    test_dumps(jit);
    test_dump_names(jit);
    test_compile_stats(jit);
    test_unsharp_ir();
    test_concurrency(jit);
    pm_jit_free(jit);
    test_lifetimes();
    return check_finish("api_contract");
}
