/* test_serve.c — the HTTP image service (samples/serve), in this process on a free
 * loopback port:
 *  - POST /apps/harris and /apps/unsharp_mask with a generated PNG: 200, a PNG of the
 *    expected size whose pixels are the interpreter's output for the same input, rendered
 *    the same way (at most one 8-bit level apart: the compiled kernels may differ from the
 *    interpreter by the apps' float tolerance, which rounding can turn into one level);
 *  - a second size of an app already served is answered with the kernel it has (a
 *    fallback run, no compile in the request) and is right too;
 *  - an answer says where its time went (Server-Timing); GET /stats is JSON with the jit's
 *    counters; GET /health and GET /ready answer 200;
 *  - the graceful stop: a request in progress when the service is told to stop (local
 *    Laplacian's first compile) is answered 200, none cut; the same with SIGTERM to the
 *    serve program, which then exits 0;
 *  - answers as JPEG or raw pixels by Accept, 406 for an Accept of none of them;
 *  - GET /metrics parses as Prometheus text with the requests made;
 *  - the memory budget: a request over it 503 at once, one that does not fit beside a
 *    running one 503 with Retry-After, the service up and serving after;
 *  - 50 connections trickling request heads from 127.0.0.1 do not slow a client at
 *    127.0.0.2 (p50 within 100 ms) and are cut at the head deadline;
 *  - the access log's lines; four first requests at once compile once;
 *  - --preload: malformed entries, unknown apps and sizes out of range refuse to start;
 *    a good list makes /ready 200 once its kernels are in, and the first requests of
 *    those apps and sizes are cache hits;
 *  - each kind of bad request (unknown app or path, an app name with a byte outside
 *    [a-z0-9_] such as an escaped NUL, two or a malformed Content-Length, wrong method,
 *    a body that is no PNG, a
 *    truncated PNG, a body cut short, a body or picture over the limits, a picture too
 *    small for its app, a request that is not HTTP) gets a 4xx or a closed connection,
 *    and the service still answers afterwards.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep, mkstemp, strtok */
#include "check.h"
#include "samples.h"
#include "image_io.h"

#include "http_client.h"
#include "png_codec.h"
#include "service.h"

#include "polymage_io.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int port;

/* The generated photo as a PNG of rows x cols (RGB, or grey when channels is 1). */
static void *photo_png(int64_t rows, int64_t cols, int channels, size_t *size)
{
    uint8_t *px = malloc((size_t)(rows * cols * channels));
    if (!px)
        return NULL;
    for (int64_t x = 0; x < rows; x++)
        for (int64_t y = 0; y < cols; y++)
            for (int c = 0; c < channels; c++)
                px[(x * cols + y) * channels + c] =
                    (uint8_t)pm_photo_level(rows, cols, channels == 1 ? -1 : c, x, y);
    void *png = pm_png_encode(px, rows, cols, channels, size);
    free(px);
    return png;
}

/* What the service should answer for this PNG: the app run by the interpreter on the
 * inputs made from the decoded picture, rendered as the service renders. */
static uint8_t *expected_output(const pm_sample_app *app, const void *png, size_t size,
                                int64_t *rows, int64_t *cols, int *channels)
{
    uint8_t *px = NULL, *out_px = NULL;
    int64_t r, c;
    int ch;
    char msg[256];
    if (pm_png_decode(png, size, 1 << 14, 1 << 26, &px, &r, &c, &ch, msg, sizeof msg) != PM_PNG_OK)
        return NULL;
    pm_sample_picture pic = pm_bytes_picture(px, r, c, ch);
    pm_ctx *ctx = pm_ctx_new();
    pm_pipeline *p = app->build(ctx);
    int np = pm_pipeline_nparams(p), ni = pm_pipeline_ninputs(p);
    pm_value params[16];
    pm_buffer in[8], out;
    CHECK(np <= 16 && ni <= 8 && pm_pipeline_noutputs(p) == 1);
    app->params(r, c, params);
    for (int i = 0; i < ni; i++) {
        in[i] = pm_sample_buffer(p, 0, i, params);
        app->fill_from(i, &in[i], params, &pic);
    }
    out = pm_sample_buffer(p, 1, 0, params);
    if (CHECK(pm_interpret(p, params, in, &out) == PM_OK))
        out_px = pm_sample_render(&out, pm_sample_render_flags(app), rows, cols, channels);
    for (int i = 0; i < ni; i++)
        free(in[i].data);
    free(out.data);
    pm_ctx_free(ctx);
    free(px);
    return out_px;
}

