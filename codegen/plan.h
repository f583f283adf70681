/* plan.h — the optimizer's decisions, filled phase by phase between poly and schedule.
 *
 * Promise: a pm_plan records, for one pipeline's pm_poly, every decision of the phases
 * between poly and lower: what the inline, group, align and tile phases decided, where
 * each function's values live (the storage phase), and the parallel dimensions (the
 * schedule phase). The poly holds facts only. The plan owns its arrays and isl objects;
 * pm_plan_free frees them.
 */
#ifndef PM_CODEGEN_PLAN_H
#define PM_CODEGEN_PLAN_H

#include "codegen/options.h"
#include "codegen/poly.h"

#include <isl/aff.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* How one stage of a group sits in the group's space (the live-out's dimensions):
 * stage coordinate d ~ scale[d] * group coordinate dim_of[d] (+ a constant offset that
 * differs per access: the dependence vector), or dim_of[d] = -1 when the stage's
 * coordinate d does not follow any group dimension (read at constant positions). */
typedef struct pm_align {
    int dim_of[PM_MAX_DIMS];
    double scale[PM_MAX_DIMS];
} pm_align;

/* A member's footprint inside one tile (tile phase). */
typedef struct pm_footprint {
    isl_pw_aff *lb[PM_MAX_DIMS];  /* over the tile space [T0..Tk-1] and the parameters    */
    int64_t ext[PM_MAX_DIMS];     /* buffer index extent bound, constant over all tiles   */
    double model_ext[PM_MAX_DIMS];/* the model's extent of an interior tile (dump only)   */
    isl_map *box;                 /* { [T] -> f[x] }: what the member computes per tile   */
    isl_pw_aff *own_lb[PM_MAX_DIMS]; /* an exported member's own part of each tile: the */
    isl_pw_aff *own_ub[PM_MAX_DIMS]; /* points whose values its tile copies out         */
} pm_footprint;

/* A group of stages that run together (group phase), aligned (align phase) and tiled
 * (tile phase). */
typedef struct pm_group {
    int nmembers;
    int *members;                 /* stage indices, topological order; last = live-out   */
    int liveout;                  /* stage index                                          */
    bool tiled;                   /* overlapped tiles (else: every stage on its own)     */
    pm_align *align;              /* per member                                           */
    int ntiled;                   /* tiled dimensions of the live-out                     */
    int tiled_dim[PM_MAX_DIMS];   /* which live-out dimensions, outermost first           */
    int64_t tile[PM_MAX_DIMS];    /* tile size per tiled dimension                        */
    int64_t tile_origin[PM_MAX_DIMS]; /* where tile 0 starts along each tiled dimension: the
                                     live-out's lower bound there when it is a constant,
                                     else 0; tile T covers origin + tile * T ..
                                     origin + tile * T + tile - 1                        */
    pm_footprint *fp;             /* per member (the live-out's is unused)                */
    bool *exported;               /* per member, or NULL: a member other than the live-out
                                     that a later group reads too (the DP's, group_dp.c).
                                     It is computed in the tiles into its scratchpad as any
                                     member, and each tile copies its own part to the
                                     member's full buffer: the live-out's tile mapped
                                     through the member's alignment, the first and last
                                     tiles taking the rest of its domain. Those parts do
                                     not overlap, so the tiles never write one point
                                     twice.                                              */
    double redundancy;            /* model: extra work of the overlapped tiles (0.1 = 10%) */
    int64_t scratch_bytes;        /* model: scratchpad bytes per tile                     */
    int64_t block_rows;           /* > 0: each tile runs in blocks of this many rows of
                                     the outermost tiled dimension, every producer row
                                     computed in the block of the first row that needs
                                     it (schedule.c); 0: each member's whole footprint
                                     before the next member                             */
    double time;                  /* model: run time at the chosen tiles, or over the
                                     whole domain for a group of one (pm_tile_stage_time)
                                     in vector steps of one expression node             */
    double cost;                  /* model: time plus the group's memory traffic (the
                                     grouping's cost; group.c)                          */
} pm_group;

/* How the group phase chose the grouping (the groups dump prints it). */
typedef struct pm_grouping_report {
    double cost;                  /* the chosen grouping's (pm_group_costs)               */
    double greedy_cost;           /* the greedy grouping's                                */
    long states;                  /* DP: states expanded                                  */
    long priced;                  /* DP: groups priced (each member set once)             */
    bool exhausted;               /* DP: the budget ran out; the rest merged greedily     */
    bool dp_chosen;               /* the DP's grouping replaced greedy's (cheaper)        */
} pm_grouping_report;

/* Where one function's values live: the storage phase's decision (codegen/storage.h),
 * from the poly's role of the function (an input, an output, or a stage). */
typedef struct pm_storage_plan {
    pm_storage_kind kind;     /* INPUT, OUTPUT, SCRATCH (a full buffer), TILE or INLINED  */
    int index;                /* input / output position, or the slot; -1 when inlined    */
    int group;                /* TILE: the group whose tiles re-base it                   */
    int64_t tile_ext[PM_MAX_DIMS]; /* TILE: per-thread index extents (dense, innermost
                                      padded to the vector width)                         */
    int64_t tile_bytes;       /* TILE: per thread, a multiple of 64                       */
    bool streamed;            /* OUTPUT: rows written with non-temporal stores            */
    bool prefetched;          /* INPUT, SCRATCH: rows read from memory, so the leading
                                 reads prefetch ahead (prefetch_calls)                    */
    bool exported;            /* TILE: an exported member's (pm_group.exported): its slot
                                 holds its full buffer, then the threads' scratchpads;
                                 code outside its group reads the full buffer            */
} pm_storage_plan;

