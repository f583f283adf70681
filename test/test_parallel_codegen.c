/* test_parallel_codegen.c — kernels compiled as several parts at once
 * (pm_jit_options.compile_threads: the groups' isl ASTs in contexts of their own,
 * codegen/ast.c, and the module's parts, runtime/split_compile.c):
 *  - each of the seven sample apps, compiled with compile_threads 1, 2 and 3 (a jit each:
 *    the option is the jit's), computes outputs bit-identical to one another (memcmp)
 *    and equal to the interpreter within the app's tolerance; camera pipe also unfused
 *    (fusion = 0: every stage a group of its own);
 *  - the statistics of a split compile are consistent: more than one part for the big
 *    apps, at most compile_threads parts, the wall-time parts add up to the total, IR
 *    instruction counts and code bytes present;
 *  - kernels asked to keep the optimized module's text or its assembly take the serial
 *    path (one part) and keep the texts;
 *  - several threads of the caller compile different pipelines at once in one jit with
 *    compile_threads = 2, each getting the serial kernel's outputs;
 *  - bad compile_threads values (and a bad PM_COMPILE_THREADS) are PM_ERR_ARGUMENT naming
 *    the field.
 * Timing-free: no assertion depends on how long anything took. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* An app's pipeline and its buffers at a small size. */
typedef struct app_run {
    const pm_sample_app *app;
    pm_ctx *ctx;
    pm_pipeline *p;
    pm_value params[8];
    int ninputs, noutputs;
    pm_buffer in[4], want[2];
} app_run;

static bool run_open(app_run *r, const char *name)
{
    memset(r, 0, sizeof *r);
    r->app = pm_sample_find(name);
    if (!CHECK(r->app != NULL))
        return false;
    r->ctx = pm_ctx_new();
    r->p = r->app->build(r->ctx);
    if (!CHECK(r->p != NULL))
        return false;
    r->app->params(r->app->quick_rows, r->app->quick_cols, r->params);
    r->ninputs = pm_pipeline_ninputs(r->p);
    r->noutputs = pm_pipeline_noutputs(r->p);
    for (int i = 0; i < r->ninputs; i++) {
        r->in[i] = pm_sample_buffer(r->p, 0, i, r->params);
        if (!CHECK(r->in[i].data != NULL))
            return false;
        r->app->fill_input(i, &r->in[i], r->params);
    }
    for (int i = 0; i < r->noutputs; i++) {
        r->want[i] = pm_sample_buffer(r->p, 1, i, r->params);
        if (!CHECK(r->want[i].data != NULL))
            return false;
    }
    return CHECK_STATUS(pm_interpret(r->p, r->params, r->in, r->want), PM_OK);
}

static void run_close(app_run *r)
{
    for (int i = 0; i < r->ninputs; i++)
        free(r->in[i].data);
    for (int i = 0; i < r->noutputs; i++)
        free(r->want[i].data);
    pm_ctx_free(r->ctx);
}

static size_t buffer_bytes(const pm_buffer *b)
{
    return (size_t)pm_sample_buffer_count(b) * pm_type_size(b->type);
}

static pm_jit *new_jit(int compile_threads)
{
    pm_jit_options o = pm_jit_options_default();
    /* Kernels run on the calling thread: this test is about compiling, and make
     * test-tsan cannot see libgomp hand a tile's scratch to its workers. The code is
     * the same (parallel loops are outlined whatever the count). */
    o.threads = 1;
    o.compile_threads = compile_threads;
    pm_error err;
    pm_jit *jit = pm_jit_new(&o, &err);
    if (!CHECK(jit != NULL))
        fprintf(stderr, "  pm_jit_new(compile_threads %d): %s\n", compile_threads, err.message);
    return jit;
}

/* Runs k on r's inputs into freshly allocated outputs (out[]); false on failure. */
static bool run_kernel(app_run *r, pm_kernel *k, pm_buffer *out)
{
    for (int i = 0; i < r->noutputs; i++)
        out[i] = pm_sample_buffer(r->p, 1, i, r->params);
    pm_error err;
    pm_status s = pm_kernel_run(k, r->params, r->in, out, &err);
    if (!CHECK_STATUS(s, PM_OK)) {
        fprintf(stderr, "  %s: %s\n", r->app->name, err.message);
        return false;
    }
    return true;
}

