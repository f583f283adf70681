/* isolate.c — compiles in a helper process (see isolate.h).
 *
 * The protocol (one request, one reply, host byte order: both ends are this build, which
 * the request's build ID proves):
 *   request  "PMCREQ01", then length-prefixed (u64) fields: build ID, nonce (16 bytes),
 *            the pipeline's canonical text, the estimates (8 bytes each; a length of
 *            UINT64_MAX for none), the resolved pm_options' bytes, and i64
 *            compile_threads, i64 opt_level (the jit's)
 *   reply    "PMCREP01", u64 status, u64 message length, message, then on PM_OK the
 *            kernel in the disk cache's encoding under the nonce (u64 length, bytes)
 *            and the pm_compile_stats' bytes (u64 length, bytes)
 * The caller writes the whole request and half-closes the socket; the helper reads to
 * the end before it compiles, so neither side can block the other.
 */
/* posix_spawn, pipe2, socketpair's SOCK_CLOEXEC, dladdr, prctl: POSIX and GNU, not C11. */
#define _GNU_SOURCE

#include "runtime/isolate.h"

#include "frontend/error.h"
#include "runtime/wire.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum { NONCE_BYTES = PM_ISOLATE_NONCE_BYTES, STDERR_TAIL = 1024 };

#ifndef PM_COMPILE_HELPER_INSTALLED
#define PM_COMPILE_HELPER_INSTALLED "/usr/local/libexec/polymage/polymage-compile"
#endif
#ifndef PM_COMPILE_HELPER_FROM_LIBDIR
#define PM_COMPILE_HELPER_FROM_LIBDIR "../libexec/polymage/polymage-compile"
#endif
#ifndef PM_COMPILE_HELPER_FROM_BINDIR
#define PM_COMPILE_HELPER_FROM_BINDIR "../libexec/polymage/polymage-compile"
#endif

/* ---- finding the helper ---------------------------------------------------------------- */

/* NULL when `path` is a helper to run: a regular executable file of this user or root
 * that nobody else may write; else why not. */
static const char *helper_distrust(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return strerror(errno);
    if (!S_ISREG(st.st_mode))
        return "not a regular file";
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return "owned by another user";
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return "writable by group or others";
    if (access(path, X_OK) != 0)
        return "not executable";
    return NULL;
}

/* Appends "; path (why)" to the list of places looked at (cut at its end). */
static void note_tried(char *tried, size_t size, const char *path, const char *why)
{
    size_t n = strlen(tried);
    if (n + 1 < size && snprintf(tried + n, size - n, "%s%s (%s)", n ? "; " : "", path, why) < 0)
        tried[n] = '\0';
}

pm_status pm_isolate_find_helper(char **path, pm_error *err)
{
    *path = NULL;
    const char *env = getenv("PM_COMPILE_HELPER");
    if (env && *env) {
        const char *why = helper_distrust(env);
        if (why)
            return pm_error_set(err, PM_ERR_ARGUMENT,
                                "pm_jit_new: isolate_compiles = 1, but PM_COMPILE_HELPER \"%s\" "
                                "is not used: %s",
                                env, why);
        *path = strdup(env);
        return *path ? PM_OK : pm_error_set(err, PM_ERR_NOMEM, "pm_jit_new: out of memory");
    }
    /* Next to this library: its install's libexec, or its own folder (a build tree). */
    char candidates[4][PATH_MAX];
    int n = 0;
    Dl_info info;
    if (dladdr((void *)pm_isolate_find_helper, &info) && info.dli_fname) {
        char *self = realpath(info.dli_fname, NULL);
        char *slash = self ? strrchr(self, '/') : NULL;
        if (slash) {
            *slash = '\0';
            snprintf(candidates[n++], PATH_MAX, "%s/%s", self, PM_COMPILE_HELPER_FROM_LIBDIR);
            snprintf(candidates[n++], PATH_MAX, "%s/%s", self, PM_COMPILE_HELPER_FROM_BINDIR);
            snprintf(candidates[n++], PATH_MAX, "%s/polymage-compile", self);
        }
        free(self);
    }
    snprintf(candidates[n++], PATH_MAX, "%s", PM_COMPILE_HELPER_INSTALLED);
    char tried[2048] = "";
    for (int i = 0; i < n; i++) {
        const char *why = helper_distrust(candidates[i]);
        if (!why) {
            *path = strdup(candidates[i]);
            return *path ? PM_OK : pm_error_set(err, PM_ERR_NOMEM, "pm_jit_new: out of memory");
        }
        note_tried(tried, sizeof tried, candidates[i], why);
    }
    return pm_error_set(err, PM_ERR_ARGUMENT,
                        "pm_jit_new: isolate_compiles = 1, but no compile helper was found "
                        "(set PM_COMPILE_HELPER; looked at: %s)",
                        tried);
}

