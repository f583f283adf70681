/* serve_main.c — `serve`: the image service on 127.0.0.1 (`make serve`).
 *
 *   serve [--port N] [--host A.B.C.D] [--threads N] [--in-process-compiles]
 *         [--preload app:RxC,...] [--drain-seconds S] [--memory-budget SIZE]
 *         [--queue-length N] [--queue-seconds S] [--header-seconds S] [--body-seconds S]
 *         [--idle-seconds S] [--connections N] [--per-ip N] [--max-body SIZE]
 *         [--max-side N] [--max-pixels N] [--cache-dir DIR] [--cache-kernels N]
 *         [--cache-code SIZE] [--scratch-idle-ms N] [--jpeg-quality N] [--access-log FILE|-]
 *         [--malloc map|heap] [--workers N]
 *
 * Every setting is a pm_service_options field (service.h; docs/server.md lists them with
 * their defaults). SIZE is bytes with an optional K, M or G suffix. Compiles run in helper
 * processes (pm_jit_options.isolate_compiles; the helper polymage-compile is found next to
 * the program or its library, or by PM_COMPILE_HELPER); --in-process-compiles runs them in
 * the service itself. Port: --port, else the PORT environment variable, else 8080; 0 lets
 * the system pick a free one. Prints "serve: listening on http://HOST:PORT" once it
 * accepts, then runs until SIGINT or SIGTERM, when it stops accepting connections,
 * answers the requests in progress (for up to --drain-seconds, default 30; what is left
 * then is closed), prints the jit's statistics and exits 0. A bad setting exits 2 with
 * the usage, a service that cannot start 1.
 *
 * Memory: buffers of 1 MiB or more are mappings of their own (M_MMAP_THRESHOLD fixed, so
 * glibc's threshold does not climb to 32 MiB and keep freed picture buffers in its
 * arenas), and the service trims the heap after a second without requests. */
#define _POSIX_C_SOURCE 200809L
#include "service.h"

#include <signal.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_int(const char *text, long lo, long hi, long *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_seconds(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= 0 && v <= 86400))
        return -1;
    *out = v;
    return 0;
}

static const char USAGE[] =
    "usage: serve [--port N] [--host A.B.C.D] [--threads N] [--in-process-compiles]\n"
    "             [--preload app:RxC,...] [--drain-seconds S] [--memory-budget SIZE]\n"
    "             [--queue-length N] [--queue-seconds S] [--header-seconds S]\n"
    "             [--body-seconds S] [--idle-seconds S] [--connections N] [--per-ip N]\n"
    "             [--max-body SIZE] [--max-side N] [--max-pixels N] [--cache-dir DIR]\n"
    "             [--cache-kernels N] [--cache-code SIZE] [--scratch-idle-ms N]\n"
    "             [--jpeg-quality N] [--access-log FILE|-] [--malloc map|heap]\n"
    "             [--workers N]\n";

