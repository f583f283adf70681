/* service.h — the HTTP image service (samples/serve): the sample apps behind
 * libmicrohttpd, served with one process-wide pm_jit through pm_jit_run.
 *
 *   POST /apps/<app>   body: a PNG or JPEG. Answer: the app's output, as a PNG (200,
 *                      image/png), or as a JPEG or raw pixels when the Accept header
 *                      prefers image/jpeg or application/octet-stream (docs/server.md).
 *   GET  /stats        the jit's pm_cache_stats as a JSON object, plus request counts.
 *   GET  /metrics      Prometheus text: latency histograms per app and per part, status
 *                      counts, cache, compile and memory figures.
 *   GET  /apps         the apps and their smallest picture, JSON.
 *   GET  /health       200 "ok" while the service runs (liveness).
 *   GET  /ready        200 "ready" once the preloaded kernels are in the jit's cache and no
 *                      request waits for memory; else 503 (Retry-After: 1) saying which.
 *
 * Promise: any request gets an answer or a closed connection, never a crash: an unknown
 * path or app 404, a wrong method 405 (with Allow), a body that is not a decodable PNG
 * or JPEG 400, a body over max_body_bytes or a picture over max_side / max_pixels 413, a picture
 * smaller than the app's min_rows x min_cols 422, an Accept the service cannot meet 406,
 * a request whose memory does not fit the budget in time 503 (with Retry-After); every
 * error answer is text/plain with a one-line message. A connection whose request head
 * (or body) has not arrived within header_seconds (body_seconds), however slowly its
 * bytes trickle in, is closed.
 *
 * Admission: at most `workers` app requests (default: the cores) decode, run and encode at
 * once, so each has a core instead of all sharing them; the others wait in a FIFO queue
 * of queue_length for at most queue_seconds (503 with Retry-After after).
 * Memory: with memory_budget_bytes, each app request's bytes are estimated from its
 * picture's header before any pixel memory is allocated (body, decoded picture, the
 * pipeline's buffers, the kernel's scratch from pm_jit_scratch_estimate, the rendered and
 * encoded answer); requests run while their sum fits three quarters of the budget (the
 * rest is the jit's idle scratch: max_scratch_bytes), and wait in the same queue otherwise.
 *
 * Threads: libmicrohttpd's thread-per-connection mode (one thread per client connection,
 * at most connection_limit, at most per_ip_limit from one address). Each app's pipeline
 * is built once per concurrent use: a request takes a built one from the app's pool (or
 * builds one when all are in use) and gives it back, so a pipeline and its context are
 * used by one thread at a time. Kernels come from the one jit: the first request of an app
 * compiles synchronously (concurrent first requests wait for that one compile), a new
 * size bucket of an app already served runs the nearest kernel at once while its own
 * compiles in the background, at a lower priority (pm_jit_run).
 */
#ifndef PM_SERVE_SERVICE_H
#define PM_SERVE_SERVICE_H

#include "polymage.h"

#include <stdint.h>

typedef struct pm_service_options {
    const char *host;          /* IPv4 address to bind; default "127.0.0.1"               */
    int port;                  /* 0 = a free port chosen by the system (pm_service_port)   */
    int64_t max_body_bytes;    /* default 64 MiB                                            */
    int64_t max_side;          /* default 8192 pixels                                       */
    int64_t max_pixels;        /* default 4096 * 4096 (a 4000 x 3000 picture passes)        */
    int kernel_threads;        /* the jit's worker threads; 0 = number of cores            */
    unsigned connection_limit; /* default 64                                                */
    unsigned timeout_seconds;  /* idle connection timeout; default 30                       */
    int isolate_compiles;      /* 1 (default): compiles run in helper processes, so a
                                  compile that runs out of memory or crashes fails its
                                  request, never the service (pm_jit_options)              */
    const char *preload;       /* "app:RxC,app:RxC,...": the kernels a request of that app
                                  and picture size runs, compiled (or loaded from the disk
                                  cache) on a thread of their own from the start; /ready
                                  answers 503 until they are. NULL or "" = none; at most
                                  64, each size within the app's minimum and the limits    */
    int64_t memory_budget_bytes; /* 0 (default) = none; else at least 64 MiB             */
    unsigned queue_length;     /* requests waiting for memory at most; default 32          */
    double queue_seconds;      /* how long one waits before its 503; default 10            */
    double header_seconds;     /* a request head must arrive within this of the connection
                                  (or of the previous answer on it); default 10            */
    double body_seconds;       /* its body within this of its head; default 60             */
    unsigned per_ip_limit;     /* connections from one address at most; default 16         */
    const char *access_log;    /* a file (appended to, made 0640 if missing; not a link) or
                                  "-" for stderr: one line per request. NULL = none         */
    const char *cache_dir;     /* the jit's disk cache folder; NULL = PM_CACHE_DIR or none  */
    int max_kernels;           /* the jit's cache budgets (pm_cache_policy); 0 = defaults   */
    int64_t max_code_bytes;
    int scratch_idle_ms;       /* < 0 = the default (5000); 0 = never for idleness          */
    int jpeg_quality;          /* answers in JPEG; default 90                               */
    int workers;               /* app requests decoding, running or encoding at once; the
                                  others wait in the queue. 0 (default) = number of cores  */
} pm_service_options;

pm_service_options pm_service_options_default(void);

typedef struct pm_service pm_service;

/* Starts the service (its threads run until pm_service_stop). NULL options = defaults.
 * Returns NULL with a message in err on failure (a port in use, no memory, a preload
 * entry that names no app or a size it cannot serve, ...). */
pm_service *pm_service_start(const pm_service_options *options, char *err, size_t err_size);
/* The port it listens on (the chosen one when options->port was 0). */
int pm_service_port(const pm_service *s);
/* The service's jit (for statistics in tests). */
pm_jit *pm_service_jit(pm_service *s);
/* Requests begun and not yet completed (reading, running or answering). */
int pm_service_active(pm_service *s);
/* The graceful stop (SIGTERM): stops accepting connections at once, waits up to `seconds`
 * for the requests in progress to be answered, then pm_service_stop (which closes what is
 * left). Returns how many requests were still in progress at the deadline (0: none was
 * cut). NULL is allowed. */
int pm_service_stop_draining(pm_service *s, double seconds);
/* Parses a byte count with an optional K, M or G suffix (powers of 1024): "1500M", "2G".
 * 0 and *bytes set, or -1. */
int pm_service_parse_bytes(const char *text, int64_t *bytes);
/* Whether every preloaded kernel is ready (1), still coming (0), or one failed (-1). */
int pm_service_ready(pm_service *s);
/* Stops accepting, waits for requests in progress (and the preload), frees everything.
 * NULL is allowed. */
void pm_service_stop(pm_service *s);

#endif
