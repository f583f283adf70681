/* serve_main.c — `serve`: the image service on 127.0.0.1 (`make serve`).
 *
 *   serve [--port N] [--host A.B.C.D] [--threads N] [--in-process-compiles]
 *         [--preload app:RxC,...] [--drain-seconds S]
 *
 * Compiles run in helper processes (pm_jit_options.isolate_compiles; the helper
 * polymage-compile is found next to the program or its library, or by
 * PM_COMPILE_HELPER); --in-process-compiles runs them in the service itself.
 * Port: --port, else the PORT environment variable, else 8080; 0 lets the system pick a
 * free one. --preload compiles (or loads from the disk cache) the kernels of those apps
 * and picture sizes from the start; GET /ready answers 200 once they are in.
 * Prints "serve: listening on http://HOST:PORT" once it accepts, then runs
 * until SIGINT or SIGTERM, when it stops accepting connections, answers the requests in
 * progress (for up to --drain-seconds, default 30; what is left then is closed), prints
 * the jit's statistics and exits 0. */
#define _POSIX_C_SOURCE 200809L
#include "service.h"

#include <signal.h>
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

int main(int argc, char **argv)
{
    pm_service_options o = pm_service_options_default();
    const char *port_text = getenv("PORT");
    int drain_seconds = 30;
    for (int i = 1; i < argc; i++) {
        long v;
        if (strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port_text = argv[++i];
        } else if (strcmp(argv[i], "--host") == 0 && i + 1 < argc) {
            o.host = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc &&
                   parse_int(argv[i + 1], 0, PM_MAX_THREADS, &v) == 0) {
            o.kernel_threads = (int)v;
            i++;
        } else if (strcmp(argv[i], "--in-process-compiles") == 0) {
            o.isolate_compiles = 0;
        } else if (strcmp(argv[i], "--preload") == 0 && i + 1 < argc) {
            o.preload = argv[++i];
        } else if (strcmp(argv[i], "--drain-seconds") == 0 && i + 1 < argc &&
                   parse_int(argv[i + 1], 0, 3600, &v) == 0) {
            drain_seconds = (int)v;
            i++;
        } else {
            fprintf(stderr, "usage: serve [--port N] [--host A.B.C.D] [--threads N] "
                            "[--in-process-compiles] [--preload app:RxC,...] "
                            "[--drain-seconds S]\n");
            return 2;
        }
    }
    if (port_text && *port_text) {
        long v;
        if (parse_int(port_text, 0, 65535, &v) != 0) {
            fprintf(stderr, "serve: bad port %s\n", port_text);
            return 2;
        }
        o.port = (int)v;
    }
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
           "GET /apps, GET /health, GET /ready)\n", o.host, pm_service_port(s));
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
