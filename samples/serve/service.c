/* service.c — the HTTP image service (see service.h for the promise, the memory budget
 * and the threading). */
#define _DEFAULT_SOURCE /* MHD's socket info, strcasecmp, gmtime_r */
#define _POSIX_C_SOURCE 200809L
#include "service.h"

#include "png_codec.h"
#include "polymage_io.h"
#include "samples.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

enum { MAX_PRELOAD = 64 };

/* ---- metrics ------------------------------------------------------------------------------ */

/* Latency histogram bounds in seconds (Prometheus "le"), the last +Inf. */
static const double BUCKET_LE[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                   0.5,   1,      2.5,   5,    10,    30,   60,  INFINITY};
enum { NBUCKETS = sizeof BUCKET_LE / sizeof BUCKET_LE[0] };

/* The parts of an app request, in the order they happen (Server-Timing, metrics, log). */
enum { PART_TOTAL, PART_DECODE, PART_QUEUE, PART_FILL, PART_KERNEL, PART_ENCODE, NPARTS };
static const char *const PART_NAME[NPARTS] = {"total", "decode", "queue", "fill", "kernel",
                                              "encode"};

/* The statuses the service answers, counted apart; anything else is "other". */
static const unsigned CODES[] = {200, 400, 404, 405, 406, 413, 422, 500, 503};
enum { NCODES = sizeof CODES / sizeof CODES[0] + 1 };

typedef struct histogram {
    uint64_t count[NBUCKETS]; /* per bucket (not cumulative)                           */
    double sum;               /* seconds                                               */
    uint64_t n;
} histogram;

/* One app's figures (the last row of the service's table: every other path). */
typedef struct app_metrics {
    uint64_t codes[NCODES];
    histogram part[NPARTS];
} app_metrics;

/* A built pipeline of an app, free for a request to use. */
typedef struct pooled {
    pm_ctx *ctx;
    pm_pipeline *pipeline;
    struct pooled *next;
} pooled;

typedef struct preload_entry {
    const pm_sample_app *app;
    int64_t rows, cols;
} preload_entry;

/* A request waiting for memory (a node on its thread's stack). */
typedef struct waiter {
    int64_t bytes;
    bool admitted;
    struct waiter *next;
} waiter;

/* What the watchdog knows of a connection (libmicrohttpd's socket context). */
typedef enum conn_phase { CONN_HEAD, CONN_BODY, CONN_BUSY } conn_phase;
typedef struct conn_state {
    int fd;
    conn_phase phase;
    double deadline_ms; /* CONN_HEAD / CONN_BODY: closed when passed                 */
    bool cut;           /* the watchdog shut it down                                 */
    struct conn_state *prev, *next;
} conn_state;

struct pm_service {
    pm_service_options o;
    struct MHD_Daemon *daemon;
    pm_jit *jit;
    int port;
    int napps;
    const pm_sample_app *apps;
    /* built pipelines per app, each list under pool_lock */
    pthread_mutex_t pool_lock;
    pooled **pool;
    /* --preload: the kernels, the thread that compiles them, how far it got */
    preload_entry preload[MAX_PRELOAD];
    int npreload;
    pthread_t preloader;
    bool preloading;
    atomic_int preloaded, preload_failed;
    atomic_int active; /* requests begun and not completed (pm_service_stop_draining) */
    char preload_error[256]; /* written before preload_failed is set */
    /* admission: requests decoding, running or encoding (at most `workers`), their
     * estimated bytes (within budget_limit), the FIFO of those waiting for both */
    pthread_mutex_t budget_lock;
    pthread_cond_t budget_changed;
    int64_t budget_limit; /* what requests may hold at once; 0 = no budget */
    int workers, running;
    int64_t reserved;
    waiter *wait_head, *wait_tail;
    int waiting;
    /* connections and their deadlines */
    pthread_mutex_t conn_lock;
    conn_state *conns;
    int nconns;
    uint64_t cut_head, cut_body; /* connections closed at a deadline */
    pthread_t watchdog;
    bool watching;
    atomic_bool stopping;
    double idle_since_ms; /* under conn_lock: when the last request ended (0 = trimmed) */
    /* counters and histograms, under metrics_lock */
    pthread_mutex_t metrics_lock;
    app_metrics *metrics; /* napps + 1 */
    int log_fd;           /* the access log, or -1 */
    /* answered requests by class, for /stats */
    atomic_uint_fast64_t requests, ok, client_errors, server_errors, rejected_memory;
};

/* Answer formats. */
typedef enum answer_format { ANSWER_PNG, ANSWER_JPEG, ANSWER_RAW } answer_format;

/* One request, from its head to its end (on_completed): what it asked, how it went. */
typedef struct request {
    double start_ms;
    char method[12];
    char path[80];
    char client[INET6_ADDRSTRLEN];
    const pm_sample_app *app;
    int metrics_row; /* the app's index, or napps for every other path */
    conn_state *conn;
    bool answered;   /* a response is queued: body bytes still arriving are dropped */
    uint8_t *body;
    size_t len, cap;
    int too_large;   /* the body passed max_body_bytes: dropped, answered 413 at its end */
    unsigned status;
    size_t bytes_out;
    double part_ms[NPARTS];
} request;

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
                                .isolate_compiles = 1,
                                .queue_length = 32,
                                .queue_seconds = 10,
                                .header_seconds = 10,
                                .body_seconds = 60,
                                .per_ip_limit = 16,
                                .scratch_idle_ms = -1,
                                .jpeg_quality = 90};
}

