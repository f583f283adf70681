/* serve.c — the kernel cache at work (see serve.h): lookups that compile on a miss, the
 * serving call with its background compiles, idle scratch, the policy and the
 * statistics. The rules are stated in polymage.h ("The kernel cache") and
 * docs/server.md; the table itself is runtime/cache.c, eviction runtime/kernel.c.
 *
 * Locking: one mutex per jit guards the cache, the queue, the counters and every
 * kernel's reference count. It is never held while compiling or running a kernel, nor
 * while freeing machine code (it is while freeing idle scratch: a few unmaps). A thread
 * that finds its key being compiled elsewhere waits on `changed` instead of compiling it
 * twice; compile threads wait on `work`.
 */
/* clock_gettime: POSIX, not C11. */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* syscall(SYS_gettid) */

#include "runtime/serve.h"
#include "runtime/compile.h"
#include "runtime/versioned.h"

#include "frontend/clone.h"
#include "frontend/error.h"
#include "frontend/ir.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* A background compile: everything it needs, owned (the caller's context may be gone). */
typedef struct pm_serve_job {
    pm_cache_entry *entry;     /* QUEUED, then COMPILING; NULL for an upgrade             */
    pm_ctx *ctx;               /* the jit's copy of the pipeline lives here               */
    pm_pipeline *pipeline;
    pm_value *estimates;       /* the serving call's parameter values                     */
    pm_options options;
    pm_disk_request *disk;     /* or NULL                                                 */
    /* An upgrade of a READY entry's kernel to the full DP (a tiered family): the entry is
     * found again by its key when the compile ends, as it may have been evicted since. */
    bool upgrade;
    pm_options family_options;
    int64_t *buckets;          /* owned; NULL for a generic entry                         */
    double ratio;
    struct pm_serve_job *next;
} pm_serve_job;

static void *compile_thread(void *arg);

/* Parameter vectors up to this size have their buckets on the stack. */
enum { LOCAL_PARAMS = 16 };

/* A tiered kernel's serving hits before its full-DP upgrade is queued: the full DP may
 * take seconds (local Laplacian: about 3 s against 80 ms for the capped one), which only
 * a kernel that keeps serving pays back. */
enum { UPGRADE_AFTER_HITS = 8 };

/* ---- idle scratch ------------------------------------------------------------------------ */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* With the lock held: the scratch every cached kernel keeps. */
static int64_t scratch_held_locked(pm_jit *jit)
{
    int64_t held = 0;
    for (pm_cache_entry *e = jit->cache.lru_head; e; e = e->lru_next)
        held += pm_scratch_pool_bytes(e->kernel->pool);
    return held;
}

/* With the lock held: frees the idle scratch (sets no run has checked out) of the least
 * recently used kernels while the cache holds more than max_scratch_bytes, and, with
 * `idle`, of every kernel not run for scratch_idle_ms. */
static void release_scratch_locked(pm_jit *jit, bool idle)
{
    int64_t held = scratch_held_locked(jit), now = idle ? now_ns() : 0;
    int64_t idle_ns = (int64_t)jit->policy.scratch_idle_ms * 1000000;
    for (pm_cache_entry *e = jit->cache.lru_tail; e; e = e->lru_prev) {
        pm_kernel *k = e->kernel;
        bool over = held > jit->policy.max_scratch_bytes;
        bool unused = idle && idle_ns > 0 && now - atomic_load(&k->last_run_ns) > idle_ns;
        if (!over && !unused)
            continue;
        int64_t freed = pm_scratch_pool_trim(k->pool);
        held -= freed;
        jit->stats.scratch_released += (uint64_t)freed;
    }
}

/* After a run of k at `volume` (the product of its size parameters) whose scratch set held
 * `bytes`: the largest run is kept for pm_jit_scratch_estimate, and the cache's scratch
 * brought back within its budget. Without the lock. */
