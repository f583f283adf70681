/* cache.c — the kernel cache's keys, buckets, table and LRU order (see cache.h). */
#include "runtime/cache.h"

#include "runtime/kernel.h"

#include <llvm-c/Core.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- buckets ------------------------------------------------------------------------- */

/* r^k, snapped to the nearest integer when within a relative 1e-9 of it: pow(2^(1/4), 4)
 * is 2 only up to rounding, and the boundary must be exactly 2. */
static double boundary(double ratio, int64_t k)
{
    double p = pow(ratio, (double)k);
    double nearest = nearbyint(p);
    return fabs(p - nearest) <= 1e-9 * p ? nearest : p;
}

int64_t pm_cache_bucket(int64_t value, double ratio)
{
    if (value <= 0)
        return -1;
    double x = (double)value;
    int64_t k = (int64_t)floor(log(x) / log(ratio));
    if (k < 0)
        k = 0;
    /* log() may be off by one step right at a boundary; pow decides. */
    for (int i = 0; i < 4 && k > 0 && boundary(ratio, k) > x; i++)
        k--;
    for (int i = 0; i < 4 && boundary(ratio, k + 1) <= x; i++)
        k++;
    return k;
}

void pm_cache_buckets(const pm_canon *canon, const pm_value *values, double ratio,
                      int64_t *out)
{
    for (int i = 0; i < canon->nparams; i++)
        out[i] = canon->sized[i] ? pm_cache_bucket(values[i].i, ratio) : 0;
}

void pm_cache_environment(const char *triple, const char *cpu, const char *features,
                          char *buf, size_t size)
{
    unsigned major = 0, minor = 0, patch = 0;
    LLVMGetVersion(&major, &minor, &patch);
    snprintf(buf, size, "%s %s %s polymage-%s build-%s llvm-%u.%u.%u", triple, cpu, features,
             PM_VERSION, pm_build_id(), major, minor, patch);
}

/* ---- keys ---------------------------------------------------------------------------- */

char *pm_cache_key_text(const char *environment, const pm_cache_entry *e, bool upgraded,
                        size_t *len)
{
    const pm_cache_family *f = e->family;
    char head[PM_OPTIONS_KEY_MAX + 16], up[PM_OPTIONS_KEY_MAX];
    const char *key = f->key;
    if (upgraded) { /* the upgrade's options: its own kernel on disk beside the first */
        pm_options o = pm_options_upgraded(&f->options);
        if (pm_options_key(&o, up, sizeof up) < 0)
            return NULL;
        key = up;
    }
    uint64_t ratio_bits;
    memcpy(&ratio_bits, &e->ratio, sizeof ratio_bits);
    int n = snprintf(head, sizeof head, "\noptions %s\n", key);
    if (n < 0 || (size_t)n >= sizeof head)
        return NULL;
    size_t env_len = strlen(environment);
    /* "buckets r<16 hex>" + up to 21 characters per code, or "generic" */
    size_t bucket_room = 64 + (size_t)f->nparams * 22;
    size_t cap = env_len + (size_t)n + bucket_room + f->canon_len + 1;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    size_t at = 0;
    memcpy(text, environment, env_len);
    at += env_len;
    memcpy(text + at, head, (size_t)n);
    at += (size_t)n;
    if (e->generic) {
        at += (size_t)snprintf(text + at, cap - at, "buckets generic\n");
    } else {
        at += (size_t)snprintf(text + at, cap - at, "buckets r%016llx",
                               (unsigned long long)ratio_bits);
        for (int i = 0; i < f->nparams; i++)
            at += (size_t)snprintf(text + at, cap - at, " %lld", (long long)e->buckets[i]);
        at += (size_t)snprintf(text + at, cap - at, "\n");
    }
    memcpy(text + at, f->canon, f->canon_len);
    at += f->canon_len;
    text[at] = '\0';
    *len = at;
    return text;
}

static bool buckets_equal(const pm_cache_entry *e, const int64_t *buckets, double ratio,
                          int n)
{
    if (!buckets)
        return e->generic;
    if (e->generic || memcmp(&e->ratio, &ratio, sizeof ratio) != 0)
        return false;
    return n == 0 || memcmp(e->buckets, buckets, sizeof *buckets * (size_t)n) == 0;
}

/* ---- the table ----------------------------------------------------------------------- */

static bool table_grow(pm_cache *c)
{
    size_t size = c->table_size ? 2 * c->table_size : 16;
    pm_cache_family **table = calloc(size, sizeof *table);
    if (!table)
        return false;
    for (size_t i = 0; i < c->table_size; i++) {
        for (pm_cache_family *f = c->table[i], *next; f; f = next) {
            next = f->next;
            f->next = table[f->hash & (size - 1)];
            table[f->hash & (size - 1)] = f;
        }
    }
    free(c->table);
    c->table = table;
    c->table_size = size;
    return true;
}

