/* affine.h — pipeline expressions as isl objects.
 *
 * Promise: translates the affine subset of pm_expr (integer constants, variables,
 * integer parameters, +, -, negation, multiplication by a constant, floor division and
 * floor modulo by a positive constant, min, max, widening integer casts) into isl
 * piecewise affine functions over a given set space, and conditions (comparisons of
 * affine expressions combined with and/or/not) into isl sets. Whatever is not affine is
 * reported, never approximated: pm_affine_pw_aff returns NULL, and a condition is split
 * into an affine part (an isl set) and the conjuncts that must stay run-time tests.
 * Integer wrap-around is ignored here: coordinates are assumed to fit their type.
 */
#ifndef PM_CODEGEN_AFFINE_H
#define PM_CODEGEN_AFFINE_H

#include "frontend/ir.h"

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/id.h>
#include <isl/set.h>

/* Where variables and parameters go. All fields are borrowed (__isl_keep). */
typedef struct pm_affine_env {
    const pm_pipeline *pipeline;
    isl_space *space;        /* a set space: the pipeline's integer parameters + ndims dims */
    int ndims;
    const int *var_ids;      /* pm_expr id of the variable of each dimension             */
} pm_affine_env;

/* e as a piecewise affine function on env->space, or NULL when e is not affine. */
__isl_give isl_pw_aff *pm_affine_pw_aff(const pm_affine_env *env, const pm_expr *e);

/* A condition that is wholly affine, as a set; NULL when any part is not affine. */
__isl_give isl_set *pm_affine_set(const pm_affine_env *env, const pm_expr *cond);

/* Splits cond's top-level conjunction: the affine conjuncts are intersected into the
 * returned set (the universe when there are none); the others are appended to
 * residual[*nresidual] (up to max; returns NULL if there are more). */
__isl_give isl_set *pm_affine_split(const pm_affine_env *env, const pm_expr *cond,
                                    const pm_expr **residual, int *nresidual, int max);

#endif
