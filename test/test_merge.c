/* test_merge.c — functions equal but for integer constants merged (codegen/llvm/merge.c),
 * on modules written by hand as LLVM IR text: which functions merge and which must not,
 * and the merged module computes what the original did (both JIT-compiled and run on
 * the same inputs, negative ones included: a power-of-two division becomes shifts and
 * masks, which must round toward zero as sdiv and srem do). The same for parallel loops'
 * bodies handed to GOMP_parallel (their holes ride in the data block). Also: the option
 * that turns the merge off for the full-DP upgrade, and local Laplacian's levels merged. */
#include "check.h"

#include "codegen/llvm/llvm.h"
#include "codegen/options.h"
#include "runtime/jit_engine.h"
#include "samples/samples.h"

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/IRReader.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pm_engine *engine;

enum { BLOCKS = 10 }; /* calls in @run, each on a block of 16 i64 */

/* A stage body with the constants of its level: d[0] is x (i64), d[1..8] receive
 * x / D, x % D, x udiv D, x urem D, x * M + A, (x < B), x << S, and d[8..11] the four i32
 * lanes of (v + A) / D for v = d[12..15] as i32 (a splat constant, a vector division).
 * Written with printf's %1$ ... arguments: 1 name, 2 D, 3 M, 4 A, 5 B, 6 S. */
static const char *body_fmt =
    "define internal void @%1$s(ptr %%d) noinline nounwind {\n"
    "entry:\n"
    "  %%x = load i64, ptr %%d, align 8\n"
    "  %%q = sdiv i64 %%x, %2$s\n"
    "  %%r = srem i64 %%x, %2$s\n"
    "  %%uq = udiv i64 %%x, %2$s\n"
    "  %%ur = urem i64 %%x, %2$s\n"
    "  %%m = mul i64 %%x, %3$s\n"
    "  %%ma = add i64 %%m, %4$s\n"
    "  %%c = icmp slt i64 %%x, %5$s\n"
    "  %%cz = zext i1 %%c to i64\n"
    "  %%sh = shl i64 %%x, %6$s\n"
    "  %%p1 = getelementptr i64, ptr %%d, i64 1\n"
    "  store i64 %%q, ptr %%p1, align 8\n"
    "  %%p2 = getelementptr i64, ptr %%d, i64 2\n"
    "  store i64 %%r, ptr %%p2, align 8\n"
    "  %%p3 = getelementptr i64, ptr %%d, i64 3\n"
    "  store i64 %%uq, ptr %%p3, align 8\n"
    "  %%p4 = getelementptr i64, ptr %%d, i64 4\n"
    "  store i64 %%ur, ptr %%p4, align 8\n"
    "  %%p5 = getelementptr i64, ptr %%d, i64 5\n"
    "  store i64 %%ma, ptr %%p5, align 8\n"
    "  %%p6 = getelementptr i64, ptr %%d, i64 6\n"
    "  store i64 %%cz, ptr %%p6, align 8\n"
    "  %%p7 = getelementptr i64, ptr %%d, i64 7\n"
    "  store i64 %%sh, ptr %%p7, align 8\n"
    "  %%pv = getelementptr i64, ptr %%d, i64 10\n"
    "  %%v = load <4 x i32>, ptr %%pv, align 8\n"
    "  %%va = add <4 x i32> %%v, <i32 %4$s, i32 %4$s, i32 %4$s, i32 %4$s>\n"
    "  %%vq = sdiv <4 x i32> %%va, <i32 %2$s, i32 %2$s, i32 %2$s, i32 %2$s>\n"
    "  %%pw = getelementptr i64, ptr %%d, i64 8\n"
    "  store <4 x i32> %%vq, ptr %%pw, align 8\n"
    "  ret void\n"
    "}\n";

/* One more body of another shape: a call whose argument differs must not merge. */
static const char *call_fmt =
    "define internal void @%1$s(ptr %%d) noinline nounwind {\n"
    "entry:\n"
    "  %%x = load i64, ptr %%d, align 8\n"
    "  %%y = call i64 @llvm.smax.i64(i64 %%x, i64 %2$s)\n"
    "  store i64 %%y, ptr %%d, align 8\n"
    "  ret void\n"
    "}\n";

