/* test_jit_engine.c — the in-process JIT (runtime/jit_engine.h) and the kernels' scratch
 * memory (runtime/scratch.h, runtime/rt.h), without the compiler: modules written by hand
 * as LLVM IR text, JIT-compiled, run and freed; GOMP_parallel, pm_rt_buffer and libm
 * called from JIT code; code freed and re-made many times (run under ASan for leaks);
 * lookups and runs from 4 threads at once.
 *
 * When LLVM's headers are on the include path, one more test builds a module with the
 * C API itself and takes it through prepare -> optimize -> asm -> add -> run. */
#include "check.h"

#include "runtime/jit_engine.h"
#include "runtime/rt.h"
#include "runtime/scratch.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<llvm-c/Core.h>)
#define HAVE_LLVM_HEADERS 1
#include <llvm-c/Core.h>
#include <llvm-c/Orc.h>
#include <llvm-c/TargetMachine.h>
#endif
#endif

static pm_engine *engine;

/* ---- IR text of the test modules ----------------------------------------------------- */

/* out[i] = 3*i + 1 for i < n, split over `threads` GOMP threads (cyclic); each thread
 * sets bit (1 << thread number) in *seen. @NAME is the entry; the body is internal. */
static const char *fill_ir =
    "%%args = type { ptr, i64, ptr }\n"
    "declare void @GOMP_parallel(ptr, ptr, i32, i32)\n"
    "declare i32 @omp_get_thread_num()\n"
    "declare i32 @omp_get_num_threads()\n"
    "define internal void @body(ptr %%data) {\n"
    "entry:\n"
    "  %%pout = getelementptr %%args, ptr %%data, i32 0, i32 0\n"
    "  %%out = load ptr, ptr %%pout\n"
    "  %%pn = getelementptr %%args, ptr %%data, i32 0, i32 1\n"
    "  %%n = load i64, ptr %%pn\n"
    "  %%pseen = getelementptr %%args, ptr %%data, i32 0, i32 2\n"
    "  %%seen = load ptr, ptr %%pseen\n"
    "  %%t32 = call i32 @omp_get_thread_num()\n"
    "  %%nt32 = call i32 @omp_get_num_threads()\n"
    "  %%t = sext i32 %%t32 to i64\n"
    "  %%nt = sext i32 %%nt32 to i64\n"
    "  %%bit = shl i64 1, %%t\n"
    "  %%old = atomicrmw or ptr %%seen, i64 %%bit seq_cst\n"
    "  br label %%loop\n"
    "loop:\n"
    "  %%i = phi i64 [ %%t, %%entry ], [ %%next, %%body ]\n"
    "  %%done = icmp sge i64 %%i, %%n\n"
    "  br i1 %%done, label %%exit, label %%body\n"
    "body:\n"
    "  %%p = getelementptr i32, ptr %%out, i64 %%i\n"
    "  %%v = trunc i64 %%i to i32\n"
    "  %%v3 = mul i32 %%v, 3\n"
    "  %%v31 = add i32 %%v3, 1\n"
    "  store i32 %%v31, ptr %%p\n"
    "  %%next = add i64 %%i, %%nt\n"
    "  br label %%loop\n"
    "exit:\n"
    "  ret void\n"
    "}\n"
    "define void @%s(ptr %%out, i64 %%n, i32 %%threads, ptr %%seen) {\n"
    "  %%a = alloca %%args\n"
    "  %%a0 = getelementptr %%args, ptr %%a, i32 0, i32 0\n"
    "  store ptr %%out, ptr %%a0\n"
    "  %%a1 = getelementptr %%args, ptr %%a, i32 0, i32 1\n"
    "  store i64 %%n, ptr %%a1\n"
    "  %%a2 = getelementptr %%args, ptr %%a, i32 0, i32 2\n"
    "  store ptr %%seen, ptr %%a2\n"
    "  call void @GOMP_parallel(ptr @body, ptr %%a, i32 %%threads, i32 0)\n"
    "  ret void\n"
    "}\n";
typedef void (*fill_fn)(int32_t *out, int64_t n, int32_t threads, uint64_t *seen);

/* Asks pm_rt_buffer for `bytes` in `slot`, writes all of it, returns the address (or
 * -1 when it got NULL); @threads_NAME returns pm_rt_threads. */
