/* loadgen.c — `pm_loadgen`: a bounded load test of the image service over loopback.
 *
 *   pm_loadgen [--spawn | --port N] [--app NAME] [--sizes RxC,RxC,...] [--requests N]
 *              [--connections N] [--threads N]
 *
 * For each size in turn (default 480x640, 1080x1920, 479x641, 3000x4000, 480x640: rows x
 * cols, the usual landscape pictures and one off by a pixel), it posts the generated
 * photo as a PNG: first one request alone (the latency of the first request at a new
 * size, what the serving call's background compiles are for), then --requests more
 * (default 16) from --connections keep-alive connections (default 4) at once. It reports
 * each phase's and the whole run's throughput and p50 / p99 latency, and the service's
 * compiles, hits, misses and fallback runs from GET /stats before and after. "run p50"
 * is the kernel's share of a request (Server-Timing: decode, fill, run, encode); the rest
 * is PNG decoding and encoding, building the inputs, queueing and the loopback.
 * --spawn starts the service in this process on a free port (--threads: its kernels'
 * threads); otherwise it talks to 127.0.0.1:--port (or PORT, or 8080).
 * Promise: bounded (sizes x (requests + 1) requests, each with a 300 s timeout), only to
 * 127.0.0.1; exit status 1 if any request fails. */
#define _POSIX_C_SOURCE 200809L
#include "http_client.h"
#include "image_io.h"
#include "png_codec.h"
#include "service.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZES 16

static int port;
static const char *app = "harris";

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* The photo as an RGB PNG, generated row by row. */
static void *photo_png(int64_t rows, int64_t cols, size_t *size)
{
    uint8_t *px = malloc((size_t)(rows * cols * 3));
    if (!px)
        return NULL;
    for (int64_t x = 0; x < rows; x++)
        for (int64_t y = 0; y < cols; y++)
            for (int c = 0; c < 3; c++)
                px[(x * cols + y) * 3 + c] = (uint8_t)pm_photo_level(rows, cols, c, x, y);
    void *png = pm_png_encode(px, rows, cols, 3, size);
    free(px);
    return png;
}

/* One phase's shared work: requests taken by the connection threads from a counter. */
typedef struct phase {
    const void *png;
    size_t png_size;
    int total;
    atomic_int next, failures;
    double *latency_ms; /* one per request                                      */
    double *run_ms;     /* the kernel's part of it (the answer's Server-Timing) */
} phase;

/* The dur= of one metric in a Server-Timing header, or 0. */
static double timing_of(const char *header, const char *metric)
{
    char key[32];
    snprintf(key, sizeof key, "%s;dur=", metric);
    const char *at = strstr(header, key);
    return at ? strtod(at + strlen(key), NULL) : 0;
}

static int post(pm_http_conn *conn, const phase *ph, double *ms, double *run_ms)
{
    char path[128];
    snprintf(path, sizeof path, "/apps/%s", app);
    pm_http_response r;
    double t0 = now_ms();
    int rc = pm_http_request(conn, "POST", path, "image/png", ph->png, ph->png_size, 1u << 30, &r);
    *ms = now_ms() - t0;
    *run_ms = timing_of(r.server_timing, "run");
    int ok = rc == 0 && r.status == 200 && strcmp(r.content_type, "image/png") == 0;
    if (!ok)
        fprintf(stderr, "pm_loadgen: request failed: %d %s\n", r.status, r.body ? r.body : "");
    pm_http_response_free(&r);
    return ok ? 0 : -1;
}

