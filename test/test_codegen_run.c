/* test_codegen_run.c — compiled code gives the interpreter's answer.
 *
 * Each pipeline is compiled by pm_codegen, JIT-compiled with the runtime's engine
 * (runtime/jit_engine.h; pm_jit_compile will wrap the same steps) and run on random
 * inputs next to pm_interpret: sizes 1x1, smaller than a vector, odd, not divisible by
 * the vector width, large; vector widths 1 and 16; 1 and 2 threads. Output buffers start
 * with the same garbage on both sides, so points covered by no case must stay untouched.
 * Integers compare exactly, floats within the sample's tolerance. */
#include "check.h"
#include "samples.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_include)
#if __has_include(<llvm-c/Core.h>)
#define HAVE_LLVM_HEADERS 1
#endif
#endif

#ifndef HAVE_LLVM_HEADERS
int main(void)
{
    printf("codegen_run: skipped (LLVM headers not on the include path)\n");
    return 0;
}
#else
#include "codegen/codegen.h"
#include "runtime/jit_engine.h"
#include "runtime/rt.h"
#include "runtime/scratch.h"

#include <llvm-c/Orc.h>

typedef int32_t (*entry_fn)(const pm_value *, const pm_buffer *, pm_buffer *, pm_run_ctx *);

static pm_engine *engine;

typedef struct kernel {
    pm_engine_code *code;
    entry_fn fn;
    pm_scratch_pool *pool;
    int threads;
} kernel;

static bool kernel_compile(kernel *k, pm_pipeline *p, int width, int threads)
{
    memset(k, 0, sizeof *k);
    pm_error err = {0};
    LLVMTargetMachineRef tm = pm_engine_target_machine_new(engine, 3, &err);
    if (!CHECK(tm != NULL))
        return false;
    LLVMOrcThreadSafeContextRef ts = LLVMOrcCreateNewThreadSafeContext();
    pm_codegen_options o = {width, threads, 0, NULL, tm};
    if (getenv("PM_TEST_VERBOSE")) {
        o.dump_mask = PM_DUMP_DOMAINS | PM_DUMP_AST;
        o.dump_to = stderr;
    }
    pm_codegen_result r;
    pm_status st = pm_codegen(p, NULL, &o, LLVMOrcThreadSafeContextGetContext(ts), &r, &err);
    bool ok = CHECK_STATUS(st, PM_OK);
    char name[64];
    if (ok) {
        pm_engine_unique_name(engine, "k", name, sizeof name);
        ok = CHECK_STATUS(pm_engine_prepare_module(r.module, tm, r.entry_name, name, &err), PM_OK) &&
             CHECK_STATUS(pm_engine_optimize(r.module, tm, 3, &err), PM_OK);
    }
    if (ok) {
        LLVMModuleRef m = r.module;
        r.module = NULL;
        ok = CHECK_STATUS(pm_engine_add_module(engine, m, ts, &k->code, &err), PM_OK);
    }
    void *addr = NULL;
    if (ok)
        ok = CHECK_STATUS(pm_engine_lookup(engine, name, &addr, &err), PM_OK);
    if (!ok)
        fprintf(stderr, "  %s: %s\n", pm_pipeline_name(p), err.message);
    k->fn = (entry_fn)addr;
    k->pool = pm_scratch_pool_new(r.nslots);
    k->threads = threads > 0 ? threads : 2;
    pm_codegen_result_free(&r);
    LLVMOrcDisposeThreadSafeContext(ts);
    LLVMDisposeTargetMachine(tm);
    return ok;
}

static void kernel_free(kernel *k)
{
    pm_engine_code_free(k->code);
    pm_scratch_pool_free(k->pool);
}

static void fill_strides(pm_buffer *b)
{
    int64_t s = 1;
    for (int d = b->ndims - 1; d >= 0; d--) {
        b->stride[d] = s;
        s *= b->extent[d];
    }
}

