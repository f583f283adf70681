/* validate.h — the checks that need the whole pipeline, with isl where they are affine.
 *
 * Promise: pm_validate accepts a pipeline whose graph is already built (stages in
 * topological order, every used parameter and image in the signature, no cycles between
 * distinct functions) and returns PM_OK only if
 *   - every interval bound and image extent is an affine integer expression of
 *     parameters and constants;
 *   - no two cases of a function overlap (decided with isl when the conditions are
 *     affine; data-dependent conditions are accepted as written);
 *   - every affine access (function or image call whose arguments are affine in the
 *     caller's variables, including scaled forms 2*x+1 and x/2) reads inside the
 *     callee's domain for every point of the calling case's domain, for all parameter
 *     values that make every image extent >= 1 (checked with isl);
 *   - self-references read only points lexicographically before the point defined.
 * Otherwise it records an error in the context naming the function, the access and one
 * offending point ("harris: access Ix(x - 2, y) reads outside Ix's domain at x = 1, y = 1,
 * R = 3, C = 3") and returns PM_ERR_INVALID (or PM_ERR_TYPE).
 */
#ifndef PM_FRONTEND_VALIDATE_H
#define PM_FRONTEND_VALIDATE_H

#include "frontend/ir.h"

pm_status pm_validate(pm_pipeline *p);

#endif
