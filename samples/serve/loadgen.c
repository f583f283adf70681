/* loadgen.c — `pm_loadgen`: bounded load tests of the image service over loopback.
 *
 *   pm_loadgen [--spawn | --child | --port N] [--threads N] [--serve-args "ARGS"]
 *              [--app NAME] [--sizes RxC,RxC,...] [--requests N] [--connections N]
 *   pm_loadgen --loadtest [--spawn | --child | --port N] [--serve-args "ARGS"]
 *              [--apps A,B,...] [--size RxC] [--warmup N] [--one-client N]
 *              [--clients N] [--concurrent N] [--soak-seconds S] [--rate R]
 *              [--soak-sizes RxC,...] [--soak-connections N] [--seed N]
 *              [--timeout-ms N] [--grace-seconds S] [--budget-mb N]
 *              [--json PATH] [--svg PATH]
 *
 * Where the service is. --spawn starts it in this process on a free port (--threads: its
 * kernels' threads; the RSS sampled is then this process's, load generator included).
 * --child starts the `serve` program that sits next to pm_loadgen (build/serve) as a
 * child process: `serve --port 0 [--threads N] ARGS...` with the words of --serve-args
 * split on spaces (e.g. "--memory-budget 2G --preload harris:1080x1920"); it learns the
 * port from the child's "serve: listening on http://HOST:PORT" line, waits for GET /ready,
 * samples the child's VmRSS (/proc/PID/status) every 0.5 s on a thread of its own, and at
 * the end sends it SIGTERM and waits: the service drains and exits 0, anything else is
 * reported and fails the run. Otherwise it talks to 127.0.0.1:--port (or PORT, or 8080)
 * and samples no RSS.
 *
 * The default program (`make loadgen`): for each size in turn (default 480x640,
 * 1080x1920, 479x641, 3000x4000, 480x640: rows x cols, the usual landscape pictures and
 * one off by a pixel), it posts the generated photo as a PNG: first one request alone
 * (the latency of the first request at a new size, what the serving call's background
 * compiles are for), then --requests more (default 16) from --connections keep-alive
 * connections (default 4) at once. It reports each phase's and the whole run's throughput
 * and p50 / p99 latency, and the service's compiles, hits, misses and fallback runs from
 * GET /stats before and after. "run p50" is the kernel's share of a request
 * (Server-Timing); the rest is PNG decoding and encoding, building the inputs, queueing
 * and the loopback.
 *
 * --loadtest (`make loadtest`, docs/loadtest.md): phases, each app in turn (--apps,
 * default harris, unsharp_mask, bilateral_grid; pictures at --size, default 1080x1920):
 *   warmup      --warmup requests per app (default 3), one connection; then it waits
 *               until the service compiles nothing (GET /stats: queued, compiling);
 *   one_client  --one-client requests per app (default 30; 0 skips it), one connection,
 *               closed loop;
 *   concurrent  --concurrent requests per app (default 60; 0 skips it) from --clients
 *               keep-alive connections at once (default 4), closed loop;
 *   soak        open loop for --soak-seconds (default 600; 0 skips it): arrivals at
 *               --rate per second (default 3) on a fixed schedule, the apps in turn, the
 *               picture's size a random walk (--seed; a step of -1, 0 or +1 per request)
 *               over --soak-sizes (default 480x640, 600x800, 720x1280, 1080x1440,
 *               1080x1920, 1536x2048, 2250x3000, 3000x4000; each encoded once, before
 *               the service starts), served by a pool of --soak-connections keep-alive
 *               connections (default 16: the service resets connections over its
 *               per-address limit, its --per-ip, default 16; raise both together). A
 *               request's latency runs from its scheduled time, not from when it could
 *               be sent (no coordinated omission); one released while every connection
 *               is busy is counted late and sent when one frees.
 * Every request has a deadline: --timeout-ms after it is sent (closed loop) or scheduled
 * (open loop; default 60000), and in the soak no later than --grace-seconds (default 30)
 * after the soak's end, so the soak ends at its time even if requests hang; a request
 * past its deadline is failed. Outcomes: 200 with a PNG is ok; 503 (the service's
 * memory-budget refusal, with Retry-After) is counted apart and not retried; any other
 * answer, none, or the deadline is a failure. Latency percentiles are of the ok answers.
 *
 * It prints a table (per app and phase, and the soak per app and per size: requests, ok,
 * 503, failed, late, ok answers per second, p50/p90/p99/max, the CPU cores the service
 * and this process used, and the median of each Server-Timing part: any `name;dur=ms`
 * list, `run` read as `kernel` when there is no `kernel`), then the targets' checks with
 * pass / fail: one client, p50 <= the kernel + decode + encode medians + 5 ms; --clients,
 * p99 <= 2.5 x the one-client p50 and no failure; with --budget-mb B and a sampled RSS,
 * the peak RSS (samples and VmHWM) <= B + 100 MiB, and the RSS at the soak's end within
 * 10% of the RSS at its minute 5 (its middle when it is shorter than 10 minutes; each
 * the lowest sample of a 30 s window: soak_rss_points says why). The checks are
 * reported; they do not set the exit status. --json gets every figure, each request and
 * the RSS samples; --svg the RSS over time with the budget line above, each request's
 * latency over time below.
 *
 * Promise: bounded (every request has a deadline, the soak its duration plus the grace,
 * the child's start and stop their timeouts), only to the address the service gave;
 * exit status 1 if a request failed (a 503 is no failure) or the child did not exit 0,
 * 2 on a bad option (with the usage). */
#define _POSIX_C_SOURCE 200809L
#include "http_client.h"
#include "image_io.h"
#include "png_codec.h"
#include "service.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 16
#define MAX_APPS 8
#define MAX_PARTS 8
#define MAX_SERVE_ARGS 48

static int port;
static char host[64] = "127.0.0.1";
static const char *app = "harris";

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Sleeps until the monotonic time `at` (ms), whatever signals come. */
static void sleep_until(double at)
{
    struct timespec t = {.tv_sec = (time_t)(at / 1e3),
                         .tv_nsec = (long)((at - floor(at / 1e3) * 1e3) * 1e6)};
    if (t.tv_nsec >= 1000000000L)
        t.tv_nsec = 999999999L;
    while (now_ms() < at && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
        ;
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

/* ---- the default program: sizes in turn --------------------------------------------- */

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
    /* the kernel's part: "kernel" in the service's newer header, "run" before */
    *run_ms = strstr(r.server_timing, "kernel;") ? timing_of(r.server_timing, "kernel")
                                                 : timing_of(r.server_timing, "run");
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
    if (pm_http_connect(&conn, host, port, 300000) != 0) {
        atomic_fetch_add(&ph->failures, 1);
        return NULL;
    }
    for (int i; (i = atomic_fetch_add(&ph->next, 1)) < ph->total;)
        if (post(&conn, ph, &ph->latency_ms[i], &ph->run_ms[i]) != 0)
            atomic_fetch_add(&ph->failures, 1);
    pm_http_close(&conn);
    return NULL;
}

/* One GET's answer body (malloc'd, or NULL) and status. */
static char *get_text(const char *path, int *status)
{
    pm_http_conn conn;
    pm_http_response r;
    char *body = NULL;
    *status = 0;
    if (pm_http_connect(&conn, host, port, 30000) != 0)
        return NULL;
    if (pm_http_request(&conn, "GET", path, NULL, NULL, 0, 1 << 20, &r) == 0) {
        *status = r.status;
        body = r.body;
        r.body = NULL;
    }
    pm_http_response_free(&r);
    pm_http_close(&conn);
    return body;
}

/* The named counter of a GET /stats body, or -1. */
static long long field_of(const char *body, const char *name)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\":", name);
    const char *at = body ? strstr(body, key) : NULL;
    return at ? strtoll(at + strlen(key), NULL, 10) : -1;
}

typedef struct counters {
    long long sync, background, hits, misses, fallback, disk; /* disk: loads, not compiles */
} counters;