int pm_service_parse_bytes(const char *text, int64_t *bytes)
{
    if (!text || !(*text >= '0' && *text <= '9'))
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    int shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (errno || *end || v > ((unsigned long long)INT64_MAX >> shift))
        return -1;
    *bytes = (int64_t)(v << shift);
    return 0;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void observe(histogram *h, double seconds)
{
    int b = 0;
    while (b < NBUCKETS - 1 && seconds > BUCKET_LE[b])
        b++;
    h->count[b]++;
    h->sum += seconds;
    h->n++;
}

/* Counts a finished request in the metrics and writes its access-log line. */
static void record(pm_service *s, const request *rq)
{
    int code = NCODES - 1;
    for (int i = 0; i < NCODES - 1; i++)
        if (CODES[i] == rq->status)
            code = i;
    pthread_mutex_lock(&s->metrics_lock);
    app_metrics *m = &s->metrics[rq->metrics_row];
    m->codes[code]++;
    observe(&m->part[PART_TOTAL], rq->part_ms[PART_TOTAL] / 1e3);
    if (rq->app && rq->status == 200)
        for (int p = PART_DECODE; p < NPARTS; p++)
            observe(&m->part[p], rq->part_ms[p] / 1e3);
    pthread_mutex_unlock(&s->metrics_lock);
    if (s->log_fd < 0)
        return;
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    struct tm tm;
    gmtime_r(&wall.tv_sec, &tm);
    char line[512];
    int n = snprintf(line, sizeof line,
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %s %s %s %u in=%zu out=%zu ms=%.2f",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, wall.tv_nsec / 1000000, rq->client[0] ? rq->client : "-",
                     rq->method, rq->path, rq->status, rq->len, rq->bytes_out,
                     rq->part_ms[PART_TOTAL]);
    for (int p = PART_DECODE; rq->app && rq->status == 200 && p < NPARTS && n > 0 &&
                              n < (int)sizeof line;
         p++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s=%.2f", PART_NAME[p],
                      rq->part_ms[p]);
    if (n > 0 && n < (int)sizeof line - 1) {
        line[n++] = '\n';
        /* one write per line on an O_APPEND file: lines of concurrent requests never mix */
        ssize_t w = write(s->log_fd, line, (size_t)n);
        (void)w; /* a full disk must not fail the request */
    }
}

/* Free heap memory kept at most: over it, the watchdog gives the free pages back. */
enum { HEAP_SLACK_BYTES = 64 << 20 };

/* Gives memory freed by requests back to the system (glibc keeps freed heap in its
 * arenas, for the next request to reuse without page faults); `always`, or only when the
 * arenas hold more than HEAP_SLACK_BYTES free. */
static void trim_memory(bool always)
{
#ifdef __GLIBC__
    if (always || mallinfo2().fordblks > (size_t)HEAP_SLACK_BYTES)
        malloc_trim(0);
#else
    (void)always;
#endif
}

/* ---- answers ------------------------------------------------------------------------- */

static enum MHD_Result reply(pm_service *s, struct MHD_Connection *c, request *rq,
                             unsigned status, const char *type, void *data, size_t size,
                             const char *allow, const char *retry_after,
                             const char *const *extra)
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
    if (retry_after)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, retry_after);
    for (int i = 0; extra && extra[i]; i += 2)
        MHD_add_response_header(r, extra[i], extra[i + 1]);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    if (rq) {
        rq->answered = true;
        rq->status = status;
        rq->bytes_out = size;
    }
    atomic_fetch_add(&s->requests, 1);
    atomic_fetch_add(status < 400 ? &s->ok : status < 500 ? &s->client_errors : &s->server_errors, 1);
    return rc;
}

static enum MHD_Result reply_text(pm_service *s, struct MHD_Connection *c, request *rq,
                                  unsigned status, const char *allow, const char *retry_after,
                                  const char *fmt, ...)
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
    return reply(s, c, rq, status, "text/plain; charset=utf-8", copy, (size_t)n, allow,
                 retry_after, NULL);
}

/* A growing text for /stats and /metrics; false once out of memory. */
typedef struct text {
    char *data;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *fmt, ...)
{
    for (int attempt = 0; attempt < 2 && !t->failed; attempt++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data ? t->data + t->len : NULL, t->data ? t->cap - t->len : 0,
                          fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if (t->data && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap ? t->cap : 4096;
        while (cap < t->len + (size_t)n + 1)
            cap *= 2;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
}

static enum MHD_Result reply_built(pm_service *s, struct MHD_Connection *c, request *rq,
                                   text *t, const char *type)
{
    if (t->failed || !t->data) {
        free(t->data);
        return reply_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "1",
                          "out of memory for the answer");
    }
    return reply(s, c, rq, MHD_HTTP_OK, type, t->data, t->len, NULL, NULL, NULL);
}

static enum MHD_Result reply_stats(pm_service *s, struct MHD_Connection *c, request *rq)
{
    pm_cache_stats st;
    memset(&st, 0, sizeof st);
    pm_jit_stats(s->jit, &st, sizeof st);
    text t = {0};
    put(&t,
        "{\"hits\":%llu,\"misses\":%llu,\"fallback_runs\":%llu,\"sync_compiles\":%llu,"
        "\"background_compiles\":%llu,\"failed_compiles\":%llu,\"queue_full\":%llu,"
        "\"evictions\":%llu,\"compile_ms_total\":%.3f,\"compile_ms_max\":%.3f,"
        "\"code_bytes\":%lld,\"kernels\":%d,\"queued\":%d,\"compiling\":%d,"
        "\"disk_hits\":%llu,\"disk_writes\":%llu,\"disk_rejected\":%llu,"
        "\"disk_untrusted\":%llu,\"isolated_compiles\":%llu,\"isolated_failures\":%llu,"
        "\"shared_compile_waits\":%llu,\"scratch_bytes\":%lld,\"scratch_released\":%llu,"
        "\"upgrades\":%llu,",
        (unsigned long long)st.hits, (unsigned long long)st.misses,
        (unsigned long long)st.fallback_runs, (unsigned long long)st.sync_compiles,
        (unsigned long long)st.background_compiles, (unsigned long long)st.failed_compiles,
        (unsigned long long)st.queue_full, (unsigned long long)st.evictions,
        st.compile_ms_total, st.compile_ms_max, (long long)st.code_bytes, st.kernels,
        st.queued, st.compiling, (unsigned long long)st.disk_hits,
        (unsigned long long)st.disk_writes, (unsigned long long)st.disk_rejected,
        (unsigned long long)st.disk_untrusted, (unsigned long long)st.isolated_compiles,
        (unsigned long long)st.isolated_failures, (unsigned long long)st.shared_compile_waits,
        (long long)st.scratch_bytes, (unsigned long long)st.scratch_released,
        (unsigned long long)st.upgrades);
    put(&t,
        "\"requests\":%llu,\"responses_ok\":%llu,\"client_errors\":%llu,"
        "\"server_errors\":%llu,\"rejected_memory\":%llu}\n",
        (unsigned long long)atomic_load(&s->requests), (unsigned long long)atomic_load(&s->ok),
        (unsigned long long)atomic_load(&s->client_errors),
        (unsigned long long)atomic_load(&s->server_errors),
        (unsigned long long)atomic_load(&s->rejected_memory));
    return reply_built(s, c, rq, &t, "application/json");
}

static enum MHD_Result reply_apps(pm_service *s, struct MHD_Connection *c, request *rq)
{
    text t = {0};
    put(&t, "[");
    for (int i = 0; i < s->napps; i++)
        put(&t, "%s{\"name\":\"%s\",\"title\":\"%s\",\"min_rows\":%lld,\"min_cols\":%lld}",
            i ? "," : "", s->apps[i].name, s->apps[i].title, (long long)s->apps[i].min_rows,
            (long long)s->apps[i].min_cols);
    put(&t, "]\n");
    return reply_built(s, c, rq, &t, "application/json");
}

/* The process's resident size from /proc/self/statm (0 where there is none). */
static int64_t resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lld %lld", &size, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * (int64_t)sysconf(_SC_PAGESIZE);
}

static void put_histogram(text *t, const char *name, const char *labels, const histogram *h)
{
    uint64_t cumulative = 0;
    for (int b = 0; b < NBUCKETS; b++) {
        cumulative += h->count[b];
        if (b == NBUCKETS - 1)
            put(t, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels,
                (unsigned long long)cumulative);
        else
            put(t, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, BUCKET_LE[b],
                (unsigned long long)cumulative);
    }
    put(t, "%s_sum{%s} %.6f\n%s_count{%s} %llu\n", name, labels, h->sum, name, labels,
        (unsigned long long)h->n);
}

