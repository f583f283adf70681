/* isolate_helper.c — the compile helper's side of runtime/isolate.c's protocol: reads one
 * request, compiles it with a jit of its own, writes the reply (see isolate.h).
 *
 * It sits above the jit (it makes one), while the caller's side sits below the compile
 * that uses it: two files, so that calls run one way.
 */
#include "runtime/isolate.h"

#include "frontend/error.h"
#include "runtime/compile.h"
#include "runtime/wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The whole request; NULL, or why not. */
static const char *read_all(int fd, pm_wire_writer *m)
{
    unsigned char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return "the request could not be read";
        if (m->len + (size_t)n > PM_ISOLATE_MAX_MESSAGE)
            return "the request is too large";
        if (n == 0 || m->failed)
            return m->failed ? "out of memory reading the request" : NULL;
        pm_wire_put(m, buf, (size_t)n);
    }
}

static int reply(int out_fd, pm_status status, const char *msg, const unsigned char *kernel,
                 size_t kernel_len, const pm_compile_stats *stats)
{
    pm_wire_writer m = {0};
    pm_wire_put(&m, PM_ISOLATE_REPLY_MAGIC, PM_ISOLATE_MAGIC_BYTES);
    pm_wire_put_u64(&m, (uint64_t)status);
    pm_wire_put_field(&m, msg, strlen(msg));
    if (status == PM_OK) {
        pm_wire_put_field(&m, kernel, kernel_len);
        pm_wire_put_field(&m, stats, sizeof *stats);
    }
    bool ok = !m.failed && pm_wire_write_all(out_fd, m.data, m.len);
    free(m.data);
    return ok ? 0 : 3;
}

/* A request, parsed (pointing into its message). */
typedef struct request {
    const unsigned char *nonce;
    const char *text;
    uint64_t text_len, nestimates;
    const unsigned char *estimates; /* nestimates values' bytes, unaligned            */
    pm_options options;
    int64_t compile_threads, opt_level;
} request;

static const char *parse_request(const pm_wire_writer *m, request *q)
{
    pm_wire_reader r = pm_wire_reader_new(m->data, m->len);
    uint64_t n;
    const unsigned char *magic = pm_wire_take(&r, PM_ISOLATE_MAGIC_BYTES);
    const unsigned char *build = pm_wire_take_field(&r, &n);
    if (!r.ok || memcmp(magic, PM_ISOLATE_REQUEST_MAGIC, PM_ISOLATE_MAGIC_BYTES) != 0)
        return "not a compile request";
    if (n != strlen(pm_build_id()) || memcmp(build, pm_build_id(), n) != 0)
        return "a request from another build of the library";
    q->nonce = pm_wire_take_field(&r, &n);
    if (n != PM_ISOLATE_NONCE_BYTES)
        r.ok = false;
    q->text = (const char *)pm_wire_take_field(&r, &q->text_len);
    q->nestimates = pm_wire_take_u64(&r);
    q->estimates = NULL;
    if (r.ok && q->nestimates != UINT64_MAX)
        q->estimates = pm_wire_take(&r, q->nestimates);
    const unsigned char *opts = pm_wire_take_field(&r, &n);
    if (n != sizeof q->options)
        r.ok = false;
    else if (opts)
        memcpy(&q->options, opts, sizeof q->options);
    q->compile_threads = (int64_t)pm_wire_take_u64(&r);
    q->opt_level = (int64_t)pm_wire_take_u64(&r);
    if (!r.ok || r.p != r.end || (q->estimates && q->nestimates % sizeof(pm_value) != 0))
        return "a malformed compile request";
    q->nestimates = q->estimates ? q->nestimates / sizeof(pm_value) : 0;
    return NULL;
}

/* Compiles the parsed request; the reply's status. */
static int compile_request(const request *q, int out_fd)
{
    pm_error err;
    pm_error_clear(&err);
    pm_jit_options jo = pm_jit_options_default();
    jo.compile_threads = (int)q->compile_threads;
    jo.opt_level = (int)q->opt_level;
    pm_jit *jit = pm_jit_new(&jo, &err);
    if (!jit)
        return reply(out_fd, err.status, err.message, NULL, 0, NULL);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = NULL;
    pm_status s = ctx ? pm_pipeline_from_text(ctx, q->text, q->text_len, &p) : PM_ERR_NOMEM;
    int rc;
    if (s != PM_OK) {
        rc = reply(out_fd, s, ctx ? pm_ctx_errmsg(ctx) : "out of memory", NULL, 0, NULL);
    } else if (q->estimates && q->nestimates != (uint64_t)pm_pipeline_nparams(p)) {
        rc = reply(out_fd, PM_ERR_INTERNAL, "estimates do not match the pipeline", NULL, 0, NULL);
    } else {
        /* The estimates sit at any offset of the request: copied to aligned memory. */
        pm_value *estimates = q->estimates ? malloc(sizeof *estimates * (q->nestimates + 1)) : NULL;
        if (estimates)
            memcpy(estimates, q->estimates, sizeof *estimates * q->nestimates);
        pm_disk_kernel dk;
        pm_compile_stats stats;
        s = q->estimates && !estimates
                ? pm_error_set(&err, PM_ERR_NOMEM, "out of memory")
                : pm_jit_compile_object(jit, p, estimates, &q->options, &dk, &stats, &err);
        free(estimates);
        size_t size = 0;
        unsigned char *kernel =
            s == PM_OK ? pm_disk_encode((const char *)q->nonce, PM_ISOLATE_NONCE_BYTES, &dk, &size) : NULL;
        if (s == PM_OK && !kernel)
            s = pm_error_set(&err, PM_ERR_NOMEM, "out of memory encoding the kernel");
        rc = reply(out_fd, s, err.message, kernel, size, &stats);
        free(kernel);
        if (s == PM_OK)
            free(dk.object);
    }
    pm_ctx_free(ctx);
    pm_jit_free(jit);
    return rc;
}

int pm_isolate_helper_main(int in_fd, int out_fd)
{
    pm_wire_writer m = {0};
    request q;
    const char *bad = read_all(in_fd, &m);
    pm_status s = m.failed ? PM_ERR_NOMEM : PM_ERR_INTERNAL;
    if (!bad)
        bad = parse_request(&m, &q);
    int rc = bad ? reply(out_fd, s, bad, NULL, 0, NULL) : compile_request(&q, out_fd);
    free(m.data);
    return rc;
}