static counters read_counters(void)
{
    int status;
    char *b = get_text("/stats", &status);
    if (status != 200) {
        free(b);
        return (counters){-1, -1, -1, -1, -1, -1};
    }
    counters c = {field_of(b, "sync_compiles"), field_of(b, "background_compiles"),
                  field_of(b, "hits"),          field_of(b, "misses"),
                  field_of(b, "fallback_runs"), field_of(b, "disk_hits")};
    free(b);
    return c;
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

/* Parses "RxC,RxC,..." into rows / cols (at most MAX_SIZES). -1 when malformed. */
static int parse_sizes(const char *text, int64_t *rows, int64_t *cols, int *n)
{
    *n = 0;
    for (const char *p = text; *p;) {
        long long r, c;
        int used = 0;
        if (*n == MAX_SIZES || sscanf(p, "%lldx%lld%n", &r, &c, &used) != 2 || r < 1 ||
            c < 1 || r > 16384 || c > 16384)
            return -1;
        rows[*n] = r;
        cols[(*n)++] = c;
        p += used;
        if (*p == ',' && p[1])
            p++;
        else if (*p)
            return -1;
    }
    return *n ? 0 : -1;
}

/* The default program. Returns the number of failed requests. */
static int run_per_size(const char *sizes_text, int requests, int connections, int mode_spawn)
{
    int64_t rows[MAX_SIZES], cols[MAX_SIZES];
    int nsizes = 0;
    if (parse_sizes(sizes_text, rows, cols, &nsizes) != 0) {
        fprintf(stderr, "pm_loadgen: bad size list %s\n", sizes_text);
        return 1;
    }
    printf("pm_loadgen: app %s on %s:%d%s, %d connections, 1 + %d requests per size\n", app,
           host, port, mode_spawn ? " (in-process service)" : "", connections, requests);

    counters c0 = read_counters();
    if (c0.sync < 0) {
        fprintf(stderr, "pm_loadgen: no service answers GET /stats on port %d\n", port);
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
        if (pm_http_connect(&conn, host, port, 300000) != 0 ||
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
    return failures;
}

/* ---- the service as a child process -------------------------------------------------- */

typedef struct child {
    pid_t pid;
    int out_fd;             /* the read end of the child's stdout                      */
    pthread_t reader;
    int reader_started;
    atomic_int reaped;      /* the reader stops at the end of the stream or once reaped */
    char carry[4096];       /* what was read after the "listening" line               */
    size_t carry_len;
    pthread_mutex_t mu;
    char last_line[256];    /* the child's last stdout line ("serve: stopped ...")     */
    char command[1024];     /* for the report                                          */
    int exit_status;        /* when it exited; -1 otherwise                            */
    int exit_signal;        /* when a signal ended it; 0 otherwise                     */
    int killed;             /* it outlived SIGTERM's wait and got SIGKILL              */
    int exited;             /* reaped (by child_running or child_stop)                 */
    int died;               /* it ended before the stop (child_running found it gone)  */
} child;

/* Echoes the child's stdout lines (prefixed) and keeps the last one, so its drain and
 * stop lines show and the pipe never fills. buf holds len bytes (room for 4096); a line
 * that fills it is shown as it is. */
static void child_lines(child *ch, char *buf, size_t *len)
{
    char *start = buf, *nl;
    while ((nl = memchr(start, '\n', *len - (size_t)(start - buf))) ||
           (start == buf && *len == 4095 && (nl = buf + 4095))) {
        *nl = 0;
        printf("  [serve] %s\n", start);
        fflush(stdout);
        pthread_mutex_lock(&ch->mu);
        snprintf(ch->last_line, sizeof ch->last_line, "%s", start);
        pthread_mutex_unlock(&ch->mu);
        start = nl + 1;
        if (start > buf + *len)
            start = buf + *len;
    }
    *len -= (size_t)(start - buf);
    memmove(buf, start, *len);
}

static void *child_reader_main(void *arg)
{
    child *ch = arg;
    char buf[4097];
    size_t len = ch->carry_len;
    memcpy(buf, ch->carry, len);
    child_lines(ch, buf, &len);
    for (;;) {
        struct pollfd p = {.fd = ch->out_fd, .events = POLLIN};
        int n = poll(&p, 1, 200);
        if (n == 0 && atomic_load(&ch->reaped))
            break; /* a helper the child started may still hold the pipe: not waited for */
        if (n <= 0)
            continue;
        ssize_t got = read(ch->out_fd, buf + len, 4095 - len);
        if (got <= 0)
            break;
        len += (size_t)got;
        child_lines(ch, buf, &len);
    }
    return NULL;
}

/* The folder of this executable (from /proc/self/exe), with its trailing '/'. */
static int exe_folder(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1);
    if (n <= 0 || (size_t)n >= cap - 1)
        return -1;
    out[n] = 0;
    char *slash = strrchr(out, '/');
    if (!slash)
        return -1;
    slash[1] = 0;
    return 0;
}

/* Starts serve with --port 0 and the extra words; waits (up to 60 s) for its "listening"
 * line and sets host / port. 0, or -1 with the reason printed. Called before any thread
 * of this process starts, so the fork copies no lock held elsewhere. */
static int child_start(child *ch, int threads, const char *serve_args)
{
    memset(ch, 0, sizeof *ch);
    ch->pid = -1;
    ch->exit_status = -1;
    pthread_mutex_init(&ch->mu, NULL);
    char path[4096];
    if (exe_folder(path, sizeof path - 8) != 0) {
        fprintf(stderr, "pm_loadgen: cannot read /proc/self/exe\n");
        return -1;
    }
    strcat(path, "serve");
    if (access(path, X_OK) != 0) {
        fprintf(stderr, "pm_loadgen: no service program at %s (build the serve target)\n", path);
        return -1;
    }
    static char words[2048], threads_text[16];
    char *argv[MAX_SERVE_ARGS + 8];
    int argc = 0;
    argv[argc++] = path;
    argv[argc++] = "--port";
    argv[argc++] = "0";
    if (threads > 0) {
        snprintf(threads_text, sizeof threads_text, "%d", threads);
        argv[argc++] = "--threads";
        argv[argc++] = threads_text;
    }
    snprintf(words, sizeof words, "%s", serve_args ? serve_args : "");
    for (char *save = NULL, *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (argc == MAX_SERVE_ARGS + 5) {
            fprintf(stderr, "pm_loadgen: --serve-args has over %d words\n", MAX_SERVE_ARGS);
            return -1;
        }
        argv[argc++] = w;
    }
    argv[argc] = NULL;
    size_t at = 0;
    for (int i = 0; i < argc && at < sizeof ch->command; i++)
        at += (size_t)snprintf(ch->command + at, sizeof ch->command - at, "%s%s", i ? " " : "",
                               argv[i]);

    int fds[2];
    if (pipe(fds) != 0) {
        perror("pm_loadgen: pipe");
        return -1;
    }
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        perror("pm_loadgen: fork");
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        close(fds[0]);
        close(fds[1]);
        /* the service never outlives a load generator that dies without stopping it */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        execv(path, argv);
        fprintf(stderr, "pm_loadgen: exec %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    ch->pid = pid;
    ch->out_fd = fds[0];

    /* its stdout up to the "listening" line, for at most 60 s */
    char buf[4097];
    size_t len = 0;
    double deadline = now_ms() + 60000;
    for (;;) {
        char *nl;
        while ((nl = memchr(buf, '\n', len))) {
            *nl = 0;
            printf("  [serve] %s\n", buf);
            char h[64];
            int p = 0;
            int found = sscanf(buf, "serve: listening on http://%63[^:]:%d", h, &p) == 2;
            size_t rest = len - (size_t)(nl + 1 - buf);
            memmove(buf, nl + 1, rest);
            len = rest;
            if (found) {
                snprintf(host, sizeof host, "%s", strcmp(h, "0.0.0.0") == 0 ? "127.0.0.1" : h);
                port = p;
                memcpy(ch->carry, buf, len);
                ch->carry_len = len;
                fflush(stdout);
                return 0;
            }
        }
        double left = deadline - now_ms();
        struct pollfd pf = {.fd = ch->out_fd, .events = POLLIN};
        int n = left > 0 ? poll(&pf, 1, (int)left + 1) : 0;
        ssize_t got = n > 0 ? read(ch->out_fd, buf + len, 4095 - len) : -1;
        if (n < 0 && errno == EINTR)
            continue;
        if (got <= 0 || len + (size_t)got == 4095) {
            int status = 0;
            if (got == 0 && waitpid(pid, &status, 0) == pid) {
                fprintf(stderr, "pm_loadgen: %s ended before listening (%s %d)\n", ch->command,
                        WIFEXITED(status) ? "exit status" : "signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                ch->pid = -1;
            } else {
                fprintf(stderr, "pm_loadgen: %s printed no \"serve: listening on\" line in "
                                "60 s\n", ch->command);
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                ch->pid = -1;
            }
            close(ch->out_fd);
            return -1;
        }
        len += (size_t)got;
    }
}

static void child_start_reader(child *ch)
{
    ch->reader_started = pthread_create(&ch->reader, NULL, child_reader_main, ch) == 0;
}

static void child_reaped(child *ch, int status)
{
    if (WIFEXITED(status))
        ch->exit_status = WEXITSTATUS(status);
    else if (WIFSIGNALED(status))
        ch->exit_signal = WTERMSIG(status);
    ch->exited = 1;
    atomic_store(&ch->reaped, 1);
}

/* 1 while the child runs; once it has ended (a crash) its status is kept and the load
 * test stops sending. */
static int child_running(child *ch, double t_s)
{
    int status;
    if (ch->exited)
        return 0;
    if (waitpid(ch->pid, &status, WNOHANG) != ch->pid)
        return 1;
    child_reaped(ch, status);
    ch->died = 1;
    fprintf(stderr, "pm_loadgen: the service ended by itself at %.1f s (%s %d)\n", t_s,
            ch->exit_signal ? "signal" : "exit status",
            ch->exit_signal ? ch->exit_signal : ch->exit_status);
    return 0;
}

/* SIGTERM, then waits up to wait_s for the drain and exit (SIGKILL after). 0 when it
 * exited with status 0. */
static int child_stop(child *ch, int wait_s)
{
    if (ch->pid <= 0)
        return -1;
    int status = 0;
    if (ch->exited)
        goto reaped;
    kill(ch->pid, SIGTERM);
    double deadline = now_ms() + wait_s * 1e3;
    pid_t r;
    while ((r = waitpid(ch->pid, &status, WNOHANG)) == 0 && now_ms() < deadline)
        sleep_until(now_ms() + 50);
    if (r == 0) {
        fprintf(stderr, "pm_loadgen: the service did not exit %d s after SIGTERM: killed\n",
                wait_s);
        kill(ch->pid, SIGKILL);
        r = waitpid(ch->pid, &status, 0);
        ch->killed = 1;
    }
    if (r == ch->pid)
        child_reaped(ch, status);
reaped:
    atomic_store(&ch->reaped, 1);
    if (ch->reader_started)
        pthread_join(ch->reader, NULL);
    close(ch->out_fd);
    ch->pid = -1;
    return ch->exit_status == 0 && !ch->killed && !ch->died ? 0 : -1;
}

/* ---- RSS over time ------------------------------------------------------------------- */

/* A "Key:   N kB" line of /proc/PID/status (PID 0: this process), in KiB, or -1. */
static long long status_kb(pid_t pid, const char *key)
{
    char path[64];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            kb = strtoll(line + klen + 1, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

typedef struct rss_series {
    pid_t pid;              /* 0: this process                                 */
    double t0;
    pthread_t thread;
    int started;
    atomic_int stop;
    pthread_mutex_t mu;
    double *t_s, *mib;      /* samples: seconds since t0, MiB                  */
    int n, cap;
} rss_series;

static void rss_add(rss_series *s, double t_s, double mib)
{
    pthread_mutex_lock(&s->mu);
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 1024;
        double *t = realloc(s->t_s, (size_t)cap * sizeof *t);
        if (t)
            s->t_s = t;
        double *m = realloc(s->mib, (size_t)cap * sizeof *m);
        if (m)
            s->mib = m;
        if (t && m)
            s->cap = cap;
    }
    if (s->n < s->cap) {
        s->t_s[s->n] = t_s;
        s->mib[s->n++] = mib;
    }
    pthread_mutex_unlock(&s->mu);
}

static void *rss_main(void *arg)
{
    rss_series *s = arg;
    for (double next = now_ms(); !atomic_load(&s->stop); next += 500) {
        long long kb = status_kb(s->pid, "VmRSS");
        if (kb >= 0)
            rss_add(s, (now_ms() - s->t0) / 1e3, kb / 1024.0);
        sleep_until(next + 500);
    }
    return NULL;
}

/* The sample nearest to time t (s), or -1. */
static double rss_at(rss_series *s, double t)
{
    double best = -1, dist = 1e300;
    for (int i = 0; i < s->n; i++)
        if (fabs(s->t_s[i] - t) < dist)
            dist = fabs(s->t_s[i] - t), best = s->mib[i];
    return best;
}

/* The lowest sample in [lo, hi] (s), or -1. */
static double rss_floor(rss_series *s, double lo, double hi)
{
    double best = -1;
    for (int i = 0; i < s->n; i++)
        if (s->t_s[i] >= lo && s->t_s[i] <= hi && (best < 0 || s->mib[i] < best))
            best = s->mib[i];
    return best;
}

/* The soak's two RSS check points (s since t0): its minute 5 (its middle when it is shorter
 * than 10 minutes) and its end, each with a window of 30 s (a quarter of the soak when it
 * is shorter than 2 minutes): around minute 5, the last one before the end. A single
 * sample swings by hundreds of MiB with the pictures in flight at that instant (a 4000 x
 * 3000 request holds ~200 MiB); the lowest sample of a window is the memory the service
 * keeps between requests, which is what a leak or a growing cache raises. */
typedef struct rss_points {
    int minute5;            /* the soak lasted 10 minutes: the first point is minute 5 */
    double mid_t, end_t;    /* the points                                            */
    double mid_lo, mid_hi, end_lo, end_hi;  /* their windows                         */
} rss_points;

static rss_points soak_rss_points(double t_start_ms, double t_end_ms)
{
    rss_points p;
    double span = (t_end_ms - t_start_ms) / 1e3, w = span >= 120 ? 30 : span / 4;
    p.minute5 = span >= 600;
    p.mid_t = t_start_ms / 1e3 + (p.minute5 ? 300 : span / 2);
    p.end_t = t_end_ms / 1e3;
    p.mid_lo = p.mid_t - w / 2;
    p.mid_hi = p.mid_t + w / 2;
    p.end_lo = p.end_t - w;
    p.end_hi = p.end_t;
    return p;
}

/* CPU seconds of a process (0: this one) and of its children it has waited for (the
 * service's compile helpers), or -1. */
static double cpu_seconds(pid_t pid)
{
    char path[64], line[1024];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    char *p = got ? strrchr(line, ')') : NULL; /* the name may hold spaces */
    unsigned long long ut, st;
    long long cut, cst;
    if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld",
                     &ut, &st, &cut, &cst) != 4)
        return -1;
    return (double)(ut + st + (unsigned long long)(cut + cst)) / (double)sysconf(_SC_CLK_TCK);
}

/* ---- the load test's own client: one deadline per request ----------------------------- */

/* Unlike pm_http_request (a timeout per send or receive), every step here — connecting,
 * sending, each receive — waits only until one absolute deadline, so a request that
 * hangs ends when its deadline comes and the soak at its time. */
enum { LT_OK = 0, LT_ERROR = -1, LT_DEADLINE = -2 };

typedef struct lt_conn {
    int fd;   /* -1: none                                                              */
    int used; /* answered before: the service may have closed it since (idle timeout) */
} lt_conn;

typedef struct lt_answer {
    int status;         /* 0: none                                                    */
    int png;            /* Content-Type image/png and a body with a PNG signature     */
    int closed;         /* the service closes the connection after it                 */
    double retry_after; /* seconds, -1 when none                                       */
    char timing[256];   /* the Server-Timing header                                   */
} lt_answer;

static int wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - now_ms();
        if (left <= 0)
            return LT_DEADLINE;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, left > 1000 ? 1000 : (int)left + 1);
        if (n > 0)
            return LT_OK; /* ready, or an error the next call reports */
        if (n < 0 && errno != EINTR)
            return LT_ERROR;
    }
}