static void put_metric(text *t, const char *name, const char *type, const char *help,
                       double value)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
}

static enum MHD_Result reply_metrics(pm_service *s, struct MHD_Connection *c, request *rq)
{
    pm_cache_stats st;
    memset(&st, 0, sizeof st);
    pm_jit_stats(s->jit, &st, sizeof st);
    text t = {0};
    app_metrics *m = malloc(sizeof *m * (size_t)(s->napps + 1));
    if (!m)
        return reply_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "1", "out of memory");
    pthread_mutex_lock(&s->metrics_lock);
    memcpy(m, s->metrics, sizeof *m * (size_t)(s->napps + 1));
    pthread_mutex_unlock(&s->metrics_lock);
    put(&t, "# HELP polymage_requests_total Requests answered, by app (\"-\": any other path) "
            "and HTTP status.\n# TYPE polymage_requests_total counter\n");
    for (int a = 0; a <= s->napps; a++)
        for (int k = 0; k < NCODES; k++) {
            if (!m[a].codes[k])
                continue;
            char code[16];
            snprintf(code, sizeof code, "%u", k < NCODES - 1 ? CODES[k] : 0);
            put(&t, "polymage_requests_total{app=\"%s\",code=\"%s\"} %llu\n",
                a < s->napps ? s->apps[a].name : "-", k < NCODES - 1 ? code : "other",
                (unsigned long long)m[a].codes[k]);
        }
    put(&t, "# HELP polymage_request_seconds Time from a request's head to its answer, by "
            "app.\n# TYPE polymage_request_seconds histogram\n");
    for (int a = 0; a <= s->napps; a++) {
        if (!m[a].part[PART_TOTAL].n)
            continue;
        char labels[96];
        snprintf(labels, sizeof labels, "app=\"%s\"", a < s->napps ? s->apps[a].name : "-");
        put_histogram(&t, "polymage_request_seconds", labels, &m[a].part[PART_TOTAL]);
    }
    put(&t, "# HELP polymage_request_part_seconds Where an answered app request's time went: "
            "decode, queue (waiting for memory), fill (input buffers), kernel, encode.\n"
            "# TYPE polymage_request_part_seconds histogram\n");
    for (int a = 0; a < s->napps; a++)
        for (int p = PART_DECODE; p < NPARTS; p++) {
            if (!m[a].part[p].n)
                continue;
            char labels[128];
            snprintf(labels, sizeof labels, "app=\"%s\",part=\"%s\"", s->apps[a].name,
                     PART_NAME[p]);
            put_histogram(&t, "polymage_request_part_seconds", labels, &m[a].part[p]);
        }
    free(m);
    put(&t, "# HELP polymage_compiles_total Kernels compiled, by where.\n"
            "# TYPE polymage_compiles_total counter\n"
            "polymage_compiles_total{kind=\"sync\"} %llu\n"
            "polymage_compiles_total{kind=\"background\"} %llu\n"
            "polymage_compiles_total{kind=\"failed\"} %llu\n",
        (unsigned long long)st.sync_compiles, (unsigned long long)st.background_compiles,
        (unsigned long long)st.failed_compiles);
    put_metric(&t, "polymage_compile_seconds_total", "counter",
               "Time spent compiling kernels.", st.compile_ms_total / 1e3);
    put_metric(&t, "polymage_compile_seconds_max", "gauge", "The longest compile.",
               st.compile_ms_max / 1e3);
    put_metric(&t, "polymage_cache_hits_total", "counter",
               "Kernel lookups that found their size bucket's kernel.", (double)st.hits);
    put_metric(&t, "polymage_cache_misses_total", "counter", "Kernel lookups that did not.",
               (double)st.misses);
    put_metric(&t, "polymage_cache_fallback_runs_total", "counter",
               "Runs served by the nearest bucket's kernel.", (double)st.fallback_runs);
    put_metric(&t, "polymage_cache_evictions_total", "counter",
               "Kernels evicted for the cache's budgets.", (double)st.evictions);
    put_metric(&t, "polymage_cache_shared_compile_waits_total", "counter",
               "First runs that waited for another's compile.", (double)st.shared_compile_waits);
    put_metric(&t, "polymage_cache_kernels", "gauge", "Cached kernels.", st.kernels);
    put_metric(&t, "polymage_cache_code_bytes", "gauge", "Their object code.",
               (double)st.code_bytes);
    put_metric(&t, "polymage_cache_scratch_bytes", "gauge",
               "Scratch memory the cached kernels keep.", (double)st.scratch_bytes);
    put_metric(&t, "polymage_cache_scratch_released_bytes_total", "counter",
               "Idle scratch freed.", (double)st.scratch_released);
    put_metric(&t, "polymage_compile_queue", "gauge", "Background compiles waiting.", st.queued);
    put_metric(&t, "polymage_kernel_upgrades_total", "counter",
               "Kernels replaced by their full-DP compile.", (double)st.upgrades);
    put_metric(&t, "polymage_disk_cache_hits_total", "counter",
               "Kernels loaded from the disk cache.", (double)st.disk_hits);
    put_metric(&t, "polymage_disk_cache_writes_total", "counter",
               "Kernels written to the disk cache.", (double)st.disk_writes);
    put_metric(&t, "polymage_disk_cache_rejected_total", "counter",
               "Invalid disk cache files replaced.", (double)st.disk_rejected);
    put_metric(&t, "polymage_disk_cache_untrusted_total", "counter",
               "Disk cache names not read (links, other owners, ...).",
               (double)st.disk_untrusted);
    put_metric(&t, "polymage_resident_bytes", "gauge", "The process's resident memory.",
               (double)resident_bytes());
    pthread_mutex_lock(&s->budget_lock);
    int64_t reserved = s->reserved;
    int waiting = s->waiting;
    pthread_mutex_unlock(&s->budget_lock);
    put_metric(&t, "polymage_memory_budget_bytes", "gauge",
               "--memory-budget (0: none).", (double)s->o.memory_budget_bytes);
    put_metric(&t, "polymage_memory_reserved_bytes", "gauge",
               "Estimated bytes of the requests running.", (double)reserved);
    put_metric(&t, "polymage_memory_waiting", "gauge", "Requests waiting for memory.",
               waiting);
    put_metric(&t, "polymage_memory_rejected_total", "counter",
               "Requests answered 503 for memory.", (double)atomic_load(&s->rejected_memory));
    put_metric(&t, "polymage_requests_in_progress", "gauge", "Requests begun, not ended.",
               atomic_load(&s->active));
    pthread_mutex_lock(&s->conn_lock);
    int nconns = s->nconns;
    uint64_t cut_head = s->cut_head, cut_body = s->cut_body;
    pthread_mutex_unlock(&s->conn_lock);
    put_metric(&t, "polymage_connections", "gauge", "Open client connections.", nconns);
    put(&t, "# HELP polymage_deadline_closes_total Connections closed because their request "
            "head or body missed its deadline.\n# TYPE polymage_deadline_closes_total counter\n"
            "polymage_deadline_closes_total{part=\"head\"} %llu\n"
            "polymage_deadline_closes_total{part=\"body\"} %llu\n",
        (unsigned long long)cut_head, (unsigned long long)cut_body);
    return reply_built(s, c, rq, &t, "text/plain; version=0.0.4; charset=utf-8");
}

