/* ast.h — the loop nest: isl's AST for the schedule.
 *
 * Promise: pm_ast_new generates the isl AST of the schedule, as parts whose roots run in
 * execution order. User nodes are calls S(c0, c1, ...): S is a statement's tuple name
 * (pm_ast_stmt finds it), the arguments its coordinates as expressions of the loop
 * iterators and parameters. Mark nodes "parallel" sit above loops safe to run in
 * parallel; "tile" and "block" marks carry the tile's origins or the block's index as
 * annotations. A box body's producers are loop templates with per-tile bounds
 * (pm_ast_box), outside the tree. The caller frees the result (pm_ast_free).
 */
#ifndef PM_CODEGEN_AST_H
#define PM_CODEGEN_AST_H

#include "codegen/plan.h"

#include <isl/ast.h>
#include <isl/schedule.h>

/* The annotation of a "tile" mark: the group's scratchpad origins as AST expressions of
 * the tile loops' iterators, and for a box body the tile index. */
typedef struct pm_tile_origins {
    const pm_group *group;
    int n;
    int *storage;                     /* pm_poly storage index of each scratchpad        */
    isl_ast_expr *(*lb)[PM_MAX_DIMS]; /* its origin per dimension                         */
    isl_ast_expr *(*own_lb)[PM_MAX_DIMS]; /* an exported member's own part of the tile   */
    isl_ast_expr *(*own_ub)[PM_MAX_DIMS]; /* (pm_group.exported); NULL for the others    */
    int ntile;                        /* box bodies: the tile index's dimensions, and     */
    isl_ast_expr *tile[PM_MAX_DIMS];  /* each as an expression of the tile loops          */
    isl_ast_expr *first_block;        /* in row blocks: the tile's first (its live-out's
                                         first row's), whose producers' rows reach back
                                         to their box's first row; else NULL             */
} pm_tile_origins;

/* A run of producers of a box body (schedule.h; one loop nest for its statements, in
 * order): in the tile whose index is (tile_id[0], ...), their points are
 * max(dim[d]'s PM_BOUND_LOWER) <= x_d <= min(dim[d]'s PM_BOUND_UPPER) for every d, where
 * every guard (PM_BOUND_ROW_GE: >= 0, PM_BOUND_ROW_EQ: == 0) holds. Integer-valued isl
 * expressions over the parameters and the tile ids. empty: no points in any tile.
 * The loops are a template, one per number of dimensions and of statements, built once
 * in the poly's context:
 *     for (c0 = lo0; c0 <= hi0; c0++) ... { pm_box0(c0, ..., cn-1); pm_box1(...); ... }
 * over parameters lo_d and hi_d (ids box_lo[d], box_hi[d]); pm_boxK stands for the run's
 * K-th statement. The bounds are read off the constraints of the run's footprint box,
 * and the "tile" mark's annotation gives the tile index as expressions of the tile loops.
 * The LLVM phase binds lo_d to the max of the lower bounds and hi_d to the min of the
 * upper ones, skips the run where a guard fails, and emits the template. In row blocks
 * it does so at each "block" mark (its annotation gives the block index), with the run's
 * rows clipped to the block's. A tile's first block starts at the box's first row: the
 * rows before the tile's, its halo, map to no block of the live-out. */
typedef struct pm_ast_box {
    int nstmts;
    const pm_poly_stmt **stmts;
    int row_dim;                          /* in row blocks (pm_ast.block_rows): the rows  */
    int64_t reach;                        /* of block b are b * B + reach + 0 .. B - 1    */
    isl_ast_node *loops;                  /* the template (the pm_ast's)                  */
    bool empty;
    pm_poly_part_bounds dim[PM_MAX_DIMS];
    pm_poly_part_bounds guard;
} pm_ast_box;

/* The annotation of a "block" mark: the block index as an expression of the loops. */
typedef struct pm_block_index {
    const pm_group *group;
    isl_ast_expr *block;
} pm_block_index;

typedef struct pm_ast {
    int n;
    isl_ast_node **root;      /* the parts' ASTs, in execution order                      */
    isl_ctx **own_ctx;        /* each root's own context (freed with it), or NULL          */
    const pm_plan *plan;
    int *nboxes;              /* per group: its box body's runs (0: none)                 */
    int64_t *block_rows;      /* per group: a box body's rows per block (0: no blocks)     */
    pm_ast_box **boxes;       /* per group: those runs in order                           */
    isl_id *tile_id[PM_MAX_DIMS];
    isl_id *box_lo[PM_MAX_DIMS], *box_hi[PM_MAX_DIMS];
    isl_id *first_block_id;   /* the LLVM phase's name for pm_tile_origins.first_block     */
    int ntemplates;
    isl_ast_node **templates; /* the boxes' loops, one per (dimensions, statements)       */
    int *template_key;        /* 1024 * dimensions + statements, per template             */
} pm_ast;

/* The loops follow the loop types the schedule's bands carry: a `separate` member gives
 * case pieces and boundaries loops of their own, so inner loop bodies carry no per-point
 * conditions where isl can split them. Loop bounds use min/max, not disjunctive guards.
 * group_sched: each group's schedule alone (pm_schedule_new's per-group parts), used
 * with threads > 1 and several groups. Then the groups' ASTs are built concurrently:
 * each tiled group, and each run of up to 8 untiled ones, is a part. A part is printed
 * as text (its schedule, and the tiled group's live-out domains, tile map and scratchpad
 * origins) and parsed into an isl context of its own on a worker thread (an isl context
 * serves one thread at a time), heaviest parts first. The calling thread builds the
 * heaviest part in the poly's own context (no text), then takes parts too. Each root
 * owns its context (the heaviest one's is the poly's). Parameters in a part's AST are
 * ids without the poly's user pointers: the LLVM phase finds them by name. */
pm_ast *pm_ast_new(const pm_poly *poly, const pm_plan *plan, __isl_keep isl_schedule *sched,
                   isl_schedule *const *group_sched, int threads, pm_error *err);
void pm_ast_free(pm_ast *ast);

/* The statement a user node's call names, or NULL. */
const pm_poly_stmt *pm_ast_stmt(const pm_poly *poly, __isl_keep isl_ast_expr *call);

/* The AST as C-like text (the "ast" dump); malloc'd. */
char *pm_ast_to_string(const pm_ast *ast);

#endif