static void after_run(pm_jit *jit, pm_kernel *k, double volume, int64_t bytes)
{
    if (bytes <= 0)
        return; /* nothing held: no budget to keep */
    pthread_mutex_lock(&jit->lock);
    if (volume > atomic_load(&k->scratch_volume)) {
        atomic_store(&k->scratch_volume, volume);
        k->scratch_seen = bytes;
    }
    release_scratch_locked(jit, false);
    if (jit->nworkers == 0 && jit->policy.scratch_idle_ms > 0 && !jit->shutdown &&
        pthread_create(&jit->workers[0], NULL, compile_thread, jit) == 0)
        jit->nworkers = 1; /* the thread that frees scratch left idle */
    pthread_mutex_unlock(&jit->lock);
}

/* The product of the size parameters' values, each at least 1. */
static double size_volume(const pm_canon *canon, const pm_value *values)
{
    double v = 1;
    for (int i = 0; values && i < canon->nparams; i++)
        if (canon->sized[i])
            v *= values[i].i > 1 ? (double)values[i].i : 1.0;
    return v;
}

/* ---- policy and statistics ------------------------------------------------------------ */

pm_cache_policy pm_cache_policy_default(void)
{
    return (pm_cache_policy){
        .size = sizeof(pm_cache_policy),
        .bucket_ratio = 1.189207115002721, /* 2^(1/4): four buckets per doubling */
        .max_kernels = 64,
        .max_code_bytes = (int64_t)256 << 20,
        .background = 1,
        .compile_threads = 1,
        .max_queued = 16,
        .disk_dir = getenv("PM_CACHE_DIR"),
        .disk_max_bytes = (int64_t)1 << 30,
        .max_scratch_bytes = (int64_t)1 << 30,
        .scratch_idle_ms = 5000,
        .background_nice = 10,
    };
}

pm_status pm_jit_set_policy(pm_jit *jit, const pm_cache_policy *policy, pm_error *error)
{
    pm_error_clear(error);
    if (!jit)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_jit_set_policy: the jit is NULL");
    if (!policy)
        return pm_error_set(error, PM_ERR_MISUSE, "pm_jit_set_policy: the policy is NULL");
    pm_cache_policy p = pm_cache_policy_default();
    pm_status read = pm_versioned_read(PM_V_CACHE_POLICY, &p, policy, "pm_jit_set_policy", error);
    if (read != PM_OK)
        return read;
    p.size = sizeof p;
    if (!(p.bucket_ratio >= PM_CACHE_RATIO_MIN && p.bucket_ratio <= PM_CACHE_RATIO_MAX))
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: bucket_ratio = %g (must be %g .. %g)",
                            p.bucket_ratio, PM_CACHE_RATIO_MIN, PM_CACHE_RATIO_MAX);
    if (p.max_kernels < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: max_kernels = %d (must be >= 0)", p.max_kernels);
    if (p.max_code_bytes < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: max_code_bytes = %lld (must be >= 0)",
                            (long long)p.max_code_bytes);
    if (p.background != 0 && p.background != 1)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: background = %d (0 or 1)", p.background);
    int max_threads = (int)(sizeof jit->workers / sizeof jit->workers[0]);
    if (p.compile_threads < 1 || p.compile_threads > max_threads)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: compile_threads = %d (must be 1 .. %d)",
                            p.compile_threads, max_threads);
    if (p.max_queued < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: max_queued = %d (must be >= 0)", p.max_queued);
    if (p.disk_max_bytes < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: disk_max_bytes = %lld (must be >= 0)",
                            (long long)p.disk_max_bytes);
    if (p.max_scratch_bytes < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: max_scratch_bytes = %lld (must be >= 0)",
                            (long long)p.max_scratch_bytes);
    if (p.scratch_idle_ms < 0)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: scratch_idle_ms = %d (must be >= 0)",
                            p.scratch_idle_ms);
    if (p.background_nice < 0 || p.background_nice > 19)
        return pm_error_set(error, PM_ERR_ARGUMENT,
                            "pm_jit_set_policy: background_nice = %d (must be 0 .. 19)",
                            p.background_nice);
    char *dir = NULL;
    if (p.disk_dir && *p.disk_dir) {
        pm_status s = pm_disk_folder_check(p.disk_dir, "pm_jit_set_policy", "disk_dir", &dir,
                                           error);
        if (s != PM_OK)
            return s;
    }
    p.disk_dir = dir;
    pthread_mutex_lock(&jit->lock);
    char *old_dir = jit->disk_dir; /* requests in flight hold copies of their own */
    jit->disk_dir = dir;
    jit->policy = p;
    release_scratch_locked(jit, false);
    pm_kernel *dropped = pm_jit_evict_locked(jit);
    pthread_mutex_unlock(&jit->lock);
    free(old_dir);
    if (dropped)
        pm_jit_drop_kernels(jit, dropped);
    return PM_OK;
}