/* ---- built pipelines ------------------------------------------------------------------ */

/* A built pipeline of app `a` for this request alone: one from the pool, or a new one when
 * every built one is in use. NULL with a message when it cannot be built. */
static pooled *pipeline_take(pm_service *s, int a, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&s->pool_lock);
    pooled *pp = s->pool[a];
    if (pp)
        s->pool[a] = pp->next;
    pthread_mutex_unlock(&s->pool_lock);
    if (pp)
        return pp;
    pp = calloc(1, sizeof *pp);
    pp->ctx = pp ? pm_ctx_new() : NULL;
    pp->pipeline = pp && pp->ctx ? s->apps[a].build(pp->ctx) : NULL;
    if (pp && pp->pipeline)
        return pp;
    snprintf(msg, msg_size, "%s cannot be built: %s", s->apps[a].name,
             pp && pp->ctx ? pm_ctx_errmsg(pp->ctx) : "out of memory");
    if (pp)
        pm_ctx_free(pp->ctx);
    free(pp);
    return NULL;
}

static void pipeline_give(pm_service *s, int a, pooled *pp)
{
    pthread_mutex_lock(&s->pool_lock);
    pp->next = s->pool[a];
    s->pool[a] = pp;
    pthread_mutex_unlock(&s->pool_lock);
}

/* ---- the memory budget ---------------------------------------------------------------- */

/* With budget_lock held: whether a request of `bytes` may start now. */
static bool fits_locked(const pm_service *s, int64_t bytes)
{
    return s->running < s->workers && (!s->budget_limit || s->reserved + bytes <= s->budget_limit);
}

/* With budget_lock held: admits waiters from the head while they fit. */
static void grant_locked(pm_service *s)
{
    bool any = false;
    while (s->wait_head && fits_locked(s, s->wait_head->bytes)) {
        waiter *w = s->wait_head;
        s->reserved += w->bytes;
        s->running++;
        w->admitted = true;
        s->wait_head = w->next;
        if (!s->wait_head)
            s->wait_tail = NULL;
        s->waiting--;
        any = true;
    }
    if (any)
        pthread_cond_broadcast(&s->budget_changed);
}

/* Admits a request: one of the `workers` places and `bytes` of the budget, waiting in the
 * FIFO up to queue_seconds. 0 when admitted, else 503 with a message; *retry says whether
 * waiting can help (Retry-After). */