/* A third shape: an add with or without nsw. Bodies differing in a flag must not merge. */
static const char *flag_fmt =
    "define internal void @%1$s(ptr %%d) noinline nounwind {\n"
    "entry:\n"
    "  %%x = load i64, ptr %%d, align 8\n"
    "  %%y = add %2$s i64 %%x, %3$s\n"
    "  store i64 %%y, ptr %%d, align 8\n"
    "  ret void\n"
    "}\n";

/* The bodies: b1 and b2 (powers of two) merge with b4 (equal constants but one); b3's
 * divisor is 3, so it stays; c1 and c2 differ in a call's argument and stay; n1 and n3
 * merge, n2 (no nsw) stays. */
static char *module_text(void)
{
    static const char *bodies[][6] = {
        {"b1", "4", "3", "7", "10", "2"},
        {"b2", "8", "5", "-3", "-4", "3"},
        {"b3", "3", "5", "-3", "-4", "3"},
        {"b4", "1", "3", "7", "10", "2"},
    };
    size_t cap = 16384, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "declare i64 @llvm.smax.i64(i64, i64)\n");
    for (int i = 0; i < 4; i++)
        len += (size_t)snprintf(s + len, cap - len, body_fmt, bodies[i][0], bodies[i][1],
                                bodies[i][2], bodies[i][3], bodies[i][4], bodies[i][5]);
    len += (size_t)snprintf(s + len, cap - len, call_fmt, "c1", "5");
    len += (size_t)snprintf(s + len, cap - len, call_fmt, "c2", "9");
    len += (size_t)snprintf(s + len, cap - len, flag_fmt, "n1", "nsw", "5");
    len += (size_t)snprintf(s + len, cap - len, flag_fmt, "n2", "", "6");
    len += (size_t)snprintf(s + len, cap - len, flag_fmt, "n3", "nsw", "7");
    /* the entry: each body on its own block of 16 i64, b1 twice */
    len += (size_t)snprintf(s + len, cap - len,
                            "define void @run(ptr %%d) {\n"
                            "entry:\n");
    static const char *callee[] = {"b1", "b2", "b3", "b4", "c1", "c2", "b1", "n1", "n2", "n3"};
    for (int i = 0; i < BLOCKS; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "  %%a%d = getelementptr i64, ptr %%d, i64 %d\n"
                                "  call void @%s(ptr %%a%d)\n",
                                i, 16 * i, callee[i], i);
    snprintf(s + len, cap - len, "  ret void\n}\n");
    return s;
}


typedef void (*out_fn)(int64_t *out);

/* Adds module text ir (entry `name`) and runs it on out. */
static bool run_entry(const char *ir, const char *name, int64_t *out)
{
    pm_engine_code *code = NULL;
    pm_error err = {0};
    void *addr = NULL;
    pm_status s = pm_engine_add_ir(engine, ir, name, &code, &err);
    if (s == PM_OK)
        s = pm_engine_lookup(engine, name, &addr, &err);
    if (!CHECK(s == PM_OK)) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        pm_engine_code_free(code);
        return false;
    }
    ((out_fn)addr)(out);
    pm_engine_code_free(code);
    return true;
}

/* Runs module text `ir` (entry @run, added as `name`) on block inputs x and lanes v. */
static bool run_ir(const char *ir, const char *name, int64_t x, const int32_t v[4], int64_t *d)
{
    /* the entry's name must be unique in the engine */
    size_t n = strlen(ir) + 64;
    char *text = malloc(n);
    const char *at = strstr(ir, "@run(");
    snprintf(text, n, "%.*s@%s(%s", (int)(at - ir), ir, name, at + 5);
    memset(d, 0, BLOCKS * 16 * sizeof *d);
    for (int b = 0; b < BLOCKS; b++) {
        d[16 * b] = x;
        memcpy(&d[16 * b + 10], v, 4 * sizeof *v);
    }
    bool ok = run_entry(text, name, d);
    free(text);
    return ok;
}