pm_status pm_jit_get_policy(pm_jit *jit, pm_cache_policy *policy, size_t size)
{
    if (!jit || !policy)
        return PM_ERR_MISUSE;
    pthread_mutex_lock(&jit->lock);
    pm_cache_policy p = jit->policy;
    pthread_mutex_unlock(&jit->lock);
    return pm_versioned_write(PM_V_CACHE_POLICY, policy, &p, size, "pm_jit_get_policy", NULL);
}

pm_status pm_jit_stats(pm_jit *jit, pm_cache_stats *stats, size_t size)
{
    if (!jit || !stats)
        return PM_ERR_MISUSE;
    pthread_mutex_lock(&jit->lock);
    pm_cache_stats s = jit->stats;
    s.kernels = jit->cache.kernels;
    s.code_bytes = jit->cache.code_bytes;
    s.queued = jit->queued;
    s.compiling = jit->compiling_background;
    s.scratch_bytes = scratch_held_locked(jit);
    pthread_mutex_unlock(&jit->lock);
    return pm_versioned_write(PM_V_CACHE_STATS, stats, &s, size, "pm_jit_stats", NULL);
}

static void count_compile(pm_jit *jit, const pm_kernel *k, bool background)
{
    jit->stats.disk_rejected += k->disk_rejected;
    jit->stats.disk_untrusted += k->disk_untrusted;
    jit->stats.disk_writes += k->disk_written;
    if (k->from_disk) {
        jit->stats.disk_hits++;
        return;
    }
    if (background)
        jit->stats.background_compiles++;
    else
        jit->stats.sync_compiles++;
    jit->stats.compile_ms_total += k->compile_ms;
    if (k->compile_ms > jit->stats.compile_ms_max)
        jit->stats.compile_ms_max = k->compile_ms;
}

/* ---- the disk cache's part ------------------------------------------------------------- */

static void disk_request_free(pm_disk_request *d)
{
    if (d) {
        free(d->dir);
        free(d->key);
        free(d->upgraded_key);
        free(d);
    }
}

/* With the lock held: what building e's kernel (or, with upgrade, its upgrade) needs to
 * look on disk and write there, or NULL (no folder, a dump or a kept text asked for, out
 * of memory: then it just compiles). A tiered family's first compile looks for its
 * upgrade on disk first. */
static pm_disk_request *disk_request_new(pm_jit *jit, const pm_cache_entry *e, bool upgrade)
{
    if (!jit->disk_dir || e->family->options.keep_mask != 0)
        return NULL;
    pm_disk_request *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->dir = strdup(jit->disk_dir);
    d->key = pm_cache_key_text(jit->environment, e, upgrade, &d->key_len);
    d->max_bytes = jit->policy.disk_max_bytes;
    bool tiered = e->family->options.grouping == PM_GROUPING_TIERED;
    if (tiered && !upgrade)
        d->upgraded_key = pm_cache_key_text(jit->environment, e, true, &d->upgraded_key_len);
    if (!d->dir || !d->key || (tiered && !upgrade && !d->upgraded_key)) {
        disk_request_free(d);
        return NULL;
    }
    return d;
}

static void job_free(pm_serve_job *job)
{
    if (!job)
        return;
    disk_request_free(job->disk);
    pm_ctx_free(job->ctx);
    free(job->estimates);
    free(job->buckets);
    free(job);
}

/* Takes a queued job out of the queue (its entry stays). */
static void queue_unlink(pm_jit *jit, pm_serve_job *job)
{
    pm_serve_job **link = &jit->queue_head, *prev = NULL;
    while (*link != job) {
        prev = *link;
        link = &(*link)->next;
    }
    *link = job->next;
    if (jit->queue_tail == job)
        jit->queue_tail = prev;
    job->next = NULL;
    jit->queued--;
}

/* ---- lookups that compile on a miss ----------------------------------------------------- */