static const char *scratch_ir =
    "@who = private constant [14 x i8] c\"test's buffer\\00\"\n"
    "declare ptr @pm_rt_buffer(ptr, i32, i64, ptr)\n"
    "declare i32 @pm_rt_threads(ptr)\n"
    "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)\n"
    "define i64 @%s(ptr %%rt, i32 %%slot, i64 %%bytes) {\n"
    "entry:\n"
    "  %%p = call ptr @pm_rt_buffer(ptr %%rt, i32 %%slot, i64 %%bytes, ptr @who)\n"
    "  %%isnull = icmp eq ptr %%p, null\n"
    "  br i1 %%isnull, label %%fail, label %%ok\n"
    "fail:\n"
    "  ret i64 -1\n"
    "ok:\n"
    "  call void @llvm.memset.p0.i64(ptr %%p, i8 -85, i64 %%bytes, i1 false)\n"
    "  %%addr = ptrtoint ptr %%p to i64\n"
    "  ret i64 %%addr\n"
    "}\n"
    "define i32 @threads_%s(ptr %%rt) {\n"
    "  %%n = call i32 @pm_rt_threads(ptr %%rt)\n"
    "  ret i32 %%n\n"
    "}\n";
typedef int64_t (*scratch_fn)(pm_run_ctx *rt, int32_t slot, int64_t bytes);
typedef int32_t (*threads_fn)(pm_run_ctx *rt);

/* sin(x) + expf((float)x) + atan2(x, 2): an intrinsic, a float and a double libm call. */
static const char *math_ir =
    "declare float @expf(float)\n"
    "declare double @llvm.sin.f64(double)\n"
    "declare double @atan2(double, double)\n"
    "define double @mathy(double %x) {\n"
    "  %s = call double @llvm.sin.f64(double %x)\n"
    "  %xf = fptrunc double %x to float\n"
    "  %e = call float @expf(float %xf)\n"
    "  %ed = fpext float %e to double\n"
    "  %a = call double @atan2(double %x, double 2.0)\n"
    "  %r1 = fadd double %s, %ed\n"
    "  %r = fadd double %r1, %a\n"
    "  ret double %r\n"
    "}\n";

static char *format_ir(const char *fmt, const char *name)
{
    size_t n = strlen(fmt) + 2 * strlen(name) + 1;
    char *s = malloc(n);
    snprintf(s, n, fmt, name, name);
    return s;
}

/* Adds fill_ir with entry `name`; returns the code (NULL on failure) and the entry. */
static pm_engine_code *add_fill(const char *name, fill_fn *fn)
{
    char *ir = format_ir(fill_ir, name);
    pm_engine_code *code = NULL;
    pm_error err = {0};
    pm_status s = pm_engine_add_ir(engine, ir, name, &code, &err);
    free(ir);
    if (s != PM_OK) {
        fprintf(stderr, "add %s: %s\n", name, err.message);
        return NULL;
    }
    void *addr = NULL;
    if (pm_engine_lookup(engine, name, &addr, &err) != PM_OK) {
        fprintf(stderr, "lookup %s: %s\n", name, err.message);
        pm_engine_code_free(code);
        return NULL;
    }
    *fn = (fill_fn)addr;
    return code;
}

static int popcount64(uint64_t x)
{
    int n = 0;
    for (; x; x &= x - 1)
        n++;
    return n;
}

/* Runs fill with n elements and `threads`; true when every element and the thread
 * count are right. */
static bool run_fill(fill_fn fn, int64_t n, int threads)
{
    int32_t *out = malloc((size_t)(n ? n : 1) * sizeof *out);
    for (int64_t i = 0; i < n; i++)
        out[i] = -7;
    uint64_t seen = 0;
    fn(out, n, threads, &seen);
    bool ok = popcount64(seen) == threads;
    for (int64_t i = 0; i < n; i++)
        ok = ok && out[i] == (int32_t)(3 * i + 1);
    free(out);
    return ok;
}

/* ---- tests --------------------------------------------------------------------------- */

static void test_host(void)
{
    CHECK(pm_engine_triple(engine)[0] != '\0');
    CHECK(pm_engine_cpu_name(engine)[0] != '\0');
    const char *features = pm_engine_cpu_features(engine);
    int w = pm_engine_vector_width(engine);
    CHECK(w == 4 || w == 8 || w == 16);
    /* The width follows the features (not the CPU name). */
    if (strstr(features, "+avx512f"))
        CHECK(w == 16);
    else if (strstr(features, "+avx,") || strstr(features, "+avx2"))
        CHECK(w == 8);
}

