/* pm_sweep.c — compile options compared in one process, runs interleaved.
 *
 *   pm_sweep APP [--size RxC] [--threads N] [--runs N] [--offset BYTES] VARIANT...
 *
 * --offset places every buffer's data that many bytes past a 64-byte boundary (a
 * multiple of its element size), as malloc's or NumPy's 16-byte alignment may; the
 * default 0 aligns them to the cache line.
 *
 * Each VARIANT is a comma-separated list of compile options for the app's pipeline at
 * the run sizes (as estimates): "default", "fusion=0", "tile=16x512" (per dimension of
 * the group space, outermost first), "threshold=0.2", "limit=8", "grouping=1" (1 greedy,
 * 2 the capped DP, 3 the DP), "budget=N" (the groups the DP prices), "stream=1" (the outputs'
 * non-temporal stores: 1, 0, -1 = the model), "prefetch=0" (software prefetches ahead of
 * large buffers' leading reads: 1, 0, -1 = the model), "vector=8", "opt=2"
 * (LLVM's default<O2>), "cthreads=N" (the jit's compile_threads: the kernel's machine code
 * made in N parts at once; 1 = serially; default = the library's default),
 * "env=NAME:VALUE" (an environment variable set while the variant compiles and warms
 * up: for experiments behind a flag the compiler reads), or several joined with '+'
 * ("tile=16x512+threshold=0.2"). Every variant is compiled once, by a jit of its own (so
 * variants that differ only in their environment never share a cached kernel), warmed
 * up once, then the variants run in turn, round after round, so that a noisy machine
 * (a shared VM's slow periods last seconds) slows them alike; the table gives each
 * variant's median, interquartile range and minimum, and its median as a ratio of the
 * first variant's. Outputs are compared with the first variant's (max |diff|). Timings
 * belong under the bench lock: flock /tmp/pm-bench.lock pm_sweep ... */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "samples.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_VARIANTS = 16 };

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

enum { MAX_ENV = 4 };
static char env_name[MAX_ENV][64], env_value[MAX_ENV][2048];
static int nenv;
static int variant_cthreads; /* cthreads=N of the variant being parsed; 0 = default */

/* Parses one variant into o (and its environment into env_*); false on a bad one. */
static bool parse_variant(const char *spec, pm_compile_options *o)
{
    char buf[2400];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok(buf, "+"); tok; tok = strtok(NULL, "+")) {
        char *eq = strchr(tok, '=');
        if (strcmp(tok, "default") == 0)
            continue;
        if (!eq) {
            fprintf(stderr, "pm_sweep: bad option '%s'\n", tok);
            return false;
        }
        *eq = 0;
        const char *v = eq + 1;
        if (strcmp(tok, "fusion") == 0) {
            o->fusion = atoi(v);
        } else if (strcmp(tok, "threshold") == 0) {
            o->overlap_threshold = atof(v);
        } else if (strcmp(tok, "limit") == 0) {
            o->group_limit = atoi(v);
        } else if (strcmp(tok, "grouping") == 0) {
            o->grouping = atoi(v);
        } else if (strcmp(tok, "budget") == 0) {
            o->dp_budget = atoi(v);
        } else if (strcmp(tok, "stream") == 0) {
            o->stream_outputs = atoi(v);
        } else if (strcmp(tok, "prefetch") == 0) {
            o->prefetch_reads = atoi(v);
        } else if (strcmp(tok, "vector") == 0) {
            o->vector_width = atoi(v);
        } else if (strcmp(tok, "cthreads") == 0) {
            variant_cthreads = atoi(v);
        } else if (strcmp(tok, "opt") == 0) {
            o->opt_level = atoi(v);
        } else if (strcmp(tok, "env") == 0) {
            /* env=NAME:VALUE, set while this variant compiles and warms up */
            char *colon = strchr(v, ':');
            if (!colon || nenv == MAX_ENV)
                return false;
            *colon = 0;
            snprintf(env_name[nenv], sizeof env_name[nenv], "%s", v);
            snprintf(env_value[nenv], sizeof env_value[nenv], "%s", colon + 1);
            nenv++;
        } else if (strcmp(tok, "tile") == 0) {
            int d = 0;
            for (const char *p = v; *p && d < PM_MAX_DIMS; d++) {
                o->tile_size[d] = atoi(p);
                p = strchr(p, 'x');
                if (!p)
                    break;
                p++;
            }
        } else {
            fprintf(stderr, "pm_sweep: unknown option '%s'\n", tok);
            return false;
        }
    }
    return true;
}

/* b (pm_sample_buffer's, 64-byte aligned) copied to an allocation whose data starts
 * `offset` bytes past a 64-byte boundary; *base is what to free. data is NULL on failure. */