static LLVMModuleRef parse(LLVMContextRef C, const char *ir)
{
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(ir, strlen(ir), "m");
    LLVMModuleRef m = NULL;
    char *msg = NULL;
    if (LLVMParseIRInContext(C, buf, &m, &msg)) {
        fprintf(stderr, "parse: %s\n", msg ? msg : "");
        m = NULL;
    }
    LLVMDisposeMessage(msg);
    return m;
}

static void test_merge(void)
{
    char *ir = module_text();
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef m = parse(C, ir);
    if (!CHECK(m != NULL)) {
        free(ir);
        LLVMContextDispose(C);
        return;
    }
    pm_llvm_merge_stats st;
    pm_error err = {0};
    CHECK_STATUS(pm_llvm_merge_similar(m, &st, &err), PM_OK);
    char *msg = NULL;
    CHECK(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg));
    if (msg && *msg)
        fprintf(stderr, "verify: %s\n", msg);
    LLVMDisposeMessage(msg);
    CHECK(st.candidates == 9);
    CHECK(st.classes == 2);  /* b1, b2 and b4; n1 and n3 */
    CHECK(st.removed == 3);
    /* the holes: D's log2 and A, each as i64 and as i32 (the vector's), M, B and S; n's */
    CHECK(st.holes == 8);
    CHECK(LLVMGetNamedFunction(m, "n1.x2") && LLVMGetNamedFunction(m, "n2") &&
          !LLVMGetNamedFunction(m, "n3"));
    CHECK(LLVMGetNamedFunction(m, "b1.x3") != NULL);
    CHECK(LLVMGetNamedFunction(m, "b2") == NULL && LLVMGetNamedFunction(m, "b4") == NULL);
    CHECK(LLVMGetNamedFunction(m, "b3") && LLVMGetNamedFunction(m, "c1") &&
          LLVMGetNamedFunction(m, "c2"));
    char *merged = LLVMPrintModuleToString(m);
    CHECK(strstr(merged, "sdiv i64") != NULL); /* b3's, by 3 */
    LLVMDisposeModule(m);
    LLVMContextDispose(C);

    /* the original and the merged module, run on the same inputs */
    static const int64_t xs[] = {0, 1, -1, 7, -7, 8, -8, 9, -9, 1000003, -1000003,
                                 INT64_MAX, INT64_MIN + 1, INT64_MIN};
    static const int32_t vs[][4] = {{0, 1, -1, 5}, {-5, -8, 8, 15}, {INT32_MAX - 8, -100, 33, -33}};
    int mismatches = 0;
    int64_t *a = malloc(BLOCKS * 16 * sizeof *a), *b = malloc(BLOCKS * 16 * sizeof *b);
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)
        for (size_t j = 0; j < sizeof vs / sizeof vs[0]; j++) {
            char na[32], nb[32];
            snprintf(na, sizeof na, "orig%zu_%zu", i, j);
            snprintf(nb, sizeof nb, "merged%zu_%zu", i, j);
            if (!run_ir(ir, na, xs[i], vs[j], a) || !run_ir(merged, nb, xs[i], vs[j], b))
                continue;
            for (int k = 0; k < BLOCKS * 16; k++)
                if (a[k] != b[k] && mismatches++ < 5)
                    fprintf(stderr, "x = %lld, lanes %zu: word %d: %lld, merged %lld\n",
                            (long long)xs[i], j, k, (long long)a[k], (long long)b[k]);
        }
    CHECK(mismatches == 0);
    /* and the results are the level's own: b2 divides by 8 */
    int32_t v[4] = {-9, 9, -16, 17};
    if (run_ir(merged, "check_b2", -17, v, b)) {
        CHECK(b[16 + 1] == -2 && b[16 + 2] == -1); /* -17 / 8, -17 % 8 */
        CHECK(b[16 + 3] == (int64_t)((uint64_t)-17 / 8) && b[16 + 4] == (int64_t)((uint64_t)-17 % 8));
        CHECK(b[16 + 5] == -17 * 5 - 3 && b[16 + 6] == 1 && b[16 + 7] == -17 * 8);
        int32_t lanes[4];
        memcpy(lanes, &b[16 + 8], sizeof lanes);
        CHECK(lanes[0] == (-9 - 3) / 8 && lanes[1] == (9 - 3) / 8 && lanes[2] == (-16 - 3) / 8 &&
              lanes[3] == (17 - 3) / 8);
    }
    free(a);
    free(b);
    LLVMDisposeMessage(merged);
    free(ir);
}

