/* cases.h — a function's cases shaped into the statements isl schedules.
 *
 * Promise: pm_cases_shape takes the poly phase's statements (one per case, each with its
 * facts) and, per function, merges cases that split the innermost dimension by residue
 * into one statement, merges cases split by an outer dimension's residue into one that
 * branches per row, splits a case into its convex pieces (border strips named as such),
 * and merges the pieces that each hold one interval of a row into one statement of parts
 * (poly.h). A stage's statements stay contiguous and in execution order.
 */
#ifndef PM_CODEGEN_CASES_H
#define PM_CODEGEN_CASES_H

#include "codegen/poly.h"

pm_status pm_cases_shape(pm_poly *poly, pm_error *err);

#endif
