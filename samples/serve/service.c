/* service.c — the HTTP image service (see service.h for the promise and the threading). */
#define _POSIX_C_SOURCE 200809L
#include "service.h"

#include "png_codec.h"
#include "samples.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { MAX_PRELOAD = 64 };

typedef struct preload_entry {
    const pm_sample_app *app;
    int64_t rows, cols;
} preload_entry;

struct pm_service {
    pm_service_options o;
    struct MHD_Daemon *daemon;
    pm_jit *jit;
    int port;
    /* --preload: the kernels, the thread that compiles them, how far it got */
    preload_entry preload[MAX_PRELOAD];
    int npreload;
    pthread_t preloader;
    bool preloading;
    atomic_int preloaded, preload_failed;
    atomic_int active; /* requests begun and not completed (pm_service_stop_draining) */
    char preload_error[256]; /* written before preload_failed is set */
    /* answered requests by class, for /stats */
    atomic_uint_fast64_t requests, ok, client_errors, server_errors;
};

/* One request's state between libmicrohttpd's calls: the app it names and its body. */
typedef struct request {
    const pm_sample_app *app;
    uint8_t *body;
    size_t len, cap;
    int too_large; /* the body passed max_body_bytes: dropped, answered 413 at its end */
} request;

/* *con_cls of a request answered at its first call: a body that still arrives is
 * dropped (libmicrohttpd may or may not offer it). */
static char answered_marker;

pm_service_options pm_service_options_default(void)
{
    return (pm_service_options){.host = "127.0.0.1",
                                .port = 8080,
                                .max_body_bytes = 64 << 20,
                                .max_side = 8192,
                                .max_pixels = 4096 * 4096,
                                .kernel_threads = 0,
                                .connection_limit = 64,
                                .timeout_seconds = 30,
                                .isolate_compiles = 1};
}

/* ---- answers ------------------------------------------------------------------------- */

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Where a request's time went (the Server-Timing header of an app's answer). */
typedef struct timing {
    double decode, fill, run, encode;
} timing;

