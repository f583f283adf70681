/* test_isolate.c — compiles in a helper process (pm_jit_options.isolate_compiles,
 * runtime/isolate.h):
 *  - an isolated compile of the blur (1 and 2 threads, 1 to 999 output points) and of
 *    Harris equals the interpreter; the kernel's
 *    compile statistics are the helper's; a kernel compiled in a helper is written to the
 *    disk cache and a new jit loads it without a helper;
 *  - the real helper under a memory limit too small for local Laplacian's compile fails
 *    that compile with PM_ERR_NOMEM or PM_ERR_COMPILE naming the limit, and the process
 *    goes on serving: a kernel it has runs right, and a later compile succeeds;
 *  - stand-in helpers (shell scripts) that crash, say they ran out of memory, hang past
 *    the time limit or answer garbage give PM_ERR_COMPILE / PM_ERR_NOMEM naming the
 *    signal, the limit or the cause, in bounded time;
 *  - a helper that starts failing while serving: pm_jit_run keeps answering with the
 *    kernel it has (the failed background compile counted);
 *  - a missing or group-writable helper makes pm_jit_new fail, naming it.
 * Needs PM_COMPILE_HELPER (test/CMakeLists.txt sets it to the build's helper).
 */
/* mkdtemp, setenv: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "samples.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static char base[256];
static char real_helper[1024];

/* blur(x) = (I(x) + I(x+1) + I(x+2)) / 3 over 0 <= x <= N-3 (f32). */
static pm_pipeline *build_blur(pm_ctx *ctx)
{
    pm_expr *N = pm_param(ctx, PM_I32, "N");
    pm_func *I = pm_image(ctx, "I", PM_F32, N);
    pm_expr *x = pm_var(ctx, "x");
    pm_func *f = pm_func_new(ctx, "blur1", PM_F32, 1, pm_exprs(x),
                             pm_intervals(pm_interval_new(pm_int(ctx, 0), pm_addi(N, -3), 1)));
    pm_func_define_expr(f, pm_mulf(pm_add(pm_add(pm_call(I, x), pm_call(I, pm_addi(x, 1))),
                                          pm_call(I, pm_addi(x, 2))),
                                   1.0 / 3.0));
    pm_pipeline *p = NULL;
    pm_pipeline_new(ctx, "blur1", 1, pm_exprs(N), 1, (pm_func *const[]){I}, 1,
                    (pm_func *const[]){f}, &p);
    return p;
}

/* The blur's kernel at n points equals the interpreter (through pm_jit_run when
 * `serve`, else pm_kernel_run). */
static bool blur_right(pm_jit *jit, pm_kernel *k, pm_pipeline *p, int64_t n, bool serve)
{
    pm_value v = PM_I(n);
    pm_buffer in = check_buffer_new(PM_F32, 1, (int64_t[]){n});
    pm_buffer want = check_buffer_new(PM_F32, 1, (int64_t[]){n - 2});
    pm_buffer got = check_buffer_new(PM_F32, 1, (int64_t[]){n - 2});
    check_fill(&in, 11u, false);
    pm_error err;
    pm_status s = serve ? pm_jit_run(jit, p, NULL, &v, &in, &got, &err)
                        : pm_kernel_run(k, &v, &in, &got, &err);
    if (s != PM_OK)
        fprintf(stderr, "  blur1 at %lld: %s\n", (long long)n, err.message);
    bool ok = s == PM_OK && pm_interpret(p, &v, &in, &want) == PM_OK &&
              check_buffer_maxdiff(&want, &got) <= 1e-6;
    check_buffer_free(&in);
    check_buffer_free(&want);
    check_buffer_free(&got);
    return ok;
}

static pm_jit *isolated_jit(int seconds, int64_t memory, pm_error *err)
{
    pm_jit_options o = pm_jit_options_default();
    o.isolate_compiles = 1;
    o.compile_seconds = seconds;
    o.compile_memory_bytes = memory;
    return pm_jit_new(&o, err);
}

static pm_cache_stats stats_of(pm_jit *jit)
{
    pm_cache_stats s;
    memset(&s, 0, sizeof s);
    pm_jit_stats(jit, &s, sizeof s);
    return s;
}