static void test_gomp_parallel(void)
{
    fill_fn fn = NULL;
    pm_engine_code *code = add_fill("fill_main", &fn);
    CHECK(code != NULL);
    if (!code)
        return;
    CHECK(run_fill(fn, 1000, 1));
    CHECK(run_fill(fn, 1000, 2));
    CHECK(run_fill(fn, 1001, 4));
    CHECK(run_fill(fn, 0, 3));
    CHECK(run_fill(fn, 1, 4));
    pm_engine_code_free(code);

    /* Freed code is gone from the JIT. */
    void *addr = (void *)1;
    pm_error err = {0};
    CHECK_STATUS(pm_engine_lookup(engine, "fill_main", &addr, &err), PM_ERR_INTERNAL);
    CHECK(addr == NULL);
    CHECK_CONTAINS(err.message, "fill_main");
}

static void test_rt_buffer(void)
{
    char *ir = format_ir(scratch_ir, "scratch");
    pm_engine_code *code = NULL;
    pm_error err = {0};
    CHECK_STATUS(pm_engine_add_ir(engine, ir, "scratch", &code, &err), PM_OK);
    free(ir);
    void *a1 = NULL, *a2 = NULL;
    CHECK_STATUS(pm_engine_lookup(engine, "scratch", &a1, &err), PM_OK);
    CHECK_STATUS(pm_engine_lookup(engine, "threads_scratch", &a2, &err), PM_OK);
    if (!a1 || !a2) {
        pm_engine_code_free(code);
        return;
    }
    scratch_fn scratch = (scratch_fn)a1;
    threads_fn threads = (threads_fn)a2;

    pm_scratch_pool *pool = pm_scratch_pool_new(3);
    pm_run_ctx rt = {.scratch = pm_scratch_pool_checkout(pool), .threads = 5};
    CHECK(threads(&rt) == 5);

    int64_t p0 = scratch(&rt, 0, 1000);
    CHECK(p0 != -1 && p0 % 64 == 0);
    CHECK(scratch(&rt, 0, 10) == p0);    /* smaller: same memory        */
    /* rounded capacity covers it, with the readable tail (rt.h) */
    CHECK(scratch(&rt, 0, 1024 - PM_RT_BUFFER_TAIL) == p0);
    int64_t p1 = scratch(&rt, 1, 0);     /* empty is still a pointer    */
    CHECK(p1 != -1 && p1 % 64 == 0 && p1 != p0);
    int64_t p2 = scratch(&rt, 2, 1 << 20);
    CHECK(p2 != -1 && p2 % 64 == 0);
    CHECK(rt.failed == 0);

    /* Out of range: NULL, and the run context remembers the first failure. */
    CHECK(scratch(&rt, 3, 8) == -1);
    CHECK(scratch(&rt, -1, 8) == -1);
    CHECK(rt.failed == 1 && rt.failed_slot == 3 && rt.failed_bytes == 8);
    CHECK(rt.failed_who && strcmp(rt.failed_who, "test's buffer") == 0);

    /* Returned sets are reused: the next checkout gets the same memory. */
    pm_scratch_pool_return(pool, rt.scratch);
    pm_run_ctx rt2 = {.scratch = pm_scratch_pool_checkout(pool), .threads = 1};
    CHECK(scratch(&rt2, 0, 64) == p0);
    /* A second concurrent run gets a set of its own. */
    pm_run_ctx rt3 = {.scratch = pm_scratch_pool_checkout(pool), .threads = 1};
    int64_t q0 = scratch(&rt3, 0, 64);
    CHECK(q0 != -1 && q0 != p0);
    CHECK(pm_scratch_pool_nsets(pool) == 2);
    CHECK(pm_scratch_pool_bytes(pool) >= 1024 + 64 + (1 << 20) + 64);
    pm_scratch_pool_return(pool, rt3.scratch);
    pm_scratch_pool_return(pool, rt2.scratch);
    pm_scratch_pool_free(pool);
    pm_engine_code_free(code);
}