static unsigned admit(pm_service *s, int64_t bytes, bool *retry, char *msg, size_t msg_size)
{
    *retry = false;
    if (s->budget_limit && bytes > s->budget_limit) {
        snprintf(msg, msg_size, "this request needs about %lld MiB; the service runs requests "
                 "in %lld MiB (three quarters of --memory-budget)", (long long)(bytes >> 20),
                 (long long)(s->budget_limit >> 20));
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    pthread_mutex_lock(&s->budget_lock);
    if (!s->wait_head && fits_locked(s, bytes)) {
        s->reserved += bytes;
        s->running++;
        pthread_mutex_unlock(&s->budget_lock);
        return 0;
    }
    *retry = true;
    if (s->waiting >= (int)s->o.queue_length) {
        int waiting = s->waiting;
        pthread_mutex_unlock(&s->budget_lock);
        snprintf(msg, msg_size, "the service is busy and %d requests wait", waiting);
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    waiter w = {bytes, false, NULL};
    if (s->wait_tail)
        s->wait_tail->next = &w;
    else
        s->wait_head = &w;
    s->wait_tail = &w;
    s->waiting++;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double end = (double)until.tv_sec + until.tv_nsec / 1e9 + s->o.queue_seconds;
    until.tv_sec = (time_t)end;
    until.tv_nsec = (long)((end - (double)until.tv_sec) * 1e9);
    while (!w.admitted) {
        if (pthread_cond_timedwait(&s->budget_changed, &s->budget_lock, &until) != ETIMEDOUT ||
            w.admitted)
            continue;
        waiter **link = &s->wait_head, *prev = NULL; /* out of the queue */
        while (*link != &w) {
            prev = *link;
            link = &(*link)->next;
        }
        *link = w.next;
        if (s->wait_tail == &w)
            s->wait_tail = prev;
        s->waiting--;
        grant_locked(s); /* those behind it may fit */
        pthread_mutex_unlock(&s->budget_lock);
        snprintf(msg, msg_size, "the service stayed busy for %g s (this request: %lld MiB)",
                 s->o.queue_seconds, (long long)(bytes >> 20));
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    pthread_mutex_unlock(&s->budget_lock);
    return 0;
}

static void release_budget(pm_service *s, int64_t bytes)
{
    pthread_mutex_lock(&s->budget_lock);
    s->reserved -= bytes;
    s->running--;
    grant_locked(s);
    pthread_mutex_unlock(&s->budget_lock);
}

/* ---- running an app ------------------------------------------------------------------- */

/* The byte size of input or output `index` at these parameters, checked against overflow
 * and a 4 GiB cap: 0, or the HTTP status to answer. */
static unsigned buffer_bytes(pm_pipeline *p, int is_output, int index, const pm_value *params,
                             int *ndims, int64_t *extents, size_t *bytes, char *msg,
                             size_t msg_size)
{
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    if (pm_pipeline_buffer_shape(p, is_output, index, params, ndims, extents) != PM_OK) {
        snprintf(msg, msg_size, "no buffer shape for %s", pm_func_name(f));
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
    size_t elem = pm_type_size(pm_func_type(f));
    *bytes = elem;
    for (int d = 0; d < *ndims; d++) {
        if (extents[d] < 1 || (uint64_t)extents[d] > ((uint64_t)1 << 32) / *bytes) {
            snprintf(msg, msg_size, "%s would need more than 4 GiB", pm_func_name(f));
            return MHD_HTTP_CONTENT_TOO_LARGE;
        }
        *bytes *= (size_t)extents[d];
    }
    return 0;
}

/* A dense buffer of input or output `index`: an input uninitialized (fill_from writes
 * every element), an output zeroed (an app may leave a frame undefined: harris's border).
 * 0, or the HTTP status. */
static unsigned make_buffer(pm_pipeline *p, int is_output, int index, const pm_value *params,
                            pm_buffer *b, char *msg, size_t msg_size)
{
    int ndims = 0;
    int64_t extents[PM_MAX_DIMS];
    size_t bytes = 0;
    unsigned status = buffer_bytes(p, is_output, index, params, &ndims, extents, &bytes, msg,
                                   msg_size);
    if (status)
        return status;
    pm_func *f = is_output ? pm_pipeline_output(p, index) : pm_pipeline_input(p, index);
    *b = pm_buffer_dense(NULL, pm_func_type(f), ndims, extents);
    b->data = is_output ? calloc(1, bytes) : malloc(bytes);
    if (!b->data) {
        snprintf(msg, msg_size, "out of memory for %s (%zu bytes)", pm_func_name(f), bytes);
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    return 0;
}

/* The bytes a request of this picture will hold at most while it runs: its body, the
 * decoded picture, the pipeline's buffers, the kernel's scratch (pm_jit_scratch_estimate;
 * four times the buffers before any run of the app was seen), the rendered answer and
 * its encoding (at most the rendered size again). 0, or the HTTP status. */
static unsigned estimate_bytes(pm_service *s, pm_pipeline *p, const pm_value *params,
                               size_t body, int64_t rows, int64_t cols, int64_t *total,
                               char *msg, size_t msg_size)
{
    int64_t buffers = 0, out_pixels = 0;
    for (int io = 0; io < 2; io++) {
        int n = io ? pm_pipeline_noutputs(p) : pm_pipeline_ninputs(p);
        for (int i = 0; i < n; i++) {
            int ndims = 0;
            int64_t extents[PM_MAX_DIMS];
            size_t bytes = 0;
            unsigned status = buffer_bytes(p, io, i, params, &ndims, extents, &bytes, msg,
                                           msg_size);
            if (status)
                return status;
            buffers += (int64_t)bytes;
            if (io && i == 0) /* pm_sample_render: the last two dimensions, 1 or 3 channels */
                out_pixels = extents[ndims - 1] * (ndims > 1 ? extents[ndims - 2] : 1) * 3;
        }
    }
    int64_t scratch = -1;
    pm_error err;
    if (pm_jit_scratch_estimate(s->jit, p, NULL, params, &scratch, &err) != PM_OK ||
        scratch < 0)
        scratch = 4 * buffers;
    *total = (int64_t)body + rows * cols * 3 + buffers + scratch + 2 * out_pixels;
    return 0;
}

/* The answer format the Accept header prefers among PNG, JPEG and raw pixels (the highest
 * q; PNG, then JPEG, on a tie; specific types over image/ * and * / *), or -1 when it
 * accepts none. No header is PNG. */
static int preferred_format(const char *accept)
{
    static const char *const types[3] = {"image/png", "image/jpeg", "application/octet-stream"};
    if (!accept)
        return ANSWER_PNG;
    double specific[3] = {-1, -1, -1}, image_any = -1, any = -1;
    for (const char *at = accept; *at;) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char item[128];
        if (len < sizeof item) {
            memcpy(item, at, len);
            item[len] = '\0';
            char *type = item;
            while (*type == ' ' || *type == '\t')
                type++;
            char *semi = strchr(type, ';');
            double q = 1;
            if (semi) {
                *semi = '\0';
                const char *qs = strstr(semi + 1, "q=");
                if (qs)
                    q = strtod(qs + 2, NULL);
            }
            size_t tl = strlen(type);
            while (tl && (type[tl - 1] == ' ' || type[tl - 1] == '\t'))
                type[--tl] = '\0';
            q = q < 0 ? 0 : q > 1 ? 1 : q;
            for (int f = 0; f < 3; f++)
                if (strcasecmp(type, types[f]) == 0)
                    specific[f] = q;
            if (strcasecmp(type, "image/*") == 0)
                image_any = q;
            if (strcmp(type, "*/*") == 0)
                any = q;
        }
        at = end ? end + 1 : at + len;
    }
    int best = -1;
    double best_q = 0;
    for (int f = 0; f < 3; f++) {
        double q = specific[f] >= 0 ? specific[f] : f < 2 && image_any >= 0 ? image_any : any;
        if (q > best_q) {
            best_q = q;
            best = f;
        }
    }
    return best;
}

/* Runs the app on the picture with the service's jit; on 200 *answer / *answer_size hold
 * the output in the format asked (malloc'd), else msg says why. */
static unsigned run_app(pm_service *s, pm_pipeline *p, const pm_sample_app *app,
                        const pm_value *params, const pm_sample_picture *pic,
                        answer_format format, void **answer, size_t *answer_size,
                        int64_t out_dims[3], char *msg, size_t msg_size, request *rq)
{
    double t0 = now_ms();
    unsigned status = 0;
    int ni = pm_pipeline_ninputs(p), no = pm_pipeline_noutputs(p);
    pm_buffer *in = calloc((size_t)ni + 1, sizeof *in), *out = calloc((size_t)no + 1, sizeof *out);
    if (!in || !out) {
        snprintf(msg, msg_size, "out of memory");
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
    }
    for (int i = 0; i < ni && !status; i++) {
        status = make_buffer(p, 0, i, params, &in[i], msg, msg_size);
        if (!status)
            app->fill_from(i, &in[i], params, pic);
    }
    for (int i = 0; i < no && !status; i++)
        status = make_buffer(p, 1, i, params, &out[i], msg, msg_size);
    double t1 = now_ms();
    rq->part_ms[PART_FILL] = t1 - t0;
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
    rq->part_ms[PART_KERNEL] = t2 - t1;
    for (int i = 0; in && i < ni; i++) /* before encoding: the inputs are no longer needed */
        free(in[i].data);
    if (!status) {
        int64_t rows, cols;
        int ch;
        uint8_t *px = pm_sample_render(&out[0], pm_sample_render_flags(app), &rows, &cols, &ch);
        *answer = NULL;
        if (px && format == ANSWER_RAW) {
            *answer = px;
            *answer_size = (size_t)(rows * cols * ch);
            px = NULL;
        } else if (px && format == ANSWER_JPEG) {
            *answer = pm_jpeg_encode(px, rows, cols, ch, s->o.jpeg_quality, answer_size);
        } else if (px) {
            *answer = pm_png_encode(px, rows, cols, ch, answer_size);
        }
        free(px);
        out_dims[0] = rows;
        out_dims[1] = cols;
        out_dims[2] = ch;
        if (!*answer) {
            snprintf(msg, msg_size, "the output cannot be encoded");
            status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        } else {
            status = MHD_HTTP_OK;
        }
        rq->part_ms[PART_ENCODE] = now_ms() - t2;
    }
    for (int i = 0; out && i < no; i++)
        free(out[i].data);
    free(in);
    free(out);
    return status;
}

static enum MHD_Result serve_app(pm_service *s, struct MHD_Connection *c, request *rq)
{
    char msg[1200];
    const pm_sample_app *app = rq->app;
    int a = rq->metrics_row;
    int format = preferred_format(MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                           MHD_HTTP_HEADER_ACCEPT));
    if (format < 0)
        return reply_text(s, c, rq, MHD_HTTP_NOT_ACCEPTABLE, NULL, NULL,
                          "%s answers image/png, image/jpeg or application/octet-stream (raw "
                          "8-bit pixels); the Accept header takes none of them", rq->path);
    /* The picture's header first: its size decides the memory, before any pixel memory */
    double t0 = now_ms();
    pm_io_info info;
    pm_io_error io_err;
    pm_io_status probed = pm_io_probe(rq->body, rq->len, "the body", &info, &io_err);
    if (probed != PM_IO_OK)
        return reply_text(s, c, rq, probed == PM_IO_ERR_NOMEM ? MHD_HTTP_SERVICE_UNAVAILABLE
                                                                : MHD_HTTP_BAD_REQUEST,
                          NULL, NULL, "%s", io_err.message);
    int64_t rows = info.rows, cols = info.cols;
    if (cols < 1 || rows < 1 || cols > s->o.max_side || rows > s->o.max_side ||
        cols * rows > s->o.max_pixels)
        return reply_text(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                          "the image is %lld x %lld pixels; the limit is %lld per side and %lld "
                          "in all", (long long)rows, (long long)cols, (long long)s->o.max_side,
                          (long long)s->o.max_pixels);
    if (rows < app->min_rows || cols < app->min_cols)
        return reply_text(s, c, rq, MHD_HTTP_UNPROCESSABLE_CONTENT, NULL, NULL,
                          "the image is %lld x %lld pixels (rows x cols); %s needs at least "
                          "%lld x %lld", (long long)rows, (long long)cols, app->name,
                          (long long)app->min_rows, (long long)app->min_cols);
    pooled *pp = pipeline_take(s, a, msg, sizeof msg);
    if (!pp)
        return reply_text(s, c, rq, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL, "%s", msg);
    pm_pipeline *p = pp->pipeline;
    pm_value params[32];
    if (pm_pipeline_nparams(p) > 32) {
        pipeline_give(s, a, pp);
        return reply_text(s, c, rq, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL, NULL,
                          "%s has more than 32 parameters", app->name);
    }
    app->params(rows, cols, params);
    int64_t need = 0;
    unsigned status = estimate_bytes(s, p, params, rq->len, rows, cols, &need, msg, sizeof msg);
    double t1 = now_ms();
    bool retry = false;
    if (!status && (status = admit(s, need, &retry, msg, sizeof msg)) != 0)
        atomic_fetch_add(&s->rejected_memory, 1);
    double t2 = now_ms();
    rq->part_ms[PART_QUEUE] = t2 - t1;
    if (status) {
        pipeline_give(s, a, pp);
        return reply_text(s, c, rq, status, NULL, retry ? "1" : NULL, "%s", msg);
    }
    uint8_t *px = NULL;
    int ch = 0;
    pm_png_result decoded = pm_png_decode(rq->body, rq->len, s->o.max_side, s->o.max_pixels,
                                          &px, &rows, &cols, &ch, msg, sizeof msg);
    rq->part_ms[PART_DECODE] = (t1 - t0) + (now_ms() - t2);
    /* the body is no longer needed: free it before the (memory-hungry) run */
    free(rq->body);
    rq->body = NULL;
    void *answer = NULL;
    size_t answer_size = 0;
    int64_t dims[3] = {0, 0, 0};
    if (decoded == PM_PNG_OK) {
        pm_sample_picture pic = pm_bytes_picture(px, rows, cols, ch);
        status = run_app(s, p, app, params, &pic, (answer_format)format, &answer, &answer_size,
                         dims, msg, sizeof msg, rq);
    } else {
        status = decoded == PM_PNG_NOMEM         ? MHD_HTTP_SERVICE_UNAVAILABLE
                 : decoded == PM_PNG_TOO_LARGE ? MHD_HTTP_CONTENT_TOO_LARGE
                                               : MHD_HTTP_BAD_REQUEST;
    }
    free(px);
    pipeline_give(s, a, pp);
    release_budget(s, need);
    if (status != MHD_HTTP_OK)
        return reply_text(s, c, rq, status, NULL, NULL, "%s", msg);
    char timing[200], r[24], co[24], chs[24];
    snprintf(timing, sizeof timing,
             "decode;dur=%.2f, queue;dur=%.2f, fill;dur=%.2f, kernel;dur=%.2f, encode;dur=%.2f",
             rq->part_ms[PART_DECODE], rq->part_ms[PART_QUEUE], rq->part_ms[PART_FILL],
             rq->part_ms[PART_KERNEL], rq->part_ms[PART_ENCODE]);
    snprintf(r, sizeof r, "%lld", (long long)dims[0]);
    snprintf(co, sizeof co, "%lld", (long long)dims[1]);
    snprintf(chs, sizeof chs, "%lld", (long long)dims[2]);
    const char *extra[] = {"Server-Timing", timing, "X-Image-Rows", r, "X-Image-Cols", co,
                           "X-Image-Channels", chs, NULL};
    static const char *const type_of[3] = {"image/png", "image/jpeg", "application/octet-stream"};
    return reply(s, c, rq, MHD_HTTP_OK, type_of[format], answer, answer_size, NULL, NULL,
                 extra);
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

static enum MHD_Result reply_ready(pm_service *s, struct MHD_Connection *c, request *rq)
{
    int ready = pm_service_ready(s);
    if (ready < 0)
        return reply_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "1", "not ready: %s",
                          s->preload_error);
    if (ready == 0)
        return reply_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "1",
                          "not ready: %d of %d preloaded kernels in",
                          atomic_load(&s->preloaded), s->npreload);
    pthread_mutex_lock(&s->budget_lock);
    int waiting = s->waiting;
    pthread_mutex_unlock(&s->budget_lock);
    if (waiting > 0)
        return reply_text(s, c, rq, MHD_HTTP_SERVICE_UNAVAILABLE, NULL, "1",
                          "not ready: over the memory budget, %d requests wait", waiting);
    return reply_text(s, c, rq, MHD_HTTP_OK, NULL, NULL, "ready");
}

/* Sets a connection's watchdog phase (NULL conn: not watched). */
static void conn_phase_set(pm_service *s, conn_state *cs, conn_phase phase, double seconds)
{
    if (!cs)
        return;
    pthread_mutex_lock(&s->conn_lock);
    cs->phase = phase;
    cs->deadline_ms = now_ms() + seconds * 1e3;
    pthread_mutex_unlock(&s->conn_lock);
}

/* The first call of a request (headers read): route it, answer at once what needs no
 * body. */
static enum MHD_Result begin(pm_service *s, struct MHD_Connection *c, request *rq,
                             const char *url, const char *method)
{
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    int head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
    static const char *const plain[] = {"/stats", "/apps", "/health", "/ready", "/metrics"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(url, plain[i]) != 0)
            continue;
        if (!get && !head)
            return reply_text(s, c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, "GET, HEAD", NULL,
                              "%s takes GET, not %s", url, method);
        switch (i) {
        case 0: return reply_stats(s, c, rq);
        case 1: return reply_apps(s, c, rq);
        case 2: return reply_text(s, c, rq, MHD_HTTP_OK, NULL, NULL, "ok");
        case 3: return reply_ready(s, c, rq);
        default: return reply_metrics(s, c, rq);
        }
    }
    if (strncmp(url, "/apps/", 6) != 0)
        return reply_text(s, c, rq, MHD_HTTP_NOT_FOUND, NULL, NULL,
                          "no such resource: %.200s (POST /apps/<app>, GET /stats, GET "
                          "/metrics, GET /apps, GET /health, GET /ready)", url);
    const pm_sample_app *app = app_name_ok(url + 6) ? pm_sample_find(url + 6) : NULL;
    if (!app)
        return reply_text(s, c, rq, MHD_HTTP_NOT_FOUND, NULL, NULL,
                          "no app named %.200s (GET /apps)", url + 6);
    if (!post)
        return reply_text(s, c, rq, MHD_HTTP_METHOD_NOT_ALLOWED, "POST", NULL,
                          "%s takes POST with a PNG body, not %s", url, method);
    /* One Content-Length of digits only: two (even equal) or a malformed one would let a
     * proxy in front and this service read different bodies */
    length_headers lengths = {0, NULL, false};
    MHD_get_connection_values(c, MHD_HEADER_KIND, count_length, &lengths);
    if (lengths.count > 1)
        return reply_text(s, c, rq, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                          "%d Content-Length headers%s; send one", lengths.count,
                          lengths.differ ? " that differ" : "");
    const char *length = lengths.first;
    if (length) {
        char *end;
        bool digits = *length >= '0' && *length <= '9';
        unsigned long long n = strtoull(length, &end, 10);
        if (!digits || *end)
            return reply_text(s, c, rq, MHD_HTTP_BAD_REQUEST, NULL, NULL,
                              "Content-Length %.40s is not a number of bytes", length);
        if (n > (unsigned long long)s->o.max_body_bytes)
            return reply_text(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                              "the body is %llu bytes; the limit is %lld", n,
                              (long long)s->o.max_body_bytes);
        /* the body's memory at once, not by doubling (no copies as it arrives) */
        if (n > 0 && (rq->body = malloc((size_t)n)) != NULL)
            rq->cap = (size_t)n;
    }
    rq->app = app;
    for (int a = 0; a < s->napps; a++) /* pm_sample_find's entry need not be in s->apps */
        if (strcmp(s->apps[a].name, app->name) == 0)
            rq->metrics_row = a;
    if (rq->metrics_row == s->napps)
        return reply_text(s, c, rq, MHD_HTTP_NOT_FOUND, NULL, NULL, "no app named %.200s",
                          url + 6);
    conn_phase_set(s, rq->conn, CONN_BODY, s->o.body_seconds);
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
        rq->cap = 0;
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
            rq->cap = 0;
            return;
        }
        rq->body = grown;
        rq->cap = cap;
    }
    memcpy(rq->body + rq->len, data, n);
    rq->len += n;
}