static enum MHD_Result reply(pm_service *s, struct MHD_Connection *c, unsigned status,
                             const char *type, void *data, size_t size, const char *allow,
                             const timing *t)
{
    /* data is malloc'd and handed over (freed by libmicrohttpd, or here on failure) */
    struct MHD_Response *r = MHD_create_response_from_buffer(size, data, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(data);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    if (t) {
        char line[160];
        snprintf(line, sizeof line, "decode;dur=%.2f, fill;dur=%.2f, run;dur=%.2f, encode;dur=%.2f",
                 t->decode, t->fill, t->run, t->encode);
        MHD_add_response_header(r, "Server-Timing", line);
    }
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    atomic_fetch_add(&s->requests, 1);
    atomic_fetch_add(status < 400 ? &s->ok : status < 500 ? &s->client_errors : &s->server_errors, 1);
    return rc;
}

static enum MHD_Result reply_text(pm_service *s, struct MHD_Connection *c, unsigned status,
                                  const char *allow, const char *fmt, ...)
{
    char line[1400];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    n = n < 0 ? 0 : n > (int)sizeof line - 2 ? (int)sizeof line - 2 : n;
    line[n++] = '\n';
    char *copy = malloc((size_t)n);
    if (!copy)
        return MHD_NO;
    memcpy(copy, line, (size_t)n);
    return reply(s, c, status, "text/plain; charset=utf-8", copy, (size_t)n, allow, NULL);
}

static enum MHD_Result reply_stats(pm_service *s, struct MHD_Connection *c)
{
    pm_cache_stats st;
    memset(&st, 0, sizeof st);
    pm_jit_stats(s->jit, &st, sizeof st);
    char *json = malloc(2048);
    if (!json)
        return MHD_NO;
    int n = snprintf(json, 2048,
        "{\"hits\":%llu,\"misses\":%llu,\"fallback_runs\":%llu,\"sync_compiles\":%llu,"
        "\"background_compiles\":%llu,\"failed_compiles\":%llu,\"queue_full\":%llu,"
        "\"evictions\":%llu,\"compile_ms_total\":%.3f,\"compile_ms_max\":%.3f,"
        "\"code_bytes\":%lld,\"kernels\":%d,\"queued\":%d,\"compiling\":%d,"
        "\"disk_hits\":%llu,\"disk_writes\":%llu,\"disk_rejected\":%llu,"
        "\"disk_untrusted\":%llu,\"isolated_compiles\":%llu,\"isolated_failures\":%llu,"
        "\"requests\":%llu,\"responses_ok\":%llu,\"client_errors\":%llu,"
        "\"server_errors\":%llu}\n",
        (unsigned long long)st.hits, (unsigned long long)st.misses,
        (unsigned long long)st.fallback_runs, (unsigned long long)st.sync_compiles,
        (unsigned long long)st.background_compiles, (unsigned long long)st.failed_compiles,
        (unsigned long long)st.queue_full, (unsigned long long)st.evictions,
        st.compile_ms_total, st.compile_ms_max, (long long)st.code_bytes, st.kernels,
        st.queued, st.compiling, (unsigned long long)st.disk_hits,
        (unsigned long long)st.disk_writes, (unsigned long long)st.disk_rejected,
        (unsigned long long)st.disk_untrusted, (unsigned long long)st.isolated_compiles,
        (unsigned long long)st.isolated_failures, (unsigned long long)atomic_load(&s->requests), (unsigned long long)atomic_load(&s->ok),
        (unsigned long long)atomic_load(&s->client_errors),
        (unsigned long long)atomic_load(&s->server_errors));
    return reply(s, c, MHD_HTTP_OK, "application/json", json, (size_t)n, NULL, NULL);
}

static enum MHD_Result reply_apps(pm_service *s, struct MHD_Connection *c)
{
    int n;
    const pm_sample_app *apps = pm_sample_apps(&n);
    size_t cap = 256 + (size_t)n * 160, len = 0;
    char *json = malloc(cap);
    if (!json)
        return MHD_NO;
    len += (size_t)snprintf(json + len, cap - len, "[");
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(json + len, cap - len,
                                "%s{\"name\":\"%s\",\"title\":\"%s\",\"min_rows\":%lld,"
                                "\"min_cols\":%lld}", i ? "," : "", apps[i].name,
                                apps[i].title, (long long)apps[i].min_rows,
                                (long long)apps[i].min_cols);
    len += (size_t)snprintf(json + len, cap - len, "]\n");
    return reply(s, c, MHD_HTTP_OK, "application/json", json, len, NULL, NULL);
}

/* ---- running an app ------------------------------------------------------------------- */

/* A zeroed dense buffer of the pipeline's shape for these parameters, its byte size
 * checked against overflow and a 4 GiB cap. 0, or the HTTP status to answer. */
static unsigned make_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params,
                            pm_buffer *b, char *msg, size_t msg_size)
{
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    if (pm_pipeline_buffer_shape(p, is_output, index, params, &ndims, extents) != PM_OK) {
        snprintf(msg, msg_size, "no buffer shape for %s", pm_func_name(f));
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    size_t elem = pm_type_size(pm_func_type(f)), bytes = elem;
    for (int d = 0; d < ndims; d++) {
        if (extents[d] < 1 || (uint64_t)extents[d] > ((uint64_t)1 << 32) / bytes) {
            snprintf(msg, msg_size, "%s would need more than 4 GiB", pm_func_name(f));
            return MHD_HTTP_CONTENT_TOO_LARGE;
        }
        bytes *= (size_t)extents[d];
    }
    *b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    b->data = calloc(1, bytes);
    if (!b->data) {
        snprintf(msg, msg_size, "out of memory for %s (%zu bytes)", pm_func_name(f), bytes);
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    return 0;
}

/* Runs the app on the picture with the service's jit; on 200 *png / *png_size hold the
 * output (malloc'd), else msg says why. The pipeline lives in a context of this request
 * alone. */
static unsigned run_app(pm_service *s, const pm_sample_app *app, const pm_sample_picture *pic,
                        void **png, size_t *png_size, char *msg, size_t msg_size, timing *t)
{
    double t0 = now_ms();
    unsigned status = 0;
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = ctx ? app->build(ctx) : NULL;
    if (!p) {
        snprintf(msg, msg_size, "%s cannot be built: %s", app->name,
                 ctx ? pm_ctx_errmsg(ctx) : "out of memory");
        pm_ctx_free(ctx);
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    int np = pm_pipeline_nparams(p), ni = pm_pipeline_ninputs(p), no = pm_pipeline_noutputs(p);
    pm_value *params = calloc((size_t)np + 1, sizeof *params);
    pm_buffer *in = calloc((size_t)ni + 1, sizeof *in), *out = calloc((size_t)no + 1, sizeof *out);
    if (!params || !in || !out) {
        snprintf(msg, msg_size, "out of memory");
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    if (!status)
        app->params(pic->rows, pic->cols, params);
    for (int i = 0; i < ni && !status; i++) {
        status = make_buffer(p, 0, i, params, &in[i], msg, msg_size);
        if (!status)
            app->fill_from(i, &in[i], params, pic);
    }
    for (int i = 0; i < no && !status; i++)
        status = make_buffer(p, 1, i, params, &out[i], msg, msg_size);
    double t1 = now_ms();
    t->fill = t1 - t0;
    if (!status) {
        pm_error err;
        pm_status st = pm_jit_run(s->jit, p, NULL, params, in, out, &err);
        if (st != PM_OK) {
            snprintf(msg, msg_size, "%s failed: %s: %s", app->name, pm_status_name(st),
                     err.message);
            status = st == PM_ERR_NOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
                                        : MHD_HTTP_INTERNAL_SERVER_ERROR;
        }
    }
    double t2 = now_ms();
    t->run = t2 - t1;
    if (!status) {
        int64_t rows, cols;
        int ch;
        uint8_t *px = pm_sample_render(&out[0], pm_sample_render_flags(app), &rows, &cols, &ch);
        *png = px ? pm_png_encode(px, rows, cols, ch, png_size) : NULL;
        free(px);
        if (!*png) {
            snprintf(msg, msg_size, "the output cannot be encoded as PNG");
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        } else {
            status = MHD_HTTP_OK;
        }
        t->encode = now_ms() - t2;
    }
    for (int i = 0; in && i < ni; i++)
        free(in[i].data);
    for (int i = 0; out && i < no; i++)
        free(out[i].data);
    free(params);
    free(in);
    free(out);
    pm_ctx_free(ctx);
    return status;
}

static enum MHD_Result serve_app(pm_service *s, struct MHD_Connection *c, request *rq)
{
    char msg[1200];
    uint8_t *px = NULL;
    int64_t rows = 0, cols = 0;
    int ch = 0;
    timing t = {0};
    double t0 = now_ms();
    pm_png_result decoded = pm_png_decode(rq->body, rq->len, s->o.max_side, s->o.max_pixels, &px, &rows,
                          &cols, &ch, msg, sizeof msg);
    t.decode = now_ms() - t0;
    switch (decoded) {
    case PM_PNG_OK:
        break;
    case PM_PNG_NOT_IMAGE:
        return reply_text(s, c, MHD_HTTP_BAD_REQUEST, NULL, "%s", msg);
    case PM_PNG_TOO_LARGE:
        return reply_text(s, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL, "%s", msg);
    case PM_PNG_NOMEM:
        return reply_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "%s", msg);
    }
    const pm_sample_app *app = rq->app;
    if (rows < app->min_rows || cols < app->min_cols) {
        free(px);
        return reply_text(s, c, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL,
                          "the image is %lld x %lld pixels (rows x cols); %s needs at least "
                          "%lld x %lld", (long long)rows, (long long)cols, app->name,
                          (long long)app->min_rows, (long long)app->min_cols);
    }
    /* the body is no longer needed: free it before the (memory-hungry) run */
    free(rq->body);
    rq->body = NULL;
    pm_sample_picture pic = pm_bytes_picture(px, rows, cols, ch);
    void *png = NULL;
    size_t png_size = 0;
    unsigned status = run_app(s, app, &pic, &png, &png_size, msg, sizeof msg, &t);
    free(px);
    if (status == MHD_HTTP_OK)
        return reply(s, c, status, "image/png", png, png_size, NULL, &t);
    return reply_text(s, c, status, NULL, "%s", msg);
}

/* ---- libmicrohttpd's callbacks --------------------------------------------------------- */

/* libmicrohttpd's unescaping of the URL, except that an escaped NUL (%00) becomes a byte
 * no route accepts: left a NUL, "/apps/harris%00x" would read as "/apps/harris". */
static size_t unescape_url(void *cls, struct MHD_Connection *c, char *url)
{
    (void)cls;
    (void)c;
    size_t n = MHD_http_unescape(url);
    for (size_t i = 0; i < n; i++)
        if (url[i] == '\0')
            url[i] = '\x7f';
    return n;
}

/* An app's name: lower-case letters, digits and '_', as the samples name them. */
static bool app_name_ok(const char *name)
{
    if (!*name)
        return false;
    for (const char *q = name; *q; q++)
        if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '_'))
            return false;
    return true;
}

typedef struct length_headers {
    int count;
    const char *first;
    bool differ;
} length_headers;

static enum MHD_Result count_length(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value)
{
    (void)kind;
    length_headers *h = cls;
    if (key && strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (h->count++ == 0)
            h->first = value;
        else if (!value || !h->first || strcmp(value, h->first) != 0)
            h->differ = true;
    }
    return MHD_YES;
}

static enum MHD_Result reply_ready(pm_service *s, struct MHD_Connection *c)
{
    int ready = pm_service_ready(s);
    if (ready > 0)
        return reply_text(s, c, MHD_HTTP_OK, NULL, "ready");
    if (ready < 0)
        return reply_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "not ready: %s",
                          s->preload_error);
    return reply_text(s, c, MHD_HTTP_SERVICE_UNAVAILABLE, NULL,
                      "not ready: %d of %d preloaded kernels in", atomic_load(&s->preloaded),
                      s->npreload);
}