/* POSTs a rows x cols photo to the app and checks the answer against the interpreter. */
static void check_app(pm_http_conn *conn, const char *name, int64_t rows, int64_t cols)
{
    const pm_sample_app *app = pm_sample_find(name);
    size_t size = 0;
    void *png = photo_png(rows, cols, 3, &size);
    char path[64];
    snprintf(path, sizeof path, "/apps/%s", name);
    pm_http_response r;
    if (!CHECK(png && pm_http_request(conn, "POST", path, "image/png", png, size, 1 << 26, &r) == 0)) {
        free(png);
        return;
    }
    CHECK(r.status == 200);
    CHECK(strcmp(r.content_type, "image/png") == 0);
    CHECK(strstr(r.server_timing, "kernel;dur=") != NULL);
    uint8_t *got = NULL;
    int64_t gr = 0, gc = 0;
    int gch = 0;
    char msg[256];
    if (r.status != 200)
        fprintf(stderr, "%s %lldx%lld: %d %s\n", name, (long long)rows, (long long)cols, r.status,
                r.body);
    CHECK(pm_png_decode(r.body, r.body_len, 1 << 14, 1 << 26, &got, &gr, &gc, &gch, msg,
                        sizeof msg) == PM_PNG_OK);
    int64_t er = 0, ec = 0;
    int ech = 0;
    uint8_t *want = expected_output(app, png, size, &er, &ec, &ech);
    CHECK(want != NULL);
    /* harris and unsharp_mask answer a picture of the posted size */
    CHECK(gr == rows && gc == cols && er == rows && ec == cols && gch == ech);
    if (got && want && gr == er && gc == ec && gch == ech) {
        int worst = 0;
        for (int64_t i = 0; i < gr * gc * gch; i++) {
            int d = abs((int)got[i] - (int)want[i]);
            worst = d > worst ? d : worst;
        }
        printf("%s %lld x %lld: largest difference from the interpreter %d level(s)\n", name,
               (long long)rows, (long long)cols, worst);
        CHECK(worst <= 1);
    }
    free(got);
    free(want);
    free(png);
    pm_http_response_free(&r);
}

/* One request expected to fail with `status` and a message. */
static void check_rejected(pm_http_conn *conn, const char *method, const char *path,
                           const void *body, size_t len, int status, const char *needle)
{
    pm_http_response r;
    if (!CHECK(pm_http_request(conn, method, path, "image/png", body, len, 1 << 20, &r) == 0))
        return;
    if (!CHECK(r.status == status))
        fprintf(stderr, "%s %s: expected %d, got %d %s\n", method, path, status, r.status,
                r.body ? r.body : "");
    CHECK(r.body && strlen(r.body) > 0);
    if (needle && r.body)
        CHECK_CONTAINS(r.body, needle);
    pm_http_response_free(&r);
}

/* GET /stats: 200, JSON, the service still alive. Returns the body (free()). */
static char *get_stats(void)
{
    pm_http_conn conn;
    if (!CHECK(pm_http_connect(&conn, "127.0.0.1", port, 20000) == 0))
        return NULL;
    pm_http_response r;
    char *body = NULL;
    if (CHECK(pm_http_request(&conn, "GET", "/stats", NULL, NULL, 0, 1 << 20, &r) == 0)) {
        CHECK(r.status == 200);
        CHECK(strcmp(r.content_type, "application/json") == 0);
        body = r.body;
    }
    pm_http_close(&conn);
    return body;
}

static long long json_field(const char *json, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = json ? strstr(json, key) : NULL;
    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

/* GET path on the service at `port`: the status, the body into *body (free()) if asked. */
static int get_status(const char *path, char **body)
{
    pm_http_conn conn;
    if (!CHECK(pm_http_connect(&conn, "127.0.0.1", port, 20000) == 0))
        return -1;
    pm_http_response r;
    int status = -1;
    if (CHECK(pm_http_request(&conn, "GET", path, NULL, NULL, 0, 1 << 20, &r) == 0)) {
        status = r.status;
        if (body) {
            *body = r.body;
            r.body = NULL;
        }
        pm_http_response_free(&r);
    }
    pm_http_close(&conn);
    return status;
}

/* Starts a service with options o (on a free port: o->port is set to 0) and points `port`
 * at it; NULL after a failed check when it cannot start. */
static pm_service *start_service(pm_service_options *o)
{
    o->port = 0;
    char err[256];
    pm_service *s = pm_service_start(o, err, sizeof err);
    if (!CHECK(s != NULL)) {
        fprintf(stderr, "%s\n", err);
        return NULL;
    }
    port = pm_service_port(s);
    return s;
}

/* --preload: bad entries refuse to start, naming the entry; a good one makes /ready 200
 * once its kernel is in, and the first request of that app and size is a cache hit (no
 * compile in the request). */
static void test_preload(const pm_service_options *base)
{
    static const char *bad[] = {"harris", "nosuchapp:64x64", "harris:4x4", "harris:64x64,",
                                "harris:64x64junk", "harris:9000x9000"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pm_service_options o = *base;
        o.preload = bad[i];
        char err[256] = "";
        pm_service *s = pm_service_start(&o, err, sizeof err);
        if (!CHECK(s == NULL))
            pm_service_stop(s);
        CHECK_CONTAINS(err, "preload");
    }
    pm_service_options o = *base;
    o.preload = "harris:48x64,unsharp_mask:40x56";
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s)
        return;
    CHECK(get_status("/health", NULL) == 200);
    int status = 0;
    for (int tries = 0; tries < 1200 && (status = get_status("/ready", NULL)) == 503; tries++)
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    CHECK(status == 200 && pm_service_ready(s) == 1);
    pm_cache_stats before, after;
    pm_jit_stats(pm_service_jit(s), &before, sizeof before);
    CHECK(before.sync_compiles + before.disk_hits == 2 && before.kernels == 2);
    pm_http_conn conn;
    if (CHECK(pm_http_connect(&conn, "127.0.0.1", port, 60000) == 0)) {
        check_app(&conn, "harris", 48, 64);
        check_app(&conn, "unsharp_mask", 40, 56);
        pm_http_close(&conn);
    }
    pm_jit_stats(pm_service_jit(s), &after, sizeof after);
    CHECK(after.hits == before.hits + 2 && after.sync_compiles == before.sync_compiles &&
          after.fallback_runs == before.fallback_runs);
    pm_service_stop(s);
    port = saved;
}