/* A sample app's kernel (compiled by jit) equals the interpreter at its quick size. */
static bool app_right(pm_kernel *k, pm_pipeline *p, const pm_sample_app *app)
{
    pm_value params[8];
    app->params(app->quick_rows, app->quick_cols, params);
    pm_buffer in[4], out = pm_sample_buffer(p, 1, 0, params), want = pm_sample_buffer(p, 1, 0, params);
    int nin = pm_pipeline_ninputs(p);
    for (int i = 0; i < nin; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_input(i, &in[i], params);
    }
    pm_error err;
    pm_status s = pm_kernel_run(k, params, in, &out, &err);
    bool ok = s == PM_OK && pm_interpret(p, params, in, &want) == PM_OK &&
              pm_sample_buffer_maxdiff(&want, &out) <= app->tolerance;
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    free(out.data);
    free(want.data);
    return ok;
}

static void test_compiles(void)
{
    pm_error err;
    pm_jit *jit = isolated_jit(0, 0, &err);
    if (!CHECK(jit != NULL)) {
        fprintf(stderr, "  pm_jit_new: %s\n", err.message);
        return;
    }
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx);
    pm_value n = PM_I(1000);
    pm_kernel *k = pm_jit_compile(jit, p, &n, NULL, &err);
    if (!CHECK(k != NULL))
        fprintf(stderr, "  isolated compile: %s\n", err.message);
    CHECK(k && blur_right(jit, k, p, 1000, false) && blur_right(jit, k, p, 3, false));
    pm_compile_stats st;
    CHECK(k && pm_kernel_compile_stats(k, &st, sizeof st) == PM_OK && st.from_disk == 0 &&
          st.ir_instructions_before > 0 && st.code_bytes > 0);
    pm_cache_stats s = stats_of(jit);
    CHECK(s.isolated_compiles == 1 && s.isolated_failures == 0 && s.sync_compiles == 1);
    pm_kernel_free(k);
    /* Kernels from the helper at 1 and 2 threads equal the interpreter at edge sizes: one
     * output point, fewer points than a vector, odd, and many vectors. */
    for (int threads = 1; threads <= 2; threads++) {
        pm_compile_options co = pm_compile_options_default();
        co.threads = threads;
        pm_value est = PM_I(37);
        pm_kernel *kt = pm_jit_compile(jit, p, &est, &co, &err);
        const int64_t sizes[] = {3, 4, 9, 17, 18, 37, 1001};
        for (size_t i = 0; kt && i < sizeof sizes / sizeof sizes[0]; i++)
            if (!CHECK(blur_right(jit, kt, p, sizes[i], false)))
                fprintf(stderr, "  %d threads, %lld points\n", threads, (long long)sizes[i]);
        CHECK(kt != NULL);
        pm_kernel_free(kt);
    }
    /* An app with several groups, compiled in parts by the helper. */
    pm_pipeline *h = pm_sample_harris.build(ctx);
    pm_value params[8];
    pm_sample_harris.params(pm_sample_harris.quick_rows, pm_sample_harris.quick_cols, params);
    k = pm_jit_compile(jit, h, params, NULL, &err);
    CHECK(k && app_right(k, h, &pm_sample_harris));
    pm_kernel_free(k);
    /* Phase texts asked for: compiled here, not in a helper. */
    pm_compile_options co = pm_compile_options_default();
    co.keep = "ast";
    k = pm_jit_compile(jit, p, &n, &co, &err);
    CHECK(k && pm_kernel_dump(k, "ast") != NULL && stats_of(jit).isolated_compiles == 4);
    pm_kernel_free(k);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

/* Isolated compiles fill the disk cache; a new jit (without isolation) loads them. */
static void test_disk_cache(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/cache", base);
    pm_error err;
    for (int round = 0; round < 2; round++) {
        pm_jit *jit = round == 0 ? isolated_jit(0, 0, &err) : pm_jit_new(NULL, &err);
        pm_cache_policy policy = pm_cache_policy_default();
        policy.disk_dir = dir;
        CHECK(jit && pm_jit_set_policy(jit, &policy, &err) == PM_OK);
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = build_blur(ctx);
        pm_value n = PM_I(500);
        pm_kernel *k = jit ? pm_jit_compile(jit, p, &n, NULL, &err) : NULL;
        CHECK(k && blur_right(jit, k, p, 77, false));
        pm_cache_stats s = stats_of(jit);
        if (round == 0)
            CHECK(s.isolated_compiles == 1 && s.disk_writes == 1);
        else
            CHECK(s.disk_hits == 1 && s.sync_compiles == 0 && s.isolated_compiles == 0);
        pm_kernel_free(k);
        pm_ctx_free(ctx);
        pm_jit_free(jit);
    }
}