static void lt_close(lt_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->used = 0;
}

static int lt_connect(lt_conn *c, double deadline)
{
    c->fd = -1;
    c->used = 0;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &addr.sin_addr) != 1)
        return LT_ERROR;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return LT_ERROR;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        int rc = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, deadline) : LT_ERROR;
        int err = 0;
        socklen_t len = sizeof err;
        if (rc == LT_OK && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err))
            rc = LT_ERROR;
        if (rc != LT_OK) {
            close(fd);
            return rc;
        }
    }
    c->fd = fd;
    return LT_OK;
}

static int send_until(int fd, const void *data, size_t len, double deadline)
{
    const char *p = data;
    while (len) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(fd, POLLOUT, deadline);
            if (rc != LT_OK)
                return rc;
        } else {
            return LT_ERROR;
        }
    }
    return LT_OK;
}

/* Bytes received (> 0), 0 at the end of the stream, or LT_ERROR / LT_DEADLINE. */
static ssize_t recv_until(int fd, char *p, size_t cap, double deadline)
{
    for (;;) {
        ssize_t n = recv(fd, p, cap, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            return LT_ERROR;
        int rc = wait_fd(fd, POLLIN, deadline);
        if (rc != LT_OK)
            return rc;
    }
}

/* Reads one answer; the body is checked (PNG signature) and dropped, so any number of
 * connections costs 80 KiB of stack each, whatever the pictures. */
static int lt_read(int fd, double deadline, lt_answer *a, int *got_any)
{
    char head[16385];
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        if (len == sizeof head - 1)
            return LT_ERROR; /* a head over 16 KiB is not the service's */
        ssize_t n = recv_until(fd, head + len, sizeof head - 1 - len, deadline);
        if (n <= 0)
            return n == 0 ? LT_ERROR : (int)n;
        *got_any = 1;
        len += (size_t)n;
        head[len] = 0;
        end = strstr(head, "\r\n\r\n");
    }
    size_t head_len = (size_t)(end - head) + 4;
    if (sscanf(head, "HTTP/1.%*d %d", &a->status) != 1)
        return LT_ERROR;
    long long length = -1;
    char type[96] = "";
    *end = 0;
    for (char *line = strstr(head, "\r\n"); line && line < end;) {
        line += 2;
        char *eol = strstr(line, "\r\n");
        if (eol)
            *eol = 0;
        if (strncasecmp(line, "Content-Length:", 15) == 0)
            length = strtoll(line + 15, NULL, 10);
        else if (strncasecmp(line, "Content-Type:", 13) == 0)
            snprintf(type, sizeof type, "%s", line + 13 + strspn(line + 13, " "));
        else if (strncasecmp(line, "Server-Timing:", 14) == 0)
            snprintf(a->timing, sizeof a->timing, "%s", line + 14 + strspn(line + 14, " "));
        else if (strncasecmp(line, "Retry-After:", 12) == 0)
            a->retry_after = strtod(line + 12, NULL);
        else if (strncasecmp(line, "Connection:", 11) == 0 && strstr(line, "close"))
            a->closed = 1;
        line = eol;
    }
    if (length < 0)
        a->closed = 1; /* the body runs to the end of the stream */
    unsigned char sig[8];
    size_t sig_len = 0, have = len - head_len;
    for (size_t i = 0; i < have && sig_len < 8; i++)
        sig[sig_len++] = (unsigned char)head[head_len + i];
    char buf[65536];
    while (length < 0 || (long long)have < length) {
        ssize_t n = recv_until(fd, buf, sizeof buf, deadline);
        if (n == 0 && length < 0)
            break;
        if (n <= 0)
            return n == 0 ? LT_ERROR : (int)n;
        for (ssize_t i = 0; i < n && sig_len < 8; i++)
            sig[sig_len++] = (unsigned char)buf[i];
        have += (size_t)n;
    }
    a->png = strncasecmp(type, "image/png", 9) == 0 && sig_len == 8 &&
             memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0;
    return LT_OK;
}

static int lt_post(lt_conn *c, const char *path, const void *body, size_t len, double deadline,
                   lt_answer *a)
{
    for (int attempt = 0;; attempt++) {
        memset(a, 0, sizeof *a);
        a->retry_after = -1;
        int reused = c->fd >= 0 && c->used;
        if (c->fd < 0) {
            int rc = lt_connect(c, deadline);
            if (rc != LT_OK)
                return rc;
        }
        char head[512];
        int n = snprintf(head, sizeof head,
                         "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: image/png\r\n"
                         "Content-Length: %zu\r\n\r\n", path, host, port, len);
        int got_any = 0;
        int rc = send_until(c->fd, head, (size_t)n, deadline);
        if (rc == LT_OK)
            rc = send_until(c->fd, body, len, deadline);
        if (rc == LT_OK)
            rc = lt_read(c->fd, deadline, a, &got_any);
        if (rc == LT_OK) {
            c->used = 1;
            if (a->closed)
                lt_close(c);
            return LT_OK;
        }
        lt_close(c);
        /* a kept-alive connection the service closed meanwhile: once more on a new one */
        if (rc == LT_DEADLINE || !reused || got_any || attempt > 0)
            return rc;
    }
}

/* ---- the load test -------------------------------------------------------------------- */

enum { OUT_NONE, OUT_OK, OUT_REFUSED, OUT_FAILED };

/* Server-Timing part names in the order first seen (by any thread). */
static char part_names[MAX_PARTS][24];
static int nparts;
static pthread_mutex_t parts_mu = PTHREAD_MUTEX_INITIALIZER;

static int part_index(const char *name)
{
    pthread_mutex_lock(&parts_mu);
    int i = 0;
    while (i < nparts && strcmp(part_names[i], name) != 0)
        i++;
    if (i == nparts && nparts < MAX_PARTS)
        snprintf(part_names[nparts++], sizeof part_names[0], "%.23s", name);
    pthread_mutex_unlock(&parts_mu);
    return i < MAX_PARTS ? i : -1;
}

static int known_part(const char *name)
{
    pthread_mutex_lock(&parts_mu);
    int i = 0;
    while (i < nparts && strcmp(part_names[i], name) != 0)
        i++;
    int found = i < nparts ? i : -1;
    pthread_mutex_unlock(&parts_mu);
    return found;
}

/* Any "name;dur=ms, name;dur=ms, ..." list (other parameters of a part are skipped);
 * "run" is read as "kernel" when no part is named "kernel" (the service's older header). */
static void parse_timing(const char *header, double parts[MAX_PARTS])
{
    for (int i = 0; i < MAX_PARTS; i++)
        parts[i] = -1;
    char names[MAX_PARTS][24];
    double durs[MAX_PARTS];
    int n = 0, has_kernel = 0;
    for (const char *p = header; *p && n < MAX_PARTS;) {
        p += strspn(p, " ,");
        size_t item = strcspn(p, ",");
        size_t name_len = strcspn(p, ";,");
        if (name_len && name_len < sizeof names[0]) {
            const char *dur = NULL;
            for (const char *q = p + name_len; q < p + item; q++)
                if (strncmp(q, ";dur=", 5) == 0 || strncmp(q, "; dur=", 6) == 0) {
                    dur = strchr(q, '=') + 1;
                    break;
                }
            if (dur) {
                memcpy(names[n], p, name_len);
                while (name_len && names[n][name_len - 1] == ' ')
                    name_len--;
                names[n][name_len] = 0;
                durs[n] = strtod(dur, NULL);
                has_kernel |= strcmp(names[n], "kernel") == 0;
                n++;
            }
        }
        p += item;
    }
    for (int i = 0; i < n; i++) {
        int k = part_index(!has_kernel && strcmp(names[i], "run") == 0 ? "kernel" : names[i]);
        if (k >= 0)
            parts[k] = durs[i];
    }
}

typedef struct picture {
    int64_t rows, cols;
    void *png;
    size_t size;
} picture;

typedef struct record {
    short phase, app, pic;  /* indices into the run's phases, apps, pictures             */
    char late;              /* open loop: released while every connection was busy       */
    char outcome;           /* OUT_*                                                      */
    int status;             /* the answer's status, 0 when none                          */
    const char *error;      /* a failure's kind                                          */
    double sched_ms;        /* since t0: when it was due (open loop) or sent (closed)    */
    double sent_ms, done_ms;
    double latency_ms;      /* done - sched                                              */
    double retry_after;     /* a 503's Retry-After, -1 when none                         */
    double parts[MAX_PARTS];
} record;

typedef struct lt_phase {
    const char *name;       /* warmup, one_client, concurrent, soak                      */
    int app;                /* -1: every app (the soak)                                  */
    int clients;            /* connections                                               */
    int pic;                /* -1: drifting (the soak)                                   */
    int first, count;       /* its records                                               */
    double t_start, t_end;  /* ms since t0                                               */
    double svc_cpu, gen_cpu;    /* CPU seconds of the service (child) and of this process */
} lt_phase;

#define MAX_PHASES (3 * MAX_APPS + 1)

static struct {
    const char *apps[MAX_APPS];
    int napps;
    picture pics[MAX_SIZES + 1];
    int npics, fixed_pic;
    int soak_pics[MAX_SIZES], nsoak_pics;
    record *rec;
    int nrec;
    lt_phase phases[MAX_PHASES];
    int nphases;
    double t0;              /* monotonic ms at the start                                  */
    double timeout_ms;
    atomic_int failures_printed;
    pid_t service_pid;      /* the child, for its CPU time; 0 when none                  */
} run;

/* A phase's wall and CPU time: begin, then end (the differences). */
static void phase_clock(lt_phase *ph, int end)
{
    double t = now_ms() - run.t0, svc = run.service_pid > 0 ? cpu_seconds(run.service_pid) : -1,
           gen = cpu_seconds(0);
    if (!end) {
        ph->t_start = t, ph->svc_cpu = svc, ph->gen_cpu = gen;
        return;
    }
    ph->t_end = t;
    ph->svc_cpu = svc >= 0 && ph->svc_cpu >= 0 ? svc - ph->svc_cpu : -1;
    ph->gen_cpu = gen >= 0 && ph->gen_cpu >= 0 ? gen - ph->gen_cpu : -1;
}

/* Cores used on average over the phase, or -1. */
static double cores(const lt_phase *ph, double cpu)
{
    double wall = (ph->t_end - ph->t_start) / 1e3;
    return cpu >= 0 && wall > 0 ? cpu / wall : -1;
}

static double soak_grace_ms = 30000; /* --grace-seconds */