/* A request posted from its own thread: its status (0 when no answer came). */
typedef struct posting {
    const char *path;
    void *png;
    size_t size;
    int status;
} posting;

static void *post_thread(void *arg)
{
    posting *pt = arg;
    pm_http_conn conn;
    if (pm_http_connect(&conn, "127.0.0.1", port, 120000) != 0)
        return NULL;
    pm_http_response r;
    if (pm_http_request(&conn, "POST", pt->path, "image/png", pt->png, pt->size, 1 << 26,
                        &r) == 0)
        pt->status = r.status;
    pm_http_response_free(&r);
    pm_http_close(&conn);
    return NULL;
}

/* The graceful stop: a request in progress (local Laplacian's first compile, seconds)
 * when the service is told to stop is answered 200 before it stops; none is cut. */
static void test_drain(const pm_service_options *base)
{
    pm_service_options o = *base;
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s)
        return;
    posting pt = {"/apps/local_laplacian", NULL, 0, 0};
    pt.png = photo_png(128, 128, 3, &pt.size);
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, post_thread, &pt) == 0);
    for (int tries = 0; tries < 2000 && pm_service_active(s) == 0; tries++)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    CHECK(pm_service_active(s) == 1);
    CHECK(pm_service_stop_draining(s, 120) == 0);
    pthread_join(tid, NULL);
    if (!CHECK(pt.status == 200))
        fprintf(stderr, "  the request in progress at the stop: status %d\n", pt.status);
    free(pt.png);
    port = saved;
}

/* ---- answers in other formats, metrics, the access log ---- */

/* Accept: image/jpeg gives a JPEG of the picture's size, application/octet-stream raw
 * 8-bit pixels with their shape in X-Image-*; an Accept of none of them 406. */
static void test_formats(void)
{
    pm_http_conn conn;
    if (!CHECK(pm_http_connect(&conn, "127.0.0.1", port, 60000) == 0))
        return;
    size_t size = 0;
    void *png = photo_png(40, 56, 3, &size);
    pm_http_response r;
    conn.headers = "Accept: image/webp;q=0.9, image/jpeg\r\n";
    if (CHECK(pm_http_request(&conn, "POST", "/apps/unsharp_mask", "image/png", png, size,
                              1 << 24, &r) == 0)) {
        CHECK(r.status == 200 && strcmp(r.content_type, "image/jpeg") == 0);
        pm_io_info info;
        CHECK(pm_io_probe(r.body, r.body_len, "answer", &info, NULL) == PM_IO_OK &&
              info.format == PM_IO_JPEG && info.rows == 40 && info.cols == 56);
    }
    pm_http_response_free(&r);
    conn.headers = "Accept: image/png;q=0.5, application/octet-stream\r\n";
    if (CHECK(pm_http_request(&conn, "POST", "/apps/unsharp_mask", "image/png", png, size,
                              1 << 24, &r) == 0)) {
        CHECK(r.status == 200 && strcmp(r.content_type, "application/octet-stream") == 0);
        CHECK(r.body_len == 40 * 56 * 3);
    }
    pm_http_response_free(&r);
    conn.headers = "Accept: text/html, image/png;q=0\r\n";
    if (CHECK(pm_http_request(&conn, "POST", "/apps/unsharp_mask", "image/png", png, size,
                              1 << 24, &r) == 0)) {
        CHECK(r.status == 406);
        CHECK_CONTAINS(r.body, "the Accept header takes none of them");
    }
    pm_http_response_free(&r);
    conn.headers = "Accept: */*\r\n";
    if (CHECK(pm_http_request(&conn, "POST", "/apps/unsharp_mask", "image/png", png, size,
                              1 << 24, &r) == 0))
        CHECK(r.status == 200 && strcmp(r.content_type, "image/png") == 0);
    pm_http_response_free(&r);
    free(png);
    pm_http_close(&conn);
}