/* Buckets of `values` into out (NULL values = generic: returns NULL; so is a pipeline
 * without parameters, whose every kernel is the same). */
static const int64_t *buckets_of(const pm_canon *canon, const pm_value *values, double ratio,
                                 int64_t *out)
{
    if (!values || canon->nparams == 0)
        return NULL;
    pm_cache_buckets(canon, values, ratio, out);
    return out;
}

static int64_t *bucket_space(int nparams, int64_t *local)
{
    return nparams <= LOCAL_PARAMS ? local : malloc(sizeof(int64_t) * (size_t)nparams);
}

/* What pm_jit_get_kernel's lookup decided under the lock: a hit, or an entry this thread
 * now compiles (with its disk request, and the queued job it took over), or neither
 * (serving, or an error). */
typedef struct lookup {
    pm_kernel *kernel;        /* a hit, with one more reference                          */
    pm_cache_entry *entry;    /* COMPILING, this thread's until READY or removed         */
    pm_disk_request *disk;    /* for entry, or NULL                                      */
    pm_serve_job *cancelled;  /* to free once the lock is released                       */
} lookup;

/* With the lock held: pm_jit_get_kernel's decision, apart so that every state of the
 * key's entry is handled in one place; waits while another thread compiles the key. */
static void lookup_locked(pm_jit *jit, pm_pipeline *p, const pm_canon *canon,
                          const int64_t *buckets, double ratio, const pm_options *options,
                          bool *serving, lookup *out, pm_error *err)
{
    bool serve = serving != NULL;
    pm_cache_entry *e;
    for (;;) {
        if (jit->freed || jit->shutdown) {
            pm_error_set(err, PM_ERR_MISUSE, "pm_jit_compile: the jit was freed");
            return; /* not ours: an entry seen before waiting belongs to its compiler */
        }
        pm_cache_family *f = pm_cache_family_get(&jit->cache, canon, options, true);
        e = f ? pm_cache_entry_find(f, buckets, ratio) : NULL;
        if (serve && f && (!e || e->state != PM_ENTRY_READY) &&
            (pm_cache_nearest(f, buckets) || pm_cache_family_compiling(f))) {
            *serving = true; /* another kernel of the pipeline serves: pm_jit_run's */
            return;
        }
        if (f && !e)
            e = pm_cache_entry_add(f, buckets, ratio, PM_ENTRY_COMPILING);
        else if (e && e->state == PM_ENTRY_READY) {
            out->kernel = e->kernel;
            out->kernel->refs++;
            pm_cache_touch(&jit->cache, e);
            jit->stats.hits++;
            return;
        } else if (e && e->state == PM_ENTRY_COMPILING) {
            pthread_cond_wait(&jit->changed, &jit->lock); /* then look again */
            continue;
        } else if (e && e->state == PM_ENTRY_QUEUED) {
            /* Waiting in the queue: this thread compiles it now instead. */
            out->cancelled = e->job;
            queue_unlink(jit, out->cancelled);
            e->job = NULL;
            e->state = PM_ENTRY_COMPILING;
        } else if (e) { /* FAILED in the background: try again here, for a message */
            e->state = PM_ENTRY_COMPILING;
        }
        if (!e) {
            pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
            if (f)
                pm_cache_family_drop_if_empty(&jit->cache, f);
        } else {
            jit->stats.misses++;
            out->entry = e;
            out->disk = disk_request_new(jit, e, false);
        }
        return;
    }
}

/* Without the lock: compiles the COMPILING entry e this thread owns, then makes it READY
 * (or removes it) and brings the cache within budget; apart from the lookup because no
 * lock is held while compiling. Takes disk. */
static pm_kernel *compile_entry(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                                const pm_options *options, pm_cache_entry *e,
                                pm_disk_request *disk, pm_error *err)
{
    pm_kernel *k = pm_jit_build_kernel(jit, p, estimates, options, disk, err);
    disk_request_free(disk);
    pm_kernel *dropped = NULL;
    pthread_mutex_lock(&jit->lock);
    if (!k || jit->shutdown) {
        pm_cache_entry_remove(&jit->cache, e);
    } else {
        pm_cache_entry_ready(&jit->cache, e, k);
        k->refs++; /* the caller's and the cache's */
    }
    if (k) {
        count_compile(jit, k, false);
        dropped = pm_jit_evict_locked(jit);
    }
    pthread_cond_broadcast(&jit->changed);
    pthread_mutex_unlock(&jit->lock);
    if (dropped)
        pm_jit_drop_kernels(jit, dropped);
    return k;
}

