/* isolate.h — compiles in a helper process (pm_jit_options.isolate_compiles), so that
 * LLVM or isl running out of memory, crashing or hanging fails one compile and never the
 * server.
 *
 * Promise: the helper program is run only if no one but this user or root can write it.
 * It runs under a memory limit and a time limit, and dies with its caller. A reply
 * counts only when it answers this request (its nonce) and its digest checks. Every
 * failure is a status and a message in the caller: never a signal, never an unbounded
 * read.
 */
#ifndef PM_RUNTIME_ISOLATE_H
#define PM_RUNTIME_ISOLATE_H

#include "polymage.h"

#include "runtime/cache.h"
#include "runtime/disk_cache.h"

#include <stdint.h>

/* The helper's path for a jit (malloc'd into *path), or PM_ERR_ARGUMENT naming where it
 * looked and why each candidate was not used. The helper is the program polymage-compile
 * (cli/polymage_compile.c), found once per jit: PM_COMPILE_HELPER if set, else next to
 * the library (its install's libexec/polymage/, or the same folder in a build tree),
 * else the configured install path. It is used only if it is a regular executable file
 * owned by this user or root and not writable by group or others. */
pm_status pm_isolate_find_helper(char **path, pm_error *err);

typedef struct pm_isolate_limits {
    const char *helper;        /* from pm_isolate_find_helper                            */
    int seconds;               /* wall time                                              */
    int64_t memory_bytes;      /* RLIMIT_AS                                              */
    int compile_threads;       /* the jit's                                              */
    int opt_level;             /* the jit's                                              */
} pm_isolate_limits;

/* Compiles (p, estimates, options) in a helper; on PM_OK, *out holds the kernel's
 * objects (out->object malloc'd) and *stats the helper's compile statistics.
 * It spawns the helper with posix_spawn (never fork: the caller is a threaded server).
 * Over a socket it sends the pipeline as its canonical text (docs/canonical-text.md),
 * the estimates, the resolved options and the library's build ID. It reads back the
 * kernel's objects in the disk cache's encoding, bound to a random 128-bit nonce of this
 * request and checked by its BLAKE2b digest. The helper limits its own address space
 * (setrlimit RLIMIT_AS) and dies with its caller (PR_SET_PDEATHSIG); the caller kills it
 * with SIGKILL at the wall-time limit.
 * Outcomes: PM_OK; the helper's own error (an invalid pipeline, its status and message);
 * PM_ERR_NOMEM when it ran out of memory under its limit (its reply or its last words
 * say so); otherwise PM_ERR_COMPILE naming the signal, the exit status or the time limit,
 * with the helper's last line of stderr. Sends use MSG_NOSIGNAL, and the reply is read
 * up to PM_ISOLATE_MAX_MESSAGE bytes. */
pm_status pm_isolate_compile(const pm_isolate_limits *limits, pm_pipeline *p,
                             const pm_value *estimates, const pm_options *options,
                             pm_disk_kernel *out, pm_compile_stats *stats, pm_error *err);

/* The protocol's framing, shared by the caller's side (isolate.c, whose header comment
 * lays out the messages) and the helper's (isolate_helper.c). A request's pipeline text
 * and a reply's kernel are bounded like a disk cache file. */
#define PM_ISOLATE_REQUEST_MAGIC "PMCREQ01"
#define PM_ISOLATE_REPLY_MAGIC "PMCREP01"
enum { PM_ISOLATE_MAGIC_BYTES = 8, PM_ISOLATE_NONCE_BYTES = 16 };
#define PM_ISOLATE_MAX_MESSAGE ((uint64_t)PM_DISK_MAX_FILE + (1u << 20))

/* The helper's side of the same protocol (runtime/isolate_helper.c): reads one request
 * from in_fd, compiles, writes the reply to out_fd. Returns the process's exit status. */
int pm_isolate_helper_main(int in_fd, int out_fd);

#endif