/* GET /metrics parsed as Prometheus text: every line a comment or `name{labels} value`
 * with a number; each histogram's buckets cumulative, ending in +Inf = _count; the
 * figures of the requests made so far present. */
static void test_metrics(const char *app, int at_least)
{
    char *body = NULL;
    if (!CHECK(get_status("/metrics", &body) == 200) || !body)
        return;
    int lines = 0, bad = 0;
    double last_bucket = -1, inf_bucket = -1;
    char last_series[256] = "";
    bool saw_requests = false, saw_kernel = false, saw_rss = false, saw_compiles = false;
    for (char *line = strtok(body, "\n"); line; line = strtok(NULL, "\n")) {
        lines++;
        if (line[0] == '#') {
            if (strncmp(line, "# HELP ", 7) != 0 && strncmp(line, "# TYPE ", 7) != 0)
                bad++;
            continue;
        }
        char *space = strrchr(line, ' ');
        char *end = NULL;
        double v = space ? strtod(space + 1, &end) : 0;
        if (!space || !end || *end || end == space + 1) {
            bad++;
            continue;
        }
        *space = '\0';
        const char *name_end = line + strcspn(line, "{");
        for (const char *q = line; q < name_end; q++)
            if (!((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || *q == '_' ||
                  (*q >= '0' && *q <= '9' && q > line)))
                bad++;
        if (*name_end == '{' && line[strlen(line) - 1] != '}')
            bad++;
        char app_label[64];
        snprintf(app_label, sizeof app_label, "app=\"%s\"", app);
        if (strncmp(line, "polymage_requests_total{", 24) == 0 && strstr(line, app_label) &&
            strstr(line, "code=\"200\"") && v >= at_least)
            saw_requests = true;
        if (strstr(line, "polymage_request_part_seconds_count{") && strstr(line, app_label) &&
            strstr(line, "part=\"kernel\"") && v >= at_least)
            saw_kernel = true;
        saw_rss |= strcmp(line, "polymage_resident_bytes") == 0 && v > 1e6;
        saw_compiles |= strstr(line, "polymage_compiles_total{kind=\"sync\"}") && v >= 1;
        /* histograms: cumulative buckets of one series, +Inf equal to its _count */
        char *le = strstr(line, ",le=\"");
        if (strstr(line, "_bucket{") && le) {
            char series[256];
            snprintf(series, sizeof series, "%.*s", (int)(le - line), line);
            if (strcmp(series, last_series) != 0) {
                snprintf(last_series, sizeof last_series, "%s", series);
                last_bucket = -1;
            }
            if (v < last_bucket)
                bad++;
            last_bucket = v;
            if (strstr(le, "+Inf"))
                inf_bucket = v;
        } else if (strstr(line, "_count{")) {
            if (v != inf_bucket)
                bad++;
        }
    }
    if (!CHECK(bad == 0 && lines > 40 && saw_requests && saw_kernel && saw_rss && saw_compiles))
        fprintf(stderr, "/metrics: %d lines, %d bad; requests %d kernel %d rss %d compiles %d\n",
                lines, bad, saw_requests, saw_kernel, saw_rss, saw_compiles);
    free(body);
}

/* ---- the memory budget ---- */

typedef struct late_post {
    const char *path;
    void *png;
    size_t size;
    pm_http_response r;
    int rc;
} late_post;

static void *late_post_thread(void *arg)
{
    late_post *lp = arg;
    pm_http_conn conn;
    lp->rc = -1;
    if (pm_http_connect(&conn, "127.0.0.1", port, 120000) != 0)
        return NULL;
    lp->rc = pm_http_request(&conn, "POST", lp->path, "image/png", lp->png, lp->size, 1 << 26,
                             &lp->r);
    pm_http_close(&conn);
    return NULL;
}

/* The budget's metric from /metrics (-1 when absent). */
static double metric_value(const char *name)
{
    char *body = NULL;
    double v = -1;
    if (get_status("/metrics", &body) == 200 && body) {
        char key[128];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *at = strstr(body, key);
        if (at)
            v = strtod(at + strlen(key), NULL);
    }
    free(body);
    return v;
}

/* With a 64 MiB budget (48 MiB for requests): a picture whose request needs more than
 * that is 503 at once, without Retry-After; while local Laplacian's first request holds
 * its memory (its compile takes seconds), a second one that does not fit beside it is
 * 503 with Retry-After (no queue); the service stays up and serves the same request once
 * the first is done, and /ready said "over budget" only while requests waited. */
static void test_budget(const pm_service_options *base)
{
    pm_service_options o = *base;
    o.memory_budget_bytes = (int64_t)64 << 20;
    o.queue_length = 0;
    o.max_pixels = 4096 * 4096;
    o.max_side = 4096;
    o.max_body_bytes = 64 << 20;
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s)
        return;
    /* far over: harris at 1500 x 1500 needs ~100 MiB before any run is seen */
    late_post huge = {"/apps/harris", NULL, 0, {0}, 0};
    huge.png = photo_png(1500, 1500, 1, &huge.size);
    late_post_thread(&huge);
    CHECK(huge.rc == 0 && huge.r.status == 503 && huge.r.retry_after[0] == '\0');
    if (huge.r.body)
        CHECK_CONTAINS(huge.r.body, "needs about");
    pm_http_response_free(&huge.r);
    free(huge.png);
    /* one fits, two do not: the second is refused while the first compiles */
    late_post first = {"/apps/local_laplacian", NULL, 0, {0}, 0};
    first.png = photo_png(600, 800, 3, &first.size);
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, late_post_thread, &first) == 0);
    for (int tries = 0; tries < 2000 && metric_value("polymage_memory_reserved_bytes") <= 0;
         tries++)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    late_post second = {"/apps/local_laplacian", first.png, first.size, {0}, 0};
    late_post_thread(&second);
    CHECK(second.rc == 0 && second.r.status == 503 && strcmp(second.r.retry_after, "1") == 0);
    pm_http_response_free(&second.r);
    pthread_join(tid, NULL);
    if (!CHECK(first.rc == 0 && first.r.status == 200))
        fprintf(stderr, "budget: the first request: %d %s\n", first.r.status,
                first.r.body ? first.r.body : "");
    pm_http_response_free(&first.r);
    CHECK(get_status("/health", NULL) == 200 && get_status("/ready", NULL) == 200);
    late_post third = {"/apps/local_laplacian", first.png, first.size, {0}, 0};
    late_post_thread(&third);
    CHECK(third.rc == 0 && third.r.status == 200);
    pm_http_response_free(&third.r);
    CHECK(metric_value("polymage_memory_reserved_bytes") == 0);
    CHECK(metric_value("polymage_memory_rejected_total") == 2);
    free(first.png);
    pm_service_stop(s);
    port = saved;
}