static request *request_new(pm_service *s, struct MHD_Connection *c, const char *url,
                            const char *method)
{
    request *rq = calloc(1, sizeof *rq);
    if (!rq)
        return NULL;
    rq->start_ms = now_ms();
    rq->metrics_row = s->napps;
    snprintf(rq->method, sizeof rq->method, "%s", method);
    /* the log shows the path as asked, bytes outside printable ASCII as '?' */
    snprintf(rq->path, sizeof rq->path, "%s", url);
    for (char *q = rq->path; *q; q++)
        if ((unsigned char)*q < 0x21 || (unsigned char)*q > 0x7e)
            *q = '?';
    const union MHD_ConnectionInfo *addr =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (addr && addr->client_addr && addr->client_addr->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)addr->client_addr)->sin_addr,
                  rq->client, sizeof rq->client);
    else if (addr && addr->client_addr && addr->client_addr->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)addr->client_addr)->sin6_addr,
                  rq->client, sizeof rq->client);
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    rq->conn = sc ? sc->socket_context : NULL;
    conn_phase_set(s, rq->conn, CONN_BUSY, 0);
    return rq;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    pm_service *s = cls;
    (void)version;
    if (!*con_cls) {
        request *rq = request_new(s, c, url, method);
        if (!rq)
            return MHD_NO;
        atomic_fetch_add(&s->active, 1); /* until on_completed */
        *con_cls = rq;
        return begin(s, c, rq, url, method);
    }
    request *rq = *con_cls;
    if (rq->answered) { /* a body after an answer given from the head: dropped */
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (*upload_data_size) {
        append(s, rq, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    /* the whole body is in: no deadline while the service works on it */
    conn_phase_set(s, rq->conn, CONN_BUSY, 0);
    enum MHD_Result rc;
    if (rq->too_large)
        rc = reply_text(s, c, rq, MHD_HTTP_CONTENT_TOO_LARGE, NULL, NULL,
                        "the body is over the limit of %lld bytes",
                        (long long)s->o.max_body_bytes);
    else
        rc = serve_app(s, c, rq);
    free(rq->body);
    rq->body = NULL;
    return rc;
}

/* A request ended (answered, or the client went away): count it, log it, free it; its
 * connection waits for the next head. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode code)
{
    pm_service *s = cls;
    (void)c;
    (void)code;
    request *rq = *con_cls;
    if (rq) {
        rq->part_ms[PART_TOTAL] = now_ms() - rq->start_ms;
        if (!rq->answered)
            rq->status = 0; /* no answer given: the client left or a deadline cut it */
        record(s, rq);
        conn_phase_set(s, rq->conn, CONN_HEAD, s->o.header_seconds);
        free(rq->body);
        free(rq);
    }
    *con_cls = NULL;
    pthread_mutex_lock(&s->conn_lock);
    s->idle_since_ms = now_ms();
    pthread_mutex_unlock(&s->conn_lock);
    atomic_fetch_sub(&s->active, 1);
}