pm_kernel *pm_jit_get_kernel(pm_jit *jit, pm_pipeline *p, const pm_value *estimates,
                             const pm_options *options, bool *serving, pm_error *err)
{
    bool serve = serving && *serving;
    if (serving)
        *serving = false;
    const pm_canon *canon = pm_pipeline_canon(p);
    int64_t local[LOCAL_PARAMS];
    int64_t *space = canon ? bucket_space(canon->nparams, local) : NULL;
    if (!canon || !space) {
        pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
        return NULL;
    }
    lookup l = {.kernel = NULL};
    pthread_mutex_lock(&jit->lock);
    const int64_t *buckets = buckets_of(canon, estimates, jit->policy.bucket_ratio, space);
    double ratio = jit->policy.bucket_ratio;
    lookup_locked(jit, p, canon, buckets, ratio, options, serve ? serving : NULL, &l, err);
    pthread_mutex_unlock(&jit->lock);
    job_free(l.cancelled);
    if (space != local)
        free(space);
    if (l.kernel || !l.entry || (serving && *serving))
        return l.kernel;
    return compile_entry(jit, p, estimates, options, l.entry, l.disk, err);
}

/* ---- background compiles -------------------------------------------------------------- */

/* Lowers the calling thread's priority by `nice` (Linux: a thread's nice value is its
 * own, and the compile helpers it starts inherit it). */
static void lower_priority(int nice)
{
#ifdef __linux__
    if (nice > 0) {
        id_t tid = (id_t)syscall(SYS_gettid);
        errno = 0;
        int now = getpriority(PRIO_PROCESS, tid);
        if (errno == 0)
            (void)setpriority(PRIO_PROCESS, tid, now + nice > 19 ? 19 : now + nice);
    }
#else
    (void)nice;
#endif
}

/* With the lock held: a background compile's kernel k (or NULL) into its entry, which
 * becomes READY (or FAILED). Returns the kernels to drop. */
static pm_kernel *finish_entry_locked(pm_jit *jit, pm_serve_job *job, pm_kernel *k)
{
    pm_cache_entry *e = job->entry;
    if (!k) {
        e->state = PM_ENTRY_FAILED; /* kept, so serving does not queue it again */
        jit->stats.failed_compiles++;
        return NULL;
    }
    count_compile(jit, k, true);
    if (jit->shutdown) {
        pm_cache_entry_remove(&jit->cache, e);
        k->refs = 0;
        k->next_dropped = NULL;
        return k;
    }
    pm_cache_entry_ready(&jit->cache, e, k); /* its one reference: the cache's */
    return pm_jit_evict_locked(jit);
}

/* With the lock held: an upgrade's kernel k (or NULL) takes the place of its entry's
 * kernel, if the entry is still there and not upgraded yet (else k is dropped).
 * Returns the kernels to drop: the old one unless a caller still runs it. */
static pm_kernel *finish_upgrade_locked(pm_jit *jit, pm_serve_job *job, const pm_canon *canon,
                                        pm_kernel *k)
{
    if (!k) {
        jit->stats.failed_compiles++; /* upgrade_queued stays: not tried again */
        return NULL;
    }
    count_compile(jit, k, true);
    k->upgraded = true;
    pm_cache_family *f = jit->shutdown || !canon ? NULL
                         : pm_cache_family_get(&jit->cache, canon, &job->family_options, false);
    pm_cache_entry *e = f ? pm_cache_entry_find(f, job->buckets, job->ratio) : NULL;
    pm_kernel *old = k;
    if (e && e->state == PM_ENTRY_READY && !e->kernel->upgraded) {
        old = e->kernel;
        jit->cache.code_bytes += (int64_t)k->code_bytes - (int64_t)old->code_bytes;
        old->cache_entry = NULL;
        e->kernel = k; /* its one reference: the cache's */
        k->cache_entry = e;
        jit->stats.upgrades++;
        if (--old->refs > 0)
            old = NULL; /* a run still holds it: its pm_kernel_free drops it */
    } else {
        k->refs = 0;
    }
    pm_kernel *dropped = jit->shutdown ? NULL : pm_jit_evict_locked(jit);
    if (old) {
        old->next_dropped = dropped;
        dropped = old;
    }
    return dropped;
}

