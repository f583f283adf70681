/* schedule.h — when each statement instance runs: an isl schedule tree.
 *
 * Promise: pm_schedule_new builds the tree
 *     domain (all statements)
 *       sequence: one filter per stage, in the pipeline's topological order
 *         [reductions: sequence: init filter, update filter]
 *           band over the stage's dimensions (identity: dimension d of every case
 *           statement of the function is band member d), every member `separate` so the
 *           AST splits case pieces and boundaries into branch-free loops;
 *           when the statements' parallel_dim is k >= 0 the band is split at k and the
 *           part from k on sits under a mark "parallel" (isl never marks parallel loops
 *           itself; the LLVM phase outlines the loop below that mark).
 * The next issue adds tiling by prepending tile dimensions to these bands.
 * Ownership: the caller frees the result (isl_schedule_free).
 */
#ifndef PM_CODEGEN_SCHEDULE_H
#define PM_CODEGEN_SCHEDULE_H

#include "codegen/poly.h"

#include <isl/schedule.h>

/* The mark's name above a loop to run in parallel. */
#define PM_MARK_PARALLEL "parallel"

__isl_give isl_schedule *pm_schedule_new(const pm_poly *poly, pm_error *err);

#endif