static void do_request(lt_conn *c, record *r, double deadline)
{
    char path[96];
    snprintf(path, sizeof path, "/apps/%s", run.apps[r->app]);
    const picture *p = &run.pics[r->pic];
    lt_answer a;
    r->sent_ms = now_ms() - run.t0;
    if (r->sched_ms < 0)
        r->sched_ms = r->sent_ms;
    int rc = now_ms() >= deadline ? LT_DEADLINE : lt_post(c, path, p->png, p->size, deadline, &a);
    r->done_ms = now_ms() - run.t0;
    r->latency_ms = r->done_ms - r->sched_ms;
    r->status = rc == LT_OK ? a.status : 0;
    r->retry_after = -1;
    for (int i = 0; i < MAX_PARTS; i++)
        r->parts[i] = -1;
    if (rc == LT_OK && a.status == 200 && a.png) {
        parse_timing(a.timing, r->parts);
        r->outcome = OUT_OK;
        return;
    }
    if (rc == LT_OK && a.status == 503) {
        r->retry_after = a.retry_after;
        r->outcome = OUT_REFUSED;
        return;
    }
    r->outcome = OUT_FAILED;
    r->error = rc == LT_DEADLINE ? "deadline" : rc != LT_OK ? "no answer"
               : a.status == 200 ? "not a PNG" : "status";
    if (atomic_fetch_add(&run.failures_printed, 1) < 20) /* the first ones say enough */
        fprintf(stderr, "pm_loadgen: %s %lldx%lld failed: %s (status %d) %.1f ms after it was "
                "sent\n", run.apps[r->app], (long long)p->rows, (long long)p->cols, r->error,
                r->status, r->done_ms - r->sent_ms);
}

/* Closed loop: the connections take the phase's requests from a counter. */
typedef struct closed_job {
    int first, count;
    atomic_int next;
} closed_job;

static void *closed_main(void *arg)
{
    closed_job *j = arg;
    lt_conn c = {.fd = -1};
    for (int i; (i = atomic_fetch_add(&j->next, 1)) < j->count;)
        do_request(&c, &run.rec[j->first + i], now_ms() + run.timeout_ms);
    lt_close(&c);
    return NULL;
}

static lt_phase *add_phase(const char *name, int app_i, int clients, int pic, int count)
{
    lt_phase *ph = &run.phases[run.nphases++];
    *ph = (lt_phase){name, app_i, clients, pic, run.nrec, count, 0, 0, -1, -1};
    for (int i = 0; i < count; i++) {
        record *r = &run.rec[run.nrec++];
        memset(r, 0, sizeof *r);
        r->phase = (short)(ph - run.phases);
        r->app = (short)app_i;
        r->pic = (short)pic;
        r->sched_ms = -1;
    }
    return ph;
}

static void run_closed(lt_phase *ph)
{
    closed_job job = {.first = ph->first, .count = ph->count};
    pthread_t th[64];
    int started = 0;
    phase_clock(ph, 0);
    for (int k = 0; k < ph->clients; k++)
        if (pthread_create(&th[started], NULL, closed_main, &job) == 0)
            started++;
    if (!started)
        closed_main(&job);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    phase_clock(ph, 1);
}

/* Open loop: the dispatcher releases each request at its time; idle connections take them
 * in order. */
typedef struct soak_state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int first, count, released, taken, idle, done;
    double end_abs, grace_ms;  /* monotonic ms: the soak's end; the deadline after it */
    atomic_int in_flight, max_in_flight, finished, ok, refused, failed;
} soak_state;

static void *soak_main(void *arg)
{
    soak_state *s = arg;
    lt_conn c = {.fd = -1};
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (s->taken == s->released && !s->done)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->taken == s->released) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        int i = s->taken++;
        s->idle--;
        pthread_mutex_unlock(&s->mu);
        record *r = &run.rec[s->first + i];
        double deadline = run.t0 + r->sched_ms + run.timeout_ms;
        if (deadline > s->end_abs + s->grace_ms)
            deadline = s->end_abs + s->grace_ms;
        int in = atomic_fetch_add(&s->in_flight, 1) + 1;
        for (int m = atomic_load(&s->max_in_flight);
             in > m && !atomic_compare_exchange_weak(&s->max_in_flight, &m, in);)
            ;
        do_request(&c, r, deadline);
        atomic_fetch_sub(&s->in_flight, 1);
        atomic_fetch_add(r->outcome == OUT_OK ? &s->ok : r->outcome == OUT_REFUSED ? &s->refused
                                                                                 : &s->failed, 1);
        atomic_fetch_add(&s->finished, 1);
        pthread_mutex_lock(&s->mu);
        s->idle++;
        pthread_mutex_unlock(&s->mu);
    }
    lt_close(&c);
    return NULL;
}

/* A line every 30 s, so a long soak shows it is alive. */
static void soak_progress(soak_state *s, int released, double t, double seconds,
                          rss_series *rss)
{
    double mib = -1;
    if (rss) {
        pthread_mutex_lock(&rss->mu);
        mib = rss->n ? rss->mib[rss->n - 1] : -1;
        pthread_mutex_unlock(&rss->mu);
    }
    printf("  soak %4.0f/%.0f s: %d released, %d answered (%d ok, %d 503, %d failed), %d in "
           "flight (max %d)", t, seconds, released, atomic_load(&s->finished),
           atomic_load(&s->ok), atomic_load(&s->refused), atomic_load(&s->failed),
           atomic_load(&s->in_flight), atomic_load(&s->max_in_flight));
    if (mib >= 0)
        printf(", RSS %.0f MiB", mib);
    printf("\n");
    fflush(stdout);
}

static unsigned long long rng_state = 1;
static unsigned rng_next(void)
{
    /* xorshift64*: a fixed seed gives the same walk on every machine */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ULL) >> 32);
}

static void run_soak(lt_phase *ph, double seconds, double rate, int connections,
                     rss_series *rss, child *ch)
{
    soak_state s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    s.first = ph->first;
    s.count = ph->count;
    s.idle = connections;
    double start = now_ms() + 100; /* the threads are up before the first arrival */
    s.end_abs = start + seconds * 1e3;
    s.grace_ms = soak_grace_ms;
    phase_clock(ph, 0);
    ph->t_start = start - run.t0;
    /* the schedule, the apps in turn and the walk over the sizes: all fixed before */
    int pos = 0;
    for (int i = 0; i < ph->count; i++) {
        record *r = &run.rec[ph->first + i];
        r->sched_ms = ph->t_start + i * 1e3 / rate;
        r->app = (short)(i % run.napps);
        r->pic = (short)run.soak_pics[pos];
        int step = (int)(rng_next() % 3) - 1;
        pos = pos + step < 0 ? 0 : pos + step >= run.nsoak_pics ? run.nsoak_pics - 1 : pos + step;
    }
    pthread_t th[256];
    int started = 0;
    for (int k = 0; k < connections; k++)
        if (pthread_create(&th[started], NULL, soak_main, &s) == 0)
            started++;
    if (started < connections) {
        pthread_mutex_lock(&s.mu);
        s.idle = started;
        pthread_mutex_unlock(&s.mu);
    }
    double next_progress = start + 30000;
    for (int i = 0; i <= ph->count && started; i++) {
        /* each request at its time; after the last, the soak's end */
        double at = i < ph->count ? run.t0 + run.rec[ph->first + i].sched_ms : s.end_abs;
        while (now_ms() < at) {
            if (now_ms() >= next_progress) {
                soak_progress(&s, i, (now_ms() - start) / 1e3, seconds, rss);
                next_progress += 30000;
            }
            sleep_until(at < next_progress ? at : next_progress);
        }
        if (i == ph->count)
            break;
        if (ch && !child_running(ch, (now_ms() - run.t0) / 1e3)) {
            printf("  soak stopped: the service is gone (%d of %d requests released)\n", i,
                   ph->count);
            break;
        }
        pthread_mutex_lock(&s.mu);
        run.rec[ph->first + i].late = (char)(s.released - s.taken >= s.idle);
        s.released++;
        pthread_cond_signal(&s.cv);
        pthread_mutex_unlock(&s.mu);
    }
    pthread_mutex_lock(&s.mu);
    s.done = 1;
    pthread_cond_broadcast(&s.cv);
    pthread_mutex_unlock(&s.mu);
    for (int k = 0; k < started; k++)
        pthread_join(th[k], NULL);
    phase_clock(ph, 1);
    printf("  soak done: %d of %d requests released, %.1f s, at most %d in flight\n",
           s.released, ph->count, (ph->t_end - ph->t_start) / 1e3,
           atomic_load(&s.max_in_flight));
    fflush(stdout);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.mu);
}

/* One group's figures. p* and part medians are of the ok answers; -1 when none. */
typedef struct stats {
    int n, ok, refused, failed, late;
    double seconds, rate;
    double p50, p90, p99, max;
    double part_p50[MAX_PARTS];
} stats;

static stats stats_of(const lt_phase *ph, int app_i, int pic)
{
    stats st;
    memset(&st, 0, sizeof st);
    st.p50 = st.p90 = st.p99 = st.max = -1;
    for (int k = 0; k < MAX_PARTS; k++)
        st.part_p50[k] = -1;
    double *lat = malloc((size_t)(ph->count + 1) * sizeof *lat);
    double *part = malloc((size_t)(ph->count + 1) * sizeof *part);
    if (!lat || !part) {
        free(lat);
        free(part);
        return st;
    }
    for (int i = 0; i < ph->count; i++) {
        const record *r = &run.rec[ph->first + i];
        if ((app_i >= 0 && r->app != app_i) || (pic >= 0 && r->pic != pic) ||
            r->outcome == OUT_NONE)
            continue;
        st.n++;
        st.late += r->late;
        st.refused += r->outcome == OUT_REFUSED;
        st.failed += r->outcome == OUT_FAILED;
        if (r->outcome == OUT_OK)
            lat[st.ok++] = r->latency_ms;
    }
    st.seconds = (ph->t_end - ph->t_start) / 1e3;
    st.rate = st.seconds > 0 ? st.ok / st.seconds : 0;
    if (st.ok) {
        qsort(lat, (size_t)st.ok, sizeof *lat, compare_doubles);
        st.p50 = percentile(lat, st.ok, 0.50);
        st.p90 = percentile(lat, st.ok, 0.90);
        st.p99 = percentile(lat, st.ok, 0.99);
        st.max = lat[st.ok - 1];
    }
    for (int k = 0; k < nparts; k++) {
        int m = 0;
        for (int i = 0; i < ph->count; i++) {
            const record *r = &run.rec[ph->first + i];
            if ((app_i < 0 || r->app == app_i) && (pic < 0 || r->pic == pic) &&
                r->outcome == OUT_OK && r->parts[k] >= 0)
                part[m++] = r->parts[k];
        }
        if (m) {
            qsort(part, (size_t)m, sizeof *part, compare_doubles);
            st.part_p50[k] = percentile(part, m, 0.50);
        }
    }
    free(lat);
    free(part);
    return st;
}

static void print_stats_row(const char *phase_name, const char *app_name, const char *clients,
                            const char *size, const stats *st, double svc_cores,
                            double gen_cores)
{
    printf("%-10s %-14s %-7s %-10s %5d %5d %4d %6d %4d %6.2f", phase_name, app_name, clients,
           size, st->n, st->ok, st->refused, st->failed, st->late, st->rate);
    const double v[4] = {st->p50, st->p90, st->p99, st->max};
    for (int k = 0; k < 4; k++)
        if (v[k] >= 0)
            printf(" %7.1f", v[k]);
        else
            printf(" %7s", "-");
    const double c[2] = {svc_cores, gen_cores};
    for (int k = 0; k < 2; k++)
        if (c[k] >= 0)
            printf(" %4.2f", c[k]);
        else
            printf(" %4s", "-");
    for (int k = 0; k < nparts; k++)
        if (st->part_p50[k] >= 0)
            printf(" %*.1f", (int)(strlen(part_names[k]) > 6 ? strlen(part_names[k]) : 6),
                   st->part_p50[k]);
        else
            printf(" %*s", (int)(strlen(part_names[k]) > 6 ? strlen(part_names[k]) : 6), "-");
    printf("\n");
}

typedef struct check {
    char name[32];          /* one_client_p50, concurrent_p99, concurrent_failed,          */
                            /* rss_peak, rss_drift                                          */
    const char *app;        /* NULL: the service                                            */
    int known;              /* 0: not measurable in this run (reason in text)             */
    int pass;
    double value, limit;
    char text[384];
} check;