/* One stage's reads as pm_align_reads lists them (align.h), kept by the group phase. */
struct pm_read;
typedef struct pm_read_cache {
    bool ok;                  /* pm_align_reads's result                                 */
    int n;
    struct pm_read *reads;
} pm_read_cache;

/* The schedule phase reads the plan to build the isl schedule tree, and puts decisions
 * in the tree as marks. The LLVM emitter reads the marks, the plan's storage records, the
 * lowering's records, and from the plan the groups and parallel_dim and channel_dim. */
typedef struct pm_plan {
    const pm_poly *poly;          /* borrowed                                              */
    pm_options o;                 /* the compile's resolved options (codegen/options.h)  */
    const pm_value *estimates;    /* one per pipeline parameter, or NULL                  */
    bool *inlined;                /* per stage: folded into its consumers (inline phase)  */
    int ninline_calls;            /* calls evaluated in place though their callee is      */
    const pm_expr **inline_calls; /* stored (inline phase; see inline.h)                  */
    int ninside_calls;            /* calls in the cases of inlined functions that stay    */
    const pm_expr **inside_calls; /* inside their callee from anywhere in the box         */
    int *group_of;                /* per stage: group index, -1 when inlined              */
    int ngroups;
    pm_group *groups;             /* in execution order (group phase)                     */
    pm_grouping_report grouping;  /* (group phase)                                        */
    pm_read_cache *read_cache;    /* per stage, or NULL: filled when the group phase
                                     starts (pm_align_cache_reads), so that the grouping's
                                     search walks each definition once                  */
    double *cost_cache;           /* per stage: pm_plan_stage_cost, or NULL (the same)    */
    double *est_lb, *est_ub;      /* per stage and dimension (stage*PM_MAX_DIMS + d): the
                                     domain's bounds at the estimates                     */
    int *parallel_dim;            /* per poly statement: the dimension run in parallel, or
                                     -1 (the schedule phase's choice)                     */
    int *channel_dim;             /* per update statement: a dimension of a few fixed
                                     iterations free to run innermost, or -1 (schedule)   */
    pm_storage_plan *storage;     /* per poly storage (storage phase)                     */
    int nslots;                   /* run-time scratch slots used (storage phase)          */
    int nprefetch_calls;          /* calls whose vector loads also prefetch the line      */
    const pm_expr **prefetch_calls; /* prefetch_bytes further along the row (storage)     */
    int64_t prefetch_bytes;
} pm_plan;

pm_plan *pm_plan_new(const pm_poly *poly, const pm_options *o, const pm_value *estimates);
/* Whether some member of gr is exported. */
bool pm_group_exports(const pm_group *gr);
/* Frees a footprint's isl objects (the pointers become NULL). */
void pm_footprint_clear(pm_footprint *fp);
void pm_plan_free(pm_plan *plan);

/* The stage index of a function, or -1 (an input image). */
int pm_plan_stage_of(const pm_plan *plan, const pm_func *f);
/* Work of evaluating one point of a stage (expression nodes, loads counted). */
double pm_plan_stage_cost(const pm_plan *plan, int stage);
/* Keeps every stage's pm_plan_stage_cost in plan->cost_cache; false when out of memory
 * (then nothing is kept). */
bool pm_plan_cache_costs(pm_plan *plan);
/* Work per point of a stage's dearest case (the inline limit grows the case that reads
 * an inlined stage; an average with cheap boundary cases would understate it). */
double pm_plan_dearest_case_cost(const pm_plan *plan, int stage);
/* Work of one expression as the costs above count it (nodes, math functions 8). */
double pm_plan_expr_cost(const pm_expr *e);
/* Bytes of storage k (an input's or a stage's box) at the estimates. */
double pm_plan_storage_bytes(const pm_plan *plan, int k);
/* The same expression tree (so the same value at one point). */
bool pm_plan_expr_equal(const pm_expr *a, const pm_expr *b);
/* e as base + constant: *base and *k (base NULL for a constant). */
void pm_plan_split_offset(const pm_expr *e, const pm_expr **base, int64_t *k);
/* Where f's values live (the storage phase's record), or NULL for no such function. */
const pm_storage_plan *pm_plan_storage_of(const pm_plan *plan, const pm_func *f);
/* Is this call one of inside_calls (proven inside its callee from anywhere in its
 * inlined function's box)? One of prefetch_calls? */
bool pm_plan_call_inside(const pm_plan *plan, const pm_expr *call);
bool pm_plan_call_prefetched(const pm_plan *plan, const pm_expr *call);
/* Is this call evaluated in place: its callee inlined, or the call one of inline_calls? */
bool pm_plan_call_inlined(const pm_plan *plan, const pm_expr *call);
/* Does stage s read stage p (directly, or through inlined stages and calls)? */
bool pm_plan_reads(const pm_plan *plan, int s, int p);
/* Every stage p that s reads (pm_plan_reads(plan, s, p)) as bit p of `into`
 * (pm_bits_words(nstages) words, or'ed into, s itself left out): one walk of s's
 * definition instead of one per p. */
void pm_plan_producers(const pm_plan *plan, int s, uint64_t *into);
/* The points of a stage's domain at the estimates. */
double pm_plan_stage_volume(const pm_plan *plan, int stage);

/* "groups" dump: malloc'd text. "dot" dump: Graphviz, malloc'd. */
char *pm_plan_groups_to_string(const pm_plan *plan);
char *pm_plan_to_dot(const pm_plan *plan);

#endif