/* The first call of a request (headers read): route it, answer at once what needs no
 * body, else make its state. */
static enum MHD_Result begin(pm_service *s, struct MHD_Connection *c, const char *url,
                             const char *method, void **con_cls)
{
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    int head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    *con_cls = &answered_marker;
    if (strcmp(url, "/stats") == 0 || strcmp(url, "/apps") == 0 ||
        strcmp(url, "/health") == 0 || strcmp(url, "/ready") == 0) {
        if (!get && !head)
            return reply_text(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD",
                              "%s takes GET, not %s", url, method);
        switch (url[1]) {
        case 's': return reply_stats(s, c);
        case 'a': return reply_apps(s, c);
        case 'h': return reply_text(s, c, MHD_HTTP_OK, NULL, "ok");
        default: return reply_ready(s, c);
        }
    }
    if (strncmp(url, "/apps/", 6) != 0)
        return reply_text(s, c, MHD_HTTP_NOT_FOUND, NULL,
                          "no such resource: %.200s (POST /apps/<app>, GET /stats, GET /apps)",
                          url);
    const pm_sample_app *app = app_name_ok(url + 6) ? pm_sample_find(url + 6) : NULL;
    if (!app)
        return reply_text(s, c, MHD_HTTP_NOT_FOUND, NULL, "no app named %.200s (GET /apps)",
                          url + 6);
    if (!post)
        return reply_text(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "POST",
                          "%s takes POST with a PNG body, not %s", url, method);
    /* One Content-Length of digits only: two (even equal) or a malformed one would let a
     * proxy in front and this service read different bodies */
    length_headers lengths = {0, NULL, false};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, &lengths);
    if (lengths.count > 1)
        return reply_text(s, c, MHD_HTTP_BAD_REQUEST, NULL, "%d Content-Length headers%s; "
                          "send one", lengths.count, lengths.differ ? " that differ" : "");
    const char *length = lengths.first;
    if (length) {
        char *end;
        bool digits = *length >= '0' && *length <= '9';
        unsigned long long n = strtoull(length, &end, 10);
        if (!digits || *end)
            return reply_text(s, c, MHD_HTTP_BAD_REQUEST, NULL,
                              "Content-Length %.40s is not a number of bytes", length);
        if (n > (unsigned long long)s->o.max_body_bytes)
            return reply_text(s, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                              "the body is %llu bytes; the limit is %lld", n,
                              (long long)s->o.max_body_bytes);
    }
    request *rq = calloc(1, sizeof *rq);
    if (!rq) {
        *con_cls = NULL;
        return MHD_NO;
    }
    rq->app = app;
    *con_cls = rq;
    return MHD_YES;
}