static pm_buffer offset_buffer(pm_buffer b, int offset, void **base)
{
    *base = b.data;
    if (offset == 0 || !b.data)
        return b;
    size_t bytes = (size_t)pm_sample_buffer_count(&b) * pm_type_size(b.type);
    unsigned char *p = aligned_alloc(64, (bytes + (size_t)offset + 63) / 64 * 64);
    if (p)
        memcpy(p + offset, b.data, bytes);
    free(b.data);
    *base = p;
    b.data = p ? p + offset : NULL;
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: pm_sweep APP [--size RxC] [--threads N] [--runs N] [--offset BYTES] "
                        "VARIANT...\n"
                        "  VARIANT: default | fusion=0 | tile=AxB | threshold=X | limit=N | grouping=N | budget=N | "
                        "stream=N | prefetch=N | vector=N | opt=N | cthreads=N | env=NAME:VALUE, joined with "
                        "'+'\n");
        return 2;
    }
    const pm_sample_app *app = pm_sample_find(argv[1]);
    if (!app) {
        fprintf(stderr, "pm_sweep: no app '%s'\n", argv[1]);
        return 2;
    }
    int64_t rows = app->paper_rows, cols = app->paper_cols;
    int threads = 2, runs = 20, nv = 0, offset = 0;
    const char *spec[MAX_VARIANTS];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%" SCNd64 "x%" SCNd64, &rows, &cols) != 2)
                return 2;
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) {
            offset = atoi(argv[++i]);
            if (offset < 0 || offset > 4096)
                return 2;
        } else if (nv < MAX_VARIANTS) {
            spec[nv++] = argv[i];
        }
    }
    if (nv == 0 || runs < 1)
        return 2;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? app->build(ctx) : NULL;
    if (!p) {
        fprintf(stderr, "pm_sweep: %s does not build\n", app->name);
        return 1;
    }
    pm_value params[16];
    app->params(rows, cols, params);
    int nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    pm_buffer in[8], out[MAX_VARIANTS][8];
    void *in_base[8], *out_base[MAX_VARIANTS][8];
    for (int i = 0; i < nin; i++) {
        in[i] = offset_buffer(pm_sample_buffer(p, 0, i, params), offset, &in_base[i]);
        if (!in[i].data)
            return 1;
        app->fill_input(i, &in[i], params);
    }
    pm_error err;
    pm_jit *jit[MAX_VARIANTS] = {0};
    pm_kernel *k[MAX_VARIANTS] = {0};
    double *t[MAX_VARIANTS];
    for (int v = 0; v < nv; v++) {
        pm_compile_options o = pm_compile_options_default();
        o.threads = threads;
        nenv = 0;
        variant_cthreads = 0;
        if (!parse_variant(spec[v], &o))
            return 2;
        for (int e = 0; e < nenv; e++)
            setenv(env_name[e], env_value[e], 1);
        pm_jit_options jo = pm_jit_options_default();
        jo.compile_threads = variant_cthreads;
        jit[v] = pm_jit_new(&jo, &err);
        if (!jit[v]) {
            fprintf(stderr, "pm_sweep: %s: %s\n", spec[v], err.message);
            return 2;
        }
        double t0 = now_ms();
        k[v] = pm_jit_compile(jit[v], p, params, &o, &err);
        if (!k[v]) {
            fprintf(stderr, "pm_sweep: %s: %s\n", spec[v], err.message);
            return 1;
        }
        pm_compile_stats st;
        pm_kernel_compile_stats(k[v], &st, sizeof st);
        printf("compiled %-28s %9.1f ms (isl %.0f + ast %.0f, llvm %.0f = passes %.0f, machine "
               "code %.0f in %" PRId64 " parts; IR %" PRId64 " -> %" PRId64 ")\n",
               spec[v], now_ms() - t0, st.isl_schedule_ms, st.isl_ast_ms, st.llvm_wall_ms,
               st.llvm_opt_ms, st.machine_code_ms, st.compile_parts, st.ir_instructions_before,
               st.ir_instructions_after);
        for (int i = 0; i < nout; i++)
            if (!(out[v][i] = offset_buffer(pm_sample_buffer(p, 1, i, params), offset,
                                             &out_base[v][i])).data)
                return 1;
        t[v] = calloc((size_t)runs, sizeof *t[v]);
        if (pm_kernel_run(k[v], params, in, out[v], &err) != PM_OK) { /* warm-up */
            fprintf(stderr, "pm_sweep: %s: %s\n", spec[v], err.message);
            return 1;
        }
        for (int e = 0; e < nenv; e++)
            unsetenv(env_name[e]);
    }
    for (int r = 0; r < runs; r++)
        for (int v = 0; v < nv; v++) {
            double t0 = now_ms();
            pm_kernel_run(k[v], params, in, out[v], &err);
            t[v][r] = now_ms() - t0;
        }
    printf("%s %" PRId64 "x%" PRId64 ", %d threads, %d interleaved rounds\n", app->name, rows,
           cols, threads, runs);
    printf("%-36s %9s %8s %9s %7s %10s\n", "variant", "median", "IQR", "min", "ratio", "max|diff|");
    double base = 0;
    for (int v = 0; v < nv; v++) {
        qsort(t[v], (size_t)runs, sizeof *t[v], cmp_double);
        double med = t[v][runs / 2], iqr = t[v][(3 * runs) / 4] - t[v][runs / 4];
        if (v == 0)
            base = med;
        double diff = 0;
        for (int i = 0; i < nout; i++)
            diff = fmax(diff, pm_sample_buffer_maxdiff(&out[v][i], &out[0][i]));
        printf("%-36s %9.3f %8.3f %9.3f %6.2fx %10.3g\n", spec[v], med, iqr, t[v][0], med / base, diff);
    }
    for (int v = 0; v < nv; v++) {
        pm_kernel_free(k[v]);
        pm_jit_free(jit[v]);
        for (int i = 0; i < nout; i++)
            free(out_base[v][i]);
        free(t[v]);
    }
    for (int i = 0; i < nin; i++)
        free(in_base[i]);
    pm_ctx_free(ctx);
    return 0;
}
