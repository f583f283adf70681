/* group.h — the group phase: which stages run together in overlapped tiles.
 *
 * Promise: pm_group_decide fills plan->groups (execution order) and plan->group_of with
 * PolyMage's greedy algorithm at the parameter estimates. Every stage that is not
 * inlined starts as a group of its own; then, repeatedly, a group whose stages are read
 * by exactly one other group (never a pipeline output) is merged into that consumer when
 *  - every stage of both is a plain function without self-reference (reductions and
 *    time-iterated stages stay groups of their own),
 *  - the merged group aligns (align.h: constant dependences, no transposes),
 *  - the tile model finds tile sizes whose redundant computation stays under the
 *    overlap threshold and whose scratch fits the cache budget (tile.h; a trial merge
 *    only asks whether some size does, pm_tile_feasible, and each final group gets the
 *    model's choice once),
 *  - and the merged group has at most group_limit stages.
 * A merged group is "tiled"; a group of one stage runs as before (its own loop nest over
 * a full buffer). Groups are ordered by their live-outs' topological positions, so a
 * group runs after every group it reads. With fusion off every stage is its own group.
 * The policy sits behind this one call so that the DP fusion and tile-size paper's
 * dynamic programming can replace it.
 *
 * pm_group_split turns group g back into groups of one stage each (used when isl cannot
 * bound a footprint that the model accepted).
 */
#ifndef PM_CODEGEN_GROUP_H
#define PM_CODEGEN_GROUP_H

#include "codegen/plan.h"

bool pm_group_decide(pm_plan *plan);
bool pm_group_split(pm_plan *plan, int g);

#endif