/* ---- slow clients ---- */

typedef struct tricklers {
    int n, fds[64];
    atomic_int stop;
} tricklers;

/* Opens n connections from 127.0.0.1 (those over the per-address limit are refused) that
 * each send a request head one header line every 100 ms, never finishing it. */
static void *trickle_thread(void *arg)
{
    tricklers *t = arg;
    static const char start[] = "POST /apps/harris HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < t->n; i++) {
        pm_http_conn c;
        t->fds[i] = pm_http_connect(&c, "127.0.0.1", port, 2000) == 0 ? c.fd : -1;
        if (t->fds[i] >= 0 && send(t->fds[i], start, sizeof start - 1, MSG_NOSIGNAL) < 0) {
            close(t->fds[i]);
            t->fds[i] = -1;
        }
    }
    while (!atomic_load(&t->stop)) {
        for (int i = 0; i < t->n; i++)
            if (t->fds[i] >= 0 && send(t->fds[i], "X-Slow: y\r\n", 11, MSG_NOSIGNAL) < 0) {
                close(t->fds[i]);
                t->fds[i] = -1;
            }
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
    }
    for (int i = 0; i < t->n; i++)
        if (t->fds[i] >= 0)
            close(t->fds[i]);
    return NULL;
}

static double ms_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median latency of n harris requests from 127.0.0.2. */
static double p50_from_elsewhere(const void *png, size_t size, int n)
{
    double ms[32];
    pm_http_conn conn;
    if (!CHECK(pm_http_connect_from(&conn, "127.0.0.2", "127.0.0.1", port, 30000) == 0))
        return 1e9;
    for (int i = 0; i < n; i++) {
        pm_http_response r;
        double t0 = ms_now();
        int rc = pm_http_request(&conn, "POST", "/apps/harris", "image/png", png, size, 1 << 24, &r);
        ms[i] = ms_now() - t0;
        CHECK(rc == 0 && r.status == 200);
        pm_http_response_free(&r);
    }
    pm_http_close(&conn);
    qsort(ms, (size_t)n, sizeof ms[0], cmp_double);
    return ms[n / 2];
}

/* 50 connections trickling request heads from 127.0.0.1 do not slow a client at
 * 127.0.0.2 (p50 within 100 ms of the p50 without them), and the heads' deadline
 * (1.5 s here) closes the tricklers however often they send. */