static void test_scratch_pool_direct(void)
{
    pm_scratch_pool *pool = pm_scratch_pool_new(0);
    CHECK(pool != NULL && pm_scratch_pool_nslots(pool) == 0);
    pm_scratch_set *set = pm_scratch_pool_checkout(pool);
    CHECK(set != NULL);
    CHECK(pm_scratch_set_get(set, 0, 8) == NULL);
    pm_scratch_pool_return(pool, set);
    pm_scratch_pool_free(pool);

    CHECK(pm_scratch_pool_new(-1) == NULL);
    pool = pm_scratch_pool_new(1);
    set = pm_scratch_pool_checkout(pool);
    CHECK(pm_scratch_set_get(set, 0, -5) == NULL);
    CHECK(pm_scratch_set_get(set, 0, INT64_MAX) == NULL); /* too big: NULL, no crash */
    void *p = pm_scratch_set_get(set, 0, 100);
    CHECK(p != NULL && (uintptr_t)p % 64 == 0);
    /* Growth: the contents are undefined but the memory is usable end to end. */
    unsigned char *q = pm_scratch_set_get(set, 0, 100000);
    CHECK(q != NULL && (uintptr_t)q % 64 == 0);
    if (q)
        memset(q, 1, 100000);
    /* A slot of 4 MiB or more starts on a 2 MiB boundary (huge pages, scratch.c), its
     * last byte usable; a smaller one again 64-byte aligned. */
    unsigned char *big = pm_scratch_set_get(set, 0, (5 << 20) + 3);
    const char *huge = getenv("PM_HUGEPAGES");
    CHECK(big != NULL && ((huge && strcmp(huge, "0") == 0) || (uintptr_t)big % (2 << 20) == 0));
    if (big)
        big[(5 << 20) + 2] = 7;
    pm_scratch_pool_return(pool, set);
    pm_scratch_pool_free(pool); /* sets with memory are freed too (ASan checks) */
    pm_scratch_pool_free(NULL);
}

static void test_libm(void)
{
    pm_engine_code *code = NULL;
    pm_error err = {0};
    CHECK_STATUS(pm_engine_add_ir(engine, math_ir, "math", &code, &err), PM_OK);
    void *addr = NULL;
    CHECK_STATUS(pm_engine_lookup(engine, "mathy", &addr, &err), PM_OK);
    if (addr) {
        double (*mathy)(double) = (double (*)(double))addr;
        for (double x = -3; x <= 3; x += 0.75) {
            double want = sin(x) + (double)expf((float)x) + atan2(x, 2.0);
            CHECK(fabs(mathy(x) - want) < 1e-6);
        }
    }
    pm_engine_code_free(code);
}

static void test_errors(void)
{
    pm_error err = {0};
    pm_engine_code *code = (pm_engine_code *)1;

    /* Bad IR: a parse error with LLVM's message, nothing added. */
    CHECK_STATUS(pm_engine_add_ir(engine, "define i32 @broken( {", "broken", &code, &err),
                 PM_ERR_INTERNAL);
    CHECK(code == NULL);
    CHECK_CONTAINS(err.message, "broken");
    CHECK_CONTAINS(err.message, "cannot parse IR");

    /* A call to a symbol nobody defines: adding works (compiling is lazy), the lookup
     * fails and names the missing symbol; the kernel can still be freed. */
    const char *missing =
        "declare i32 @pm_no_such_function(i32)\n"
        "define i32 @calls_missing(i32 %x) {\n"
        "  %r = call i32 @pm_no_such_function(i32 %x)\n"
        "  ret i32 %r\n"
        "}\n";
    err = (pm_error){0}; /* the first error wins (frontend/error.h): start afresh */
    CHECK_STATUS(pm_engine_add_ir(engine, missing, "missing", &code, &err), PM_OK);
    void *addr = (void *)1;
    CHECK_STATUS(pm_engine_lookup(engine, "calls_missing", &addr, &err), PM_ERR_INTERNAL);
    CHECK(addr == NULL);
    CHECK_CONTAINS(err.message, "pm_no_such_function");
    pm_engine_code_free(code);

    /* Two modules defining one external name: the second is refused, the first works. */
    fill_fn fn1 = NULL;
    pm_engine_code *c1 = add_fill("fill_dup", &fn1);
    CHECK(c1 != NULL);
    char *ir = format_ir(fill_ir, "fill_dup");
    pm_engine_code *c2 = NULL;
    err = (pm_error){0};
    pm_status s = pm_engine_add_ir(engine, ir, "dup", &c2, &err);
    free(ir);
    CHECK(s == PM_ERR_INTERNAL || c2 != NULL);
    if (s == PM_ERR_INTERNAL)
        CHECK_CONTAINS(err.message, "fill_dup");
    if (c1)
        CHECK(run_fill(fn1, 100, 2));
    pm_engine_code_free(c2);
    pm_engine_code_free(c1);

    /* The unique names never repeat. */
    char a[64], b[64];
    pm_engine_unique_name(engine, "harris", a, sizeof a);
    pm_engine_unique_name(engine, "harris", b, sizeof b);
    CHECK(strncmp(a, "harris_k", 8) == 0 && strcmp(a, b) != 0);
}

