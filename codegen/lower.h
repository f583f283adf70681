/* lower.h — the lowering phase: how each loop and each read becomes vector code.
 *
 * Promise: pm_lower_new walks the isl AST, and each box body's template with each of its
 * runs, and records every decision with its reason. Per loop: <W x T> vectors or not,
 * width and shape; per read in a vector loop, its strategy; per privatized block, its
 * passes; per parallel loop, its iteration split. The LLVM emitter follows these
 * records. What the walk did not foresee is decided here too, at the emitter's request,
 * and marked so in the "lower" dump. The tuned numbers come from costs.h.
 */
#ifndef PM_CODEGEN_LOWER_H
#define PM_CODEGEN_LOWER_H

#include "codegen/ast.h"
#include "codegen/options.h"

#include <isl/ast.h>
#include <limits.h>
#include <llvm-c/TargetMachine.h>
#include <stdbool.h>
#include <stdint.h>

/* The target facts the lowering reads: the vector width and AVX-512's parts. */
typedef struct pm_target {
    int vector_width;             /* lanes of 32-bit elements; 1 = no vectors         */
    bool avx512f, avx512vl;       /* 32-bit-offset gathers and scatters               */
    bool avx512bw, avx512vbmi;    /* 16- and 8-bit lane permutes                      */
} pm_target;

/* tm NULL: no target features (tests). */
pm_target pm_target_of(LLVMTargetMachineRef tm, int vector_width);

typedef enum pm_loop_kind {
    PM_LOOP_SCALAR,   /* isl's loop as it is                                          */
    PM_LOOP_VECTOR,   /* vectors along the loop, scalar code for what they leave       */
    PM_LOOP_PARTS,    /* a merged statement's row: one loop per part                   */
    PM_LOOP_PRIVATE   /* a block whose rows of bins stay in registers                  */
} pm_loop_kind;

typedef enum pm_loop_shape {
    PM_SHAPE_SCALAR,          /* no vectors                                             */
    PM_SHAPE_ONE_BODY,        /* one body; the last vector moved back to the last point */
    PM_SHAPE_LOOP_AND_TAIL,   /* a vector loop, then one overlapping tail vector        */
    PM_SHAPE_LOOP_THEN_SCALAR, /* reduction updates: full vectors, then scalar code     */
    PM_SHAPE_STREAMED,        /* aligned non-temporal stores between two end vectors    */
    PM_SHAPE_SHORT            /* a constant trip below W: two overlapping short vectors */
} pm_loop_shape;

/* One vector loop: a for node's, or one part's of a merged row. */
typedef struct pm_vector_plan {
    bool vector;
    int W;
    pm_loop_shape shape;       /* at an unknown trip count, or one of W or more        */
    bool updates;              /* reduction updates: no lane may run twice              */
    int stream_align;          /* PM_SHAPE_STREAMED: the stores' alignment in bytes     */
    int stream_elem;           /* ... and the element's bytes                           */
    int body_part;             /* a merged row's scalar part: the first part whose body it
                                  shares (itself when none before computes the same thing:
                                  same case, same read proofs); the parts sharing one body
                                  run as one scalar loop over their intervals            */
    const char *reason;
} pm_vector_plan;

/* At most this many parts share one scalar body (pm_vector_plan.body_part). */
#define PM_LOWER_MAX_SHARED_PARTS 16

typedef struct pm_loop_plan {
    pm_loop_kind kind;
    long long trip;            /* a constant trip count from the AST, or -1             */
    pm_vector_plan v;          /* PM_LOOP_VECTOR                                         */
    int nparts;                /* PM_LOOP_PARTS: per part                               */
    pm_vector_plan *parts;
    int per_pass;              /* PM_LOOP_PRIVATE: update instances per pass            */
    bool rows_of_bins;         /* ... its bins stored by rows (a transpose and one masked
                                  store per lane), not by scatters                      */
    int guided_share;          /* a parallel loop: blocks of left / (share * threads)   */
    bool late;                 /* decided at the emitter's request                      */
    const char *reason;
} pm_loop_plan;