/* Parallel loops' bodies, handed to GOMP_parallel with a data block [N x i64]: d[0] is x,
 * d[1] receives x / D (any divisor: a tile count) + A. q1 and q2 differ in D (7, 9) and A;
 * q3 has a data block one slot longer. Arguments: 1 name, 2 D, 3 A. */
static const char *par_fmt =
    "define internal void @%1$s(ptr %%d) nounwind {\n"
    "entry:\n"
    "  %%x = load i64, ptr %%d, align 8\n"
    "  %%q = sdiv i64 %%x, %2$s\n"
    "  %%a = add i64 %%q, %3$s\n"
    "  %%p1 = getelementptr i64, ptr %%d, i64 1\n"
    "  store i64 %%a, ptr %%p1, align 8\n"
    "  ret void\n"
    "}\n";

/* @NAME(ptr out): out[i] = q_i's d[1] for d[0] = out[i] (three parallel loops). */
static char *gomp_text(const char *name)
{
    size_t cap = 8192, len = 0;
    char *s = malloc(cap);
    len += (size_t)snprintf(s + len, cap - len, "declare void @GOMP_parallel(ptr, ptr, i32, i32)\n");
    len += (size_t)snprintf(s + len, cap - len, par_fmt, "q1", "7", "3");
    len += (size_t)snprintf(s + len, cap - len, par_fmt, "q2", "9", "-5");
    len += (size_t)snprintf(s + len, cap - len, par_fmt, "q3", "7", "3");
    len += (size_t)snprintf(s + len, cap - len, "define void @%s(ptr %%out) {\nentry:\n", name);
    static const int slots[] = {2, 2, 3};
    for (int i = 0; i < 3; i++)
        len += (size_t)snprintf(s + len, cap - len,
                                "  %%b%d = alloca [%d x i64], align 8\n"
                                "  %%o%d = getelementptr i64, ptr %%out, i64 %d\n"
                                "  %%x%d = load i64, ptr %%o%d, align 8\n"
                                "  store i64 %%x%d, ptr %%b%d, align 8\n"
                                "  call void @GOMP_parallel(ptr @q%d, ptr %%b%d, i32 1, i32 0)\n"
                                "  %%r%d = getelementptr i64, ptr %%b%d, i64 1\n"
                                "  %%v%d = load i64, ptr %%r%d, align 8\n"
                                "  store i64 %%v%d, ptr %%o%d, align 8\n",
                                i, slots[i], i, i, i, i, i, i, i + 1, i, i, i, i, i, i, i);
    snprintf(s + len, cap - len, "  ret void\n}\n");
    return s;
}

