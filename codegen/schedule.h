/* schedule.h — when each statement instance runs: an isl schedule tree with marks.
 *
 * Promise: pm_schedule_new builds the isl schedule tree of the plan's groups, one filter
 * per group in execution order, with the plan's decisions as marks. In a tiled group,
 * each tile computes the producer points it needs, so overlapped tiles recompute their
 * halos. The caller frees the result (isl_schedule_free).
 */
#ifndef PM_CODEGEN_SCHEDULE_H
#define PM_CODEGEN_SCHEDULE_H

#include "codegen/plan.h"

#include <isl/schedule.h>

/* The marks' names: a loop to run in parallel (checked), the tile loops of a group (run
 * the outermost in parallel), a tile's body (the id's user pointer is the pm_group). */
#define PM_MARK_PARALLEL "parallel"
#define PM_MARK_TILES "tiles"
#define PM_MARK_TILE "tile"
/* Below a box body's row-block band: each block computes its producers' rows there. */
#define PM_MARK_BLOCK "block"
/* Below a reduction's block of columns: each lane's row of bins accumulates in
 * registers over the window of contributions beneath (schedule.c, private_rows). */
#define PM_MARK_PRIVATE "private"

/* Box bodies: when the points per tile of every run of producers outside the joined one
 * (pm_schedule_new) are a box, the tree holds no extension. "tile" sits right above the
 * live-out's band (or its row-block band, with a mark "block" right below that). The AST
 * phase writes each run's loops from its box (ast.h), in order before the live-out's (in
 * each block, the block's rows). The reason: isl's AST of a box with tile-dependent
 * bounds is slow to build, and a pyramid has many producers.
 * Returns the number of runs of producers, run r being members first[r] .. first[r] +
 * len[r] - 1 (arrays of nmembers entries), in order; the live-out's band follows. 0 when
 * the body is not made of boxes. */
int pm_schedule_box_runs(const pm_poly *poly, const pm_plan *plan, const pm_group *gr,
                         int *first, int *len);

/* The row blocks of a box body's tiles: B rows per block, 0 for none. Member m's rows
 * in block b are those of its dimension row_dim[m] from b * B + reach[m] to
 * b * B + reach[m] + B - 1 (arrays of nmembers entries). */
int64_t pm_schedule_box_blocks(const pm_poly *poly, const pm_group *gr, int *row_dim,
                               int64_t *reach);

/* The dimension each statement runs in parallel (plan->parallel_dim), and an update's
 * channel dimension (plan->channel_dim), from the poly's free dimensions: the outermost
 * free one, the next when it is a few fixed iterations (colour channels), the most
 * conservative of a function's cases. Run before pm_schedule_new. */
void pm_schedule_parallel_dims(const pm_poly *poly, pm_plan *plan);

/* The tree, in order:
 *     domain (every statement that is not inlined or introduced by a tile)
 *       sequence: one filter per group
 *  - A group of one stage (unfused): a band over the stage's dimensions. It is the
 *    identity: dimension d of every case statement of the function is band member d.
 *    Every member is `separate`, so the AST splits case pieces and boundaries into
 *    branch-free loops. A reduction is a sequence of its init band and its update band.
 *    When the statements' parallel_dim (the plan's) is k >= 0, the band is split at k,
 *    and the part from k on sits under a mark "parallel". The LLVM phase outlines the
 *    loop below that mark, after checking the loop is that dimension.
 *  - A tiled group:
 *        mark "tiles" (the group)        every tile is independent: run them in parallel
 *          band [floor((x_dj - o_j) / t_j)] the live-out's tiled dimensions (o_j: origin)
 *            extension { [T] -> P[x] : x in P's footprint box of tile T }  per producer
 *              mark "tile" (the group)   re-base the group's scratchpads at this tile
 *                sequence: producers in topological order, then the live-out
 *    Each member is an identity band over its own dimensions (case pieces: innermost
 *    member `separate`, else `atomic`). Producers are in the tree only through the
 *    extension: isl generates each instance once per tile that needs it.
 *  - Joined producers: consecutive producers with one statement each, the same domain and
 *    the same footprint per tile, reading each other only at their own point, share one
 *    band with a sequence of them below (one loop nest: shared loads, one overhead).
 *    When the last such run computes exactly the live-out's points per tile (no halo),
 *    its statements are tiled like the live-out (in the domain, not an extension) and
 *    share the live-out's band.
 *  - Box bodies replace the extension (pm_schedule_box_runs).
 * groups, when not NULL (plan->ngroups entries), receives each group's part of the tree
 * alone (its filter's subtree below a domain node), for ASTs built per group (ast.h). */
__isl_give isl_schedule *pm_schedule_new(const pm_poly *poly, const pm_plan *plan,
                                         isl_schedule **groups, pm_error *err);

#endif
