/* scratch.c — see scratch.h. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "runtime/scratch.h"

#include "runtime/rt.h" /* PM_RT_BUFFER_TAIL */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Alignment of every slot: a cache line, and an AVX-512 vector. */
enum { SCRATCH_ALIGN = 64 };

/* Slots of at least HUGE_MIN bytes are aligned to HUGE_PAGE and asked to be backed by
 * transparent huge pages, where the kernel offers them on request ("madvise" mode, the
 * Debian default): a full intermediate buffer of local Laplacian (8 planes of 2560 x
 * 1536 floats, 126 MB) read at data-dependent planes touches a new 4 KiB page in almost
 * every lane. PM_HUGEPAGES=0 in the environment turns it off. */
enum { HUGE_PAGE = 2 << 20, HUGE_MIN = 4 << 20 };

static int want_huge_pages(void)
{
    static int cached = -1; /* benign race: every thread computes the same value */
    if (cached < 0) {
        const char *e = getenv("PM_HUGEPAGES");
        cached = !(e && strcmp(e, "0") == 0);
    }
    return cached;
}

/* Memory of a slot. Slots of at least HUGE_MIN bytes are mapped on their own (aligned to
 * HUGE_PAGE, huge pages asked for), so freeing one gives its pages back to the system at
 * once: left to malloc, a block under glibc's dynamic mmap threshold (up to 32 MiB) stays
 * in its arena after free, and a server's resident size only grows. */
typedef struct slot_memory {
    void *data;
    void *map;       /* the mapping data lies in, or NULL when data is malloc'd */
    size_t map_bytes;
} slot_memory;