/* The real helper under a memory limit below what any compile needs (libLLVM's mapping
 * alone takes most of it): local Laplacian's and the blur's compiles fail with
 * PM_ERR_NOMEM naming the limit, and the process goes on serving with another jit's
 * kernels and compiles. */
static void test_memory_limit(void)
{
    if (SANITIZED) {
        printf("isolate: skipped the memory-limit test: a sanitizer's shadow memory needs the "
               "address space a limit would take\n");
        return;
    }
    pm_error err;
    pm_jit *serving = isolated_jit(0, 0, &err);
    if (!CHECK(serving != NULL))
        return;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx);
    CHECK(blur_right(serving, NULL, p, 64, true));
    pm_pipeline *ll = pm_sample_local_laplacian.build(ctx);
    pm_value params[8];
    pm_sample_local_laplacian.params(2560, 1536, params);
    pm_pipeline *both[2] = {ll, p};
    /* 100 MiB: the helper runs out reading its request and says so; 150 MiB: LLVM's
     * allocations fail and it aborts (its last words say so). Either is PM_ERR_NOMEM. */
    const int limits_mb[] = {100, 150};
    for (int l = 0; l < 2; l++) {
        pm_jit *tight = isolated_jit(0, (int64_t)limits_mb[l] << 20, &err);
        char want[64];
        snprintf(want, sizeof want, "under its limit of %d MiB", limits_mb[l]);
        for (int i = 0; tight && i < 2; i++) {
            pm_kernel *k = pm_jit_compile(tight, both[i], i == 0 ? params : NULL, NULL, &err);
            CHECK(k == NULL);
            if (!CHECK_STATUS(err.status, PM_ERR_NOMEM))
                fprintf(stderr, "  %s\n", err.message);
            CHECK_CONTAINS(err.message, i == 0 ? "local_laplacian: " : "blur1: ");
            CHECK_CONTAINS(err.message, want);
            printf("isolate: %s under %d MiB: %s: %s\n", i == 0 ? "local Laplacian" : "blur",
                   limits_mb[l], pm_status_name(err.status), err.message);
            pm_kernel_free(k);
        }
        CHECK(tight && stats_of(tight).isolated_failures == 2);
        pm_jit_free(tight);
    }
    /* This process goes on: the kernel it has runs, new sizes compile. */
    CHECK(blur_right(serving, NULL, p, 64, true));
    CHECK(blur_right(serving, NULL, p, 4096, true));
    pm_jit_wait_idle(serving);
    pm_cache_stats t = stats_of(serving);
    CHECK(t.isolated_failures == 0 && t.isolated_compiles == 2);
    pm_ctx_free(ctx);
    pm_jit_free(serving);
}

/* A stand-in helper: a shell script of `body`, made private and executable. */
static void write_helper(const char *name, const char *body, char *path, size_t size)
{
    snprintf(path, size, "%s/%s", base, name);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "#!/bin/sh\n%s\n", body);
        fclose(f);
    }
    chmod(path, 0700);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct stand_in {
    const char *name, *body;
    pm_status want;
    const char *says;
} stand_in;

