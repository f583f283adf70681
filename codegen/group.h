/* group.h — the group phase: which stages run together in overlapped tiles.
 *
 * Promise: pm_group_decide fills plan->groups (in execution order) and plan->group_of
 * with PolyMage's greedy algorithm at the parameter estimates. Each group runs after
 * every group it reads. A merged group is tiled with the tile model's sizes; a group of
 * one stage runs as its own loop nest over a full buffer. The policy sits behind this
 * one call. With a DP grouping option, the fusion and tile-size paper's dynamic program
 * (group_dp.h) then searches the groupings, and its grouping replaces greedy's when the
 * model prices it lower.
 */
#ifndef PM_CODEGEN_GROUP_H
#define PM_CODEGEN_GROUP_H

#include "codegen/plan.h"

/* Every stage that is not inlined starts as a group of its own (inlined stages are in
 * no group: group_of -1). Then, until a pass merges nothing, a group whose live-out is
 * read by exactly one other group, and is not a pipeline output, is merged into that
 * consumer when
 *  - every stage of both is a plain function of at least one dimension without
 *    self-reference (reductions and time-iterated stages stay groups of their own),
 *  - the merged group aligns (align.h: no flips, no transposes, constant dependences),
 *  - the tile model finds tile sizes whose redundant work stays under the overlap
 *    threshold and whose scratch fits the cache budget (a trial merge only asks whether
 *    some size does, pm_tile_feasible; each final group gets pm_tile_model's choice
 *    once),
 *  - and the merged group has at most group_limit stages.
 * Groups are ordered by their live-outs' topological positions. With fusion off every
 * stage is its own group. False when out of memory or when the final model fails. */
bool pm_group_decide(pm_plan *plan);
/* Turns group g back into groups of one stage each, in its place (used when isl cannot
 * bound a footprint that the model accepted). False when out of memory. */
bool pm_group_split(pm_plan *plan, int g);

#endif