static void append(pm_service *s, request *rq, const char *data, size_t n)
{
    if (rq->too_large)
        return;
    if (n > (size_t)s->o.max_body_bytes - rq->len) {
        rq->too_large = 1;
        free(rq->body);
        rq->body = NULL;
        rq->len = rq->cap = 0;
        return;
    }
    if (rq->len + n > rq->cap) {
        size_t cap = rq->cap ? rq->cap : 64 << 10;
        while (cap < rq->len + n)
            cap = cap > SIZE_MAX / 2 ? rq->len + n : cap * 2;
        cap = cap > (size_t)s->o.max_body_bytes ? (size_t)s->o.max_body_bytes : cap;
        uint8_t *grown = realloc(rq->body, cap);
        if (!grown) { /* answered as too large: the service cannot hold it now */
            rq->too_large = 1;
            free(rq->body);
            rq->body = NULL;
            rq->len = rq->cap = 0;
            return;
        }
        rq->body = grown;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    pm_service *s = cls;
    (void)version;
    if (!*con_cls) {
        atomic_fetch_add(&s->active, 1); /* until on_completed */
        return begin(s, c, url, method, con_cls);
    }
    if (*con_cls == &answered_marker) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    request *rq = *con_cls;
    if (*upload_data_size) {
        append(s, rq, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    /* the whole body is in */
    enum MHD_Result rc;
    if (rq->too_large)
        rc = reply_text(s, c, MHD_HTTP_CONTENT_TOO_LARGE, NULL,
                        "the body is over the limit of %lld bytes",
                        (long long)s->o.max_body_bytes);
    else
        rc = serve_app(s, c, rq);
    free(rq->body);
    rq->body = NULL;
    *con_cls = &answered_marker; /* answered; the state goes in on_completed */
    free(rq);
    return rc;
}

/* Frees a request's state however it ended (answered, or the client went away mid-body). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    pm_service *s = cls;
    (void)c;
    (void)code;
    atomic_fetch_sub(&s->active, 1);
    if (*con_cls && *con_cls != &answered_marker) {
        request *rq = *con_cls;
        free(rq->body);
        free(rq);
    }
    *con_cls = NULL;
}

/* ---- preload ---------------------------------------------------------------------------- */

/* Parses "app:RxC,..." into s->preload, each size checked as a request's would be. */
static bool parse_preload(pm_service *s, const char *spec, char *err, size_t err_size)
{
    s->npreload = 0;
    for (const char *at = spec && *spec ? spec : NULL; at;) { /* "a,,b" and "a," refused */
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char item[96];
        if (len == 0 || len >= sizeof item) {
            snprintf(err, err_size, "preload: an empty or over-long entry in \"%.80s\"", spec);
            return false;
        }
        memcpy(item, at, len);
        item[len] = '\0';
        char *colon = strchr(item, ':');
        long long rows = 0, cols = 0;
        int used = 0;
        if (colon)
            *colon = '\0';
        const pm_sample_app *app = colon && app_name_ok(item) ? pm_sample_find(item) : NULL;
        if (!app || sscanf(colon + 1, "%lldx%lld%n", &rows, &cols, &used) != 2 ||
            colon[1 + used] != '\0') {
            snprintf(err, err_size, "preload: \"%.80s\" is not app:ROWSxCOLS with an app of "
                     "GET /apps", at);
            return false;
        }
        if (rows < app->min_rows || cols < app->min_cols || rows > s->o.max_side ||
            cols > s->o.max_side || rows * cols > s->o.max_pixels) {
            snprintf(err, err_size, "preload: %s at %lld x %lld is outside what it serves (at "
                     "least %lld x %lld, at most %lld a side and %lld pixels)", app->name, rows,
                     cols, (long long)app->min_rows, (long long)app->min_cols,
                     (long long)s->o.max_side, (long long)s->o.max_pixels);
            return false;
        }
        if (s->npreload == MAX_PRELOAD) {
            snprintf(err, err_size, "preload: more than %d kernels", MAX_PRELOAD);
            return false;
        }
        s->preload[s->npreload++] = (preload_entry){app, rows, cols};
        at = end ? end + 1 : NULL;
    }
    return true;
}

/* Compiles each preloaded kernel as pm_jit_run would for a request of that size (the same
 * key: the app's parameters for the picture as estimates, the jit's options), so the first
 * such request is a cache hit. */
static void *preload_thread(void *arg)
{
    pm_service *s = arg;
    for (int i = 0; i < s->npreload; i++) {
        const preload_entry *pe = &s->preload[i];
        pm_ctx *ctx = pm_ctx_new();
        pm_pipeline *p = ctx ? pe->app->build(ctx) : NULL;
        pm_value params[32];
        pm_error e;
        pm_kernel *k = NULL;
        if (p && pm_pipeline_nparams(p) <= 32) {
            pe->app->params(pe->rows, pe->cols, params);
            k = pm_jit_compile(s->jit, p, params, NULL, &e);
        } else {
            snprintf(e.message, sizeof e.message, "%s", ctx ? pm_ctx_errmsg(ctx) : "out of memory");
        }
        pm_kernel_free(k);
        pm_ctx_free(ctx);
        if (!k) {
            snprintf(s->preload_error, sizeof s->preload_error, "preload of %s at %lld x %lld "
                     "failed: %.180s", pe->app->name, (long long)pe->rows, (long long)pe->cols,
                     e.message);
            atomic_store(&s->preload_failed, 1);
            return NULL;
        }
        atomic_fetch_add(&s->preloaded, 1);
    }
    return NULL;
}

int pm_service_ready(pm_service *s)
{
    if (atomic_load(&s->preload_failed))
        return -1;
    return atomic_load(&s->preloaded) == s->npreload;
}

/* ---- lifetime --------------------------------------------------------------------------- */

pm_service *pm_service_start(const pm_service_options *options, char *err, size_t err_size)
{
    pm_service *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    s->o = options ? *options : pm_service_options_default();
    pm_service_options d = pm_service_options_default();
    if (!s->o.host)
        s->o.host = d.host;
    if (s->o.max_body_bytes <= 0)
        s->o.max_body_bytes = d.max_body_bytes;
    if (s->o.max_side <= 0)
        s->o.max_side = d.max_side;
    if (s->o.max_pixels <= 0)
        s->o.max_pixels = d.max_pixels;
    if (!s->o.connection_limit)
        s->o.connection_limit = d.connection_limit;
    if (!s->o.timeout_seconds)
        s->o.timeout_seconds = d.timeout_seconds;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->o.port);
    if (s->o.port < 0 || s->o.port > 65535 || inet_pton(AF_INET, s->o.host, &addr.sin_addr) != 1) {
        snprintf(err, err_size, "bad address %s port %d", s->o.host, s->o.port);
        free(s);
        return NULL;
    }
    if (!parse_preload(s, s->o.preload, err, err_size)) {
        free(s);
        return NULL;
    }
    pm_error e;
    pm_jit_options jo = pm_jit_options_default();
    jo.threads = s->o.kernel_threads;
    jo.isolate_compiles = s->o.isolate_compiles;
    s->jit = pm_jit_new(&jo, &e);
    if (!s->jit) {
        snprintf(err, err_size, "pm_jit_new: %s", e.message);
        free(s);
        return NULL;
    }
    s->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC,
        (uint16_t)s->o.port,
        NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, s->o.connection_limit, MHD_OPTION_CONNECTION_TIMEOUT,
        s->o.timeout_seconds, MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, err_size, "cannot listen on %s:%d (in use?)", s->o.host, s->o.port);
        pm_jit_free(s->jit);
        free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : s->o.port;
    if (s->npreload > 0) {
        s->preloading = pthread_create(&s->preloader, NULL, preload_thread, s) == 0;
        if (!s->preloading) {
            snprintf(s->preload_error, sizeof s->preload_error, "no thread to preload with");
            atomic_store(&s->preload_failed, 1);
        }
    }
    return s;
}

int pm_service_port(const pm_service *s)
{
    return s->port;
}

pm_jit *pm_service_jit(pm_service *s)
{
    return s->jit;
}

int pm_service_active(pm_service *s)
{
    return atomic_load(&s->active);
}

int pm_service_stop_draining(pm_service *s, double seconds)
{
    if (!s)
        return 0;
    MHD_socket listener = MHD_quiesce_daemon(s->daemon); /* no new connections */
    if (listener != MHD_INVALID_SOCKET)
        close(listener);
    struct timespec now, end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)seconds;
    end.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (end.tv_nsec >= 1000000000L) {
        end.tv_sec++;
        end.tv_nsec -= 1000000000L;
    }
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (atomic_load(&s->active) == 0 || now.tv_sec > end.tv_sec ||
            (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec))
            break;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    int left = atomic_load(&s->active);
    pm_service_stop(s);
    return left;
}

void pm_service_stop(pm_service *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon); /* joins every connection thread */
    if (s->preloading)
        pthread_join(s->preloader, NULL); /* its compiles finish: the jit outlives them */
    pm_jit_free(s->jit);
    free(s);
}
