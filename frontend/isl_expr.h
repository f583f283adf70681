/* isl_expr.h — pipeline expressions as isl objects (piecewise affine functions and sets).
 *
 * Promise: the affine subset of pm_expr becomes exact isl objects over a set space of the
 * pipeline's integer parameters and a list of variables. Anything else is "not affine":
 * translation returns NULL and never approximates. pm_isl_cond_bounds gives sets that
 * surely satisfy a condition (under) and outside of which it surely fails (over).
 * Ownership follows isl: __isl_give results belong to the caller, __isl_keep arguments
 * are borrowed, __isl_take arguments are consumed.
 */
#ifndef PM_FRONTEND_ISL_EXPR_H
#define PM_FRONTEND_ISL_EXPR_H

#include "frontend/ir.h"

#include <isl/aff.h>
#include <isl/ctx.h>
#include <isl/id.h>
#include <isl/point.h>
#include <isl/set.h>
#include <isl/space.h>

/* Where the variables and parameters of an expression go. Fields are borrowed. */
typedef struct pm_isl_env {
    isl_space *space;        /* set space from pm_isl_set_space                          */
    int nvars;
    pm_expr *const *vars;    /* the PM_EXPR_VAR of each set dimension (by pointer)       */
    struct pm_isl_cond_memo *memo; /* pm_isl_cond's results to reuse, or NULL            */
} pm_isl_env;

/* pm_isl_cond's sets by condition (pointer), kept across envs whose spaces differ only
 * in the set tuple's name: a function's cases share their conditions' nodes (the
 * interior box of a stage in "inside and x even", "inside and x odd", "not inside").
 * Start zeroed; pm_isl_cond_memo_clear frees what it holds. */
enum { PM_ISL_COND_MEMO_MAX = 64 };
typedef struct pm_isl_cond_memo {
    int n;
    const pm_expr *cond[PM_ISL_COND_MEMO_MAX];
    isl_set *set[PM_ISL_COND_MEMO_MAX];
} pm_isl_cond_memo;
void pm_isl_cond_memo_clear(pm_isl_cond_memo *memo);

/* A parameter space with one dimension per integer parameter of p, in signature order;
 * each dimension's isl_id is named after the parameter and carries its pm_expr. */
__isl_give isl_space *pm_isl_param_space(isl_ctx *ctx, const pm_pipeline *p);

/* params extended with one set dimension per variable, named after it. */
__isl_give isl_space *pm_isl_set_space(__isl_keep isl_space *params, int nvars,
                                       pm_expr *const *vars);

/* e as a piecewise affine function on env->space, or NULL when e is not affine.
 * Affine (exact): integer constants, env's variables, integer parameters, + - and
 * negation, multiplication where one side is constant, floor / and % by a nonzero
 * constant, truncating cdiv / cmod by a nonzero constant, << and >> by a constant, min,
 * max, abs, absd, select with an affine condition, and integer casts that cannot wrap
 * (widening, or same width and signedness).
 * Not affine: floats, calls, float parameters, products of two non-constants, narrowing
 * casts, bitwise and/or/xor. Integer wrap-around of i32 arithmetic is ignored:
 * coordinates are assumed to fit their type.
 * A NULL result without an isl error (isl_ctx_last_error == isl_error_none) means "not
 * affine"; with one, isl failed. */
__isl_give isl_pw_aff *pm_isl_pw_aff(const pm_isl_env *env, const pm_expr *e);

/* Bounds lo <= e <= hi of an integer expression that need not be affine: exact (lo = hi
 * = e) when it is, else derived through + - min max select, negation, multiplication and
 * floor division by constants and casts (a narrow integer type bounds what it converts),
 * so they hold whatever the non-affine parts evaluate to (clamp(int(v * 7), 0, 6) lies
 * in [0, 6]). Either output is NULL when that side is unbounded. */
void pm_isl_pw_aff_bounds(const pm_isl_env *env, const pm_expr *e, __isl_give isl_pw_aff **lo,
                          __isl_give isl_pw_aff **hi);

/* Set dimension d of env as a piecewise affine function. */
__isl_give isl_pw_aff *pm_isl_var_pw_aff(const pm_isl_env *env, int d);

/* A wholly affine condition as a set; NULL when any part of it is not affine. A condition
 * is comparisons of affine integer expressions combined with and / or / not / select. */
__isl_give isl_set *pm_isl_cond(const pm_isl_env *env, const pm_expr *cond);

/* Under- and over-approximations of cond, for conditions with non-affine parts: under
 * surely satisfies cond, and outside over it surely fails. Both are exact when cond is
 * affine. Both outputs are always set (NULL only if isl fails). A NULL cond means
 * "everywhere". */
void pm_isl_cond_bounds(const pm_isl_env *env, const pm_expr *cond,
                        __isl_give isl_set **under, __isl_give isl_set **over);

/* The points of env->space at which coords (one per dimension of f, borrowed) lie in
 * f's domain: for an image 0 <= c < extent, for a function or reduction the variable
 * domain's intervals with their steps. NULL when a bound is not affine. */
__isl_give isl_set *pm_isl_in_domain(const pm_isl_env *env, const pm_func *f,
                                     isl_pw_aff *const *coords);

/* The same for the box of n intervals (a reduction domain, for one). */
__isl_give isl_set *pm_isl_in_intervals(const pm_isl_env *env, int n,
                                        pm_interval *const *intervals,
                                        isl_pw_aff *const *coords);

/* The points of space (a set space) where a <_lex b: n coordinates each, borrowed,
 * functions on that space. Empty when n is 0. */
__isl_give isl_set *pm_isl_lex_lt(__isl_keep isl_space *space, int n, isl_pw_aff *const *a,
                                  isl_pw_aff *const *b);

/* One point of a non-empty set in its own space, preferring small coordinates (the
 * lexicographic minimum, parameters first, inside a small box when there is one there),
 * so messages show the simplest counterexample. NULL if set is empty. */
__isl_give isl_point *pm_isl_pick_point(__isl_take isl_set *set);

/* Appends "x = 5, y = 2 (R = 4, C = 3)": the set dimensions of pnt named by names[],
 * then, in parentheses, the parameters for which show_param[i] is true. */
void pm_isl_print_point(pm_str *s, __isl_keep isl_point *pnt, const char *const *names,
                        const bool *show_param);

/* Appends the integer value of pa at pnt. */
void pm_isl_print_value_at(pm_str *s, __isl_keep isl_pw_aff *pa, __isl_keep isl_point *pnt);

#endif