/* A point's lanes as a read sees them (pm_point without its values). */
typedef struct pm_lane_shape {
    const pm_poly_stmt *stmt;
    int W;
    int where;                 /* PM_POINT_IN_CASE, IN_BOX or ANYWHERE                  */
    int lane_step[PM_MAX_DIMS]; /* +k per lane along each coordinate                    */
    bool lanes[PM_MAX_DIMS];   /* a coordinate that moves arbitrarily across the lanes  */
} pm_lane_shape;

enum { PM_POINT_IN_CASE, PM_POINT_IN_BOX, PM_POINT_ANYWHERE };

typedef enum pm_read_kind {
    PM_READ_SCALAR,        /* one lane: a scalar load                                  */
    PM_READ_BROADCAST,     /* the same element in every lane: one load, broadcast       */
    PM_READ_CONTIGUOUS,    /* +1 per lane: one <W x T> load                             */
    PM_READ_STRIDED,       /* +k per lane: k loads and a shuffle tree                   */
    PM_READ_HALF,          /* (e + lane) / 2: one masked load and a shuffle             */
    PM_READ_LEVEL_ROWS,    /* a row per level of a scratchpad, each lane picking its own */
    PM_READ_GATHER,        /* a gather of the lanes' elements                           */
    PM_READ_TABLE,         /* two short rows loaded whole and permuted by lane          */
    PM_READ_SMALL_TABLE    /* a flat table's entries permuted by lane                   */
} pm_read_kind;

typedef struct pm_read_plan {
    pm_read_kind kind;
    pm_read_kind row;          /* PM_READ_LEVEL_ROWS: how each level's row is read      */
    pm_read_kind fallback;     /* guarded: the gather kind where a row is not inside    */
    bool proven;               /* the indices are proven inside the callee's box        */
    bool guarded;              /* a row read checked per vector, gathered otherwise     */
    int stride;                /* PM_READ_STRIDED                                        */
    int level_dim;             /* PM_READ_LEVEL_ROWS                                     */
    int64_t table_start;       /* PM_READ_SMALL_TABLE: the first entry loaded           */
    int permutes;              /* ... and the number of permutes                        */
    bool gather32;             /* gathers: AVX-512's with 32-bit offsets (else LLVM's)   */
    bool late;
    const char *reason;
} pm_read_plan;

typedef struct pm_lower pm_lower;

pm_lower *pm_lower_new(const pm_poly *poly, const pm_ast *ast, const pm_options *o,
                       const pm_target *target);
void pm_lower_free(pm_lower *lw);
const pm_target *pm_lower_target(const pm_lower *lw);

/* The plan of for node `node` (in box run `box`, or NULL); decided now when the walk
 * did not record it. NULL only when out of memory. */
const pm_loop_plan *pm_lower_loop(pm_lower *lw, __isl_keep isl_ast_node *node,
                                  const pm_ast_box *box);
/* The shape of a vector loop whose trip count turned out constant at emission (a box
 * template's bounds): scalar below costs.short_loop_min (or, for updates, below W),
 * short vectors of *w lanes below W, else the plan's. trip -1: the plan's. */
pm_loop_shape pm_lower_shape_at(const pm_vector_plan *v, long long trip, int *w);
/* The strategy of a read at lanes `shape`. NULL only when out of memory. */
const pm_read_plan *pm_lower_read(pm_lower *lw, const pm_lane_shape *shape,
                                  const pm_expr *call);

/* ---- lane facts the emitter shares with the decisions ---- */

#define PM_LANE_NONLINEAR INT_MIN
/* How an integer expression moves from lane to lane: 0 (uniform), k (+k per lane), or
 * PM_LANE_NONLINEAR. */
int pm_lower_lane_coef(const pm_lane_shape *pt, const pm_expr *e);
/* The read lands inside its callee's box: proven by the access record where the point
 * lies in its statement's domain, from anywhere in its function's box by the inline
 * phase's proof, never from anywhere. */