/* Writes s as a JSON string. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A number, or null for the "none" marker (< 0 where figures are never negative). */
static void json_num(FILE *f, double v)
{
    if (v < 0 || v != v)
        fprintf(f, "null");
    else
        fprintf(f, "%.3f", v);
}

static void json_stats(FILE *f, const stats *st)
{
    fprintf(f, "\"requests\": %d, \"ok\": %d, \"refused_503\": %d, \"failed\": %d, \"late\": %d, "
               "\"seconds\": %.3f, \"ok_per_s\": %.3f, \"latency_ms\": {\"p50\": ",
            st->n, st->ok, st->refused, st->failed, st->late, st->seconds, st->rate);
    json_num(f, st->p50);
    fprintf(f, ", \"p90\": ");
    json_num(f, st->p90);
    fprintf(f, ", \"p99\": ");
    json_num(f, st->p99);
    fprintf(f, ", \"max\": ");
    json_num(f, st->max);
    fprintf(f, "}, \"server_timing_p50_ms\": {");
    for (int k = 0, first = 1; k < nparts; k++)
        if (st->part_p50[k] >= 0) {
            fprintf(f, "%s", first ? "" : ", ");
            json_str(f, part_names[k]);
            fprintf(f, ": %.3f", st->part_p50[k]);
            first = 0;
        }
    fprintf(f, "}");
}

typedef struct lt_config {
    const char *apps_text, *size_text, *soak_sizes_text, *json_path, *svg_path;
    int warmup, one_client, clients, concurrent, soak_connections;
    double soak_seconds, rate;
    long long seed;
    double budget_mb;       /* 0: no budget check                                          */
} lt_config;

typedef struct lt_service {
    const char *mode;       /* spawn, child, port                                          */
    child *ch;
    rss_series *rss;        /* NULL when no RSS is sampled                                 */
    double hwm_mib;         /* VmHWM before the stop, -1 when none                         */
    int child_ok;           /* the child exited 0 (1 when there is no child)               */
    double stop_s;          /* when SIGTERM was sent, s since t0                           */
} lt_service;

static void write_json(const char *path, const lt_config *cf, const lt_service *sv,
                       const check *checks, int nchecks, int failed, int refused,
                       long long *stats_end)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pm_loadgen: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "{\n\"tool\": \"pm_loadgen --loadtest\", \"version\": 1,\n\"service\": {\"mode\": ");
    json_str(f, sv->mode);
    fprintf(f, ", \"address\": ");
    char addr[96];
    snprintf(addr, sizeof addr, "%s:%d", host, port);
    json_str(f, addr);
    if (sv->ch) {
        fprintf(f, ", \"command\": ");
        json_str(f, sv->ch->command);
        fprintf(f, ", \"exit_status\": %d, \"exit_signal\": %d, \"killed\": %s, \"last_line\": ",
                sv->ch->exit_status, sv->ch->exit_signal, sv->ch->killed ? "true" : "false");
        json_str(f, sv->ch->last_line);
    }
    fprintf(f, ", \"stats_end\": {\"sync_compiles\": %lld, \"background_compiles\": %lld, "
               "\"hits\": %lld, \"misses\": %lld, \"fallback_runs\": %lld}},\n",
            stats_end[0], stats_end[1], stats_end[2], stats_end[3], stats_end[4]);
    fprintf(f, "\"config\": {\"apps\": ");
    json_str(f, cf->apps_text);
    fprintf(f, ", \"size\": ");
    json_str(f, cf->size_text);
    fprintf(f, ", \"warmup\": %d, \"one_client\": %d, \"clients\": %d, \"concurrent\": %d, "
               "\"soak_seconds\": %.3f, \"rate_per_s\": %.3f, \"soak_connections\": %d, "
               "\"soak_sizes\": ", cf->warmup, cf->one_client, cf->clients, cf->concurrent,
            cf->soak_seconds, cf->rate, cf->soak_connections);
    json_str(f, cf->soak_sizes_text);
    fprintf(f, ", \"seed\": %lld, \"timeout_ms\": %.0f, \"grace_s\": %.0f, \"budget_mb\": ",
            cf->seed, run.timeout_ms, soak_grace_ms / 1e3);
    json_num(f, cf->budget_mb > 0 ? cf->budget_mb : -1);
    fprintf(f, "},\n\"server_timing_parts\": [");
    for (int k = 0; k < nparts; k++) {
        fprintf(f, "%s", k ? ", " : "");
        json_str(f, part_names[k]);
    }
    fprintf(f, "],\n\"failed\": %d, \"refused_503\": %d,\n\"phases\": [\n", failed, refused);
    for (int p = 0; p < run.nphases; p++) {
        const lt_phase *ph = &run.phases[p];
        stats st = stats_of(ph, -1, -1);
        fprintf(f, "  {\"name\": ");
        json_str(f, ph->name);
        fprintf(f, ", \"app\": ");
        if (ph->app >= 0)
            json_str(f, run.apps[ph->app]);
        else
            fprintf(f, "null");
        fprintf(f, ", \"clients\": %d, ", ph->clients);
        if (ph->pic >= 0)
            fprintf(f, "\"rows\": %lld, \"cols\": %lld, ", (long long)run.pics[ph->pic].rows,
                    (long long)run.pics[ph->pic].cols);
        fprintf(f, "\"t_start_s\": %.3f, \"t_end_s\": %.3f, \"service_cpu_cores\": ",
                ph->t_start / 1e3, ph->t_end / 1e3);
        json_num(f, cores(ph, ph->svc_cpu));
        fprintf(f, ", \"loadgen_cpu_cores\": ");
        json_num(f, cores(ph, ph->gen_cpu));
        fprintf(f, ", ");
        json_stats(f, &st);
        if (ph->app < 0) {
            fprintf(f, ",\n   \"by_app\": [");
            for (int a = 0; a < run.napps; a++) {
                stats sa = stats_of(ph, a, -1);
                fprintf(f, "%s\n    {\"app\": ", a ? "," : "");
                json_str(f, run.apps[a]);
                fprintf(f, ", ");
                json_stats(f, &sa);
                fprintf(f, "}");
            }
            fprintf(f, "],\n   \"by_size\": [");
            for (int z = 0; z < run.nsoak_pics; z++) {
                const picture *pc = &run.pics[run.soak_pics[z]];
                stats sz = stats_of(ph, -1, run.soak_pics[z]);
                fprintf(f, "%s\n    {\"rows\": %lld, \"cols\": %lld, ", z ? "," : "",
                        (long long)pc->rows, (long long)pc->cols);
                json_stats(f, &sz);
                fprintf(f, "}");
            }
            fprintf(f, "]");
        }
        fprintf(f, "}%s\n", p + 1 < run.nphases ? "," : "");
    }
    fprintf(f, "],\n\"checks\": [\n");
    for (int c = 0; c < nchecks; c++) {
        fprintf(f, "  {\"name\": ");
        json_str(f, checks[c].name);
        fprintf(f, ", \"app\": ");
        if (checks[c].app)
            json_str(f, checks[c].app);
        else
            fprintf(f, "null");
        fprintf(f, ", \"pass\": %s, \"value\": ",
                !checks[c].known ? "null" : checks[c].pass ? "true" : "false");
        json_num(f, checks[c].known ? checks[c].value : -1);
        fprintf(f, ", \"limit\": ");
        json_num(f, checks[c].known ? checks[c].limit : -1);
        fprintf(f, ", \"text\": ");
        json_str(f, checks[c].text);
        fprintf(f, "}%s\n", c + 1 < nchecks ? "," : "");
    }
    fprintf(f, "],\n\"rss\": ");
    if (sv->rss) {
        double peak = 0;
        for (int i = 0; i < sv->rss->n; i++)
            peak = sv->rss->mib[i] > peak ? sv->rss->mib[i] : peak;
        fprintf(f, "{\"unit\": \"MiB\", \"interval_s\": 0.5, \"peak_sampled\": %.1f, \"vm_hwm\": ",
                peak);
        json_num(f, sv->hwm_mib);
        fprintf(f, ", \"stop_s\": %.3f", sv->stop_s);
        for (int p = 0; p < run.nphases; p++)
            if (strcmp(run.phases[p].name, "soak") == 0 && run.phases[p].count) {
                rss_points rp = soak_rss_points(run.phases[p].t_start, run.phases[p].t_end);
                fprintf(f, ", \"soak_points\": {\"mid_is_minute5\": %s, \"mid_s\": %.3f, "
                           "\"mid_window_s\": [%.3f, %.3f], \"mid_floor\": ",
                        rp.minute5 ? "true" : "false", rp.mid_t, rp.mid_lo, rp.mid_hi);
                json_num(f, rss_floor(sv->rss, rp.mid_lo, rp.mid_hi));
                fprintf(f, ", \"mid_sample\": ");
                json_num(f, rss_at(sv->rss, rp.mid_t));
                fprintf(f, ", \"end_s\": %.3f, \"end_window_s\": [%.3f, %.3f], \"end_floor\": ",
                        rp.end_t, rp.end_lo, rp.end_hi);
                json_num(f, rss_floor(sv->rss, rp.end_lo, rp.end_hi));
                fprintf(f, ", \"end_sample\": ");
                json_num(f, rss_at(sv->rss, rp.end_t));
                fprintf(f, "}");
            }
        fprintf(f, ", \"samples\": [");
        for (int i = 0; i < sv->rss->n; i++)
            fprintf(f, "%s[%.2f, %.1f]", i ? (i % 8 ? ", " : ",\n  ") : "\n  ", sv->rss->t_s[i],
                    sv->rss->mib[i]);
        fprintf(f, "]}");
    } else {
        fprintf(f, "null");
    }
    fprintf(f, ",\n\"requests\": [\n");
    for (int i = 0; i < run.nrec; i++) {
        const record *r = &run.rec[i];
        static const char *outcome[] = {"none", "ok", "503", "failed"};
        fprintf(f, "  {\"phase\": \"%s\", \"app\": ", run.phases[r->phase].name);
        json_str(f, run.apps[r->app]);
        fprintf(f, ", \"rows\": %lld, \"cols\": %lld, \"t_s\": %.3f, \"sent_s\": %.3f, "
                   "\"latency_ms\": %.3f, \"status\": %d, \"outcome\": \"%s\", \"late\": %s",
                (long long)run.pics[r->pic].rows, (long long)run.pics[r->pic].cols,
                r->sched_ms / 1e3, r->sent_ms / 1e3, r->latency_ms, r->status,
                outcome[(int)r->outcome], r->late ? "true" : "false");
        if (r->outcome == OUT_FAILED) {
            fprintf(f, ", \"error\": ");
            json_str(f, r->error);
        }
        if (r->outcome == OUT_REFUSED && r->retry_after >= 0)
            fprintf(f, ", \"retry_after_s\": %.0f", r->retry_after);
        if (r->outcome == OUT_OK) {
            fprintf(f, ", \"timing\": {");
            for (int k = 0, first = 1; k < nparts; k++)
                if (r->parts[k] >= 0) {
                    fprintf(f, "%s", first ? "" : ", ");
                    json_str(f, part_names[k]);
                    fprintf(f, ": %.2f", r->parts[k]);
                    first = 0;
                }
            fprintf(f, "}");
        }
        fprintf(f, "}%s\n", i + 1 < run.nrec ? "," : "");
    }
    fprintf(f, "]\n}\n");
    if (fclose(f) != 0)
        fprintf(stderr, "pm_loadgen: writing %s failed\n", path);
}

/* A tick step of 1, 2 or 5 x 10^k giving about `want` ticks over span. */
static double nice_step(double span, int want)
{
    double raw = span / want, p = pow(10, floor(log10(raw > 0 ? raw : 1)));
    return raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
}

/* The picture: RSS over time (with the budget and budget + 100 MiB lines) above, each
 * request's latency over time (log scale; colour per app, 503 and failures marked) below,
 * the phases as bands across both. Plain SVG text. */
