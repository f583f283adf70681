/* call_cost.c — pm_call_cost: what one pm_kernel_run costs when C calls it, the baseline
 * of the call-cost rows of `make bench-python` (python/bench/bench.py), which times the
 * same kernel called from Python (Kernel.__call__ with out=) and reports the difference.
 *
 *   pm_call_cost TEXT_FILE THREADS CALLS BATCHES VALUE...
 *
 * Reads a canonical text (pm_pipeline_from_text: the same pipeline, so the same kernel),
 * compiles it with a default jit, the VALUEs (one per parameter, in the pipeline's order,
 * written i:8 or f:0.5) as estimates and THREADS as the compile option threads, exactly
 * as polymage.compile(pipeline, estimates, threads=THREADS) does; runs it on zeroed dense
 * buffers of the pipeline's shapes (64-byte aligned), CALLS times as a warm-up, then
 * BATCHES batches of CALLS calls, and prints one line per batch: the mean nanoseconds of
 * one call ("ns_per_call 812.4"). Exit status 1 (a message on stderr) on any failure.
 * Not a test; time it under the bench lock (/work/shared/tools/timed or flock). */
#define _POSIX_C_SOURCE 200809L
#include <polymage.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_PARAMS = 64, MAX_BUFFERS = 64 };

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *s = malloc(cap);
    for (size_t got; s && (got = fread(s + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *t = realloc(s, cap *= 2);
            if (!t)
                free(s);
            s = t;
        }
    }
    fclose(f);
    *len = n;
    return s;
}

/* "i:8" or "f:0.5"; 0 on success. */
static int parse_value(const char *arg, pm_value *v)
{
    char *end = NULL;
    if (!strncmp(arg, "i:", 2))
        v->i = strtoll(arg + 2, &end, 10);
    else if (!strncmp(arg, "f:", 2))
        v->f = strtod(arg + 2, &end);
    return end && end != arg + 2 && *end == 0 ? 0 : -1;
}

/* A zeroed dense buffer of the pipeline's shape for input or output `index`. */
static int make_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params,
                       pm_buffer *b)
{
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    if (pm_pipeline_buffer_shape(p, is_output, index, params, &ndims, extents) != PM_OK)
        return -1;
    *b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    size_t bytes = pm_type_size(b->type);
    for (int d = 0; d < ndims; d++)
        bytes *= (size_t)(extents[d] > 0 ? extents[d] : 0);
    bytes = (bytes + 63) / 64 * 64;
    if (!(b->data = aligned_alloc(64, bytes ? bytes : 64)))
        return -1;
    memset(b->data, 0, bytes ? bytes : 64);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return fprintf(stderr, "usage: pm_call_cost TEXT_FILE THREADS CALLS BATCHES "
                               "VALUE... (i:8 or f:0.5 per parameter)\n"), 2;
    int threads = atoi(argv[2]), calls = atoi(argv[3]), batches = atoi(argv[4]);
    size_t len = 0;
    char *text = read_file(argv[1], &len);
    if (!text || calls < 1 || batches < 1)
        return fprintf(stderr, "pm_call_cost: cannot read %s, or CALLS/BATCHES < 1\n",
                       argv[1]), 1;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = NULL;
    if (!ctx || pm_pipeline_from_text(ctx, text, len, &p) != PM_OK)
        return fprintf(stderr, "pm_call_cost: %s\n", ctx ? pm_ctx_errmsg(ctx) : "no memory"), 1;
    free(text);
    int np = pm_pipeline_nparams(p), nin = pm_pipeline_ninputs(p), nout = pm_pipeline_noutputs(p);
    if (np != argc - 5 || np > MAX_PARAMS || nin > MAX_BUFFERS || nout > MAX_BUFFERS)
        return fprintf(stderr, "pm_call_cost: %s has %d parameters, %d values given\n",
                       pm_pipeline_name(p), np, argc - 5), 1;
    pm_value params[MAX_PARAMS];
    for (int i = 0; i < np; i++)
        if (parse_value(argv[5 + i], &params[i]) < 0)
            return fprintf(stderr, "pm_call_cost: value %s is not i:INT or f:FLOAT\n",
                           argv[5 + i]), 1;
    pm_buffer in[MAX_BUFFERS], out[MAX_BUFFERS];
    for (int i = 0; i < nin + nout; i++)
        if (make_buffer(p, i >= nin, i >= nin ? i - nin : i, params, i >= nin ? &out[i - nin]
                                                                          : &in[i]) < 0)
            return fprintf(stderr, "pm_call_cost: no buffer %d\n", i), 1;

    pm_error err = {0};
    pm_jit *jit = pm_jit_new(NULL, &err);
    pm_compile_options o = pm_compile_options_default();
    o.threads = threads;
    pm_kernel *k = jit ? pm_jit_compile(jit, p, params, &o, &err) : NULL;
    if (!k)
        return fprintf(stderr, "pm_call_cost: %s\n", err.message), 1;
    for (int b = -1; b < batches; b++) { /* batch -1: the warm-up */
        double t0 = now_ns();
        for (int c = 0; c < calls; c++)
            if (pm_kernel_run(k, params, in, out, &err) != PM_OK)
                return fprintf(stderr, "pm_call_cost: %s\n", err.message), 1;
        double t = (now_ns() - t0) / calls;
        if (b >= 0)
            printf("ns_per_call %.1f\n", t);
    }
    pm_kernel_free(k);
    pm_jit_free(jit);
    for (int i = 0; i < nin; i++)
        free(in[i].data);
    for (int i = 0; i < nout; i++)
        free(out[i].data);
    pm_ctx_free(ctx);
    return 0;
}