/* A compile thread: runs queued compiles at a lower priority. The first one also frees
 * the scratch of kernels left idle (scratch_idle_ms), waking every half of it. */
static void *compile_thread(void *arg)
{
    pm_jit *jit = arg;
    pthread_mutex_lock(&jit->lock);
    bool sweeper = pthread_equal(pthread_self(), jit->workers[0]);
    lower_priority(jit->policy.background_nice);
    for (;;) {
        while (!jit->shutdown && !jit->queue_head) {
            int idle_ms = jit->policy.scratch_idle_ms;
            if (!sweeper || idle_ms <= 0) {
                pthread_cond_wait(&jit->work, &jit->lock);
                continue;
            }
            int64_t period = (int64_t)(idle_ms < 200 ? 100 : idle_ms / 2) * 1000000;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until); /* the condition's clock */
            int64_t ns = until.tv_nsec + period;
            until.tv_sec += (time_t)(ns / 1000000000);
            until.tv_nsec = (long)(ns % 1000000000);
            if (pthread_cond_timedwait(&jit->work, &jit->lock, &until) == ETIMEDOUT)
                release_scratch_locked(jit, true);
        }
        if (jit->shutdown)
            break; /* pm_jit_free cancels what is still queued */
        pm_serve_job *job = jit->queue_head;
        queue_unlink(jit, job);
        if (!job->upgrade) {
            job->entry->state = PM_ENTRY_COMPILING;
            job->entry->job = NULL;
        }
        jit->compiling_background++;
        pthread_mutex_unlock(&jit->lock);

        pm_error err;
        pm_error_clear(&err);
        pm_kernel *k = pm_jit_build_kernel(jit, job->pipeline, job->estimates, &job->options,
                                           job->disk, &err);
        const pm_canon *canon = job->upgrade ? pm_pipeline_canon(job->pipeline) : NULL;

        pthread_mutex_lock(&jit->lock);
        jit->compiling_background--;
        pm_kernel *dropped = job->upgrade ? finish_upgrade_locked(jit, job, canon, k)
                                          : finish_entry_locked(jit, job, k);
        pthread_cond_broadcast(&jit->changed);
        pthread_mutex_unlock(&jit->lock);
        job_free(job); /* the jit's copy of the pipeline, no lock needed */
        if (dropped)
            pm_jit_drop_kernels(jit, dropped);
        pthread_mutex_lock(&jit->lock);
    }
    pthread_mutex_unlock(&jit->lock);
    return NULL;
}

/* With the lock held: whether the policy lets one more compile queue, with a thread to
 * run it (started here when the policy allows one more). */
static bool queue_has_room(pm_jit *jit)
{
    if (jit->queued >= jit->policy.max_queued) {
        jit->stats.queue_full++;
        return false;
    }
    if (jit->nworkers == 0 || (jit->nworkers < jit->policy.compile_threads &&
                               jit->queued + jit->compiling_background >= jit->nworkers)) {
        if (pthread_create(&jit->workers[jit->nworkers], NULL, compile_thread, jit) == 0)
            jit->nworkers++;
        if (jit->nworkers == 0)
            return false; /* no thread to run it: serve with what there is */
    }
    return true;
}

/* A job compiling p at `values` with `options`, with copies of both in a context of the
 * jit's own; NULL when out of memory. */
static pm_serve_job *job_new(pm_pipeline *p, const pm_value *values, const pm_options *options)
{
    pm_serve_job *job = calloc(1, sizeof *job);
    if (!job)
        return NULL;
    job->options = *options;
    job->ctx = pm_ctx_new();
    job->estimates = malloc(sizeof *values * (size_t)(p->nparams + 1));
    if (job->ctx && job->estimates) {
        if (p->nparams)
            memcpy(job->estimates, values, sizeof *values * (size_t)p->nparams);
        job->pipeline = pm_pipeline_clone(p, job->ctx);
    }
    if (!job->pipeline) {
        job_free(job);
        return NULL;
    }
    return job;
}