static void write_svg(const char *path, const lt_config *cf, const lt_service *sv)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "pm_loadgen: cannot write %s: %s\n", path, strerror(errno));
        return;
    }
    const double W = 1100, H = 760, L = 80, R = 170, T1 = 50, B1 = 330, T2 = 400, B2 = 700;
    double tmax = 1;
    for (int p = 0; p < run.nphases; p++)
        tmax = run.phases[p].t_end / 1e3 > tmax ? run.phases[p].t_end / 1e3 : tmax;
    if (sv->rss && sv->rss->n)
        tmax = sv->rss->t_s[sv->rss->n - 1] > tmax ? sv->rss->t_s[sv->rss->n - 1] : tmax;
    double xs = (W - L - R) / tmax;
#define X(t) (L + (t) * xs)
    static const char *colours[MAX_APPS] = {"#1f77b4", "#2ca02c", "#9467bd", "#8c564b",
                                            "#17becf", "#7f7f7f", "#bcbd22", "#e377c2"};
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            W, H, W, H);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">pm_loadgen --loadtest: %s, service "
               "%s</text>\n", L, cf->apps_text, sv->ch ? sv->ch->command : sv->mode);
    /* phase bands */
    for (int p = 0; p < run.nphases; p++) {
        const lt_phase *ph = &run.phases[p];
        double x0 = X(ph->t_start / 1e3), x1 = X(ph->t_end / 1e3);
        const char *fill = strcmp(ph->name, "soak") == 0 ? "#fff4e0"   /* as in the legend */
                           : strcmp(ph->name, "concurrent") == 0 ? "#eef4ff"
                           : strcmp(ph->name, "one_client") == 0 ? "#eefaee" : "#f2f2f2";
        for (int k = 0; k < 2; k++)
            fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\"/>\n",
                    x0, k ? T2 : T1, x1 - x0 > 0.5 ? x1 - x0 : 0.5, k ? B2 - T2 : B1 - T1, fill);
    }
    /* their labels, over every band */
    for (int p = 0; p < run.nphases; p++) {
        const lt_phase *ph = &run.phases[p];
        double x0 = X(ph->t_start / 1e3);
        /* one label per run of phases of a name (the apps' dots tell them apart), where
         * it fits */
        int last = p;
        while (last + 1 < run.nphases && strcmp(run.phases[last + 1].name, ph->name) == 0)
            last++;
        if ((p == 0 || strcmp(run.phases[p - 1].name, ph->name) != 0) &&
            X(run.phases[last].t_end / 1e3) - x0 > 6.5 * (double)strlen(ph->name))
            fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\" fill=\"#555\">%s</text>\n",
                    x0 + 3, T2 + 13, ph->name);
    }
    /* x axis (both panels) */
    double xstep = nice_step(tmax, 10);
    for (int k = 0; k < 2; k++) {
        double yb = k ? B2 : B1;
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L,
                yb, W - R, yb);
        for (double t = 0; t <= tmax + 1e-9; t += xstep)
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"black\"/>"
                       "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n",
                    X(t), yb, X(t), yb + 4, X(t), yb + 17, t);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">seconds since the start"
               "</text>\n", (L + W - R) / 2, B2 + 36);
    /* RSS panel */
    double peak = sv->hwm_mib > 0 ? sv->hwm_mib : 0;
    if (sv->rss)
        for (int i = 0; i < sv->rss->n; i++)
            peak = sv->rss->mib[i] > peak ? sv->rss->mib[i] : peak;
    double ymax = peak;
    if (cf->budget_mb > 0)
        ymax = cf->budget_mb + 100 > ymax ? cf->budget_mb + 100 : ymax;
    ymax = ymax > 0 ? ymax * 1.08 : 100;
    double ystep = nice_step(ymax, 6);
#define YR(m) (B1 - (m) / ymax * (B1 - T1))
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T1,
            L, B1);
    for (double m = 0; m <= ymax; m += ystep)
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                L, YR(m), W - R, YR(m), L - 6, YR(m) + 4, m);
    fprintf(f, "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" text-anchor=\"middle\">"
               "service RSS (MiB)</text>\n", L - 50, (T1 + B1) / 2);
    if (cf->budget_mb > 0) {
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#d62728\" "
                   "stroke-dasharray=\"6,4\"/><text x=\"%.0f\" y=\"%.1f\" fill=\"#d62728\">budget "
                   "%.0f MiB</text>\n", L, YR(cf->budget_mb), W - R, YR(cf->budget_mb), W - R + 6,
                YR(cf->budget_mb) + 4, cf->budget_mb);
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#d62728\" "
                   "stroke-dasharray=\"2,3\"/><text x=\"%.0f\" y=\"%.1f\" fill=\"#d62728\">+ 100 "
                   "(limit)</text>\n", L, YR(cf->budget_mb + 100), W - R, YR(cf->budget_mb + 100),
                W - R + 6, YR(cf->budget_mb + 100) - 2);
    }
    if (sv->rss && sv->rss->n) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\" points=\"");
        for (int i = 0; i < sv->rss->n; i++)
            fprintf(f, "%s%.1f,%.1f", i ? " " : "", X(sv->rss->t_s[i]), YR(sv->rss->mib[i]));
        fprintf(f, "\"/>\n");
        /* the drift check's two windows, drawn at their floors */
        for (int p = 0; p < run.nphases; p++)
            if (strcmp(run.phases[p].name, "soak") == 0 && run.phases[p].count) {
                rss_points rp = soak_rss_points(run.phases[p].t_start, run.phases[p].t_end);
                double lo[2] = {rp.mid_lo, rp.end_lo}, hi[2] = {rp.mid_hi, rp.end_hi};
                const char *label[2] = {rp.minute5 ? "floor at minute 5" : "floor at the middle",
                                        "floor at the end"};
                for (int k = 0; k < 2; k++) {
                    double m = rss_floor(sv->rss, lo[k], hi[k]);
                    if (m < 0)
                        continue;
                    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                               "stroke=\"#d62728\" stroke-width=\"3\"/><text x=\"%.1f\" "
                               "y=\"%.1f\" font-size=\"10\" fill=\"#d62728\" text-anchor=\"%s\">"
                               "%s %.0f</text>\n", X(lo[k]), YR(m), X(hi[k]), YR(m),
                            k ? X(hi[k]) : X(lo[k]), YR(m) - 6, k ? "end" : "start", label[k],
                            m);
                }
            }
    } else {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">no RSS sampled (--port mode)</text>\n", L + 10,
                (T1 + B1) / 2);
    }
    if (sv->stop_s > 0)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#555\" "
                   "stroke-dasharray=\"3,3\"/><text x=\"%.1f\" y=\"%.0f\" font-size=\"10\" "
                   "fill=\"#555\">SIGTERM</text>\n", X(sv->stop_s), T1, X(sv->stop_s), B1,
                X(sv->stop_s) + 2, B1 - 4);
    /* the phases' colours */
    static const char *band_names[4] = {"warmup", "one_client", "concurrent", "soak"};
    static const char *band_fills[4] = {"#f2f2f2", "#eefaee", "#eef4ff", "#fff4e0"};
    for (int k = 0; k < 4; k++)
        fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"10\" height=\"10\" fill=\"%s\" "
                   "stroke=\"#bbb\"/><text x=\"%.0f\" y=\"%.0f\">%s</text>\n", W - R + 9,
                T1 + 60 + k * 16, band_fills[k], W - R + 24, T1 + 69 + k * 16, band_names[k]);
    /* latency panel, log scale */
    double lmax = 10;
    for (int i = 0; i < run.nrec; i++)
        if (run.rec[i].outcome != OUT_NONE && run.rec[i].latency_ms > lmax)
            lmax = run.rec[i].latency_ms;
    double dmin = 0, dmax = ceil(log10(lmax));
    double lo = 1e300;
    for (int i = 0; i < run.nrec; i++)
        if (run.rec[i].outcome != OUT_NONE && run.rec[i].latency_ms > 0 &&
            run.rec[i].latency_ms < lo)
            lo = run.rec[i].latency_ms;
    dmin = lo < 1e300 ? floor(log10(lo)) : 0;
    if (dmax <= dmin)
        dmax = dmin + 1;
#define YL(ms) (B2 - (log10((ms) > 0 ? (ms) : pow(10, dmin)) - dmin) / (dmax - dmin) * (B2 - T2))
    fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T2,
            L, B2);
    for (double d = dmin; d <= dmax; d++)
        fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
                L, YL(pow(10, d)), W - R, YL(pow(10, d)), L - 6, YL(pow(10, d)) + 4, pow(10, d));
    fprintf(f, "<text transform=\"translate(%.0f,%.0f) rotate(-90)\" text-anchor=\"middle\">"
               "request latency (ms, log)</text>\n", L - 50, (T2 + B2) / 2);
    for (int i = 0; i < run.nrec; i++) {
        const record *r = &run.rec[i];
        if (r->outcome == OUT_NONE)
            continue;
        double x = X(r->sched_ms / 1e3), y = YL(r->latency_ms);
        if (r->outcome == OUT_OK)
            fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"1.8\" fill=\"%s\"/>\n", x, y,
                    colours[r->app % MAX_APPS]);
        else if (r->outcome == OUT_REFUSED)
            fprintf(f, "<path d=\"M%.1f %.1fl5 5m0 -5l-5 5\" stroke=\"#ff7f0e\"/>\n", x - 2.5,
                    y - 2.5);
        else
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"5\" height=\"5\" fill=\"#d62728\"/>\n",
                    x - 2.5, y - 2.5);
    }
    /* legend */
    double ly = T2 + 10;
    for (int a = 0; a < run.napps; a++, ly += 16)
        fprintf(f, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"4\" fill=\"%s\"/><text x=\"%.0f\" "
                   "y=\"%.0f\">%s</text>\n", W - R + 12, ly, colours[a % MAX_APPS], W - R + 22,
                ly + 4, run.apps[a]);
    fprintf(f, "<path d=\"M%.0f %.0fl6 6m0 -6l-6 6\" stroke=\"#ff7f0e\"/><text x=\"%.0f\" "
               "y=\"%.0f\">503 (refused)</text>\n", W - R + 9, ly - 3, W - R + 22, ly + 4);
    ly += 16;
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"6\" height=\"6\" fill=\"#d62728\"/><text "
               "x=\"%.0f\" y=\"%.0f\">failed</text>\n", W - R + 9, ly - 3, W - R + 22, ly + 4);
    ly += 22;
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" fill=\"#555\">open loop: from the"
               "</text><text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" fill=\"#555\">scheduled "
               "time</text>\n", W - R + 9, ly, W - R + 9, ly + 12);
    fprintf(f, "</svg>\n");
#undef X
#undef YR
#undef YL
    if (fclose(f) != 0)
        fprintf(stderr, "pm_loadgen: writing %s failed\n", path);
}

/* Waits until the service compiles nothing (queued and compiling 0), up to limit_s. */
static void wait_compiles(double limit_s)
{
    double t = now_ms(), deadline = t + limit_s * 1e3;
    for (;;) {
        int status;
        char *b = get_text("/stats", &status);
        long long q = field_of(b, "queued"), c = field_of(b, "compiling");
        free(b);
        if (status == 200 && q <= 0 && c <= 0)
            break;
        if (status != 200) {
            printf("  GET /stats answers %d: not waiting for compiles\n", status);
            return;
        }
        if (now_ms() > deadline) {
            printf("  the service still compiles after %.0f s (queued %lld, compiling %lld)\n",
                   limit_s, q, c);
            return;
        }
        sleep_until(now_ms() + 200);
    }
    printf("  compiles done (waited %.1f s)\n", (now_ms() - t) / 1e3);
}

