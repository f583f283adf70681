/* validate.h — the checks that need the whole pipeline, with isl where they are affine.
 *
 * Promise: pm_validate returns PM_OK only for a pipeline whose bounds are affine, whose
 * cases do not overlap, whose affine reads stay inside their callee's domain, and whose
 * self-references read only earlier points. Otherwise it records an error in the context
 * naming the function, the access and one offending point, and returns PM_ERR_INVALID
 * (or PM_ERR_TYPE).
 */
#ifndef PM_FRONTEND_VALIDATE_H
#define PM_FRONTEND_VALIDATE_H

#include "frontend/ir.h"

/* p's graph is already built: stages in topological order, every used parameter and
 * image in the signature, no cycles between distinct functions. PM_OK only if:
 *  - every interval bound and image extent is an affine integer expression of
 *    parameters and constants;
 *  - no two cases of a function overlap (decided with isl when the conditions are
 *    affine; data-dependent conditions are accepted as written);
 *  - every affine access reads inside the callee's domain for every point of the calling
 *    case's domain (checked with isl). An access is affine when it calls a function or
 *    image with arguments affine in the caller's variables, scaled forms 2*x+1 and x/2
 *    included. It must hold for all parameter values that make every image extent >= 1;
 *  - self-references read only points lexicographically before the point defined.
 * An error reads: "harris: access Ix(x - 2, y) reads outside Ix's domain at x = 1, y = 1,
 * R = 3, C = 3". */
pm_status pm_validate(pm_pipeline *p);

#endif