/* A connection opened or closed: the watchdog's table. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    pm_service *s = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        conn_state *cs = calloc(1, sizeof *cs);
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!cs || !fd) { /* not watched: the idle timeout still applies */
            free(cs);
            *socket_context = NULL;
            return;
        }
        cs->fd = fd->connect_fd;
        cs->phase = CONN_HEAD;
        cs->deadline_ms = now_ms() + s->o.header_seconds * 1e3;
        pthread_mutex_lock(&s->conn_lock);
        cs->next = s->conns;
        if (s->conns)
            s->conns->prev = cs;
        s->conns = cs;
        s->nconns++;
        pthread_mutex_unlock(&s->conn_lock);
        *socket_context = cs;
        return;
    }
    conn_state *cs = *socket_context;
    if (!cs)
        return;
    /* libmicrohttpd closes the socket after this returns: the watchdog, which shuts
     * sockets down only under conn_lock, never touches a number reused by then */
    pthread_mutex_lock(&s->conn_lock);
    if (cs->prev)
        cs->prev->next = cs->next;
    else
        s->conns = cs->next;
    if (cs->next)
        cs->next->prev = cs->prev;
    s->nconns--;
    pthread_mutex_unlock(&s->conn_lock);
    free(cs);
    *socket_context = NULL;
}

/* Every 100 ms: shuts down the connections whose head or body is late (their threads see
 * the end of the stream and close them: a client trickling bytes cannot extend a
 * deadline, as it extends libmicrohttpd's idle timeout), and gives freed memory back to
 * the system: all of it once the service has been idle for a second, else what the heap
 * keeps free over HEAP_SLACK_BYTES (a long run of requests of varied sizes leaves its free
 * chunks scattered through the heap, where glibc's own trim, at the top only, misses
 * them: RSS grew from 405 to 606 MiB in minutes 5 to 7 of the soak without this). */
