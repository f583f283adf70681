/* options.h — every compile option, resolved once, with every default in one place.
 *
 * Promise: pm_options_resolve_jit and pm_options_resolve turn the public options and the
 * environment into one pm_options at the API boundary, leaving no field to a later
 * default. The phases read only this struct. The kernel cache keys on its text,
 * pm_options_key.
 */
#ifndef PM_CODEGEN_OPTIONS_H
#define PM_CODEGEN_OPTIONS_H

#include "polymage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The defaults that depend on nothing (the host's are in pm_host_facts).
 * The group limit: the greedy merge never asks whether a merged group runs faster than
 * its parts, and a pyramid's coarse levels ride along in every tile as short rows. 24
 * rather than 32 was faster on interpolate and local Laplacian (pm_sweep); camera pipe's
 * 23-stage group keeps its size.
 * The overlap threshold: 0.2 rather than 0.5 was faster on every app (pm_sweep). */
#define PM_DEFAULT_GROUP_LIMIT 24          /* max stages in one group                    */
#define PM_DEFAULT_OVERLAP_THRESHOLD 0.2   /* max redundant work of a fused group        */
#define PM_DEFAULT_INLINE_LIMIT 2.0        /* max work factor inlining gives a consumer  */
#define PM_DEFAULT_CACHE_BYTES (512 * 1024) /* a tile's scratch budget when L2 is unknown */
#define PM_DEFAULT_COMPILE_SECONDS 300     /* an isolated compile's time limit           */
#define PM_DEFAULT_COMPILE_MEMORY ((int64_t)8 << 30) /* its address space               */
#define PM_MAX_COMPILE_THREADS 64
/* The grouping's search (pm_options.grouping; the public PM_GROUPING_* values).
 * The capped DP is the synchronous compile's: groups of at most PM_DP_CAPPED_GROUP_CAP
 * stages and PM_DP_CAPPED_BUDGET groups priced; past that it explores no new state once
 * it has a grouping. On five of the seven apps it finds the full DP's grouping; on local
 * Laplacian (0.02% of the model's cost) and pyramid blending (1.5%) it keeps greedy's.
 * Its search took 2-23 ms beyond greedy's (local Laplacian: the group step 39 ms against
 * 16, of an 870 ms compile), where the full DP takes 0.1-3 s: the tiered default leaves
 * the full DP to the background. The full DP is bounded by the group limit and
 * PM_DP_FULL_BUDGET.
 * The budgets count groups priced, not milliseconds, so that one pipeline and one set of
 * options always give one kernel. */
/* The default (public PM_GROUPING_DEFAULT), resolved: compiled as the capped DP, and
 * upgraded to the full DP by the serving path's background compiles (runtime/serve.c). */
#define PM_GROUPING_TIERED 4
#define PM_DEFAULT_GROUPING PM_GROUPING_TIERED
#define PM_DP_CAPPED_GROUP_CAP 16
#define PM_DP_CAPPED_BUDGET 150
#define PM_DP_FULL_BUDGET 50000

typedef struct pm_options {
    /* The code: each field below decides the compiled kernel, and pm_options_key
     * writes each into the cache key. */
    int vector_width;          /* lanes of 32-bit elements: a power of two, 1..64       */
    int threads;               /* threads a run uses by default: 1..PM_MAX_THREADS      */
    int opt_level;             /* PM_OPT_TUNED or 0..3                                  */
    int fusion;                /* 1: inline, group and tile; 0: every stage alone       */
    int tile_size[PM_MAX_DIMS]; /* per tiled dimension, outermost first; 0 = the model */
    double overlap_threshold;  /* max redundant work of a fused group, a fraction       */
    int group_limit;           /* max stages in one group                               */
    int grouping;              /* PM_GROUPING_GREEDY, _DP_CAPPED, _DP or _TIERED        */
    int dp_group_cap;          /* the DP's max stages in one group (<= group_limit)     */
    long dp_budget;            /* the DP's groups priced before it merges greedily      */
    double inline_limit;       /* max work factor inlining may give a consumer          */
    int stream_outputs;        /* non-temporal output stores: 1, 0, or -1 = the model   */
    int prefetch_reads;        /* software prefetches of big reads: 1, 0, or -1 = model */
    int64_t cache_bytes;       /* a tile's scratch budget: half the per-core L2         */
    bool merge_bodies;         /* stage bodies equal but for constants as one function
                                  (llvm/merge.c): on, off in the full-DP upgrade         */
    bool dp_exports;           /* the DP may fuse a producer read after its group too:
                                  each tile copies its part to a full buffer (plan.h)   */
    unsigned dump_mask;        /* PM_DUMP_BIT bits: phases printed while compiling      */
    unsigned keep_mask;        /* phases whose text the kernel keeps (dump_mask too)    */
    /* How the compile runs: no effect on the code, not in the key. */
    int compile_threads;       /* threads that build one kernel (ASTs, module parts)    */
    bool timed;                /* PM_TIME: print each step's time                       */
    bool isl_abort;            /* PM_ISL_ABORT: an isl error aborts (for a debugger)    */
} pm_options;

/* What the host says, read once per jit (runtime/jit.c). */
typedef struct pm_host_facts {
    int cores;                 /* online cores, >= 1                                    */
    int vector_width;          /* lanes of 32-bit elements of the widest vectors        */
    int64_t l2_bytes;          /* per-core L2, 0 when unknown                           */
} pm_host_facts;

/* A jit's options, resolved by pm_jit_new: the defaults of its compiles. */
typedef struct pm_jit_settings {
    pm_host_facts host;
    int threads;               /* >= 1                                                  */
    int opt_level;             /* PM_OPT_TUNED or 0..3                                  */
    int compile_threads;       /* 1..PM_MAX_COMPILE_THREADS                             */
    bool has_dump;             /* pm_jit_options.dump was given: dump_mask replaces PM_DUMP */
    unsigned dump_mask;
    bool isolate_compiles;
    int compile_seconds;       /* an isolated compile's limits                          */
    int64_t compile_memory_bytes;
} pm_jit_settings;

/* The options of a compile with no jit and no host: vector width 1, one thread, every
 * model default (tests of the phases start here). */
pm_options pm_options_default(void);

/* Checks *given (already read at its version) and resolves it over the host and the
 * environment. Errors name "pm_jit_new" and the field. */
pm_status pm_options_resolve_jit(const pm_jit_options *given, const pm_host_facts *host,
                                 pm_jit_settings *out, pm_error *err);

/* Checks *given (already read at its version; `who` names the pipeline in messages) and
 * resolves it over the jit's settings and the environment. */
pm_status pm_options_resolve(const pm_jit_settings *jit, const pm_compile_options *given,
                             const char *who, pm_options *out, pm_error *err);

/* The fields that decide the code, as one line of text: equal texts mean interchangeable
 * kernels. Returns the length, or -1 when size is too small. */
#define PM_OPTIONS_KEY_MAX 256
int pm_options_key(const pm_options *o, char *buf, size_t size);

/* The options of a tiered compile's upgrade: the full DP (its group cap and budget), all
 * else the same. Other options come back unchanged. */
pm_options pm_options_upgraded(const pm_options *o);

#endif
