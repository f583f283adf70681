/* flat.h — where a lookup table is flat: the range its index can be clamped to without
 * changing what it reads.
 *
 * Promise: pm_func_flat_range(f, &lo, &hi) returns true only when f(v) equals
 * f(clamp(v, lo, hi)) bit for bit at every v of f's domain. Otherwise it returns false,
 * and the caller reads the table as it is.
 */
#ifndef PM_FRONTEND_FLAT_H
#define PM_FRONTEND_FLAT_H

#include "frontend/ir.h"

/* f must be a function of one variable v over a domain of constant bounds and step 1,
 * defined by one expression; then dom_lo <= lo <= hi <= dom_hi. It finds such a range when
 * every occurrence of v in the definition lies inside a clamp of a monotone expression:
 *   min(max(A, c1), c2) or max(min(A, c2), c1)
 * Here c1 and c2 are free of variables, parameters and calls. A is built from v and
 * constants by +, -, * and / by constants, negation, min, max and order-keeping casts (no
 * integer operation that could wrap on the domain). Such a clamp is exactly c1 where
 * A(v) <= c1, and exactly c2 where A(v) >= c2: a constant, not A's value. For a monotone
 * A both sets are runs at the ends of the domain. They are found by bisection with the
 * interpreter's evaluator (the oracle's own arithmetic). Camera pipe's tone curve,
 * defined over every int16 value, is flat outside 0 .. 1024. A definition of more than
 * 1024 nodes written out as a tree gives false. */
bool pm_func_flat_range(const pm_func *f, int64_t *lo, int64_t *hi);

#endif