static void *watchdog_thread(void *arg)
{
    pm_service *s = arg;
    while (!atomic_load(&s->stopping)) {
        nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        double now = now_ms();
        bool trim = false;
        pthread_mutex_lock(&s->conn_lock);
        for (conn_state *cs = s->conns; cs; cs = cs->next) {
            if (cs->phase == CONN_BUSY || cs->cut || now < cs->deadline_ms)
                continue;
            shutdown(cs->fd, SHUT_RDWR);
            cs->cut = true;
            if (cs->phase == CONN_HEAD)
                s->cut_head++;
            else
                s->cut_body++;
        }
        if (s->idle_since_ms > 0 && now - s->idle_since_ms > 1000 &&
            atomic_load(&s->active) == 0) {
            trim = true;
            s->idle_since_ms = 0;
        }
        pthread_mutex_unlock(&s->conn_lock);
        trim_memory(trim);
    }
    return NULL;
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

/* Opens the access log for appending: "-" is stderr; a file is made 0640 if missing, and
 * refused when it is a link, not a regular file, or writable by others. -1 with a message. */
static int open_log(const char *path, char *err, size_t err_size)
{
    if (strcmp(path, "-") == 0)
        return dup(STDERR_FILENO);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK,
                  0640);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & S_IWOTH)) {
        snprintf(err, err_size, "access log %s: %s", path,
                 fd < 0 ? strerror(errno) : "not a regular file only its owner's may write");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void service_free(pm_service *s)
{
    for (int a = 0; s->pool && a < s->napps; a++)
        for (pooled *pp = s->pool[a], *next; pp; pp = next) {
            next = pp->next;
            pm_ctx_free(pp->ctx);
            free(pp);
        }
    free(s->pool);
    free(s->metrics);
    if (s->log_fd >= 0)
        close(s->log_fd);
    pthread_mutex_destroy(&s->pool_lock);
    pthread_mutex_destroy(&s->budget_lock);
    pthread_cond_destroy(&s->budget_changed);
    pthread_mutex_destroy(&s->conn_lock);
    pthread_mutex_destroy(&s->metrics_lock);
    free(s);
}

pm_service *pm_service_start(const pm_service_options *options, char *err, size_t err_size)
{
    pm_service *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    s->log_fd = -1;
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_mutex_init(&s->budget_lock, NULL);
    pthread_cond_init(&s->budget_changed, NULL);
    pthread_mutex_init(&s->conn_lock, NULL);
    pthread_mutex_init(&s->metrics_lock, NULL);
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
    if (!(s->o.queue_seconds >= 0))
        s->o.queue_seconds = d.queue_seconds;
    if (!(s->o.header_seconds > 0))
        s->o.header_seconds = d.header_seconds;
    if (!(s->o.body_seconds > 0))
        s->o.body_seconds = d.body_seconds;
    if (!s->o.per_ip_limit)
        s->o.per_ip_limit = d.per_ip_limit;
    if (s->o.jpeg_quality < 1 || s->o.jpeg_quality > 100)
        s->o.jpeg_quality = d.jpeg_quality;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->workers = s->o.workers > 0 ? s->o.workers : cores > 0 ? (int)cores : 1;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)s->o.port);
    if (s->o.port < 0 || s->o.port > 65535 || inet_pton(AF_INET, s->o.host, &addr.sin_addr) != 1) {
        snprintf(err, err_size, "bad address %s port %d", s->o.host, s->o.port);
        service_free(s);
        return NULL;
    }
    if (s->o.memory_budget_bytes != 0 && s->o.memory_budget_bytes < ((int64_t)64 << 20)) {
        snprintf(err, err_size, "memory budget %lld bytes: at least 64 MiB, or 0 for none",
                 (long long)s->o.memory_budget_bytes);
        service_free(s);
        return NULL;
    }
    s->apps = pm_sample_apps(&s->napps);
    s->pool = calloc((size_t)s->napps + 1, sizeof *s->pool);
    s->metrics = calloc((size_t)s->napps + 1, sizeof *s->metrics);
    if (!s->pool || !s->metrics) {
        snprintf(err, err_size, "out of memory");
        service_free(s);
        return NULL;
    }
    if (s->o.access_log && (s->log_fd = open_log(s->o.access_log, err, err_size)) < 0) {
        service_free(s);
        return NULL;
    }
    if (!parse_preload(s, s->o.preload, err, err_size)) {
        service_free(s);
        return NULL;
    }
    pm_error e;
    pm_jit_options jo = pm_jit_options_default();
    jo.threads = s->o.kernel_threads;
    jo.isolate_compiles = s->o.isolate_compiles;
    s->jit = pm_jit_new(&jo, &e);
    if (!s->jit) {
        snprintf(err, err_size, "pm_jit_new: %s", e.message);
        service_free(s);
        return NULL;
    }
    /* The cache's policy: its budgets, the disk folder; with a memory budget, a quarter of
     * it for the scratch kernels keep between runs, the rest for requests */
    pm_cache_policy policy = pm_cache_policy_default();
    if (s->o.cache_dir)
        policy.disk_dir = s->o.cache_dir;
    if (s->o.max_kernels > 0)
        policy.max_kernels = s->o.max_kernels;
    if (s->o.max_code_bytes > 0)
        policy.max_code_bytes = s->o.max_code_bytes;
    if (s->o.scratch_idle_ms >= 0)
        policy.scratch_idle_ms = s->o.scratch_idle_ms;
    if (s->o.memory_budget_bytes) {
        policy.max_scratch_bytes = s->o.memory_budget_bytes / 4;
        s->budget_limit = s->o.memory_budget_bytes - policy.max_scratch_bytes;
    }
    if (pm_jit_set_policy(s->jit, &policy, &e) != PM_OK) {
        snprintf(err, err_size, "%s", e.message);
        pm_jit_free(s->jit);
        service_free(s);
        return NULL;
    }
    s->daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC,
        (uint16_t)s->o.port,
        NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, s->o.connection_limit, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
        s->o.per_ip_limit, MHD_OPTION_CONNECTION_TIMEOUT, s->o.timeout_seconds,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_NOTIFY_CONNECTION,
        on_connection, s, MHD_OPTION_UNESCAPE_CALLBACK, unescape_url, NULL, MHD_OPTION_END);
    if (!s->daemon) {
        snprintf(err, err_size, "cannot listen on %s:%d (in use?)", s->o.host, s->o.port);
        pm_jit_free(s->jit);
        service_free(s);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : s->o.port;
    s->watching = pthread_create(&s->watchdog, NULL, watchdog_thread, s) == 0;
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
    double end = now_ms() + seconds * 1e3;
    while (atomic_load(&s->active) > 0 && now_ms() < end)
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    int left = atomic_load(&s->active);
    pm_service_stop(s);
    return left;
}

void pm_service_stop(pm_service *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon); /* joins every connection thread */
    atomic_store(&s->stopping, true);
    if (s->watching)
        pthread_join(s->watchdog, NULL);
    if (s->preloading)
        pthread_join(s->preloader, NULL); /* its compiles finish: the jit outlives them */
    pm_jit_free(s->jit);
    service_free(s);
}
