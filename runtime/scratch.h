/* scratch.h — the kernel's pool of scratch memory ("intermediate buffers allocated
 * aligned and reused across calls").
 *
 * Promise: a pm_scratch_set holds `nslots` 64-byte-aligned allocations, one per slot,
 * each grown on demand and kept for the next run. A pm_scratch_pool is a mutex-protected
 * free list of sets: a run checks out a whole set and returns it, so concurrent runs
 * never share memory and a server's steady state allocates nothing. Sets are made only
 * when every existing set is in use, so the pool holds as many sets as the highest
 * number of concurrent runs seen, until pm_scratch_pool_trim frees the idle ones.
 * Slots of 4 MiB or more are mappings of their own, so freeing them returns their pages
 * to the system at once.
 */
#ifndef PM_RUNTIME_SCRATCH_H
#define PM_RUNTIME_SCRATCH_H

#include <stdint.h>

typedef struct pm_scratch_set pm_scratch_set;
typedef struct pm_scratch_pool pm_scratch_pool;

/* A pool whose sets have nslots slots each (nslots may be 0). NULL when out of memory.
 * Free with pm_scratch_pool_free once no set is checked out. */
pm_scratch_pool *pm_scratch_pool_new(int nslots);
void pm_scratch_pool_free(pm_scratch_pool *pool);

/* Takes a set out of the pool (a free one, or a new empty one). NULL when out of memory.
 * The caller gives it back with pm_scratch_pool_return. */
pm_scratch_set *pm_scratch_pool_checkout(pm_scratch_pool *pool);
void pm_scratch_pool_return(pm_scratch_pool *pool, pm_scratch_set *set);

/* At least `bytes` bytes for slot `slot` of the set, 64-byte aligned, contents
 * undefined; the set keeps the memory. NULL when slot is out of range, bytes < 0, or out
 * of memory. A slot is used by one thread at a time (different slots of one set may be
 * used by different threads at once). */
void *pm_scratch_set_get(pm_scratch_set *set, int32_t slot, int64_t bytes);

/* Frees every set not checked out (a later checkout makes a new, empty one). Returns the
 * bytes freed. Safe while other threads run with sets of the pool. */
int64_t pm_scratch_pool_trim(pm_scratch_pool *pool);
/* Bytes the set holds now (its slots' capacities); the set is the caller's. */
int64_t pm_scratch_set_bytes(const pm_scratch_set *set);

/* Number of slots of the sets, and bytes held by the pool now (for tests and stats). */
int pm_scratch_pool_nslots(const pm_scratch_pool *pool);
int64_t pm_scratch_pool_bytes(pm_scratch_pool *pool);
/* Number of sets the pool has made (free or checked out). */
int pm_scratch_pool_nsets(pm_scratch_pool *pool);

#endif