/* ---- the caller's side ----------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static bool build_request(pm_wire_writer *m, const unsigned char nonce[NONCE_BYTES],
                          const char *text, size_t text_len, int nparams,
                          const pm_value *estimates, const pm_options *options,
                          const pm_isolate_limits *limits)
{
    pm_wire_put(m, PM_ISOLATE_REQUEST_MAGIC, PM_ISOLATE_MAGIC_BYTES);
    pm_wire_put_field(m, pm_build_id(), strlen(pm_build_id()));
    pm_wire_put_field(m, nonce, NONCE_BYTES);
    pm_wire_put_field(m, text, text_len);
    if (estimates)
        pm_wire_put_field(m, estimates, sizeof *estimates * (size_t)nparams);
    else
        pm_wire_put_u64(m, UINT64_MAX);
    pm_wire_put_field(m, options, sizeof *options);
    pm_wire_put_u64(m, (uint64_t)(int64_t)limits->compile_threads);
    pm_wire_put_u64(m, (uint64_t)(int64_t)limits->opt_level);
    return !m->failed;
}

/* A running helper: its pid, the socket, its stderr. */
typedef struct helper {
    pid_t pid;
    int sock, err_fd;
} helper;

static pm_status spawn_helper(const pm_isolate_limits *limits, helper *h, const char *name,
                              pm_error *err)
{
    int sv[2] = {-1, -1}, ep[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0 || pipe2(ep, O_CLOEXEC) != 0) {
        int e = errno;
        for (int i = 0; i < 2; i++) {
            if (sv[i] >= 0)
                close(sv[i]);
            if (ep[i] >= 0)
                close(ep[i]);
        }
        return pm_error_set(err, e == ENOMEM ? PM_ERR_NOMEM : PM_ERR_COMPILE,
                            "%s: could not start the compile helper: %s", name, strerror(e));
    }
    char memory[32], seconds[32];
    snprintf(memory, sizeof memory, "%lld", (long long)limits->memory_bytes);
    snprintf(seconds, sizeof seconds, "%d", limits->seconds);
    char *argv[] = {(char *)limits->helper, "--memory", memory, "--seconds", seconds, NULL};
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    posix_spawn_file_actions_adddup2(&fa, ep[1], 2);
    posix_spawnattr_init(&attr);
    /* The server's signal mask and handlers are not the helper's. */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    int e = posix_spawn(&h->pid, limits->helper, &fa, &attr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(sv[1]);
    close(ep[1]);
    h->sock = sv[0];
    h->err_fd = ep[0];
    if (e != 0) {
        close(h->sock);
        close(h->err_fd);
        return pm_error_set(err, PM_ERR_COMPILE, "%s: could not start the compile helper %s: %s",
                            name, limits->helper, strerror(e));
    }
    return PM_OK;
}

/* What talking to the helper gave: the reply, its stderr's tail, whether time ran out. */
typedef struct exchange {
    pm_wire_writer reply;
    char tail[STDERR_TAIL + 1];
    size_t tail_len;
    bool timed_out, too_long;
} exchange;

static void keep_tail(exchange *x, const char *data, size_t n)
{
    if (n >= STDERR_TAIL) {
        memcpy(x->tail, data + n - STDERR_TAIL, STDERR_TAIL);
        x->tail_len = STDERR_TAIL;
    } else {
        size_t keep = x->tail_len + n > STDERR_TAIL ? STDERR_TAIL - n : x->tail_len;
        memmove(x->tail, x->tail + x->tail_len - keep, keep);
        memcpy(x->tail + keep, data, n);
        x->tail_len = keep + n;
    }
    x->tail[x->tail_len] = '\0';
}

/* Sends the request, then reads the reply and stderr until the socket's end or the
 * deadline. */
static void talk(helper *h, const pm_wire_writer *request, double deadline, exchange *x)
{
    size_t sent = 0;
    bool reading = true, err_open = true;
    while (reading || err_open) {
        int wait_ms = (int)((deadline - now_s()) * 1000);
        if (wait_ms <= 0) {
            x->timed_out = true;
            return;
        }
        bool sending = sent < request->len;
        /* A descriptor not waited on is -1: a hung-up socket would wake poll at once. */
        struct pollfd fds[2] = {{sending || reading ? h->sock : -1,
                                 (short)((sending ? POLLOUT : 0) | (reading ? POLLIN : 0)), 0},
                                {err_open ? h->err_fd : -1, POLLIN, 0}};
        if (poll(fds, 2, wait_ms) < 0 && errno != EINTR)
            return;
        if (sending && (fds[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = send(h->sock, request->data + sent, request->len - sent, MSG_NOSIGNAL);
            if (n > 0)
                sent += (size_t)n;
            if (n < 0 && errno != EINTR && errno != EAGAIN)
                sent = request->len; /* the helper is gone: read what it said */
            if (sent == request->len)
                shutdown(h->sock, SHUT_WR);
        }
        char buf[65536];
        if (reading && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = recv(h->sock, buf, sizeof buf, 0);
            if (n > 0 && x->reply.len + (size_t)n > PM_ISOLATE_MAX_MESSAGE)
                x->too_long = true;
            if (n > 0 && !x->too_long)
                pm_wire_put(&x->reply, buf, (size_t)n);
            reading = n > 0 || (n < 0 && errno == EINTR);
            reading = reading && !x->too_long;
        }
        if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            ssize_t n = read(h->err_fd, buf, sizeof buf);
            if (n > 0)
                keep_tail(x, buf, (size_t)n);
            err_open = n > 0 || (n < 0 && errno == EINTR);
        }
        if (x->too_long)
            return;
    }
}

/* The last non-empty line of the helper's stderr, for messages. */
static const char *last_line(exchange *x)
{
    while (x->tail_len > 0 && (x->tail[x->tail_len - 1] == '\n' || x->tail[x->tail_len - 1] == '\r'))
        x->tail[--x->tail_len] = '\0';
    char *nl = strrchr(x->tail, '\n');
    return nl ? nl + 1 : x->tail;
}

static bool said_out_of_memory(const char *tail)
{
    return strstr(tail, "out of memory") || strstr(tail, "Cannot allocate memory") ||
           strstr(tail, "bad_alloc") || strstr(tail, "Out of memory");
}

/* Why the helper ended without a kernel, when it did not say so itself. */
static pm_status helper_death(const pm_isolate_limits *limits, const char *name, int wstatus,
                              exchange *x, pm_error *err)
{
    const char *words = last_line(x);
    const char *sep = *words ? "; its last words: " : "";
    if (x->timed_out)
        return pm_error_set(err, PM_ERR_COMPILE,
                            "%s: the compile helper was stopped (SIGKILL) at its time limit of "
                            "%d s (pm_jit_options.compile_seconds)%s%s",
                            name, limits->seconds, sep, words);
    if (x->too_long)
        return pm_error_set(err, PM_ERR_COMPILE,
                            "%s: the compile helper's reply exceeded %llu bytes", name,
                            (unsigned long long)PM_ISOLATE_MAX_MESSAGE);
    if (WIFSIGNALED(wstatus) || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) != 0)) {
        char how[96];
        if (WIFSIGNALED(wstatus))
            snprintf(how, sizeof how, "died of signal %d (%s)", WTERMSIG(wstatus),
                     strsignal(WTERMSIG(wstatus)));
        else
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(wstatus));
        if (said_out_of_memory(x->tail))
            return pm_error_set(err, PM_ERR_NOMEM,
                                "%s: the compile helper ran out of memory under its limit of "
                                "%lld MiB (RLIMIT_AS, pm_jit_options.compile_memory_bytes) and "
                                "%s%s%s",
                                name, (long long)(limits->memory_bytes >> 20), how, sep, words);
        return pm_error_set(err, PM_ERR_COMPILE, "%s: the compile helper %s%s%s", name, how, sep,
                            words);
    }
    return pm_error_set(err, PM_ERR_COMPILE, "%s: the compile helper sent no valid reply%s%s",
                        name, sep, words);
}