static void test_slow_clients(const pm_service_options *base)
{
    pm_service_options o = *base;
    o.header_seconds = 1.5;
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s)
        return;
    size_t size = 0;
    void *png = photo_png(96, 128, 3, &size);
    p50_from_elsewhere(png, size, 3); /* compile, warm up */
    double alone = p50_from_elsewhere(png, size, 15);
    tricklers t = {.n = 50};
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, trickle_thread, &t) == 0);
    nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
    double crowded = p50_from_elsewhere(png, size, 15);
    /* the deadline: 1.5 s after they connected, every trickler is cut */
    nanosleep(&(struct timespec){2, 0}, NULL);
    double cut = metric_value("polymage_deadline_closes_total{part=\"head\"}");
    atomic_store(&t.stop, 1);
    pthread_join(tid, NULL);
    printf("slow clients: p50 %.2f ms alone, %.2f ms beside 50 tricklers; %.0f cut at the "
           "head deadline\n", alone, crowded, cut);
    CHECK(crowded <= alone + 100);
    CHECK(cut >= (double)o.per_ip_limit - 1);
    free(png);
    pm_service_stop(s);
    port = saved;
}

/* The access log: one line per request, with the client, method, path, status, sizes
 * and parts. */
static void test_access_log(const pm_service_options *base)
{
    char path[] = "/tmp/pm_test_serve_log_XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0))
        return;
    close(fd);
    pm_service_options o = *base;
    o.access_log = path;
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s) {
        unlink(path);
        return;
    }
    pm_http_conn conn;
    if (CHECK(pm_http_connect(&conn, "127.0.0.1", port, 60000) == 0)) {
        check_app(&conn, "unsharp_mask", 40, 56);
        pm_http_close(&conn);
    }
    CHECK(get_status("/nowhere", NULL) == 404);
    pm_service_stop(s);
    port = saved;
    FILE *f = fopen(path, "r");
    char text[4096] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    unlink(path);
    CHECK_CONTAINS(text, " 127.0.0.1 POST /apps/unsharp_mask 200 in=");
    CHECK_CONTAINS(text, " kernel=");
    CHECK_CONTAINS(text, " 127.0.0.1 GET /nowhere 404 ");
    int lines = 0;
    for (const char *q = text; *q; q++)
        lines += *q == '\n';
    CHECK(lines == 2);
    /* a log that is a folder, or a link (another user's planted name), refuses to start */
    char link_path[] = "/tmp/pm_test_serve_link_XXXXXX";
    int lfd = mkstemp(link_path);
    if (lfd >= 0) {
        close(lfd);
        unlink(link_path);
        CHECK(symlink(path, link_path) == 0);
    }
    const char *bad_logs[2] = {"/tmp", link_path};
    for (int i = 0; i < 2; i++) {
        pm_service_options bad = *base;
        bad.port = 0;
        bad.access_log = bad_logs[i];
        char err[256] = "";
        s = pm_service_start(&bad, err, sizeof err);
        if (!CHECK(s == NULL))
            pm_service_stop(s);
        CHECK_CONTAINS(err, "access log");
    }
    unlink(link_path);
}

/* Four first requests of harris at four sizes at once, on a fresh service: one compile
 * (pm_jit_run's shared first compile), every answer 200. */
static void test_first_requests_at_once(const pm_service_options *base)
{
    pm_service_options o = *base;
    int saved = port;
    pm_service *s = start_service(&o);
    if (!s)
        return;
    static const int64_t sizes[4][2] = {{64, 80}, {100, 90}, {200, 150}, {300, 310}};
    posting pt[4];
    pthread_t tid[4];
    for (int i = 0; i < 4; i++) {
        pt[i] = (posting){"/apps/harris", NULL, 0, 0};
        pt[i].png = photo_png(sizes[i][0], sizes[i][1], 3, &pt[i].size);
    }
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&tid[i], NULL, post_thread, &pt[i]) == 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(tid[i], NULL);
        CHECK(pt[i].status == 200);
        free(pt[i].png);
    }
    pm_cache_stats st;
    pm_jit_stats(pm_service_jit(s), &st, sizeof st);
    if (!CHECK(st.sync_compiles == 1))
        fprintf(stderr, "first requests at once: %llu synchronous compiles\n",
                (unsigned long long)st.sync_compiles);
    pm_service_stop(s);
    port = saved;
}

/* Runs cmd through the shell: its output (stdout and what cmd redirects) into out, and
 * its wait status (-1 when it could not start). */
static int run_command(const char *cmd, char *out, size_t size)
{
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, size - 1, p) : 0;
    out[n] = '\0';
    return p ? pclose(p) : -1;
}

/* The serve program (PM_SERVE_PROGRAM, set by ctest) told SIGTERM while local Laplacian's
 * first request compiles: the request is answered 200, the program says none was cut
 * and exits 0. */