bool pm_lower_read_proven(const pm_plan *plan, const pm_lane_shape *pt, const pm_expr *call);
/* The lanes of an inlined call's point, whose statement is callee: an argument moving 0,
 * 1 or 2 per lane keeps its step, any other carries its own lanes (a data-dependent
 * index); where says which of the callee's reads stay proven (the inline phase proves
 * reads inside the box; several cases are each evaluated at every lane). */
pm_lane_shape pm_lower_inlined_shape(const pm_plan *plan, const pm_lane_shape *pt,
                                     const pm_expr *call, const pm_poly_stmt *callee);
/* e / 2 (floor), maybe plus or minus a constant, with e moving +1 per lane: e; else NULL. */
const pm_expr *pm_lower_half_of_lane(const pm_lane_shape *pt, const pm_expr *e);
/* e without an added or subtracted integer constant. */
const pm_expr *pm_lower_strip_constant(const pm_expr *e);
/* The target's two-table permute at W lanes of this type; its one-table permute of
 * elements of `bytes` bytes. */
bool pm_lower_two_table_permute(const pm_target *t, int W, pm_type type);
bool pm_lower_table_permute(const pm_target *t, int bytes);

/* The "lower" dump: every loop plan and read plan with its reason; malloc'd. */
char *pm_lower_to_string(const pm_lower *lw);

/* A privatized block's plan (PM_MARK_PRIVATE's child): PM_LOOP_PRIVATE, or scalar when
 * the block does not qualify (then the child runs as usual). */
const pm_loop_plan *pm_lower_block(pm_lower *lw, __isl_keep isl_ast_node *node,
                                   const pm_ast_box *box);

/* ---- AST queries the emitter shares with the walk ---- */

/* A for node's iterator, condition and body (pm_lower_for_node_clear frees them). */
typedef struct pm_for_node {
    isl_id *id;
    isl_ast_expr *cond;
    isl_ast_node *body;
} pm_for_node;
pm_for_node pm_lower_for_node(__isl_keep isl_ast_node *node);
void pm_lower_for_node_clear(pm_for_node *f);

/* The statement a user node's call names (box: inside a box template, its run). */
const pm_poly_stmt *pm_lower_call_stmt(const pm_poly *poly, const pm_ast_box *box,
                                       __isl_keep isl_ast_expr *call);
/* The user nodes of a body made only of them (blocks flattened), at most max; 0 when it
 * holds anything else. The caller frees each. */
int pm_lower_body_users(__isl_keep isl_ast_node *body, isl_ast_node **users, int max);
/* The dimension of statement s that the call's argument iterator id is (exactly one
 * argument, no other mentioning it), or -1. */
int pm_lower_lane_dim(__isl_keep isl_ast_expr *call, const pm_poly_stmt *s,
                      __isl_keep isl_id *id);
/* The increment is 1; the condition is `id <= e` or `id < e` with e free of id. */
bool pm_lower_unit_inc(__isl_keep isl_ast_node *node);
bool pm_lower_upper_bound_cond(__isl_keep isl_ast_expr *cond, __isl_keep isl_id *id);

/* A privatized block's structure (PM_MARK_PRIVATE's child): the window's loops down to
 * the lanes' loop and its update instances. */
#define PM_PRIVATE_MAX_USERS 8
typedef struct pm_private_shape {
    isl_id *window[2 * PM_MAX_DIMS];
    isl_ast_expr *winit[2 * PM_MAX_DIMS];
    int nwindow;
    isl_ast_node *lanes;
    isl_id *id;
    isl_ast_expr *init, *cond;
    isl_ast_node *users[PM_PRIVATE_MAX_USERS];
    int n;
    const pm_poly_stmt *s;
} pm_private_shape;
bool pm_lower_private_shape(const pm_lower *lw, const pm_ast_box *box,
                            __isl_keep isl_ast_node *node, pm_private_shape *sh);
void pm_lower_private_shape_clear(pm_private_shape *sh);

#endif