static void test_stand_ins(void)
{
    const stand_in cases[] = {
        {"crash", "kill -SEGV $$", PM_ERR_COMPILE, "died of signal 11"},
        {"oom", "echo 'LLVM ERROR: out of memory' >&2; kill -ABRT $$", PM_ERR_NOMEM,
         "ran out of memory under its limit of 8192 MiB"},
        {"hang", "exec sleep 60", PM_ERR_COMPILE, "at its time limit of 2 s"},
        {"exit", "echo 'cannot go on' >&2; exit 7", PM_ERR_COMPILE,
         "exited with status 7; its last words: cannot go on"},
        {"garbage", "cat > /dev/null; echo PMCREP01garbage", PM_ERR_COMPILE, "no valid reply"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        write_helper(cases[i].name, cases[i].body, path, sizeof path);
        setenv("PM_COMPILE_HELPER", path, 1);
        pm_error err;
        pm_jit *jit = isolated_jit(2, 0, &err);
        if (!CHECK(jit != NULL))
            continue;
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = build_blur(ctx);
        double t0 = now_s();
        pm_kernel *k = pm_jit_compile(jit, p, NULL, NULL, &err);
        double took = now_s() - t0;
        CHECK(k == NULL && took < 10);
        if (!CHECK_STATUS(err.status, cases[i].want))
            fprintf(stderr, "  %s: %s\n", cases[i].name, err.message);
        CHECK_CONTAINS(err.message, "blur1: the compile helper");
        CHECK_CONTAINS(err.message, cases[i].says);
        CHECK(stats_of(jit).isolated_failures == 1);
        pm_ctx_free(ctx);
        pm_jit_free(jit);
    }
    setenv("PM_COMPILE_HELPER", real_helper, 1);
}

/* Serving goes on with the kernels it has when the helper starts failing. */
static void test_serving_goes_on(void)
{
    char flag[512], path[512], body[2048];
    snprintf(flag, sizeof flag, "%s/broken", base);
    snprintf(body, sizeof body, "if [ -e '%s' ]; then kill -SEGV $$; fi\nexec '%s' \"$@\"", flag,
             real_helper);
    write_helper("flaky", body, path, sizeof path);
    setenv("PM_COMPILE_HELPER", path, 1);
    pm_error err;
    pm_jit *jit = isolated_jit(0, 0, &err);
    setenv("PM_COMPILE_HELPER", real_helper, 1);
    if (!CHECK(jit != NULL))
        return;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = build_blur(ctx);
    CHECK(blur_right(jit, NULL, p, 100, true)); /* the first: compiled, by a working helper */
    FILE *f = fopen(flag, "w");
    if (f)
        fclose(f);
    CHECK(blur_right(jit, NULL, p, 5000, true)); /* a new bucket: served by the kernel it has */
    pm_jit_wait_idle(jit);
    CHECK(blur_right(jit, NULL, p, 5000, true));
    pm_cache_stats s = stats_of(jit);
    CHECK(s.failed_compiles == 1 && s.isolated_failures == 1 && s.fallback_runs >= 2);
    unlink(flag);
    pm_ctx_free(ctx);
    pm_jit_free(jit);
}

static void test_bad_helpers(void)
{
    pm_error err;
    setenv("PM_COMPILE_HELPER", "/no/such/helper", 1);
    CHECK(isolated_jit(0, 0, &err) == NULL);
    CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
    CHECK_CONTAINS(err.message, "PM_COMPILE_HELPER \"/no/such/helper\" is not used");
    char path[512];
    write_helper("open", "exit 0", path, sizeof path);
    chmod(path, 0770);
    setenv("PM_COMPILE_HELPER", path, 1);
    CHECK(isolated_jit(0, 0, &err) == NULL);
    CHECK_CONTAINS(err.message, "writable by group or others");
    setenv("PM_COMPILE_HELPER", real_helper, 1);
    pm_jit_options o = pm_jit_options_default();
    o.isolate_compiles = 2;
    CHECK(pm_jit_new(&o, &err) == NULL);
    CHECK_CONTAINS(err.message, "isolate_compiles = 2");
    o.isolate_compiles = 1;
    o.compile_seconds = -1;
    CHECK(pm_jit_new(&o, &err) == NULL);
    CHECK_CONTAINS(err.message, "compile_seconds = -1");
}

int main(void)
{
    const char *helper = getenv("PM_COMPILE_HELPER");
    if (!CHECK(helper && *helper)) { /* test/CMakeLists.txt sets it */
        fprintf(stderr, "  PM_COMPILE_HELPER is not set: run through ctest\n");
        return check_finish("isolate");
    }
    snprintf(real_helper, sizeof real_helper, "%s", helper);
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/pm_isolate_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!CHECK(mkdtemp(base) != NULL))
        return check_finish("isolate");
    test_compiles();
    test_disk_cache();
    test_memory_limit();
    test_stand_ins();
    test_serving_goes_on();
    test_bad_helpers();
    char rm[300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", base);
    CHECK(system(rm) == 0);
    return check_finish("isolate");
}
