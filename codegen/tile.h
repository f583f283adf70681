/* tile.h — the tile phase: tile sizes from a model, tight footprints from isl.
 *
 * Promise: pm_tile_model chooses a fused group's tiled dimensions and tile sizes with a
 * cost model at the parameter estimates. It fails when the group cannot be tiled, or no
 * candidate keeps the redundant work under the overlap threshold and the scratch within
 * the cache budget. Then pm_tile_footprints derives each member's exact footprint per
 * tile with isl, and fails when an extent has no constant bound.
 */
#ifndef PM_CODEGEN_TILE_H
#define PM_CODEGEN_TILE_H

#include "codegen/plan.h"

#include <isl/union_map.h>

/* The tiled dimensions: the (at most two) innermost dimensions of the live-out whose
 * extent at the estimates exceeds 4, those with parametric bounds first. The others are
 * computed whole in every tile, so they must have constant bounds (else false). Tiles
 * start at the live-out's lower bound along each tiled dimension when it is a constant
 * (gr->tile_origin; unsharp mask's output starts at column 2), else at 0.
 * The candidates: outer sizes 4..128 by powers of two; inner sizes 64..4096, each also
 * one less; and the live-out's whole row at the estimates when that is 1024 or more (a
 * strip). Sizes the options give replace the candidates' and are kept over the budget.
 * Each candidate's interior tile is propagated backwards through the group's reads
 * (pm_align_reads: intervals per member, dimension and side). That gives each member's
 * footprint, the redundant work (all tiles' work over the stages', costs weighted) and
 * the scratchpad bytes per tile (rows padded to the vector width).
 * The budget is the options' cache_bytes (half the L2). A strip may use
 * pm_costs.strip_budget budgets (four L2s), and strips within pm_costs.strip_l2 budgets
 * (one L2) are preferred. Among the candidates within the budget and the overlap
 * threshold, it keeps one that gives every thread at least two tiles when the image
 * allows, then the least estimated time, then the smaller scratch. That time goes to
 * gr->time, times threads / tiles when there are fewer tiles than threads.
 * The estimated time: per row of every member, its vector steps times its cost plus
 * pm_costs.row_cost, and pm_costs.stream_row_cost for rows to or from memory (the
 * live-out's, and those of members that read no member); per tile and member,
 * pm_costs.stage_call_cost.
 * Row blocks (schedule.c) that no producer reaches past become strips of a block's rows
 * (the same loops, a cheaper AST). Groups of more than 64 members are not tiled. */
bool pm_tile_model(const pm_plan *plan, pm_group *gr);
/* The model's estimated time of stage s run alone over its whole domain at the
 * estimates (a group of one): per row, its vector steps times its cost, pm_costs.row_cost
 * and two pm_costs.stream_row_cost (its row and its producers' from memory), plus one
 * pm_costs.stage_call_cost. The units are pm_tile_model's (gr->time): both spread the
 * time over the options' threads the same way, so the times of groups add up. */
double pm_tile_stage_time(const pm_plan *plan, int s);
/* Whether pm_tile_model would succeed: the same candidates, stopping at the first that
 * passes (the grouping's trial merges; the tile fields are not the model's choice). */
bool pm_tile_feasible(const pm_plan *plan, pm_group *gr);
/* Tile T of the live-out is { x : o_j + t_j*T_j <= x_dj <= o_j + t_j*T_j + t_j - 1 } (o_j
 * the tiles' origin, gr->tile_origin: the live-out's constant lower bound) inside its
 * domain. A producer's footprint is the image of its consumers' footprints (unclipped in
 * the tiled dimensions) under the read relations, looking through inlined stages. It
 * becomes a bounding box inside the producer's own domain, per dimension and per side:
 * the tight overlapped tiles paper's shape, each stage its own halo.
 * Records each box's lower bounds over the tile space (the scratchpad's origin,
 * gr->fp[m].lb) and a constant bound on its extents over all tiles and all parameter
 * values (gr->fp[m].ext); false when no such bound exists. */
bool pm_tile_footprints(const pm_plan *plan, pm_group *gr);

/* { S[x] -> [floor((x_dj - o_j) / t_j)] } for every statement S of the live-out: each point's
 * tile (the schedule's tile band; the AST phase maps tile loops back to it). */
__isl_give isl_union_map *pm_tile_index_map(const pm_plan *plan, const pm_group *gr);

/* The bytes of one member's scratchpad per thread from its extents (padded rows). */
int64_t pm_tile_scratch_bytes(const pm_plan *plan, const pm_group *gr, int m);

#endif