int main(int argc, char **argv)
{
    pm_service_options o = pm_service_options_default();
    const char *port_text = getenv("PORT");
    int drain_seconds = 30;
    const char *malloc_policy = "heap";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        int64_t bytes;
        double sec = 0;
        int ok = 1, took = 1;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(USAGE, stdout);
            return 0;
        } else if (strcmp(a, "--in-process-compiles") == 0) {
            o.isolate_compiles = 0;
            took = 0;
        } else if (!v) {
            ok = 0;
        } else if (strcmp(a, "--port") == 0) {
            port_text = v;
        } else if (strcmp(a, "--host") == 0) {
            o.host = v;
        } else if (strcmp(a, "--preload") == 0) {
            o.preload = v;
        } else if (strcmp(a, "--malloc") == 0) {
            ok = strcmp(v, "map") == 0 || strcmp(v, "heap") == 0;
            malloc_policy = v;
        } else if (strcmp(a, "--cache-dir") == 0) {
            o.cache_dir = v;
        } else if (strcmp(a, "--access-log") == 0) {
            o.access_log = v;
        } else if (strcmp(a, "--threads") == 0) {
            ok = parse_int(v, 0, PM_MAX_THREADS, &n) == 0;
            o.kernel_threads = (int)n;
        } else if (strcmp(a, "--drain-seconds") == 0) {
            ok = parse_int(v, 0, 3600, &n) == 0;
            drain_seconds = (int)n;
        } else if (strcmp(a, "--queue-length") == 0) {
            ok = parse_int(v, 0, 100000, &n) == 0;
            o.queue_length = (unsigned)n;
        } else if (strcmp(a, "--connections") == 0) {
            ok = parse_int(v, 1, 10000, &n) == 0;
            o.connection_limit = (unsigned)n;
        } else if (strcmp(a, "--workers") == 0) {
            ok = parse_int(v, 1, 4096, &n) == 0;
            o.workers = (int)n;
        } else if (strcmp(a, "--per-ip") == 0) {
            ok = parse_int(v, 1, 10000, &n) == 0;
            o.per_ip_limit = (unsigned)n;
        } else if (strcmp(a, "--idle-seconds") == 0) {
            ok = parse_int(v, 1, 86400, &n) == 0;
            o.timeout_seconds = (unsigned)n;
        } else if (strcmp(a, "--max-side") == 0) {
            ok = parse_int(v, 1, 1 << 30, &n) == 0;
            o.max_side = n;
        } else if (strcmp(a, "--max-pixels") == 0) {
            ok = pm_service_parse_bytes(v, &bytes) == 0 && bytes > 0;
            o.max_pixels = bytes;
        } else if (strcmp(a, "--cache-kernels") == 0) {
            ok = parse_int(v, 1, 1 << 20, &n) == 0;
            o.max_kernels = (int)n;
        } else if (strcmp(a, "--scratch-idle-ms") == 0) {
            ok = parse_int(v, 0, 1 << 30, &n) == 0;
            o.scratch_idle_ms = (int)n;
        } else if (strcmp(a, "--jpeg-quality") == 0) {
            ok = parse_int(v, 1, 100, &n) == 0;
            o.jpeg_quality = (int)n;
        } else if (strcmp(a, "--memory-budget") == 0) {
            ok = pm_service_parse_bytes(v, &bytes) == 0;
            o.memory_budget_bytes = bytes;
        } else if (strcmp(a, "--max-body") == 0) {
            ok = pm_service_parse_bytes(v, &bytes) == 0 && bytes > 0;
            o.max_body_bytes = bytes;
        } else if (strcmp(a, "--cache-code") == 0) {
            ok = pm_service_parse_bytes(v, &bytes) == 0 && bytes > 0;
            o.max_code_bytes = bytes;
        } else if (strcmp(a, "--queue-seconds") == 0 || strcmp(a, "--header-seconds") == 0 ||
                   strcmp(a, "--body-seconds") == 0) {
            ok = parse_seconds(v, &sec) == 0 && (sec > 0 || a[2] == 'q');
            *(a[2] == 'q' ? &o.queue_seconds : a[2] == 'h' ? &o.header_seconds
                                                            : &o.body_seconds) = sec;
        } else {
            ok = 0;
        }
        if (!ok) {
            fprintf(stderr, "serve: bad or unknown option %s%s%s\n%s", a, v && took ? " " : "",
                    v && took ? v : "", USAGE);
            return 2;
        }
        i += took;
    }
    if (port_text && *port_text) {
        long v;
        if (parse_int(port_text, 0, 65535, &v) != 0) {
            fprintf(stderr, "serve: bad port %s\n", port_text);
            return 2;
        }
        o.port = (int)v;
    }
#ifdef __GLIBC__
    if (strcmp(malloc_policy, "map") == 0) {
        mallopt(M_MMAP_THRESHOLD, 1 << 20);
    } else { /* buffers up to 32 MiB (glibc's most) from two arenas, kept between requests */
        mallopt(M_ARENA_MAX, 2);
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 256 << 20);
    }
#endif
    /* the signals are taken by sigwait below, not by a handler in whatever thread */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    char err[256];
    pm_service *s = pm_service_start(&o, err, sizeof err);
    if (!s) {
        fprintf(stderr, "serve: %s\n", err);
        return 1;
    }
    printf("serve: listening on http://%s:%d (POST /apps/<app> with a PNG, GET /stats, "
           "GET /metrics, GET /apps, GET /health, GET /ready)\n", o.host, pm_service_port(s));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    pm_cache_stats st;
    memset(&st, 0, sizeof st);
    printf("serve: signal %d: draining %d request(s) in progress, up to %d s\n", sig,
           pm_service_active(s), drain_seconds);
    fflush(stdout);
    pm_jit_stats(pm_service_jit(s), &st, sizeof st);
    int cut = pm_service_stop_draining(s, drain_seconds);
    printf("serve: stopped (signal %d); %d request(s) cut at the deadline; %llu hits, %llu "
           "misses, %llu sync and %llu background compiles\n", sig, cut,
           (unsigned long long)st.hits, (unsigned long long)st.misses,
           (unsigned long long)st.sync_compiles, (unsigned long long)st.background_compiles);
    return 0;
}
