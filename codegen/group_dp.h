/* group_dp.h — the grouping's costs, and the dynamic program over groupings.
 *
 * Promise: pm_group_costs prices every group of a grouping in one unit, so the prices of
 * two groupings compare by their sums. pm_group_dp searches the groupings with the fusion
 * paper's dynamic program and returns the cheapest it finds within the options' cap and
 * budget: groups of one live-out, and with the options' dp_exports, groups whose other
 * members later groups may read too (exported, plan.h). Its groups run in the order it
 * gives.
 */
#ifndef PM_CODEGEN_GROUP_DP_H
#define PM_CODEGEN_GROUP_DP_H

#include "codegen/plan.h"

/* Whether stage s may be a member of a fused group (greedy's rule and the DP's): not
 * inlined, fusion on, a plain function of one or more dimensions whose reads align
 * (pm_align_reads fails on self-reference). */
bool pm_group_fusible(const pm_plan *plan, int s);
/* Whether f is one of p's outputs (always the live-out of its group). */
bool pm_group_is_output(const pm_pipeline *p, const pm_func *f);

/* Sets gr->cost for every group of plan->groups and returns their sum. A group's cost is
 * its model time (gr->time from pm_tile_model, or pm_tile_stage_time for a group of one)
 * plus pm_costs.memory_byte_cost per byte it moves through memory: the live-out's and
 * the exported members' buffers written once and each outside producer's buffer read
 * once. */
double pm_group_costs(pm_plan *plan);

/* The groups pm_group_dp chose: member lists in topological order (the last member the
 * live-out), the groups in execution order. */
typedef struct pm_dp_grouping {
    int ngroups;
    int *nmembers;
    int **members;
} pm_dp_grouping;

/* The search (group_dp.c explains it). Fills *out with the cheapest grouping found, and
 * plan->grouping with its cost, the states it expanded, the groups it priced and whether
 * it ran out of budget. False when out of memory. */
bool pm_group_dp(pm_plan *plan, pm_dp_grouping *out);
void pm_dp_grouping_free(pm_dp_grouping *g);
/* The DP's price of any grouping: the sum of its groups' costs, INFINITY when a group has
 * more than one live-out, more members than the DP's cap, a member that may not fuse, or
 * does not align or tile; NAN when out of memory (tests compare the DP's optimum with
 * every grouping's price). */
double pm_group_dp_price(const pm_plan *plan, const pm_dp_grouping *grouping);

#endif
