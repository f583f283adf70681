/* cases.h — a function's cases shaped into the statements isl schedules.
 *
 * Promise: pm_cases_shape turns the poly phase's statements (one per case) into the
 * statements isl schedules: cases merged, split into convex pieces, and pieces merged
 * into parts. A stage's statements stay contiguous and in execution order.
 */
#ifndef PM_CODEGEN_CASES_H
#define PM_CODEGEN_CASES_H

#include "codegen/poly.h"

/* Per function, in order:
 *  - merges cases that split the innermost dimension by residue into one statement;
 *  - merges cases split by an outer dimension's residue into one that branches per row;
 *  - splits a case into its convex pieces (border strips named as such);
 *  - merges the pieces that each hold one interval of a row into one statement of parts
 *    (poly.h, pm_poly_stmt.parts).
 * A stage's case statements are then vectorizable only when the innermost dimension is
 * free in all of them. On failure returns a status and writes the message to err. */
pm_status pm_cases_shape(pm_poly *poly, pm_error *err);

#endif
