/* ptrmap.h — a small open-addressing map from object pointers to integers, for walks that
 * must visit each node of a shared expression DAG once (frontend/canon.c numbers nodes,
 * frontend/clone.c maps old nodes to their copies).
 *
 * Promise: pm_ptrmap_get finds what pm_ptrmap_put stored for a key; keys are never NULL;
 * the map grows as needed and pm_ptrmap_put returns false only when out of memory. Only
 * the keys' addresses are used (hashed), never what they point to, and nothing derived
 * from an address leaves the map (so results never depend on where objects live).
 */
#ifndef PM_FRONTEND_PTRMAP_H
#define PM_FRONTEND_PTRMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct pm_ptrmap {
    const void **keys;
    int64_t *values;
    size_t cap, count; /* cap is 0 or a power of two */
} pm_ptrmap;

static inline size_t pm_ptrmap_slot(const void *key, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)key;
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return (size_t)h & (cap - 1);
}

static inline bool pm_ptrmap_get(const pm_ptrmap *m, const void *key, int64_t *value)
{
    if (m->cap == 0)
        return false;
    for (size_t i = pm_ptrmap_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == NULL)
            return false;
        if (m->keys[i] == key) {
            *value = m->values[i];
            return true;
        }
    }
}

static inline bool pm_ptrmap_put(pm_ptrmap *m, const void *key, int64_t value)
{
    if (2 * (m->count + 1) > m->cap) { /* keep the load under one half */
        size_t cap = m->cap ? 2 * m->cap : 64;
        const void **keys = calloc(cap, sizeof *keys);
        int64_t *values = calloc(cap, sizeof *values);
        if (!keys || !values) {
            free(keys);
            free(values);
            return false;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i])
                continue;
            size_t j = pm_ptrmap_slot(m->keys[i], cap);
            while (keys[j])
                j = (j + 1) & (cap - 1);
            keys[j] = m->keys[i];
            values[j] = m->values[i];
        }
        free(m->keys);
        free(m->values);
        m->keys = keys;
        m->values = values;
        m->cap = cap;
    }
    size_t i = pm_ptrmap_slot(key, m->cap);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        m->count++;
    m->keys[i] = key;
    m->values[i] = value;
    return true;
}

static inline void pm_ptrmap_free(pm_ptrmap *m)
{
    free(m->keys);
    free(m->values);
    m->keys = NULL;
    m->values = NULL;
    m->cap = m->count = 0;
}

#endif
