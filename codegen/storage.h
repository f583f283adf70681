/* storage.h — the storage phase: where every stage's values live.
 *
 * Promise: pm_storage_decide records in the plan where every function's values live
 * (plan->storage), and numbers the run-time scratch slots (plan->nslots). Full buffers share a slot only when their
 * lifetimes do not overlap. It also chooses the streamed outputs and the prefetched
 * reads, which change no value.
 */
#ifndef PM_CODEGEN_STORAGE_H
#define PM_CODEGEN_STORAGE_H

#include "codegen/plan.h"

/* Sets each stage's pm_storage_plan kind and slot; false when out of memory.
 *  - Inlined stages get no buffer (PM_STORAGE_INLINED).
 *  - The non-live-out members of a tiled group get a scratchpad per thread
 *    (PM_STORAGE_TILE): one slot holding `threads` scratchpads of tile_bytes each. They
 *    are sized from the tile sizes alone (the footprint's constant extents, rows padded
 *    to the vector width), allocated once per run and re-based at every tile. An
 *    exported member's slot (pm_storage_plan.exported) holds its full buffer first, then
 *    the scratchpads: the tiles copy their own parts to the full buffer, which later
 *    groups read.
 *  - Pipeline outputs stay in the caller's buffers. They are streamed (written with
 *    non-temporal stores, past the caches, without first reading each line) when
 *    plan->o.stream_outputs is 1. At -1 they are streamed when the output at the
 *    estimates is larger than the L2 caches of the threads (twice cache_bytes each).
 *  - Every other stage (a group's live-out read by a later group, or an unfused stage)
 *    gets a full buffer (PM_STORAGE_SCRATCH). A buffer lives from the group that writes
 *    it to the last group that reads it; groups run in order. Buffers whose lifetimes do
 *    not overlap share a slot, which the entry allocates once, for the largest of them.
 *  - Inputs and full buffers (an exported member's too, read outside its group) are
 *    prefetched (pm_storage_plan.prefetched) when
 *    plan->o.prefetch_reads is 1, or at -1 when the buffer at the estimates is larger
 *    than the L2 caches of the threads.
 *  - plan->prefetch_calls then holds, per stage definition, the leading read of each row
 *    stream of a prefetched buffer. Calls of one callee whose arguments are equal up to
 *    constant offsets (and equal where one is a constant) read one stream. The read
 *    furthest ahead (outer arguments first) leads.
 *    A leading read is kept at prefetch_reads 1; at -1, when some group it is emitted in
 *    reads at least pm_costs.prefetch_min_bytes of prefetched buffers per unit of the
 *    work of its members that read them (pm_plan_stage_cost; prefetch_min_bytes_small_l2
 *    on a host whose L2 per core is at most pm_costs.prefetch_small_l2). The emitter
 *    prefetches plan->prefetch_bytes ahead of their vector loads. */
bool pm_storage_decide(const pm_poly *poly, pm_plan *plan);
/* The "storage" dump, malloc'd: per stage its kind, slot and bytes; the prefetched
 * buffers with their kept leading reads; the peak of scratch bytes (per slot the
 * largest), against the same without slot sharing and against a full buffer for every
 * stage. */
char *pm_storage_to_string(const pm_poly *poly, const pm_plan *plan);

#endif