static int add_picture(int64_t rows, int64_t cols)
{
    for (int i = 0; i < run.npics; i++)
        if (run.pics[i].rows == rows && run.pics[i].cols == cols)
            return i;
    if (run.npics == MAX_SIZES + 1)
        return -1;
    picture *p = &run.pics[run.npics];
    p->rows = rows;
    p->cols = cols;
    p->png = photo_png(rows, cols, &p->size);
    return p->png ? run.npics++ : -1;
}

static void size_text(char *out, size_t cap, int pic)
{
    snprintf(out, cap, "%lldx%lld", (long long)run.pics[pic].rows, (long long)run.pics[pic].cols);
}

/* The load test. Returns the exit status. sv is filled by the caller (the service is up);
 * its stop is done by stop_service, called here once the requests are done. */
static int run_loadtest(const lt_config *cf, lt_service *sv, int (*stop_service)(lt_service *))
{
    printf("pm_loadgen: load test of http://%s:%d (%s%s%s), apps %s at %s\n", host, port,
           sv->mode, sv->ch ? ": " : "", sv->ch ? sv->ch->command : "", cf->apps_text,
           cf->size_text);
    printf("  warm-up %d, one client %d, %d clients %d per app; soak %.0f s at %.2f req/s over "
           "%d connections, sizes %s; deadline %.0f ms per request\n", cf->warmup,
           cf->one_client, cf->clients, cf->concurrent, cf->soak_seconds, cf->rate,
           cf->soak_connections, cf->soak_sizes_text, run.timeout_ms);
    fflush(stdout);

    /* the phases, while the service lives */
#define SERVICE_UP (!sv->ch || child_running(sv->ch, (now_ms() - run.t0) / 1e3))
    for (int a = 0; a < run.napps && cf->warmup && SERVICE_UP; a++) {
        lt_phase *ph = add_phase("warmup", a, 1, run.fixed_pic, cf->warmup);
        run_closed(ph);
        stats st = stats_of(ph, -1, -1);
        printf("  warmup %s: %d requests, %d ok, last %.1f ms\n", run.apps[a], st.n, st.ok,
               ph->count ? run.rec[ph->first + ph->count - 1].latency_ms : 0.0);
        fflush(stdout);
    }
    if (SERVICE_UP)
        wait_compiles(300);
    const char *closed_names[2] = {"one_client", "concurrent"};
    for (int k = 0; k < 2; k++)
        for (int a = 0; a < run.napps && (k ? cf->concurrent : cf->one_client) && SERVICE_UP;
             a++) {
            lt_phase *ph = add_phase(closed_names[k], a, k ? cf->clients : 1, run.fixed_pic,
                                     k ? cf->concurrent : cf->one_client);
            run_closed(ph);
            stats st = stats_of(ph, -1, -1);
            printf("  %s %s: %d requests, %d ok, %d 503, %d failed, p50 %.1f ms, p99 %.1f ms\n",
                   ph->name, run.apps[a], st.n, st.ok, st.refused, st.failed, st.p50, st.p99);
            fflush(stdout);
        }
    lt_phase *soak = NULL;
    if (cf->soak_seconds > 0 && SERVICE_UP) {
        soak = add_phase("soak", -1, cf->soak_connections, -1,
                         (int)(cf->soak_seconds * cf->rate));
        run_soak(soak, cf->soak_seconds, cf->rate, cf->soak_connections, sv->rss, sv->ch);
    }

#undef SERVICE_UP

    /* the service's counters, then its stop */
    int status;
    char *b = get_text("/stats", &status);
    long long stats_end[5] = {field_of(b, "sync_compiles"), field_of(b, "background_compiles"),
                              field_of(b, "hits"), field_of(b, "misses"),
                              field_of(b, "fallback_runs")};
    free(b);
    sv->stop_s = (now_ms() - run.t0) / 1e3;
    int stopped_ok = stop_service(sv);

    /* the table */
    printf("\n%-10s %-14s %-7s %-10s %5s %5s %4s %6s %4s %6s %7s %7s %7s %7s %4s %4s", "phase",
           "app", "clients", "size", "n", "ok", "503", "failed", "late", "ok/s", "p50", "p90",
           "p99", "max", "svc", "gen");
    for (int k = 0; k < nparts; k++)
        printf(" %*s", (int)(strlen(part_names[k]) > 6 ? strlen(part_names[k]) : 6),
               part_names[k]);
    printf("\n%-10s %-14s %-7s %-10s %5s %5s %4s %6s %4s %6s %7s %7s %7s %7s %4s %4s", "", "", "",
           "", "", "", "", "", "", "", "ms", "ms", "ms", "ms", "cpu", "cpu");
    for (int k = 0; k < nparts; k++)
        printf(" %*s", (int)(strlen(part_names[k]) > 6 ? strlen(part_names[k]) : 6), "p50 ms");
    printf("\n");
    int failed = 0, refused = 0;
    for (int p = 0; p < run.nphases; p++) {
        const lt_phase *ph = &run.phases[p];
        stats st = stats_of(ph, -1, -1);
        failed += st.failed;
        refused += st.refused;
        char clients[16], size[32];
        snprintf(clients, sizeof clients, "%d", ph->clients);
        if (ph->pic >= 0)
            size_text(size, sizeof size, ph->pic);
        else
            snprintf(size, sizeof size, "drift");
        print_stats_row(ph->name, ph->app >= 0 ? run.apps[ph->app] : "all", clients, size, &st,
                        cores(ph, ph->svc_cpu), cores(ph, ph->gen_cpu));
        if (ph->app < 0) {
            for (int a = 0; a < run.napps; a++) {
                stats sa = stats_of(ph, a, -1);
                print_stats_row("  soak", run.apps[a], clients, "drift", &sa, -1, -1);
            }
            for (int z = 0; z < run.nsoak_pics; z++) {
                stats sz = stats_of(ph, -1, run.soak_pics[z]);
                size_text(size, sizeof size, run.soak_pics[z]);
                print_stats_row("  soak", "all", clients, size, &sz, -1, -1);
            }
        }
    }

    /* the checks */
    check checks[4 * MAX_APPS + 4];
    int nchecks = 0;
    int kernel = known_part("kernel"), decode = known_part("decode"),
        encode = known_part("encode");
    for (int a = 0; a < run.napps; a++) {
        const lt_phase *one = NULL, *conc = NULL;
        for (int p = 0; p < run.nphases; p++)
            if (run.phases[p].app == a && strcmp(run.phases[p].name, "one_client") == 0)
                one = &run.phases[p];
            else if (run.phases[p].app == a && strcmp(run.phases[p].name, "concurrent") == 0)
                conc = &run.phases[p];
        lt_phase none = {.name = "none"};
        stats s1 = stats_of(one ? one : &none, -1, -1);
        stats sc = stats_of(conc ? conc : &none, -1, -1);
        int conc_clients = conc ? conc->clients : cf->clients;
        check *c = &checks[nchecks++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "one_client_p50");
        c->app = run.apps[a];
        double kd = kernel >= 0 ? s1.part_p50[kernel] : -1,
               dd = decode >= 0 ? s1.part_p50[decode] : -1,
               ed = encode >= 0 ? s1.part_p50[encode] : -1;
        c->known = s1.ok > 0 && kd >= 0 && dd >= 0 && ed >= 0;
        if (c->known) {
            c->value = s1.p50;
            c->limit = kd + dd + ed + 5;
            c->pass = c->value <= c->limit;
            snprintf(c->text, sizeof c->text, "p50 %.1f ms <= kernel %.1f + decode %.1f + encode "
                     "%.1f + 5 = %.1f ms", c->value, kd, dd, ed, c->limit);
        } else {
            snprintf(c->text, sizeof c->text, "not measured (%s)",
                     !one    ? "no one-client phase"
                     : s1.ok ? "no kernel, decode or encode in Server-Timing"
                             : "no ok answer");
        }
        c = &checks[nchecks++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "concurrent_p99");
        c->app = run.apps[a];
        c->known = s1.ok > 0 && sc.ok > 0;
        if (c->known) {
            c->value = sc.p99;
            c->limit = 2.5 * s1.p50;
            c->pass = c->value <= c->limit;
            snprintf(c->text, sizeof c->text, "%d clients: p99 %.1f ms <= 2.5 x one-client p50 "
                     "%.1f = %.1f ms", conc_clients, c->value, s1.p50, c->limit);
        } else {
            snprintf(c->text, sizeof c->text, "not measured (%s)",
                     !one || !conc ? "no one-client or concurrent phase" : "no ok answer");
        }
        c = &checks[nchecks++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "concurrent_failed");
        c->app = run.apps[a];
        c->known = sc.n > 0;
        c->value = sc.failed;
        c->limit = 0;
        c->pass = c->known && sc.failed == 0;
        if (c->known)
            snprintf(c->text, sizeof c->text, "%d clients: %d failed of %d (%d 503), none "
                     "allowed", conc_clients, sc.failed, sc.n, sc.refused);
        else
            snprintf(c->text, sizeof c->text, "not measured (no %d-client phase)", conc_clients);
    }
    /* RSS: the peak over the service's life (samples and VmHWM), the drift in the soak */
    double peak = -1;
    if (sv->rss)
        for (int i = 0; i < sv->rss->n; i++)
            if (sv->rss->t_s[i] <= sv->stop_s && sv->rss->mib[i] > peak)
                peak = sv->rss->mib[i];
    check *c = &checks[nchecks++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "rss_peak");
    c->known = peak >= 0 && cf->budget_mb > 0;
    if (c->known) {
        c->value = sv->hwm_mib > peak ? sv->hwm_mib : peak;
        c->limit = cf->budget_mb + 100;
        c->pass = c->value <= c->limit;
        snprintf(c->text, sizeof c->text, "peak RSS %.0f MiB (sampled %.0f, VmHWM %.0f) <= "
                 "budget %.0f + 100 = %.0f MiB", c->value, peak, sv->hwm_mib, cf->budget_mb,
                 c->limit);
    } else {
        snprintf(c->text, sizeof c->text, "not checked (%s)",
                 peak < 0 ? "no RSS sampled" : "no --budget-mb");
    }
    c = &checks[nchecks++];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "rss_drift");
    c->known = peak >= 0 && soak && soak->count > 0;
    if (c->known) {
        rss_points rp = soak_rss_points(soak->t_start, soak->t_end);
        double mid = rss_floor(sv->rss, rp.mid_lo, rp.mid_hi);
        double end = rss_floor(sv->rss, rp.end_lo, rp.end_hi);
        c->value = end;
        c->limit = mid * 1.1;
        c->pass = mid > 0 && end >= 0 && fabs(end - mid) <= 0.1 * mid;
        snprintf(c->text, sizeof c->text, "RSS floor in the soak's last %.0f s %.0f MiB within "
                 "10%% of the floor around its %s (%.0f s) %.0f MiB: %+.1f%% (single samples: "
                 "%.0f at the end, %.0f at the %s)", rp.end_hi - rp.end_lo, end,
                 rp.minute5 ? "minute 5" : "middle", rp.mid_t - soak->t_start / 1e3, mid,
                 mid > 0 ? (end - mid) / mid * 100 : 0.0, rss_at(sv->rss, rp.end_t),
                 rss_at(sv->rss, rp.mid_t), rp.minute5 ? "minute 5" : "middle");
    } else {
        snprintf(c->text, sizeof c->text, "not checked (%s)",
                 peak < 0 ? "no RSS sampled" : "no soak");
    }
    printf("\nchecks (reported; they do not set the exit status):\n");
    for (int k = 0; k < nchecks; k++)
        printf("  %-4s  %-18s %-14s %s\n",
               !checks[k].known ? "n/a" : checks[k].pass ? "pass" : "FAIL", checks[k].name,
               checks[k].app ? checks[k].app : "service", checks[k].text);
    printf("\nrequests: %d, failed %d, 503 %d; service: %lld sync + %lld background compiles, "
           "%lld hits, %lld misses, %lld fallback runs\n", run.nrec, failed, refused,
           stats_end[0], stats_end[1], stats_end[2], stats_end[3], stats_end[4]);
    if (sv->ch)
        printf("service exit: %s %d%s\n", sv->ch->exit_signal ? "signal" : "status",
               sv->ch->exit_signal ? sv->ch->exit_signal : sv->ch->exit_status,
               sv->ch->killed ? " (killed after the wait)" : "");
    if (cf->json_path) {
        write_json(cf->json_path, cf, sv, checks, nchecks, failed, refused, stats_end);
        printf("wrote %s\n", cf->json_path);
    }
    if (cf->svg_path) {
        write_svg(cf->svg_path, cf, sv);
        printf("wrote %s\n", cf->svg_path);
    }
    return failed || stopped_ok != 0 ? 1 : 0;
}

