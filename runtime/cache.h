/* cache.h — the kernel cache of a pm_jit: its keys, the estimate buckets, the table of
 * kernels and their least-recently-used order (the policy that uses them, serving and
 * background compiles, is in runtime/serve.c; eviction in runtime/kernel.c).
 *
 * Promise: lookups compare every part of a key in full, never its hash alone. Kernels of
 * one pipeline text and one set of options form a family: any kernel of a family gives
 * the same results for every parameter value, only its speed differs. Nothing here
 * locks: every function is called with the jit's lock held.
 */
#ifndef PM_RUNTIME_CACHE_H
#define PM_RUNTIME_CACHE_H

#include "polymage.h"

#include "codegen/options.h"
#include "frontend/canon.h"

#include <stdbool.h>
#include <stdint.h>

/* The smallest and largest bucket ratios accepted: nearer 1, log() loses the exactness
 * the boundaries need; beyond 2^10 every image size falls in one of a few buckets. */
#define PM_CACHE_RATIO_MIN 1.01
#define PM_CACHE_RATIO_MAX 1024.0

/* The bucket of one parameter value: -1 when value <= 0, else
 * floor(log(value) / log(ratio)), exact at the powers of ratio that are integers (checked
 * against pow, not only log). ratio in [RATIO_MIN, RATIO_MAX]. */
int64_t pm_cache_bucket(int64_t value, double ratio);
/* The buckets of a parameter vector: sized parameters by pm_cache_bucket, others 0. */
void pm_cache_buckets(const pm_canon *canon, const pm_value *values, double ratio,
                      int64_t *out);

typedef enum pm_entry_state {
    PM_ENTRY_QUEUED,    /* a background compile is waiting in the queue                */
    PM_ENTRY_COMPILING, /* a thread compiles it (waiters sleep on the jit's condition) */
    PM_ENTRY_READY,     /* kernel is set; the entry is in the LRU list                   */
    PM_ENTRY_FAILED     /* a background compile failed: not queued again                 */
} pm_entry_state;

typedef struct pm_cache_family pm_cache_family;
typedef struct pm_cache_entry pm_cache_entry;
struct pm_serve_job;

struct pm_cache_entry {
    pm_cache_family *family;
    bool generic;             /* compiled without estimates: buckets unused             */
    int64_t *buckets;         /* family->nparams codes (owned)                           */
    double ratio;             /* the ratio the buckets were computed with                */
    pm_entry_state state;
    pm_kernel *kernel;        /* READY: the cache's own reference                        */
    struct pm_serve_job *job; /* QUEUED: its job, in the jit's queue                     */
    bool upgrade_queued;      /* READY: its kernel's upgrade was queued (tiered families) */
    int hits;                 /* READY: serving hits while not upgraded (serve.c)         */
    pm_cache_entry *family_next;
    pm_cache_entry *lru_prev, *lru_next; /* READY only, most recently used first        */
};

/* The key: the pipeline's canonical text, the compile options with every default
 * resolved, and the entry's estimate buckets and bucket ratio, or "generic" for a
 * compile without estimates. The jit's environment (pm_cache_environment) completes it:
 * one value per jit, shared by every kernel. Lookups hash the canonical text once per
 * pipeline (frontend/canon.h). */
struct pm_cache_family {
    uint64_t hash;
    char *canon;              /* owned copy of the canonical text                        */
    size_t canon_len;
    pm_options options;
    char key[PM_OPTIONS_KEY_MAX]; /* pm_options_key of options                            */
    int nparams;
    bool *sized;              /* owned copy, nparams entries                             */
    pm_cache_entry *entries;
    pm_cache_family *next;    /* hash chain                                              */
};

typedef struct pm_cache {
    pm_cache_family **table;
    size_t table_size, nfamilies;
    pm_cache_entry *lru_head, *lru_tail;
    int kernels;              /* READY entries                                           */
    int64_t code_bytes;       /* their kernels' object code                              */
} pm_cache;

/* The jit-wide part of every key, written into buf: the host target (triple, CPU name,
 * features), PM_VERSION, the build ID and the LLVM version, as "triple cpu features
 * polymage-VERSION build-ID llvm-X.Y.Z". */
void pm_cache_environment(const char *triple, const char *cpu, const char *features,
                          char *buf, size_t size);

/* The whole key of e as one malloc'd text (environment, options, buckets, canonical
 * text), for the on-disk cache; *len its length. With upgraded, the options are those of
 * the family's upgrade (pm_options_upgraded): a tiered family keeps both kernels on disk.
 * NULL when out of memory. */
char *pm_cache_key_text(const char *environment, const pm_cache_entry *e, bool upgraded,
                        size_t *len);
/* The family of (canon, options): found, or made when create is set. NULL when absent,
 * or out of memory. */
pm_cache_family *pm_cache_family_get(pm_cache *c, const pm_canon *canon,
                                     const pm_options *options, bool create);
/* Frees f if it has no entry (a family made for an entry that could not be). */
void pm_cache_family_drop_if_empty(pm_cache *c, pm_cache_family *f);
/* The entry of these buckets (NULL buckets = generic) and ratio in f, or NULL. */
pm_cache_entry *pm_cache_entry_find(pm_cache_family *f, const int64_t *buckets, double ratio);
/* A new entry in state `state`; NULL when out of memory. */
pm_cache_entry *pm_cache_entry_add(pm_cache_family *f, const int64_t *buckets, double ratio,
                                   pm_entry_state state);
/* Unlinks and frees the entry (and its family when that was its last entry). Returns
 * the kernel it held (the cache's reference, now the caller's), or NULL. */
pm_kernel *pm_cache_entry_remove(pm_cache *c, pm_cache_entry *e);
/* The entry becomes READY with the cache's reference to k, most recently used. */
void pm_cache_entry_ready(pm_cache *c, pm_cache_entry *e, pm_kernel *k);
/* Marks a READY entry most recently used. */
void pm_cache_touch(pm_cache *c, pm_cache_entry *e);
/* The READY entry of f whose buckets are nearest to `buckets` (sum of bucket
 * distances; a generic kernel only when nothing else is ready), or NULL. */
pm_cache_entry *pm_cache_nearest(pm_cache_family *f, const int64_t *buckets);
/* Whether an entry of f is being compiled (synchronously or on a compile thread). */
bool pm_cache_family_compiling(const pm_cache_family *f);
/* While the cache is over either budget, the least recently used READY entry whose
 * kernel nobody but the cache holds; NULL when within budget or every kernel is held. */
pm_cache_entry *pm_cache_victim(pm_cache *c, int max_kernels, int64_t max_code_bytes);
/* Frees the table (every entry must have been removed). */
void pm_cache_free(pm_cache *c);

#endif
