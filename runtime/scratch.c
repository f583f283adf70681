/* scratch.c — see scratch.h. */
#define _DEFAULT_SOURCE /* madvise's MADV_HUGEPAGE */
#include "runtime/scratch.h"

#include "runtime/rt.h" /* PM_RT_BUFFER_TAIL */

#include <pthread.h>
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

static void *slot_alloc(int64_t capacity)
{
#ifdef MADV_HUGEPAGE
    if (capacity >= HUGE_MIN && want_huge_pages()) {
        size_t bytes = ((size_t)capacity + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *p = aligned_alloc(HUGE_PAGE, bytes);
        if (p)
            (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: failure changes nothing */
        return p;
    }
#endif
    return aligned_alloc(SCRATCH_ALIGN, (size_t)capacity);
}

typedef struct scratch_slot {
    void *data;
    int64_t capacity; /* bytes, a multiple of SCRATCH_ALIGN */
} scratch_slot;

struct pm_scratch_set {
    pm_scratch_set *next_free; /* link in the pool's free list while not checked out  */
    pm_scratch_set *next_all;  /* link in the list of every set, for freeing           */
    int nslots;
    scratch_slot *slots;
};

struct pm_scratch_pool {
    pthread_mutex_t lock;      /* guards free_list, all, nsets                        */
    int nslots;
    pm_scratch_set *free_list;
    pm_scratch_set *all;
    int nsets;
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
        free(set->slots[i].data);
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
    if (set)
        pool->free_list = set->next_free;
    pthread_mutex_unlock(&pool->lock);
    if (set)
        return set;

    /* Every set is in use: make one outside the lock (its slots start empty and grow
     * on first use, so this is cheap), then register it for pm_scratch_pool_free. */
    set = calloc(1, sizeof *set);
    if (!set)
        return NULL;
    set->nslots = pool->nslots;
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
    set->next_free = pool->free_list;
    pool->free_list = set;
    pthread_mutex_unlock(&pool->lock);
}

void *pm_scratch_set_get(pm_scratch_set *set, int32_t slot, int64_t bytes)
{
    if (!set || slot < 0 || slot >= set->nslots || bytes < 0)
        return NULL;
    scratch_slot *s = &set->slots[slot];
    if (bytes > INT64_MAX - SCRATCH_ALIGN - PM_RT_BUFFER_TAIL)
        return NULL;
    bytes += PM_RT_BUFFER_TAIL; /* rt.h: readable past the end */
    if (s->data && s->capacity >= bytes)
        return s->data;
    /* Round up to the alignment (aligned_alloc wants a multiple of it) and never ask
     * for 0 bytes, so a run over an empty domain still gets a valid pointer. */
    int64_t capacity = (bytes + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN;
    if (capacity == 0)
        capacity = SCRATCH_ALIGN;
    if ((uint64_t)capacity > SIZE_MAX)
        return NULL;
    /* The old contents need not survive (they are undefined to the caller), so free
     * first instead of copying: the peak footprint stays at one allocation. */
    free(s->data);
    s->data = slot_alloc(capacity);
    s->capacity = s->data ? capacity : 0;
    return s->data;
}

int pm_scratch_pool_nslots(const pm_scratch_pool *pool)
{
    return pool->nslots;
}

int64_t pm_scratch_pool_bytes(pm_scratch_pool *pool)
{
    int64_t total = 0;
    pthread_mutex_lock(&pool->lock);
    for (pm_scratch_set *set = pool->all; set; set = set->next_all)
        for (int i = 0; i < set->nslots; i++)
            total += set->slots[i].capacity;
    pthread_mutex_unlock(&pool->lock);
    return total;
}

int pm_scratch_pool_nsets(pm_scratch_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    int n = pool->nsets;
    pthread_mutex_unlock(&pool->lock);
    return n;
}