/* ---- the command line ------------------------------------------------------------------- */

static const char usage[] =
    "usage: pm_loadgen [--spawn | --child | --port N] [--threads N] [--serve-args \"ARGS\"]\n"
    "                  [--app NAME] [--sizes RxC,...] [--requests N] [--connections N]\n"
    "       pm_loadgen --loadtest [--spawn | --child | --port N] [--serve-args \"ARGS\"]\n"
    "                  [--apps A,B,...] [--size RxC] [--warmup N] [--one-client N]\n"
    "                  [--clients N] [--concurrent N] [--soak-seconds S] [--rate R]\n"
    "                  [--soak-sizes RxC,...] [--soak-connections N] [--seed N]\n"
    "                  [--timeout-ms N] [--grace-seconds S] [--budget-mb N]\n"
    "                  [--json PATH] [--svg PATH]\n";

static int int_arg(const char *text, long lo, long hi, int *out)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (!*text || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int num_arg(const char *text, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(text, &end);
    if (!*text || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}

/* The in-process service (--spawn), stopped by the load test. */
static pm_service *spawned;

static int stop_lt_service(lt_service *sv)
{
    if (sv->rss)
        sv->hwm_mib = status_kb(sv->rss->pid, "VmHWM") / 1024.0;
    int rc = 0;
    if (sv->ch)
        rc = child_stop(sv->ch, 60);
    else if (spawned)
        pm_service_stop(spawned), spawned = NULL;
    if (sv->rss && sv->rss->started) {
        atomic_store(&sv->rss->stop, 1);
        pthread_join(sv->rss->thread, NULL);
        sv->rss->started = 0;
    }
    return rc;
}

int main(int argc, char **argv)
{
    const char *sizes_text = "480x640,1080x1920,479x641,3000x4000,480x640";
    int requests = 16, connections = 4, spawn = 0, use_child = 0, loadtest = 0, threads = 0;
    const char *port_text = getenv("PORT"), *serve_args = "";
    lt_config cf = {.apps_text = "harris,unsharp_mask,bilateral_grid",
                    .size_text = "1080x1920",
                    .soak_sizes_text = "480x640,600x800,720x1280,1080x1440,1080x1920,"
                                       "1536x2048,2250x3000,3000x4000",
                    .warmup = 3, .one_client = 30, .clients = 4, .concurrent = 60,
                    .soak_connections = 16, .soak_seconds = 600, .rate = 3, .seed = 1};
    run.timeout_ms = 60000;
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = 1;
        double d;
        if (strcmp(a, "--spawn") == 0)
            spawn = 1, use_child = 0, takes = 0;
        else if (strcmp(a, "--child") == 0)
            use_child = 1, spawn = 0, takes = 0;
        else if (strcmp(a, "--loadtest") == 0)
            loadtest = 1, takes = 0;
        else if (!v)
            bad = 1;
        else if (strcmp(a, "--port") == 0)
            port_text = v, spawn = use_child = 0;
        else if (strcmp(a, "--serve-args") == 0)
            serve_args = v;
        else if (strcmp(a, "--app") == 0)
            app = v;
        else if (strcmp(a, "--sizes") == 0)
            sizes_text = v;
        else if (strcmp(a, "--requests") == 0)
            bad = int_arg(v, 1, 10000, &requests);
        else if (strcmp(a, "--connections") == 0)
            bad = int_arg(v, 1, 64, &connections);
        else if (strcmp(a, "--threads") == 0)
            bad = int_arg(v, 0, 1024, &threads);
        else if (strcmp(a, "--apps") == 0)
            cf.apps_text = v;
        else if (strcmp(a, "--size") == 0)
            cf.size_text = v;
        else if (strcmp(a, "--warmup") == 0)
            bad = int_arg(v, 0, 1000, &cf.warmup);
        else if (strcmp(a, "--one-client") == 0)
            bad = int_arg(v, 0, 100000, &cf.one_client);
        else if (strcmp(a, "--clients") == 0)
            bad = int_arg(v, 1, 64, &cf.clients);
        else if (strcmp(a, "--concurrent") == 0)
            bad = int_arg(v, 0, 100000, &cf.concurrent);
        else if (strcmp(a, "--soak-seconds") == 0)
            bad = num_arg(v, 0, 86400, &cf.soak_seconds);
        else if (strcmp(a, "--rate") == 0)
            bad = num_arg(v, 0.01, 1000, &cf.rate);
        else if (strcmp(a, "--soak-sizes") == 0)
            cf.soak_sizes_text = v;
        else if (strcmp(a, "--soak-connections") == 0)
            bad = int_arg(v, 1, 256, &cf.soak_connections);
        else if (strcmp(a, "--seed") == 0)
            bad = num_arg(v, 0, 1e15, &d), cf.seed = (long long)d;
        else if (strcmp(a, "--timeout-ms") == 0)
            bad = num_arg(v, 1, 3600e3, &run.timeout_ms);
        else if (strcmp(a, "--grace-seconds") == 0)
            bad = num_arg(v, 0, 3600, &d), soak_grace_ms = d * 1e3;
        else if (strcmp(a, "--budget-mb") == 0)
            bad = num_arg(v, 0, 1e9, &cf.budget_mb);
        else if (strcmp(a, "--json") == 0)
            cf.json_path = v;
        else if (strcmp(a, "--svg") == 0)
            cf.svg_path = v;
        else
            bad = 1;
        if (bad)
            fprintf(stderr, "pm_loadgen: bad option %s%s%s\n", a, v && takes ? " " : "",
                    v && takes ? v : "");
        i += takes;
    }
    if (bad) {
        fputs(usage, stderr);
        return 2;
    }
    /* the load test's apps and pictures, checked (and encoded) before any service starts */
    int64_t rows[MAX_SIZES + 1], cols[MAX_SIZES + 1];
    int n = 0;
    if (loadtest) {
        static char apps_copy[512];
        snprintf(apps_copy, sizeof apps_copy, "%s", cf.apps_text);
        for (char *save = NULL, *w = strtok_r(apps_copy, ",", &save); w;
             w = strtok_r(NULL, ",", &save)) {
            if (run.napps == MAX_APPS || strspn(w, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
                                             strlen(w)) {
                fprintf(stderr, "pm_loadgen: bad app list %s (at most %d names of [a-z0-9_])\n",
                        cf.apps_text, MAX_APPS);
                fputs(usage, stderr);
                return 2;
            }
            run.apps[run.napps++] = w;
        }
        if (!run.napps || parse_sizes(cf.size_text, rows, cols, &n) != 0 || n != 1 ||
            parse_sizes(cf.soak_sizes_text, rows + 1, cols + 1, &n) != 0) {
            fprintf(stderr, "pm_loadgen: bad --apps, --size or --soak-sizes\n");
            fputs(usage, stderr);
            return 2;
        }
        if (cf.soak_seconds * cf.rate > 1e6) {
            fprintf(stderr, "pm_loadgen: --soak-seconds x --rate over a million requests\n");
            return 2;
        }
        rng_state = (unsigned long long)cf.seed * 0x9E3779B97F4A7C15ULL + 1;
        double t = now_ms();
        run.fixed_pic = add_picture(rows[0], cols[0]);
        for (int i = 0; i < n && run.fixed_pic >= 0; i++) {
            run.soak_pics[i] = add_picture(rows[1 + i], cols[1 + i]);
            if (run.soak_pics[i] < 0)
                run.fixed_pic = -1;
        }
        run.nsoak_pics = n;
        if (run.fixed_pic < 0) {
            fprintf(stderr, "pm_loadgen: out of memory for the pictures\n");
            return 1;
        }
        size_t bytes = 0;
        for (int i = 0; i < run.npics; i++)
            bytes += run.pics[i].size;
        printf("pm_loadgen: %d pictures encoded as PNGs in %.1f s (%.1f MB)\n", run.npics,
               (now_ms() - t) / 1e3, bytes / 1e6);
        int total = run.napps * (cf.warmup + cf.one_client + cf.concurrent) +
                    (int)(cf.soak_seconds * cf.rate) + 1;
        run.rec = calloc((size_t)total, sizeof *run.rec);
        if (!run.rec) {
            fprintf(stderr, "pm_loadgen: out of memory for %d requests\n", total);
            return 1;
        }
    }
    signal(SIGPIPE, SIG_IGN);

    run.t0 = now_ms();
    child ch;
    lt_service sv = {.mode = spawn ? "spawn" : use_child ? "child" : "port", .hwm_mib = -1,
                     .child_ok = 1};
    rss_series rss;
    memset(&rss, 0, sizeof rss);
    pthread_mutex_init(&rss.mu, NULL);
    rss.t0 = run.t0;
    if (use_child) {
        if (child_start(&ch, threads, serve_args) != 0)
            return 1;
        child_start_reader(&ch);
        sv.ch = &ch;
        rss.pid = ch.pid;
        run.service_pid = ch.pid;
    } else if (spawn) {
        pm_service_options o = pm_service_options_default();
        o.port = 0;
        o.kernel_threads = threads;
        char err[256];
        spawned = pm_service_start(&o, err, sizeof err);
        if (!spawned) {
            fprintf(stderr, "pm_loadgen: %s\n", err);
            return 1;
        }
        port = pm_service_port(spawned);
        rss.pid = 0;
    } else {
        int p;
        if (!port_text || !*port_text)
            port_text = "8080";
        if (int_arg(port_text, 1, 65535, &p) != 0) {
            fprintf(stderr, "pm_loadgen: bad port %s\n", port_text);
            return 2;
        }
        port = p;
    }
    if (use_child || (spawn && loadtest)) {
        rss.started = pthread_create(&rss.thread, NULL, rss_main, &rss) == 0;
        sv.rss = rss.started ? &rss : NULL;
    }
    /* ready: /ready answers 200 (at once without --preload; bounded) */
    double ready_deadline = now_ms() + 600e3;
    for (int st = 0;; sleep_until(now_ms() + 250)) {
        free(get_text("/ready", &st));
        if (st == 200)
            break;
        if (now_ms() > ready_deadline || st != 503) {
            fprintf(stderr, "pm_loadgen: the service at %s:%d is not ready (GET /ready: %d)\n",
                    host, port, st);
            stop_lt_service(&sv);
            return 1;
        }
    }
    int rc;
    if (loadtest) {
        rc = run_loadtest(&cf, &sv, stop_lt_service);
    } else {
        int failures = run_per_size(sizes_text, requests, connections, spawn);
        double hwm = sv.rss ? status_kb(sv.rss->pid, "VmHWM") / 1024.0 : -1;
        int stopped = stop_lt_service(&sv);
        if (use_child)
            printf("service: peak RSS %.0f MiB (VmHWM); exit %s %d\n", hwm,
                   ch.exit_signal ? "signal" : "status", ch.exit_signal ? ch.exit_signal
                                                                          : ch.exit_status);
        rc = failures || stopped != 0 ? 1 : 0;
    }
    /* everything freed, so a leak checker (make test-asan) sees none */
    free(run.rec);
    for (int i = 0; i < run.npics; i++)
        free(run.pics[i].png);
    free(rss.t_s);
    free(rss.mib);
    pthread_mutex_destroy(&rss.mu);
    return rc;
}