/* With the lock held: job at the queue's tail, a thread told. */
static void enqueue(pm_jit *jit, pm_serve_job *job)
{
    if (jit->queue_tail)
        jit->queue_tail->next = job;
    else
        jit->queue_head = job;
    jit->queue_tail = job;
    jit->queued++;
    pthread_cond_signal(&jit->work);
}

/* With the lock held: queues a compile of (p, values) into a new QUEUED entry of f, when
 * the policy allows. */
static void queue_compile(pm_jit *jit, pm_cache_family *f, pm_pipeline *p,
                          const pm_value *values, const int64_t *buckets, double ratio,
                          const pm_options *options)
{
    pm_serve_job *job = queue_has_room(jit) ? job_new(p, values, options) : NULL;
    if (job)
        job->entry = pm_cache_entry_add(f, buckets, ratio, PM_ENTRY_QUEUED);
    if (job && !job->entry) { /* out of memory: nothing queued, nothing lost */
        job_free(job);
        job = NULL;
    }
    if (!job)
        return;
    job->entry->job = job;
    job->disk = disk_request_new(jit, job->entry, false);
    enqueue(jit, job);
}

/* With the lock held: queues the upgrade of READY entry e of a tiered family to the full
 * DP (pm_options_upgraded), once per entry, when the policy allows. */
static void queue_upgrade(pm_jit *jit, pm_cache_entry *e, pm_pipeline *p, const pm_value *values)
{
    const pm_cache_family *f = e->family;
    e->upgrade_queued = true;
    pm_options up = pm_options_upgraded(&f->options);
    pm_serve_job *job = queue_has_room(jit) ? job_new(p, values, &up) : NULL;
    if (!job)
        return;
    job->upgrade = true;
    job->family_options = f->options;
    job->ratio = e->ratio;
    if (!e->generic) {
        job->buckets = malloc(sizeof *job->buckets * (size_t)(f->nparams + 1));
        if (!job->buckets) {
            job_free(job);
            return;
        }
        memcpy(job->buckets, e->buckets, sizeof *job->buckets * (size_t)f->nparams);
    }
    job->disk = disk_request_new(jit, e, true);
    enqueue(jit, job);
}

pm_status pm_serve_run(pm_jit *jit, pm_pipeline *p, const pm_options *resolved,
                       const pm_value *params, const pm_buffer *inputs, pm_buffer *outputs,
                       pm_error *error)
{
    const pm_canon *canon = pm_pipeline_canon(p);
    int64_t local[LOCAL_PARAMS];
    int64_t *space = canon ? bucket_space(canon->nparams, local) : NULL;
    if (!canon || !space)
        return pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", p->name);

    pm_kernel *k = NULL;
    bool waited = false;
again:
    pthread_mutex_lock(&jit->lock);
    for (;;) {
        double ratio = jit->policy.bucket_ratio;
        const int64_t *buckets = buckets_of(canon, params, ratio, space);
        pm_cache_family *f = jit->shutdown ? NULL
                                           : pm_cache_family_get(&jit->cache, canon, resolved,
                                                                 false);
        pm_cache_entry *e = f ? pm_cache_entry_find(f, buckets, ratio) : NULL;
        if (e && e->state == PM_ENTRY_READY) {
            k = e->kernel;
            k->refs++;
            pm_cache_touch(&jit->cache, e);
            jit->stats.hits++;
            /* the first tier serves; once it is hot, the full DP's kernel is compiled in
             * the background and replaces it */
            if (jit->policy.background && f->options.grouping == PM_GROUPING_TIERED &&
                !k->upgraded && !e->upgrade_queued && ++e->hits >= UPGRADE_AFTER_HITS)
                queue_upgrade(jit, e, p, params);
        } else if (f && jit->policy.background) {
            pm_cache_entry *near = pm_cache_nearest(f, buckets);
            if (near) {
                k = near->kernel;
                k->refs++;
                pm_cache_touch(&jit->cache, near);
                jit->stats.misses++;
                jit->stats.fallback_runs++;
                if (!e)
                    queue_compile(jit, f, p, params, buckets, ratio, resolved);
            } else if (pm_cache_family_compiling(f)) {
                /* No kernel of the pipeline yet, but another call is compiling one: wait
                 * for it and run that (or the one it leaves), not a compile of our own. */
                if (!waited)
                    jit->stats.shared_compile_waits++;
                waited = true;
                pthread_cond_wait(&jit->changed, &jit->lock);
                continue;
            }
        }
        break;
    }
    bool background = jit->policy.background;
    pthread_mutex_unlock(&jit->lock);

    if (!k) { /* no kernel of this pipeline to run, or synchronous policy: compile here */
        bool other = background; /* unless another call has just begun or finished one */
        k = pm_jit_get_kernel(jit, p, params, resolved, &other, error);
        if (!k && other)
            goto again;
    }
    if (space != local)
        free(space);
    if (!k)
        return error ? error->status : PM_ERR_INTERNAL;
    int64_t scratch = 0;
    pm_status s = pm_kernel_run_measured(k, params, inputs, outputs, &scratch, error);
    if (s == PM_OK)
        after_run(jit, k, size_volume(canon, params), scratch);
    pm_kernel_free(k);
    return s;
}

