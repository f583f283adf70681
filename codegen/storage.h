/* storage.h — the storage phase: where every stage's values live.
 *
 * Promise: pm_storage_decide sets each stage's pm_poly_storage.kind and slot from the
 * plan, and numbers the run-time scratch slots (poly->nslots):
 *  - inlined stages get no buffer (PM_STORAGE_INLINED);
 *  - the non-live-out members of a tiled group get a scratchpad per thread
 *    (PM_STORAGE_TILE): one slot holding `threads` scratchpads of tile_bytes each, sized
 *    from the tile sizes alone (the footprint's constant extents, rows padded to the
 *    vector width), allocated once per run and re-based at every tile;
 *  - pipeline outputs stay in the caller's buffers, written with non-temporal stores
 *    (streamed: past the caches, without first reading each line) when
 *    plan->o.stream_outputs is 1, or is -1 and the output at the estimates is larger
 *    than the L2 caches of the threads (twice cache_bytes each; pm_poly_storage's
 *    streamed); every other stage (a group's live-out read by a later group, or an
 *    unfused stage) gets a full buffer
 *    (PM_STORAGE_SCRATCH); full buffers share a slot when their lifetimes (from the
 *    group that writes one to the last group that reads it; groups run in order) do not
 *    overlap, and the entry allocates a shared slot once, for the largest of them;
 *  - inputs and full buffers are prefetched (pm_poly_storage's prefetched) when
 *    plan->o.prefetch_reads is 1, or is -1 and the buffer at the estimates is larger
 *    than the L2 caches of the threads; poly->prefetch_calls then holds, per stage
 *    definition, the leading read of each row stream of such a buffer (calls equal up to
 *    constant offsets, equal constants, read one stream; the read furthest ahead, outer
 *    arguments first, leads), kept with 1, or with -1 when some group the read is
 *    emitted in reads at least PM_PREFETCH_MIN_BYTES bytes of prefetched buffers per
 *    unit of its members' work (pm_plan_stage_cost); the emitter prefetches
 *    poly->prefetch_bytes ahead of their vector loads. Prefetches change no value.
 * pm_storage_to_string is the "storage" dump: per stage its kind, slot and bytes, the
 * prefetched buffers with their kept leading reads, and the peak of scratch bytes (per
 * slot the largest) against the same without slot sharing and against a full buffer for
 * every stage.
 */
#ifndef PM_CODEGEN_STORAGE_H
#define PM_CODEGEN_STORAGE_H

#include "codegen/plan.h"

bool pm_storage_decide(pm_poly *poly, const pm_plan *plan); /* false: out of memory */
char *pm_storage_to_string(const pm_poly *poly, const pm_plan *plan);

#endif