static void test_parallel_bodies(void)
{
    char *ir = gomp_text("gomp_orig");
    LLVMContextRef C = LLVMContextCreate();
    LLVMModuleRef m = parse(C, ir);
    char *merged = NULL;
    if (CHECK(m != NULL)) {
        pm_llvm_merge_stats st;
        pm_error err = {0};
        CHECK_STATUS(pm_llvm_merge_similar(m, &st, &err), PM_OK);
        char *msg = NULL;
        CHECK(!LLVMVerifyModule(m, LLVMReturnStatusAction, &msg));
        LLVMDisposeMessage(msg);
        /* q3 equals q1 outright; q2 differs in a divisor that is no power of two */
        CHECK(st.candidates == 3 && st.classes == 1 && st.removed == 2 && st.holes == 2);
        CHECK(LLVMGetNamedFunction(m, "q1.x3") && !LLVMGetNamedFunction(m, "q2") &&
              !LLVMGetNamedFunction(m, "q3"));
        LLVMValueRef run = LLVMGetNamedFunction(m, "gomp_orig");
        LLVMSetValueName2(run, "gomp_merged", 11);
        merged = LLVMPrintModuleToString(m);
        /* every block grown past the longest (3 slots) to hold the holes array */
        CHECK(strstr(merged, "alloca [4 x i64]") && !strstr(merged, "alloca [2 x i64]") &&
              !strstr(merged, "alloca [3 x i64]"));
        LLVMDisposeModule(m);
    }
    LLVMContextDispose(C);
    static const int64_t xs[] = {0, 1, -1, 62, -62, 63, -64, 1000003, -1000003};
    for (size_t i = 0; merged && i < sizeof xs / sizeof xs[0]; i++) {
        int64_t a[3] = {xs[i], xs[i], xs[i]}, b[3] = {xs[i], xs[i], xs[i]};
        char na[32], nb[32];
        snprintf(na, sizeof na, "gomp_orig_%zu", i);
        snprintf(nb, sizeof nb, "gomp_merged_%zu", i);
        char *ta = gomp_text(na);
        char *tb = malloc(strlen(merged) + 64);
        const char *at = strstr(merged, "@gomp_merged(");
        sprintf(tb, "%.*s@%s(%s", (int)(at - merged), merged, nb, at + 13);
        if (run_entry(ta, na, a) && run_entry(tb, nb, b)) {
            CHECK(a[0] == xs[i] / 7 + 3 && a[1] == xs[i] / 9 - 5 && a[2] == xs[i] / 7 + 3);
            CHECK(memcmp(a, b, sizeof a) == 0);
        }
        free(ta);
        free(tb);
    }
    LLVMDisposeMessage(merged);
    free(ir);
}

/* The merge is on but for the full-DP upgrade of a tiered kernel, and it is in the key. */
static void test_options(void)
{
    pm_options o = pm_options_default();
    o.grouping = PM_GROUPING_TIERED;
    pm_options up = pm_options_upgraded(&o);
    CHECK(o.merge_bodies && !up.merge_bodies);
    char a[512], b[512];
    CHECK(pm_options_key(&o, a, sizeof a) > 0 && pm_options_key(&up, b, sizeof b) > 0);
    CHECK(strstr(a, " m1 ") != NULL && strstr(b, " m0 ") != NULL);
}

/* Local Laplacian's pyramid levels do merge (so the apps' differential tests, at many
 * sizes in test_optimizer, run merged bodies), as the sizes text says. */
static void test_app_merges(void)
{
    const pm_sample_app *app = pm_sample_find("local_laplacian");
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app ? app->build(ctx) : NULL;
    pm_error err = {0};
    pm_jit *jit = pm_jit_new(NULL, &err);
    if (CHECK(p && jit)) {
        pm_value est[16];
        app->params(app->quick_rows, app->quick_cols, est);
        pm_compile_options co = pm_compile_options_default();
        co.keep = "sizes";
        pm_kernel *k = pm_jit_compile(jit, p, est, &co, &err);
        const char *text = k ? pm_kernel_dump(k, "sizes") : NULL;
        const char *line = text ? strstr(text, "merged: ") : NULL;
        int merged = 0, of = 0, into = 0;
        CHECK(line && sscanf(line, "merged: %d of %d outlined bodies into %d", &merged, &of,
                             &into) == 3);
        CHECK(merged >= 20 && into >= 4 && into < merged);
        CHECK(text && strstr(text, ".x") != NULL);
        pm_kernel_free(k);
    }
    pm_jit_free(jit);
    pm_ctx_free(ctx);
}

int main(void)
{
    test_options();
    test_app_merges();
    pm_error err = {0};
    engine = pm_engine_new(0, &err);
    if (!CHECK(engine != NULL)) {
        fprintf(stderr, "engine: %s\n", err.message);
        return check_finish("test_merge");
    }
    test_merge();
    test_parallel_bodies();
    pm_engine_free(engine);
    return check_finish("test_merge");
}