/* Many kernels made and freed: the JIT must not grow (ASan/LSan sees leaks), names may
 * be reused once freed. */
static void test_recreate(void)
{
    int ok = 0;
    for (int i = 0; i < 200; i++) {
        fill_fn fn = NULL;
        pm_engine_code *code = add_fill("fill_again", &fn);
        if (code && run_fill(fn, 257, 1 + i % 3))
            ok++;
        pm_engine_code_free(code);
    }
    CHECK(ok == 200);

    /* Whole engines, too. */
    for (int i = 0; i < 5; i++) {
        pm_error err = {0};
        pm_engine *e2 = pm_engine_new(i % 4, &err);
        CHECK(e2 != NULL);
        if (!e2)
            continue;
        pm_engine_code *code = NULL;
        CHECK_STATUS(pm_engine_add_ir(e2, math_ir, "math", &code, &err), PM_OK);
        void *addr = NULL;
        CHECK_STATUS(pm_engine_lookup(e2, "mathy", &addr, &err), PM_OK);
        if (addr)
            CHECK(fabs(((double (*)(double))addr)(0.0) - 1.0) < 1e-9);
        pm_engine_code_free(code);
        pm_engine_free(e2);
    }
}

/* ---- 4 threads ---------------------------------------------------------------------- */

enum { NTHREADS = 4, ROUNDS = 25 };

typedef struct worker {
    int id;
    int failures;
} worker;

/* Each thread: its own kernels made, run and freed, and runs of the shared "fill_shared"
 * looked up again every time. */
static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int r = 0; r < ROUNDS; r++) {
        char name[64];
        snprintf(name, sizeof name, "fill_t%d_r%d", w->id, r);
        fill_fn own = NULL;
        pm_engine_code *code = add_fill(name, &own);
        if (!code || !run_fill(own, 500 + r, 1 + (r + w->id) % 2))
            w->failures++;
        pm_engine_code_free(code);

        void *addr = NULL;
        pm_error err = {0};
        if (pm_engine_lookup(engine, "fill_shared", &addr, &err) != PM_OK ||
            !run_fill((fill_fn)addr, 999, 2))
            w->failures++;
    }
    return NULL;
}

static void test_threads(void)
{
    fill_fn shared = NULL;
    pm_engine_code *code = add_fill("fill_shared", &shared);
    CHECK(code != NULL);
    pthread_t threads[NTHREADS];
    worker workers[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        workers[i] = (worker){.id = i};
        CHECK(pthread_create(&threads[i], NULL, worker_main, &workers[i]) == 0);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(workers[i].failures == 0);
    }
    pm_engine_code_free(code);
}

/* ---- a module built with the C API (when the headers are reachable) ------------------ */