static void test_sigterm(void)
{
    /* first the settings the program refuses: exit 2 (usage) or 1 (cannot start), and a
     * message naming the option or the cause */
    const char *prog = getenv("PM_SERVE_PROGRAM");
    static const char *bad[][2] = {{"--bogus", ""}, {"--memory-budget", "12x"},
                                   {"--workers", "0"}, {"--malloc", "tcmalloc"},
                                   {"--header-seconds", "-1"}};
    for (int i = 0; prog && i < 5; i++) {
        char cmd[1024], out[4096];
        snprintf(cmd, sizeof cmd, "'%s' --port 0 %s %s 2>&1", prog, bad[i][0], bad[i][1]);
        int st = run_command(cmd, out, sizeof out);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 2);
        CHECK_CONTAINS(out, "bad or unknown option");
        CHECK_CONTAINS(out, bad[i][0]);
    }
    if (prog) {
        char cmd[1024], out[4096];
        snprintf(cmd, sizeof cmd, "'%s' --port 0 --memory-budget 12M 2>&1", prog);
        int st = run_command(cmd, out, sizeof out);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
        CHECK_CONTAINS(out, "at least 64 MiB");
    }
    const char *program = getenv("PM_SERVE_PROGRAM");
    if (!CHECK(program != NULL)) {
        fprintf(stderr, "test_sigterm: PM_SERVE_PROGRAM is not set (ctest sets it)\n");
        return;
    }
    int out[2];
    if (!CHECK(pipe(out) == 0))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(out[1], STDOUT_FILENO);
        close(out[0]);
        close(out[1]);
        execl(program, program, "--port", "0", "--threads", "2", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    FILE *f = fdopen(out[0], "r");
    char line[512] = "";
    int child_port = 0;
    if (f && fgets(line, sizeof line, f)) {
        const char *at = strstr(line, "127.0.0.1:");
        if (at)
            child_port = atoi(at + 10);
    }
    if (!CHECK(pid > 0 && child_port > 0)) {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        if (f)
            fclose(f);
        return;
    }
    int saved = port;
    port = child_port;
    posting pt = {"/apps/local_laplacian", NULL, 0, 0};
    pt.png = photo_png(128, 128, 3, &pt.size);
    pthread_t tid;
    CHECK(pthread_create(&tid, NULL, post_thread, &pt) == 0);
    /* in progress: the post and this /metrics request itself */
    for (int tries = 0; tries < 2000 && metric_value("polymage_requests_in_progress") < 2;
         tries++)
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    CHECK(kill(pid, SIGTERM) == 0);
    pthread_join(tid, NULL);
    if (!CHECK(pt.status == 200))
        fprintf(stderr, "sigterm: the request in progress got %d\n", pt.status);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char rest[2048] = "";
    size_t n = fread(rest, 1, sizeof rest - 1, f);
    rest[n] = '\0';
    CHECK_CONTAINS(rest, "0 request(s) cut");
    fclose(f);
    free(pt.png);
    port = saved;
}