/* The reply's status and message, then its kernel and stats. */
static pm_status read_reply(const exchange *x, const unsigned char nonce[NONCE_BYTES],
                            const pm_isolate_limits *limits, const char *name,
                            pm_disk_kernel *out, pm_compile_stats *stats, bool *valid,
                            pm_error *err)
{
    pm_wire_reader r = pm_wire_reader_new(x->reply.data, x->reply.len);
    const unsigned char *magic = pm_wire_take(&r, PM_ISOLATE_MAGIC_BYTES);
    uint64_t status = pm_wire_take_u64(&r), mlen, klen, slen;
    const unsigned char *msg = pm_wire_take_field(&r, &mlen);
    *valid = r.ok && memcmp(magic, PM_ISOLATE_REPLY_MAGIC, PM_ISOLATE_MAGIC_BYTES) == 0 &&
             status <= PM_ERR_COMPILE;
    if (!*valid)
        return PM_ERR_COMPILE;
    if (status == PM_ERR_NOMEM) /* isl's, or the helper's own: the limit is the cause */
        return pm_error_set(err, PM_ERR_NOMEM,
                            "%s: the compile helper ran out of memory under its limit of %lld "
                            "MiB (RLIMIT_AS, pm_jit_options.compile_memory_bytes): %.*s",
                            name, (long long)(limits->memory_bytes >> 20),
                            (int)(mlen < 700 ? mlen : 700), (const char *)msg);
    if (status != PM_OK)
        return pm_error_set(err, (pm_status)status, "%.*s", (int)(mlen < 900 ? mlen : 900),
                            (const char *)msg);
    const unsigned char *kernel = pm_wire_take_field(&r, &klen);
    const unsigned char *st = pm_wire_take_field(&r, &slen);
    *valid = r.ok && r.p == r.end && slen == sizeof *stats &&
             pm_disk_decode(kernel, klen, (const char *)nonce, NONCE_BYTES, out);
    if (!*valid)
        return PM_ERR_COMPILE;
    memcpy(stats, st, sizeof *stats);
    return PM_OK;
}