#ifdef HAVE_LLVM_HEADERS
/* scale(out, in, n): out[i] = 2 * in[i], a loop the vectorizer should widen. */
static LLVMModuleRef build_scale(LLVMContextRef ctx)
{
    LLVMModuleRef m = LLVMModuleCreateWithNameInContext("scale", ctx);
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMTypeRef i64 = LLVMInt64TypeInContext(ctx);
    LLVMTypeRef f32 = LLVMFloatTypeInContext(ctx);
    LLVMTypeRef params[] = {ptr, ptr, i64};
    LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(ctx), params, 3, 0);
    LLVMValueRef fn = LLVMAddFunction(m, "scale", fty);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ctx, fn, "loop");
    LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(ctx, fn, "body");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ctx, fn, "exit");
    LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
    LLVMPositionBuilderAtEnd(b, entry);
    LLVMBuildBr(b, loop);
    LLVMPositionBuilderAtEnd(b, loop);
    LLVMValueRef i = LLVMBuildPhi(b, i64, "i");
    LLVMValueRef done = LLVMBuildICmp(b, LLVMIntSGE, i, LLVMGetParam(fn, 2), "done");
    LLVMBuildCondBr(b, done, exit, body);
    LLVMPositionBuilderAtEnd(b, body);
    LLVMValueRef src = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 1), &i, 1, "src");
    LLVMValueRef v = LLVMBuildLoad2(b, f32, src, "v");
    LLVMValueRef v2 = LLVMBuildFMul(b, v, LLVMConstReal(f32, 2.0), "v2");
    LLVMValueRef dst = LLVMBuildGEP2(b, f32, LLVMGetParam(fn, 0), &i, 1, "dst");
    LLVMBuildStore(b, v2, dst);
    LLVMValueRef next = LLVMBuildAdd(b, i, LLVMConstInt(i64, 1, 0), "next");
    LLVMBuildBr(b, loop);
    LLVMValueRef zero = LLVMConstInt(i64, 0, 0);
    LLVMValueRef incoming[] = {zero, next};
    LLVMBasicBlockRef from[] = {entry, body};
    LLVMAddIncoming(i, incoming, from, 2);
    LLVMPositionBuilderAtEnd(b, exit);
    LLVMBuildRetVoid(b);
    LLVMDisposeBuilder(b);
    /* noalias lets the vectorizer skip runtime overlap checks; not needed for truth. */
    return m;
}

static void test_c_api_module(void)
{
    pm_error err = {0};
    LLVMOrcThreadSafeContextRef tsctx = LLVMOrcCreateNewThreadSafeContext();
    LLVMModuleRef m = build_scale(LLVMOrcThreadSafeContextGetContext(tsctx));
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(engine, 3, &err);
    CHECK(tm != NULL);
    char name[64];
    pm_engine_unique_name(engine, "scale", name, sizeof name);
    CHECK_STATUS(pm_engine_prepare_module(m, tm, "scale", name, &err), PM_OK);
    CHECK_STATUS(pm_engine_optimize(m, tm, 3, &err), PM_OK);
    char *asm_text = pm_engine_emit_asm(m, tm, &err);
    CHECK(asm_text != NULL);
    CHECK_CONTAINS(asm_text, name);
    if (pm_engine_vector_width(engine) >= 8)
        CHECK(asm_text && (strstr(asm_text, "ymm") || strstr(asm_text, "zmm")));
    free(asm_text);
    /* A module without its entry is refused with a message. */
    CHECK_STATUS(pm_engine_prepare_module(m, tm, "no_entry", "x", &err), PM_ERR_INTERNAL);
    CHECK_CONTAINS(err.message, "no_entry");
    LLVMDisposeTargetMachine(tm);

    pm_engine_code *code = NULL;
    CHECK_STATUS(pm_engine_add_module(engine, m, tsctx, &code, &err), PM_OK);
    LLVMOrcDisposeThreadSafeContext(tsctx);
    void *addr = NULL;
    CHECK_STATUS(pm_engine_lookup(engine, name, &addr, &err), PM_OK);
    if (addr) {
        float in[37], out[37];
        for (int k = 0; k < 37; k++)
            in[k] = (float)k * 0.5f;
        ((void (*)(float *, const float *, int64_t))addr)(out, in, 37);
        bool ok = true;
        for (int k = 0; k < 37; k++)
            ok = ok && out[k] == in[k] * 2.0f;
        CHECK(ok);
    }
    pm_engine_code_free(code);
}
#endif

int main(void)
{
    pm_error err = {0};
    engine = pm_engine_new(3, &err);
    CHECK(engine != NULL);
    if (!engine) {
        fprintf(stderr, "pm_engine_new: %s\n", err.message);
        return check_finish("test_jit_engine");
    }
    test_host();
    test_scratch_pool_direct();
    test_gomp_parallel();
    test_rt_buffer();
    test_libm();
    test_errors();
    test_recreate();
    test_threads();
#ifdef HAVE_LLVM_HEADERS
    test_c_api_module();
#else
    printf("test_jit_engine: LLVM headers not on the test include path; "
           "the C API module test is skipped\n");
#endif
    pm_engine_free(engine);
    return check_finish("test_jit_engine");
}