/* The statistics' consistency (no timings compared with constants). */
static void check_stats(const char *what, const pm_kernel *k, int compile_threads)
{
    pm_compile_stats st;
    if (!CHECK_STATUS(pm_kernel_compile_stats(k, &st, sizeof st), PM_OK))
        return;
    CHECK(st.compile_parts >= 1 && st.compile_parts <= compile_threads);
    double sum = st.isl_schedule_ms + st.isl_ast_ms + st.ir_build_ms + st.dump_ms +
                 st.llvm_wall_ms + st.link_ms;
    if (!CHECK(fabs(sum + st.other_ms - st.total_ms) < 1e-6 && st.other_ms >= -1e-6))
        fprintf(stderr, "  %s: parts %f + other %f != total %f\n", what, sum, st.other_ms,
                st.total_ms);
    CHECK(st.llvm_opt_ms > 0 && st.machine_code_ms > 0 && st.llvm_wall_ms > 0);
    CHECK(st.llvm_wall_ms <= st.total_ms);
    double parts_ms = st.llvm_wall_ms * (double)st.compile_parts + 1e-6;
    CHECK(st.llvm_opt_ms <= parts_ms && st.machine_code_ms <= parts_ms);
    if (st.compile_parts == 1)
        CHECK(fabs(st.llvm_wall_ms - (st.llvm_opt_ms + st.machine_code_ms)) < 1e-6);
    CHECK(st.ir_instructions_before > 0 && st.ir_instructions_after > 0);
    CHECK(st.ir_functions >= st.compile_parts && st.code_bytes > 0 && st.from_disk == 0);
}

static pm_jit *jits[4]; /* by compile_threads 1..3 */

/* One app at compile_threads 1, 2, 3: outputs bit-identical, equal to the interpreter. */
static void test_app(const char *name, int fusion)
{
    app_run r;
    if (!run_open(&r, name)) {
        run_close(&r);
        return;
    }
    pm_buffer first[2] = {{0}};
    pm_compile_options co = pm_compile_options_default();
    co.fusion = fusion;
    for (int ct = 1; ct <= 3; ct++) {
        pm_error err;
        pm_kernel *k = pm_jit_compile(jits[ct], r.p, r.params, &co, &err);
        if (!CHECK(k != NULL)) {
            fprintf(stderr, "  %s (compile_threads %d): %s\n", name, ct, err.message);
            continue;
        }
        char what[96];
        snprintf(what, sizeof what, "%s fusion %d compile_threads %d", name, fusion, ct);
        check_stats(what, k, ct);
        pm_compile_stats st;
        pm_kernel_compile_stats(k, &st, sizeof st);
        if (ct == 1)
            CHECK(st.compile_parts == 1);
        /* Big enough to split into as many parts as threads (several groups each). */
        bool big = strcmp(name, "camera_pipe") == 0 || strcmp(name, "local_laplacian") == 0 ||
                   strcmp(name, "pyramid_blend") == 0 || strcmp(name, "interpolate") == 0;
        if (big && !CHECK(st.compile_parts == ct))
            fprintf(stderr, "  %s: %lld parts\n", what, (long long)st.compile_parts);
        pm_buffer out[2] = {{0}};
        if (run_kernel(&r, k, out)) {
            for (int i = 0; i < r.noutputs; i++) {
                double d = pm_sample_buffer_maxdiff(&r.want[i], &out[i]);
                if (!CHECK(d <= r.app->tolerance))
                    fprintf(stderr, "  %s: output %d differs from the interpreter by %g\n",
                            what, i, d);
                if (ct > 1 && first[i].data &&
                    !CHECK(memcmp(first[i].data, out[i].data, buffer_bytes(&out[i])) == 0))
                    fprintf(stderr, "  %s: output %d not bit-identical to the serial one\n",
                            what, i);
            }
        }
        for (int i = 0; i < r.noutputs; i++) {
            if (ct == 1)
                first[i] = out[i];
            else
                free(out[i].data);
        }
        pm_kernel_free(k);
    }
    for (int i = 0; i < r.noutputs; i++)
        free(first[i].data);
    run_close(&r);
}

/* Texts of the optimized module or its assembly: the serial path, texts kept. */
static void test_texts_serial(void)
{
    app_run r;
    if (!run_open(&r, "camera_pipe")) {
        run_close(&r);
        return;
    }
    const char *keeps[] = {"llvm", "asm"};
    for (int i = 0; i < 2; i++) {
        pm_compile_options co = pm_compile_options_default();
        co.keep = keeps[i];
        pm_error err;
        pm_kernel *k = pm_jit_compile(jits[2], r.p, r.params, &co, &err);
        if (!CHECK(k != NULL))
            continue;
        pm_compile_stats st;
        pm_kernel_compile_stats(k, &st, sizeof st);
        CHECK(st.compile_parts == 1);
        const char *text = pm_kernel_dump(k, keeps[i]);
        CHECK(text != NULL && strlen(text) > 100);
        pm_buffer out[2] = {{0}};
        if (run_kernel(&r, k, out))
            CHECK(pm_sample_buffer_maxdiff(&r.want[0], &out[0]) <= r.app->tolerance);
        for (int o = 0; o < r.noutputs; o++)
            free(out[o].data);
        pm_kernel_free(k);
    }
    run_close(&r);
}