static slot_memory slot_alloc(int64_t capacity)
{
    slot_memory m = {NULL, NULL, 0};
    if (capacity >= HUGE_MIN) {
        size_t bytes = ((size_t)capacity + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        size_t span = bytes + HUGE_PAGE; /* room to align the start */
        void *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED)
            return m;
        uintptr_t start = ((uintptr_t)map + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
#ifdef MADV_HUGEPAGE
        if (want_huge_pages())
            (void)madvise((void *)start, bytes, MADV_HUGEPAGE); /* advice: failure changes nothing */
#endif
        m.data = (void *)start;
        m.map = map;
        m.map_bytes = span;
        return m;
    }
    m.data = aligned_alloc(SCRATCH_ALIGN, (size_t)capacity);
    return m;
}

static void slot_release(slot_memory *m)
{
    if (m->map)
        munmap(m->map, m->map_bytes);
    else
        free(m->data);
    *m = (slot_memory){NULL, NULL, 0};
}

typedef struct scratch_slot {
    slot_memory mem;
    int64_t capacity; /* bytes, a multiple of SCRATCH_ALIGN */
} scratch_slot;

struct pm_scratch_set {
    pm_scratch_set *next_free; /* link in the pool's free list while not checked out  */
    pm_scratch_set *next_all;  /* link in the list of every set, for freeing           */
    pm_scratch_pool *pool;
    bool checked_out;          /* guarded by the pool's lock                          */
    int nslots;
    scratch_slot *slots;
};

struct pm_scratch_pool {
    pthread_mutex_t lock;      /* guards free_list, all, nsets                        */
    int nslots;
    pm_scratch_set *free_list;
    pm_scratch_set *all;
    int nsets;
    _Atomic int64_t bytes;     /* capacity of every slot of every set                 */
};

pm_scratch_pool *pm_scratch_pool_new(int nslots)
{
    if (nslots < 0)
        return NULL;
    pm_scratch_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    if (pthread_mutex_init(&pool->lock, NULL) != 0) {
        free(pool);
        return NULL;
    }
    pool->nslots = nslots;
    return pool;
}

static void scratch_set_free(pm_scratch_set *set)
{
    for (int i = 0; i < set->nslots; i++)
        slot_release(&set->slots[i].mem);
    free(set->slots);
    free(set);
}

void pm_scratch_pool_free(pm_scratch_pool *pool)
{
    if (!pool)
        return;
    pm_scratch_set *set = pool->all;
    while (set) {
        pm_scratch_set *next = set->next_all;
        scratch_set_free(set);
        set = next;
    }
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

pm_scratch_set *pm_scratch_pool_checkout(pm_scratch_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    pm_scratch_set *set = pool->free_list;
    if (set) {
        pool->free_list = set->next_free;
        set->checked_out = true;
    }
    pthread_mutex_unlock(&pool->lock);
    if (set)
        return set;

    /* Every set is in use: make one outside the lock (its slots start empty and grow
     * on first use, so this is cheap), then register it for pm_scratch_pool_free. */
    set = calloc(1, sizeof *set);
    if (!set)
        return NULL;
    set->nslots = pool->nslots;
    set->pool = pool;
    set->checked_out = true;
    if (set->nslots > 0) {
        set->slots = calloc((size_t)set->nslots, sizeof *set->slots);
        if (!set->slots) {
            free(set);
            return NULL;
        }
    }
    pthread_mutex_lock(&pool->lock);
    set->next_all = pool->all;
    pool->all = set;
    pool->nsets++;
    pthread_mutex_unlock(&pool->lock);
    return set;
}

void pm_scratch_pool_return(pm_scratch_pool *pool, pm_scratch_set *set)
{
    if (!set)
        return;
    pthread_mutex_lock(&pool->lock);
    set->checked_out = false;
    set->next_free = pool->free_list;
    pool->free_list = set;
    pthread_mutex_unlock(&pool->lock);
}

int64_t pm_scratch_pool_trim(pm_scratch_pool *pool)
{
    if (!pool)
        return 0;
    pm_scratch_set *gone = NULL;
    pthread_mutex_lock(&pool->lock);
    for (pm_scratch_set **link = &pool->all; *link;) {
        pm_scratch_set *set = *link;
        if (set->checked_out) {
            link = &set->next_all;
            continue;
        }
        *link = set->next_all;
        set->next_all = gone;
        gone = set;
        pool->nsets--;
    }
    pool->free_list = NULL; /* every set on it is in `gone` now */
    pthread_mutex_unlock(&pool->lock);
    int64_t freed = 0;
    while (gone) { /* outside the lock: runs may check sets out meanwhile */
        pm_scratch_set *next = gone->next_all;
        for (int i = 0; i < gone->nslots; i++)
            freed += gone->slots[i].capacity;
        scratch_set_free(gone);
        gone = next;
    }
    atomic_fetch_sub(&pool->bytes, freed);
    return freed;
}

int64_t pm_scratch_set_bytes(const pm_scratch_set *set)
{
    int64_t total = 0;
    for (int i = 0; set && i < set->nslots; i++)
        total += set->slots[i].capacity;
    return total;
}

void *pm_scratch_set_get(pm_scratch_set *set, int32_t slot, int64_t bytes)
{
    if (!set || slot < 0 || slot >= set->nslots || bytes < 0)
        return NULL;
    scratch_slot *s = &set->slots[slot];
    if (bytes > INT64_MAX - SCRATCH_ALIGN - PM_RT_BUFFER_TAIL)
        return NULL;
    bytes += PM_RT_BUFFER_TAIL; /* rt.h: readable past the end */
    if (s->mem.data && s->capacity >= bytes)
        return s->mem.data;
    /* Round up to the alignment (aligned_alloc wants a multiple of it) and never ask
     * for 0 bytes, so a run over an empty domain still gets a valid pointer. */
    int64_t capacity = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
    if (capacity == 0)
        capacity = SCRATCH_ALIGN;
    if ((uint64_t)capacity > SIZE_MAX)
        return NULL;
    /* The old contents need not survive (they are undefined to the caller), so free
     * first instead of copying: the peak footprint stays at one allocation. */
    int64_t before = s->capacity;
    slot_release(&s->mem);
    s->mem = slot_alloc(capacity);
    s->capacity = s->mem.data ? capacity : 0;
    atomic_fetch_add(&set->pool->bytes, s->capacity - before);
    return s->mem.data;
}

int pm_scratch_pool_nslots(const pm_scratch_pool *pool)
{
    return pool->nslots;
}

int64_t pm_scratch_pool_bytes(pm_scratch_pool *pool)
{
    return pool ? atomic_load(&pool->bytes) : 0;
}

int pm_scratch_pool_nsets(pm_scratch_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    int n = pool->nsets;
    pthread_mutex_unlock(&pool->lock);
    return n;
}