static int kernel_run(kernel *k, const pm_value *params, pm_buffer *in, int nin, pm_buffer *out,
                      int nout)
{
    for (int i = 0; i < nin; i++)
        fill_strides(&in[i]);
    for (int i = 0; i < nout; i++)
        fill_strides(&out[i]);
    pm_run_ctx rt = {0};
    rt.scratch = pm_scratch_pool_checkout(k->pool);
    rt.threads = k->threads;
    int r = k->fn(params, in, out, &rt);
    pm_scratch_pool_return(k->pool, rt.scratch);
    return r;
}

/* Runs p compiled and interpreted at params; returns the largest output difference. */
static double compare(pm_pipeline *p, const pm_value *params, int width, int threads,
                      const pm_sample_app *app)
{
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    pm_buffer in[8], want[8], got[8];
    for (int i = 0; i < nin; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 0, i, params, &nd, ext);
        in[i] = check_buffer_new(pm_func_type(pm_pipeline_input(p, i)), nd, ext);
        if (app && app->fill_input)
            app->fill_input(i, &in[i], params);
        else
            check_fill(&in[i], 17u + (unsigned)i, false);
    }
    for (int i = 0; i < nout; i++) {
        int nd;
        int64_t ext[PM_MAX_DIMS];
        pm_pipeline_buffer_shape(p, 1, i, params, &nd, ext);
        pm_type t = pm_func_type(pm_pipeline_output(p, i));
        want[i] = check_buffer_new(t, nd, ext);
        got[i] = check_buffer_new(t, nd, ext);
        check_fill(&want[i], 99u, false);
        check_fill(&got[i], 99u, false);
    }
    double diff = INFINITY;
    pm_status st = pm_interpret(p, params, in, want);
    kernel k;
    if (CHECK_STATUS(st, PM_OK) && kernel_compile(&k, p, width, threads)) {
        if (CHECK(kernel_run(&k, params, in, nin, got, nout) == 0)) {
            diff = 0;
            for (int i = 0; i < nout; i++) {
                double d = check_buffer_maxdiff(&want[i], &got[i]);
                if (d > diff)
                    diff = d;
            }
        }
        kernel_free(&k);
    } else if (st != PM_OK) {
        fprintf(stderr, "  interpreter: %s\n", "(see the pipeline's context)");
    }
    for (int i = 0; i < nin; i++)
        check_buffer_free(&in[i]);
    for (int i = 0; i < nout; i++) {
        check_buffer_free(&want[i]);
        check_buffer_free(&got[i]);
    }
    return diff;
}

#define CHECK_SAME(p, params, width, threads, tol)                                       \
    do {                                                                                 \
        double d_ = compare((p), (params), (width), (threads), NULL);                   \
        if (!CHECK(d_ <= (tol)))                                                         \
            fprintf(stderr, "  %s W=%d threads=%d: max diff %g\n", pm_pipeline_name(p),  \
                    (width), (threads), d_);                                             \
    } while (0)

/* ---- the samples ------------------------------------------------------------------------ */

static void test_samples(void)
{
    int n = 0;
    const pm_sample_app *apps = pm_sample_apps(&n);
    static const int64_t sizes[][2] = {{1, 1}, {3, 5}, {17, 33}, {40, 61}};
    for (int a = 0; a < n; a++) {
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = apps[a].build(ctx);
        for (int s = 0; p && s < 4; s++) {
            pm_value params[16];
            apps[a].params(sizes[s][0], sizes[s][1], params);
            for (int w = 0; w < 2; w++) {
                int width = w ? 16 : 1, threads = w ? 2 : 1;
                double d = compare(p, params, width, threads, &apps[a]);
                if (!CHECK(d <= apps[a].tolerance))
                    fprintf(stderr, "  %s %lldx%lld W=%d threads=%d: max diff %g\n", apps[a].name,
                            (long long)sizes[s][0], (long long)sizes[s][1], width, threads, d);
            }
        }
        pm_ctx_free(ctx);
    }
}

int main(void)
{
    pm_error err = {0};
    engine = pm_engine_new(3, &err);
    if (!CHECK(engine != NULL)) {
        fprintf(stderr, "%s\n", err.message);
        return check_finish("codegen_run");
    }
    test_samples();
    pm_engine_free(engine);
    return check_finish("codegen_run");
}
#endif