/* ---- compiles from several threads at once ------------------------------------------- */

typedef struct compile_job {
    const char *name;
    pm_jit *jit;
    bool ok;
} compile_job;

static void *compile_and_check(void *arg)
{
    compile_job *j = arg;
    app_run r;
    j->ok = false;
    if (run_open(&r, j->name)) {
        pm_error err;
        pm_kernel *k = pm_jit_compile(j->jit, r.p, r.params, NULL, &err);
        pm_buffer out[2] = {{0}};
        if (k && run_kernel(&r, k, out)) {
            j->ok = true;
            for (int i = 0; i < r.noutputs; i++)
                j->ok = j->ok && pm_sample_buffer_maxdiff(&r.want[i], &out[i]) <= r.app->tolerance;
        } else if (!k) {
            fprintf(stderr, "  %s: %s\n", j->name, err.message);
        }
        for (int i = 0; i < r.noutputs; i++)
            free(out[i].data);
        pm_kernel_free(k);
    }
    run_close(&r);
    return NULL;
}

static void test_concurrent_compiles(void)
{
    pm_jit *jit = new_jit(2);
    if (!jit)
        return;
    const char *names[] = {"camera_pipe", "pyramid_blend", "bilateral_grid", "harris",
                           "camera_pipe"};
    enum { N = sizeof names / sizeof names[0] };
    compile_job jobs[N];
    pthread_t t[N];
    bool started[N];
    for (int i = 0; i < N; i++) {
        jobs[i] = (compile_job){names[i], jit, false};
        started[i] = pthread_create(&t[i], NULL, compile_and_check, &jobs[i]) == 0;
        CHECK(started[i]);
    }
    for (int i = 0; i < N; i++)
        if (started[i]) {
            pthread_join(t[i], NULL);
            if (!CHECK(jobs[i].ok))
                fprintf(stderr, "  concurrent %s failed\n", names[i]);
        }
    pm_jit_free(jit);
}

/* ---- bad values ------------------------------------------------------------------------ */

static void test_bad_values(void)
{
    const int bad[] = {-1, 65, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pm_jit_options o = pm_jit_options_default();
        o.compile_threads = bad[i];
        pm_error err;
        CHECK(pm_jit_new(&o, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "compile_threads");
    }
    /* The environment variable, read when the option is 0; the option wins over it. */
    const char *bad_env[] = {"0", "abc", "2x", "65", "-3"};
    for (size_t i = 0; i < sizeof bad_env / sizeof bad_env[0]; i++) {
        setenv("PM_COMPILE_THREADS", bad_env[i], 1);
        pm_error err;
        CHECK(pm_jit_new(NULL, &err) == NULL);
        CHECK_STATUS(err.status, PM_ERR_ARGUMENT);
        CHECK_CONTAINS(err.message, "PM_COMPILE_THREADS");
        pm_jit_options o = pm_jit_options_default();
        o.compile_threads = 2;
        pm_jit *jit = pm_jit_new(&o, &err);
        CHECK(jit != NULL);
        pm_jit_free(jit);
    }
    unsetenv("PM_COMPILE_THREADS");
    /* An older caller's struct (no compile_threads): the default. */
    pm_jit_options old = pm_jit_options_default();
    old.size = 24;
    pm_error err;
    pm_jit *jit = pm_jit_new(&old, &err);
    CHECK(jit != NULL);
    pm_jit_free(jit);
}

int main(void)
{
    unsetenv("PM_COMPILE_THREADS"); /* the options below say it */
    test_bad_values();
    for (int ct = 1; ct <= 3; ct++)
        jits[ct] = new_jit(ct);
    if (jits[1] && jits[2] && jits[3]) {
        int n = 0;
        const pm_sample_app *apps = pm_sample_apps(&n);
        for (int a = 0; a < n; a++)
            test_app(apps[a].name, 1);
        test_app("camera_pipe", 0);
        test_app("harris", 0);
        test_texts_serial();
    }
    for (int ct = 1; ct <= 3; ct++)
        pm_jit_free(jits[ct]);
    test_concurrent_compiles();
    return check_finish("parallel_codegen");
}
