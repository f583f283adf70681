/* interp.h — the reference interpreter's inside: scalar semantics and expression
 * evaluation (interp_eval.c) under the stage driver pm_interpret (interp.c).
 *
 * Promise: this is the oracle every compiled schedule is compared with. So every rule of
 * polymage.h is implemented here literally and in one place, as the comments below say.
 * Nothing here allocates; the driver owns every buffer.
 */
#ifndef PM_FRONTEND_INTERP_H
#define PM_FRONTEND_INTERP_H

#include "frontend/ir.h"

/* One scalar of any type: .i for integers and PM_BOOL (0 / 1), .f for f32, .d for f64.
 * Integer values are kept in an int64 in canonical form: sign-extended for signed types,
 * zero-extended for unsigned ones (so u32 fits). f32 arithmetic is done in float, never
 * double, so it matches compiled f32 code. */
typedef union pm_ival {
    int64_t i;
    float f;
    double d;
} pm_ival;

/* The storage of one image or function, as the evaluator sees it: element k (k_d in
 * [0, extent_d)) is at data + sum(k_d * stride_d) elements and holds the point with
 * coordinates lb_d + k_d * step_d. */
typedef struct pm_ibuf {
    char *data;
    pm_type type;
    int ndims;
    int64_t lb[PM_MAX_DIMS], step[PM_MAX_DIMS];
    int64_t extent[PM_MAX_DIMS], stride[PM_MAX_DIMS]; /* stride in elements */
} pm_ibuf;

/* What an expression may refer to while it is evaluated at one point. */
typedef struct pm_ienv {
    const pm_ibuf *const *bufs; /* by function id (images and functions)              */
    const pm_ival *params;      /* by context parameter id, already of the param's type */
    int64_t *vars;              /* current value of every variable, by variable id     */
} pm_ienv;

/* The value of e at the point env->vars describes. A call's coordinate c in dimension d
 * reads element clamp(floor((c - lb) / step), 0, extent - 1) of the callee (lb 0, step 1
 * for images). Only data-dependent indices can leave the box (validation rejects static
 * ones), and they never read out of bounds. A call of a function with an empty domain
 * gives 0. */
pm_ival pm_interp_eval(const pm_expr *e, const pm_ienv *env);

/* v (of type from) converted to type `to` by the rules of pm_cast: float -> integer
 * truncates toward zero and saturates (NaN -> 0); integer -> narrower integer wraps. */
pm_ival pm_interp_convert(pm_ival v, pm_type from, pm_type to);
/* a op b for a pm_binop, operands of type t; comparisons give .i = 0 / 1.
 *  - Every integer result is wrapped back to its type (u8 + u8 wraps mod 256).
 *  - Integer pm_div / pm_mod floor. Division or modulo by 0 gives 0, and the overflowing
 *    INT_MIN / -1 wraps to INT_MIN (remainder 0). pm_cdiv / pm_cmod truncate, with the
 *    same 0 and -1 rules.
 *  - Shifts take the amount modulo the bit width; >> is arithmetic on signed types and
 *    logical on unsigned ones.
 *  - Float min(a, b) is a < b ? a : b and max(a, b) is a > b ? a : b: with a NaN operand
 *    the second operand is returned. Comparisons are ordered (!= is unordered). */
pm_ival pm_interp_binop(int op, pm_type t, pm_ival a, pm_ival b);
/* An integer value wrapped to type t (canonical form). */
int64_t pm_interp_wrap(pm_type t, int64_t v);

/* Element at offset (in elements) of a buffer of type t. */
pm_ival pm_interp_load(pm_type t, const char *data, int64_t offset);
void pm_interp_store(pm_type t, char *data, int64_t offset, pm_ival v);

#endif