int main(void)
{
    pm_service_options o = pm_service_options_default();
    o.port = 0; /* a free one */
    o.max_body_bytes = 4 << 20;
    o.max_side = 2048;
    o.max_pixels = 1 << 20;
    o.kernel_threads = 2;
    char err[256];
    pm_service *s = pm_service_start(&o, err, sizeof err);
    if (!CHECK(s != NULL)) {
        fprintf(stderr, "%s\n", err);
        return check_finish("test_serve");
    }
    port = pm_service_port(s);
    CHECK(port > 0);

    pm_http_conn conn;
    CHECK(pm_http_connect(&conn, "127.0.0.1", port, 60000) == 0);
    check_app(&conn, "harris", 48, 64);
    check_app(&conn, "unsharp_mask", 40, 56);
    /* another bucket of harris: served at once by the kernel it has */
    pm_cache_stats before, after;
    pm_jit_stats(pm_service_jit(s), &before, sizeof before);
    check_app(&conn, "harris", 150, 200);
    pm_jit_stats(pm_service_jit(s), &after, sizeof after);
    CHECK(after.fallback_runs == before.fallback_runs + 1);
    CHECK(after.sync_compiles == before.sync_compiles);

    char *stats = get_stats();
    const char *fields[] = {"hits", "misses", "fallback_runs", "sync_compiles",
                            "background_compiles", "evictions", "compile_ms_total",
                            "compile_ms_max", "code_bytes", "kernels", "disk_hits",
                            "requests", "client_errors"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        CHECK(json_field(stats, fields[i]) >= 0);
    CHECK(json_field(stats, "sync_compiles") == 2);
    /* the service compiles in helper processes (isolate_compiles): the background
     * compile of the third request's bucket may still run */
    CHECK(json_field(stats, "isolated_compiles") >= 2 && json_field(stats, "isolated_failures") == 0);
    CHECK(json_field(stats, "responses_ok") == 3);
    free(stats);

    /* ---- bad requests ---- */
    size_t png_size = 0;
    void *png = photo_png(32, 32, 1, &png_size);
    check_rejected(&conn, "POST", "/apps/no_such_app", png, png_size, 404, "no app named");
    check_rejected(&conn, "GET", "/nowhere", NULL, 0, 404, "no such resource");
    check_rejected(&conn, "GET", "/apps/harris", NULL, 0, 405, "POST");
    check_rejected(&conn, "PUT", "/apps/harris", png, png_size, 405, "POST");
    check_rejected(&conn, "POST", "/stats", png, png_size, 405, "GET");
    static const char garbage[] = "this is not a picture at all";
    check_rejected(&conn, "POST", "/apps/harris", garbage, sizeof garbage, 400, "not a PNG");
    check_rejected(&conn, "POST", "/apps/harris", NULL, 0, 400, "not a PNG");
    check_rejected(&conn, "POST", "/apps/harris", png, png_size / 2, 400, "PNG");
    check_rejected(&conn, "POST", "/apps/harris", png, 40, 400, "PNG");
    size_t small_size = 0, wide_size = 0, mid_size = 0;
    /* an app's name with any byte outside [a-z0-9_], an escaped NUL among them: 404 */
    static const char *names[] = {"/apps/harris%00x", "/apps/harris%00", "/apps/Harris",
                                  "/apps/harris%2F", "/apps/harris/"};
    for (int i = 0; i < 5; i++)
        check_rejected(&conn, "POST", names[i], png, png_size, 404, "no app named");
    void *small = photo_png(4, 4, 3, &small_size);
    check_rejected(&conn, "POST", "/apps/harris", small, small_size, 422, "at least 8 x 8");
    void *mid = photo_png(64, 64, 3, &mid_size);
    check_rejected(&conn, "POST", "/apps/local_laplacian", mid, mid_size, 422,
                   "at least 128 x 128");
    void *wide = photo_png(2, 2049, 1, &wide_size); /* over max_side */
    check_rejected(&conn, "POST", "/apps/harris", wide, wide_size, 413, "limit");
    free(small);
    free(mid);
    free(wide);
    pm_http_close(&conn);

    /* a declared body over max_body_bytes: refused from its head */
    const char *big = "POST /apps/harris HTTP/1.1\r\nHost: x\r\nContent-Length: 5000000\r\n\r\n";
    pm_http_response r;
    CHECK(pm_http_raw("127.0.0.1", port, 20000, big, strlen(big), &r) == 0);
    CHECK(r.status == 413);
    pm_http_response_free(&r);
    /* a body cut short (the client stops sending): no answer is owed, nothing breaks */
    char cut[512];
    int n = snprintf(cut, sizeof cut,
                     "POST /apps/harris HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n",
                     png_size);
    memcpy(cut + n, png, 20);
    if (pm_http_raw("127.0.0.1", port, 20000, cut, (size_t)n + 20, &r) == 0)
        CHECK(r.status >= 400 && r.status < 500);
    pm_http_response_free(&r);
    /* two Content-Length headers, equal or not, and a malformed one: 400 (libmicrohttpd
     * 0.9.75 refuses the two itself; the service checks too, for a version that does not) */
    static const char *lengths[] = {"Content-Length: 4\r\nContent-Length: 4",
                                    "Content-Length: 4\r\nContent-Length: 6",
                                    "Content-Length: 4x"};
    for (int i = 0; i < 3; i++) {
        char twice[256];
        int m = snprintf(twice, sizeof twice, "POST /apps/harris HTTP/1.1\r\nHost: x\r\n%s"
                         "\r\n\r\nabcdef", lengths[i]);
        if (CHECK(pm_http_raw("127.0.0.1", port, 20000, twice, (size_t)m, &r) == 0) &&
            !CHECK(r.status == 400))
            fprintf(stderr, "%s: %d %s\n", lengths[i], r.status, r.body ? r.body : "");
        pm_http_response_free(&r);
    }
    /* not HTTP at all */
    static const char junk[] = "\x01\x02 hello\r\n\r\n";
    if (pm_http_raw("127.0.0.1", port, 20000, junk, sizeof junk - 1, &r) == 0)
        CHECK(r.status >= 400 && r.status < 500);
    pm_http_response_free(&r);
    free(png);

    /* still serving, and counting what it refused */
    stats = get_stats();
    CHECK(json_field(stats, "client_errors") >= 13);
    CHECK(json_field(stats, "server_errors") == 0);
    free(stats);
    CHECK(pm_http_connect(&conn, "127.0.0.1", port, 60000) == 0);
    check_app(&conn, "harris", 48, 64);
    pm_http_close(&conn);

    /* /health and /ready with nothing to preload: 200 */
    CHECK(get_status("/health", NULL) == 200);
    char *ready = NULL;
    CHECK(get_status("/ready", &ready) == 200);
    CHECK(ready && strncmp(ready, "ready", 5) == 0);
    free(ready);
    test_formats();
    test_metrics("harris", 3);
    pm_service_stop(s);
    test_preload(&o);
    test_drain(&o);
    test_budget(&o);
    test_slow_clients(&o);
    test_access_log(&o);
    test_first_requests_at_once(&o);
    test_sigterm();
    return check_finish("test_serve");
}