pm_status pm_isolate_compile(const pm_isolate_limits *limits, pm_pipeline *p,
                             const pm_value *estimates, const pm_options *options,
                             pm_disk_kernel *out, pm_compile_stats *stats, pm_error *err)
{
    memset(out, 0, sizeof *out);
    const char *name = pm_pipeline_name(p);
    size_t text_len = 0;
    const char *text = pm_pipeline_text(p, &text_len);
    if (!text)
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory writing its canonical text",
                            name);
    unsigned char nonce[NONCE_BYTES];
    randombytes_buf(nonce, sizeof nonce);
    pm_wire_writer request = {0};
    if (!build_request(&request, nonce, text, text_len, pm_pipeline_nparams(p), estimates,
                       options, limits)) {
        free(request.data);
        return pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", name);
    }
    helper h;
    pm_status s = spawn_helper(limits, &h, name, err);
    if (s != PM_OK) {
        free(request.data);
        return s;
    }
    exchange x = {.tail_len = 0};
    x.tail[0] = '\0';
    talk(&h, &request, now_s() + limits->seconds, &x);
    free(request.data);
    if (x.timed_out || x.too_long)
        kill(h.pid, SIGKILL);
    close(h.sock);
    close(h.err_fd);
    int wstatus = 0;
    while (waitpid(h.pid, &wstatus, 0) < 0 && errno == EINTR)
        ;
    bool valid = false;
    if (!x.timed_out && !x.too_long && !x.reply.failed)
        s = read_reply(&x, nonce, limits, name, out, stats, &valid, err);
    if (!valid)
        s = helper_death(limits, name, wstatus, &x, err);
    free(x.reply.data);
    return s;
}