pm_cache_family *pm_cache_family_get(pm_cache *c, const pm_canon *canon,
                                     const pm_options *options, bool create)
{
    char key[PM_OPTIONS_KEY_MAX];
    int key_len = pm_options_key(options, key, sizeof key);
    if (key_len < 0)
        return NULL;
    uint64_t h = pm_hash_bytes(canon->hash, key, (size_t)key_len);
    if (c->table_size) {
        for (pm_cache_family *f = c->table[h & (c->table_size - 1)]; f; f = f->next)
            if (f->hash == h && f->canon_len == canon->len && strcmp(f->key, key) == 0 &&
                memcmp(f->canon, canon->text, canon->len) == 0)
                return f;
    }
    if (!create)
        return NULL;
    if (c->nfamilies + 1 > c->table_size && !table_grow(c))
        return NULL;
    pm_cache_family *f = calloc(1, sizeof *f);
    char *text = malloc(canon->len + 1);
    bool *sized = malloc(sizeof *sized * (size_t)(canon->nparams + 1));
    if (!f || !text || !sized) {
        free(f);
        free(text);
        free(sized);
        return NULL;
    }
    memcpy(text, canon->text, canon->len + 1);
    if (canon->nparams)
        memcpy(sized, canon->sized, sizeof *sized * (size_t)canon->nparams);
    f->hash = h;
    f->canon = text;
    f->canon_len = canon->len;
    f->options = *options;
    memcpy(f->key, key, (size_t)key_len + 1);
    f->nparams = canon->nparams;
    f->sized = sized;
    f->next = c->table[h & (c->table_size - 1)];
    c->table[h & (c->table_size - 1)] = f;
    c->nfamilies++;
    return f;
}

static void family_remove(pm_cache *c, pm_cache_family *f)
{
    pm_cache_family **link = &c->table[f->hash & (c->table_size - 1)];
    while (*link != f)
        link = &(*link)->next;
    *link = f->next;
    c->nfamilies--;
    free(f->canon);
    free(f->sized);
    free(f);
}

void pm_cache_family_drop_if_empty(pm_cache *c, pm_cache_family *f)
{
    if (!f->entries)
        family_remove(c, f);
}

pm_cache_entry *pm_cache_entry_find(pm_cache_family *f, const int64_t *buckets, double ratio)
{
    for (pm_cache_entry *e = f->entries; e; e = e->family_next)
        if (buckets_equal(e, buckets, ratio, f->nparams))
            return e;
    return NULL;
}

pm_cache_entry *pm_cache_entry_add(pm_cache_family *f, const int64_t *buckets, double ratio,
                                   pm_entry_state state)
{
    pm_cache_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    if (buckets) {
        e->buckets = malloc(sizeof *buckets * (size_t)(f->nparams + 1));
        if (!e->buckets) {
            free(e);
            return NULL;
        }
        if (f->nparams)
            memcpy(e->buckets, buckets, sizeof *buckets * (size_t)f->nparams);
        e->ratio = ratio;
    } else {
        e->generic = true;
    }
    e->family = f;
    e->state = state;
    e->family_next = f->entries;
    f->entries = e;
    return e;
}

static void lru_unlink(pm_cache *c, pm_cache_entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else
        c->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else
        c->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_push_front(pm_cache *c, pm_cache_entry *e)
{
    e->lru_prev = NULL;
    e->lru_next = c->lru_head;
    if (c->lru_head)
        c->lru_head->lru_prev = e;
    c->lru_head = e;
    if (!c->lru_tail)
        c->lru_tail = e;
}

pm_kernel *pm_cache_entry_remove(pm_cache *c, pm_cache_entry *e)
{
    pm_kernel *k = NULL;
    if (e->state == PM_ENTRY_READY) {
        lru_unlink(c, e);
        c->kernels--;
        c->code_bytes -= (int64_t)e->kernel->code_bytes;
        k = e->kernel;
        k->cache_entry = NULL;
    }
    pm_cache_family *f = e->family;
    pm_cache_entry **link = &f->entries;
    while (*link != e)
        link = &(*link)->family_next;
    *link = e->family_next;
    free(e->buckets);
    free(e);
    if (!f->entries)
        family_remove(c, f);
    return k;
}

void pm_cache_entry_ready(pm_cache *c, pm_cache_entry *e, pm_kernel *k)
{
    e->state = PM_ENTRY_READY;
    e->kernel = k;
    e->job = NULL;
    k->cache_entry = e;
    c->kernels++;
    c->code_bytes += (int64_t)k->code_bytes;
    lru_push_front(c, e);
}

void pm_cache_touch(pm_cache *c, pm_cache_entry *e)
{
    if (c->lru_head != e) {
        lru_unlink(c, e);
        lru_push_front(c, e);
    }
}

pm_cache_entry *pm_cache_nearest(pm_cache_family *f, const int64_t *buckets)
{
    pm_cache_entry *best = NULL;
    uint64_t best_distance = UINT64_MAX;
    for (pm_cache_entry *e = f->entries; e; e = e->family_next) {
        if (e->state != PM_ENTRY_READY)
            continue;
        uint64_t d = UINT64_MAX - 1; /* generic: better than nothing, worse than any */
        if (!e->generic && buckets) {
            d = 0;
            for (int i = 0; i < f->nparams; i++) {
                int64_t a = e->buckets[i], b = buckets[i];
                uint64_t step = a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
                d = d + step < d ? UINT64_MAX - 2 : d + step; /* saturate, stay below generic */
            }
        }
        if (!best || d < best_distance) {
            best = e;
            best_distance = d;
        }
    }
    return best;
}

bool pm_cache_family_compiling(const pm_cache_family *f)
{
    for (const pm_cache_entry *e = f->entries; e; e = e->family_next)
        if (e->state == PM_ENTRY_COMPILING)
            return true;
    return false;
}

pm_cache_entry *pm_cache_victim(pm_cache *c, int max_kernels, int64_t max_code_bytes)
{
    if (c->kernels <= max_kernels && c->code_bytes <= max_code_bytes)
        return NULL;
    for (pm_cache_entry *e = c->lru_tail; e; e = e->lru_prev)
        if (e->kernel->refs == 1)
            return e;
    return NULL;
}

void pm_cache_free(pm_cache *c)
{
    free(c->table);
    c->table = NULL;
    c->table_size = c->nfamilies = 0;
}
