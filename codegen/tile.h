/* tile.h — the tile phase: tile sizes from a model, tight footprints from isl.
 *
 * Promise:
 *  - pm_tile_model chooses a fused group's tiled dimensions and tile sizes. The tiled
 *    dimensions are the (at most two) innermost dimensions of the live-out whose extent
 *    at the estimates exceeds 4; the others are computed whole in every tile. For each
 *    candidate size (outer 4..128; inner 64..4096 and, when it is 1024 or more, the
 *    live-out's whole row at the estimates (a strip); or the sizes the options give) it
 *    propagates an interior tile backwards through the group's reads (pm_align_reads:
 *    intervals per member and dimension, per side), giving each member's footprint, the
 *    redundant computation (extra work of all tiles over the work of the stages, costs
 *    weighted) and the scratchpad bytes per tile (rows padded to the vector width). It
 *    keeps, among the candidates whose scratch fits the cache budget (half the L2; a
 *    strip of whole rows four L2s, PM_STRIP_BUDGET in tile.c), one that gives every
 *    thread at least two tiles when the image allows and then the least estimated time
 *    (per row of every member: its vector steps times its cost plus a start-up cost, and
 *    a streaming cost for rows to or from memory: the live-out's, and those of members
 *    that read only outside the group; per tile: a call per member), at equal times the
 *    smaller scratch, and fails when no candidate keeps the redundancy under the overlap
 *    threshold. Row blocks (schedule.c) that no producer reaches past become strips of a
 *    block's rows (the same loops, a cheaper AST).
 *  - pm_tile_footprints derives, with isl, each member's exact footprint per tile: tile
 *    T of the live-out is { x : t_j*T_j <= x_dj <= t_j*T_j + t_j - 1 } inside its
 *    domain; a producer's footprint is the image of its consumers' footprints (their
 *    boxes, unclipped in the tiled dimensions) under the read relations, looking through
 *    inlined stages, and then its bounding box inside its own domain, per dimension and
 *    per side (the tight overlapped tiles paper's shape: each stage its own halo). It
 *    records the box's lower bounds over the tile space (the scratchpad's origin) and a
 *    constant bound on its extents over all tiles and all parameter values; it fails
 *    when no such bound exists.
 */
#ifndef PM_CODEGEN_TILE_H
#define PM_CODEGEN_TILE_H

#include "codegen/plan.h"

#include <isl/union_map.h>

bool pm_tile_model(const pm_plan *plan, pm_group *gr);
/* Whether pm_tile_model would succeed: the same candidates, stopping at the first that
 * passes (the grouping's trial merges; the tile fields are not the model's choice). */
bool pm_tile_feasible(const pm_plan *plan, pm_group *gr);
bool pm_tile_footprints(const pm_plan *plan, pm_group *gr);

/* { S[x] -> [floor(x_dj / t_j)] } for every statement S of the live-out: each point's
 * tile (the schedule's tile band; the AST phase maps tile loops back to it). */
__isl_give isl_union_map *pm_tile_index_map(const pm_plan *plan, const pm_group *gr);

/* The bytes of one member's scratchpad per thread from its extents (padded rows). */
int64_t pm_tile_scratch_bytes(const pm_plan *plan, const pm_group *gr, int m);

#endif