pm_status pm_serve_scratch_estimate(pm_jit *jit, pm_pipeline *p, const pm_options *resolved,
                                    const pm_value *params, int64_t *bytes, pm_error *error)
{
    const pm_canon *canon = pm_pipeline_canon(p);
    if (!canon)
        return pm_error_set(error, PM_ERR_NOMEM, "%s: out of memory", p->name);
    double best_volume = 0;
    int64_t best_bytes = 0;
    pthread_mutex_lock(&jit->lock);
    pm_cache_family *f = pm_cache_family_get(&jit->cache, canon, resolved, false);
    for (pm_cache_entry *e = f ? f->entries : NULL; e; e = e->family_next) {
        if (e->state != PM_ENTRY_READY)
            continue;
        double v = atomic_load(&e->kernel->scratch_volume);
        if (v > best_volume) {
            best_volume = v;
            best_bytes = e->kernel->scratch_seen;
        }
    }
    pthread_mutex_unlock(&jit->lock);
    if (best_volume > 0) {
        double scaled = (double)best_bytes * size_volume(canon, params) / best_volume;
        *bytes = scaled >= 9.2e18 ? INT64_MAX : (int64_t)ceil(scaled);
    }
    return PM_OK;
}

void pm_jit_wait_idle(pm_jit *jit)
{
    if (!jit)
        return;
    pthread_mutex_lock(&jit->lock);
    while (jit->queued > 0 || jit->compiling_background > 0)
        pthread_cond_wait(&jit->changed, &jit->lock);
    pthread_mutex_unlock(&jit->lock);
}

pm_kernel *pm_jit_stop_serving(pm_jit *jit)
{
    pthread_mutex_lock(&jit->lock);
    jit->shutdown = true;
    pm_serve_job *cancelled = jit->queue_head;
    for (pm_serve_job *job = cancelled; job; job = job->next)
        if (!job->upgrade)
            pm_cache_entry_remove(&jit->cache, job->entry);
    jit->queue_head = jit->queue_tail = NULL;
    jit->queued = 0;
    pthread_cond_broadcast(&jit->work);
    pthread_cond_broadcast(&jit->changed);
    int nworkers = jit->nworkers;
    pthread_mutex_unlock(&jit->lock);

    while (cancelled) {
        pm_serve_job *next = cancelled->next;
        job_free(cancelled);
        cancelled = next;
    }
    for (int i = 0; i < nworkers; i++) /* each finishes the compile it runs */
        pthread_join(jit->workers[i], NULL);

    /* The cache lets go of every kernel; those still referenced live on. */
    pm_kernel *dropped = NULL;
    pthread_mutex_lock(&jit->lock);
    jit->nworkers = 0;
    for (pm_cache_entry *e = jit->cache.lru_head, *next; e; e = next) {
        next = e->lru_next;
        pm_kernel *k = pm_cache_entry_remove(&jit->cache, e);
        if (--k->refs == 0) {
            k->next_dropped = dropped;
            dropped = k;
        }
    }
    pthread_mutex_unlock(&jit->lock);
    return dropped;
}
