/* inline.h — the inline phase: point-wise stages folded into their consumers.
 *
 * Promise: pm_inline_decide sets plan->inlined[s] for every stage s it folds into its
 * consumers, where evaluating s in place gives what its buffer would have held. It folds
 * point-wise stages within a work limit (plan->o.inline_limit), and stages whose every
 * point is read once. It also lists the calls evaluated in place though their callee
 * stays stored (plan->inline_calls), and the calls proven to need no clamp
 * (plan->inside_calls).
 */
#ifndef PM_CODEGEN_INLINE_H
#define PM_CODEGEN_INLINE_H

#include "codegen/plan.h"

/* A stage is inlined only when all of these hold:
 *  - It is a plain function (no reduction, no self-reference), not a pipeline output (a
 *    live-out is always stored).
 *  - When it has a condition or several cases, every consumer's reads are proven (isl)
 *    to land where one of its cases holds. For a data-dependent read, the cases cover the
 *    whole box. So evaluating the cases in place gives what the buffer would have held.
 *  - Several cases are all evaluated at every point read (each lane takes its own). Such
 *    a stage is inlined only when it is read once (below), and then either read at
 *    data-dependent points, or the cases a read can reach cost at most
 *    plan->o.inline_limit times the dearest case. A read reaches a case when its image
 *    meets the case's domain (isl); a case chosen by a constant argument folds away. Two
 *    cases by parity, as up-sampling's, always pass.
 *  - It is point-wise: every call in its definition reads at its own variables or at
 *    constants (img(0, x, y), never img(x + 1, y)), so inlining moves no stencil.
 *    Or it is read once: each of its points is read at most once by all consumers
 *    together, so inlining only moves its work, whatever it reads (bilateral grid's
 *    trilinear interpolation into the output). One call counts as one read; so do equal
 *    calls in one consumer (one value at one point, which LLVM computes once), and calls
 *    told apart by a constant argument.
 *    An inlined consumer that reads the stage only at its own point
 *    (det(x, y) = Sxx(x, y) * ...) passes the stage's points on: its readers' calls count
 *    as reads of the stage (Harris's box sums, read through det and trace at one point of
 *    the output).
 *  - Every consumer is a function (not a reduction) that reads it at shifts of its own
 *    variables or of twice them (x + k, 2x + k, or a constant), each read proven inside
 *    the stage's domain. So the emitter can evaluate the definition at the read point, in
 *    vectors too (every lane, or every second lane).
 *  - A stage read once may also be read at data-dependent points (an index computed from
 *    values read) proven inside its box. poly.c bounds them: clamp(int(v), 0, 6) lies in
 *    [0, 6]. The emitter carries their lanes as vectors (local Laplacian's
 *    lPyramid(li, x, y) and lPyramid(li + 1, x, y): two calls one constant apart in one
 *    argument read disjoint points).
 *  - The work limit: in each consumer, the work after inlining (expression nodes, loads
 *    counted; equal calls count once) is at most plan->o.inline_limit times the work
 *    before. So a 9-tap stencil never recomputes an expensive producer nine times. A
 *    stage whose points are read once in all is exempt: inlining it only moves its work.
 * Stages are considered producers first, so chains of point-wise stages fold together.
 * Passes repeat while one inlined something (a consumer inlined late can make its
 * producer read-once).
 * Recomputed calls (plan->inline_calls): in the definition of a stage inlined at
 * data-dependent points, a call of a cheap point-wise stage evaluates its callee in
 * place. Cheap: a table lookup counts as point-wise, work per point at most
 * PM_RECOMPUTE_MAX (inline.c), one unconditional case, the read proven in bounds. The
 * callee stays stored for its other readers, which may now fuse with it. So local
 * Laplacian's remapped picture gPyramid_L0 joins its pyramid's first level, instead of
 * being gathered at two levels per pixel from eight full-resolution planes. Every phase
 * that follows reads through these calls as through inlined stages
 * (pm_plan_call_inlined).
 * Inside proofs (plan->inside_calls): for an inlined stage of several cases, the calls of
 * its cases that stay inside their callee from every point of its box need no clamp
 * where all cases are evaluated.
 * With plan->o.fusion false nothing is inlined. */
void pm_inline_decide(pm_plan *plan);

#endif