static void *connection_main(void *arg)
{
    phase *ph = arg;
    pm_http_conn conn;
    if (pm_http_connect(&conn, "127.0.0.1", port, 300000) != 0) {
        atomic_fetch_add(&ph->failures, 1);
        return NULL;
    }
    for (int i; (i = atomic_fetch_add(&ph->next, 1)) < ph->total;)
        if (post(&conn, ph, &ph->latency_ms[i], &ph->run_ms[i]) != 0)
            atomic_fetch_add(&ph->failures, 1);
    pm_http_close(&conn);
    return NULL;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of a sorted array. */
static double percentile(const double *v, int n, double q)
{
    int k = (int)(q * n + 0.999999) - 1;
    return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* The named counter of GET /stats, or -1. */
static long long stat_field(const char *name)
{
    pm_http_conn conn;
    pm_http_response r;
    long long v = -1;
    if (pm_http_connect(&conn, "127.0.0.1", port, 30000) != 0)
        return -1;
    if (pm_http_request(&conn, "GET", "/stats", NULL, NULL, 0, 1 << 20, &r) == 0 && r.body) {
        char key[64];
        snprintf(key, sizeof key, "\"%s\":", name);
        const char *at = strstr(r.body, key);
        if (at)
            v = strtoll(at + strlen(key), NULL, 10);
    }
    pm_http_response_free(&r);
    pm_http_close(&conn);
    return v;
}

typedef struct counters {
    long long sync, background, hits, misses, fallback, disk; /* disk: loads, not compiles */
} counters;

static counters read_counters(void)
{
    return (counters){stat_field("sync_compiles"), stat_field("background_compiles"),
                      stat_field("hits"), stat_field("misses"), stat_field("fallback_runs"),
                      stat_field("disk_hits")};
}

/* How the first request at a size was served, from the counters around it. A kernel
 * loaded from the disk cache (PM_CACHE_DIR) is not a compile. */
static const char *first_label(const counters *before, const counters *after)
{
    int loaded = after->disk > before->disk;
    if (after->sync > before->sync)
        return "compiled synchronously";
    if (after->fallback > before->fallback)
        return loaded ? "nearest kernel, its own loaded from the disk cache"
                      : "nearest kernel, compile queued";
    return loaded ? "loaded from the disk cache" : "its bucket's kernel";
}

int main(int argc, char **argv)
{
    const char *sizes_text = "480x640,1080x1920,479x641,3000x4000,480x640";
    int requests = 16, connections = 4, spawn = 0, threads = 0;
    const char *port_text = getenv("PORT");
    for (int i = 1; i < argc; i++) {
        int more = i + 1 < argc;
        if (strcmp(argv[i], "--spawn") == 0)
            spawn = 1;
        else if (strcmp(argv[i], "--port") == 0 && more)
            port_text = argv[++i];
        else if (strcmp(argv[i], "--app") == 0 && more)
            app = argv[++i];
        else if (strcmp(argv[i], "--sizes") == 0 && more)
            sizes_text = argv[++i];
        else if (strcmp(argv[i], "--requests") == 0 && more)
            requests = atoi(argv[++i]);
        else if (strcmp(argv[i], "--connections") == 0 && more)
            connections = atoi(argv[++i]);
        else if (strcmp(argv[i], "--threads") == 0 && more)
            threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: pm_loadgen [--spawn | --port N] [--app NAME] "
                            "[--sizes RxC,...] [--requests N] [--connections N] [--threads N]\n");
            return 2;
        }
    }
    if (requests < 1 || requests > 10000 || connections < 1 || connections > 64) {
        fprintf(stderr, "pm_loadgen: --requests 1..10000, --connections 1..64\n");
        return 2;
    }
    int64_t rows[MAX_SIZES], cols[MAX_SIZES];
    int nsizes = 0;
    for (const char *p = sizes_text; *p && nsizes < MAX_SIZES;) {
        long long r, c;
        int used = 0;
        if (sscanf(p, "%lldx%lld%n", &r, &c, &used) != 2 || r < 1 || c < 1 || r > 16384 ||
            c > 16384) {
            fprintf(stderr, "pm_loadgen: bad size list %s\n", sizes_text);
            return 2;
        }
        rows[nsizes] = r;
        cols[nsizes++] = c;
        p += used;
        p += *p == ',';
    }

    pm_service *service = NULL;
    if (spawn) {
        pm_service_options o = pm_service_options_default();
        o.port = 0;
        o.kernel_threads = threads;
        char err[256];
        service = pm_service_start(&o, err, sizeof err);
        if (!service) {
            fprintf(stderr, "pm_loadgen: %s\n", err);
            return 1;
        }
        port = pm_service_port(service);
    } else {
        port = port_text && *port_text ? atoi(port_text) : 8080;
    }
    printf("pm_loadgen: app %s on 127.0.0.1:%d%s, %d connections, 1 + %d requests per size\n",
           app, port, spawn ? " (in-process service)" : "", connections, requests);

    counters c0 = read_counters();
    if (c0.sync < 0) {
        fprintf(stderr, "pm_loadgen: no service answers GET /stats on port %d\n", port);
        pm_service_stop(service);
        return 1;
    }
    int total = nsizes * requests, done = 0, failures = 0;
    double *all = calloc((size_t)total + 1, sizeof *all);
    double run_ms = 0;
    printf("%-11s %9s %9s %9s %9s %9s %8s\n", "size", "first ms", "p50 ms", "p99 ms",
           "run p50", "req/s", "compiles");
    for (int s = 0; s < nsizes && all; s++) {
        phase ph = {.total = requests};
        ph.png = photo_png(rows[s], cols[s], &ph.png_size);
        ph.latency_ms = calloc((size_t)requests, sizeof *ph.latency_ms);
        ph.run_ms = calloc((size_t)requests, sizeof *ph.run_ms);
        if (!ph.png || !ph.latency_ms || !ph.run_ms) {
            fprintf(stderr, "pm_loadgen: out of memory for %lldx%lld\n", (long long)rows[s],
                    (long long)cols[s]);
            failures++;
            free((void *)ph.png);
            free(ph.latency_ms);
            free(ph.run_ms);
            break;
        }
        counters before = read_counters();
        /* the first request at this size, alone */
        pm_http_conn conn;
        double first = 0, first_run = 0;
        if (pm_http_connect(&conn, "127.0.0.1", port, 300000) != 0 ||
            post(&conn, &ph, &first, &first_run) != 0)
            failures++;
        pm_http_close(&conn);
        counters after_first = read_counters();
        /* then the rest from every connection at once */
        pthread_t th[64];
        double t0 = now_ms();
        for (int k = 0; k < connections; k++)
            pthread_create(&th[k], NULL, connection_main, &ph);
        for (int k = 0; k < connections; k++)
            pthread_join(th[k], NULL);
        double phase_ms = now_ms() - t0;
        counters after = read_counters();
        failures += atomic_load(&ph.failures);
        run_ms += phase_ms;
        memcpy(all + done, ph.latency_ms, (size_t)requests * sizeof *all);
        done += requests;
        qsort(ph.latency_ms, (size_t)requests, sizeof *ph.latency_ms, compare_doubles);
        qsort(ph.run_ms, (size_t)requests, sizeof *ph.run_ms, compare_doubles);
        char size[32];
        snprintf(size, sizeof size, "%lldx%lld", (long long)rows[s], (long long)cols[s]);
        printf("%-11s %9.1f %9.1f %9.1f %9.1f %9.2f %8lld   (first: run %.1f ms, %s)\n",
               size, first, percentile(ph.latency_ms, requests, 0.50),
               percentile(ph.latency_ms, requests, 0.99), percentile(ph.run_ms, requests, 0.50),
               requests / (phase_ms / 1e3),
               (after.sync + after.background) - (before.sync + before.background), first_run,
               first_label(&before, &after_first));
        free((void *)ph.png);
        free(ph.latency_ms);
        free(ph.run_ms);
    }
    counters c1 = read_counters();
    if (done > 0) {
        qsort(all, (size_t)done, sizeof *all, compare_doubles);
        printf("all: %d concurrent requests in %.2f s: %.2f req/s, p50 %.1f ms, p99 %.1f ms; "
               "%d failed\n", done, run_ms / 1e3, done / (run_ms / 1e3),
               percentile(all, done, 0.50), percentile(all, done, 0.99), failures);
    }
    printf("service: %lld sync compiles, %lld background compiles, %lld disk cache loads, "
           "%lld hits, %lld misses, %lld fallback runs\n", c1.sync - c0.sync,
           c1.background - c0.background, c1.disk - c0.disk, c1.hits - c0.hits,
           c1.misses - c0.misses, c1.fallback - c0.fallback);
    free(all);
    pm_service_stop(service);
    return failures ? 1 : 0;
}
