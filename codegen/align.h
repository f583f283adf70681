/* align.h — the align phase: each stage of a candidate group placed in the group's space.
 *
 * Promise: pm_align_group says how each member's coordinates follow the live-out's, and
 * succeeds only when every dependence inside the group is a constant vector in the
 * group's space. pm_align_reads lists a stage's reads as intervals, looking through
 * inlined stages; the tile model propagates them through the group.
 */
#ifndef PM_CODEGEN_ALIGN_H
#define PM_CODEGEN_ALIGN_H

#include "codegen/plan.h"

/* At most this many points in a dimension read at data-dependent points inside a
 * group (a tile computes it whole); a larger one (a lookup table) stays out. */
#define PM_WHOLE_MAX 16

/* One argument of a read, as consumer coordinate `var` (or -1: a constant) times coef,
 * plus an offset in [lo, hi] (the slack of floor divisions). */
typedef struct pm_lin {
    int var;
    double coef, lo, hi;
} pm_lin;

/* A read of producer `producer` by stage `consumer`, looking through inlined stages. */
typedef struct pm_read {
    int consumer, producer;
    bool affine;             /* false: some argument is data-dependent (a LUT or gather
                                read); that argument's arg[] is unknown, and the read
                                lies inside a group only when bounded                  */
    bool bounded;            /* every data-dependent argument runs along a small
                                constant dimension of the producer (PM_WHOLE_MAX points
                                at most): its arg[] is that whole interval (var -1), so
                                a tile computes the dimension whole                    */
    int nargs;
    pm_lin arg[PM_MAX_DIMS];
} pm_read;

/* Every read of a non-inlined stage by stage c (through inlined stages), appended to
 * *out (realloc'd; *n updated). A read whose arguments are not of the form above
 * (data-dependent, two variables, parameters) is listed with affine = false; false when
 * such a read goes through an inlined stage, or on a self-reference. */
bool pm_align_reads(const pm_plan *plan, int c, pm_read **out, int *n);
/* Lists every stage's reads once into plan->read_cache, which pm_align_reads then
 * copies from (the inline phase has decided: the reads look through inlined stages).
 * False when out of memory (then nothing is kept). */
bool pm_align_cache_reads(pm_plan *plan);

/* align[m] for each member m of a candidate group (stage indices in topological order,
 * the last one the live-out): member coordinate d ~ scale[d] * live-out coordinate
 * dim_of[d], derived from the arguments of every read inside the group, looking through
 * inlined stages. False when the group cannot be aligned. It aligns only when:
 *  - every argument is a single variable with a positive rational factor plus a
 *    constant (x + 1, 2*x - 1, x/2, (x + 1)/2), or a constant;
 *  - all reads of a member agree on which group dimension each of its coordinates
 *    follows, and at which scale (x/2 and 2x sampling are scales 1/2 and 2);
 *  - distinct coordinates follow distinct group dimensions in the same order (so a
 *    transpose, or reading f(y, x), is never grouped with its producer);
 *  - or an argument is data-dependent along a small dimension of the producer with
 *    constant bounds (local Laplacian's 8 intensity levels, bilateral grid's 11 bins).
 *    There is no dependence along it, and every tile computes the member whole along it.
 */
bool pm_align_group(const pm_plan *plan, const int *members, int nmembers, pm_align *align);

#endif
