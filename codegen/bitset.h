/* bitset.h — sets of stages as arrays of 64-bit words, sized to the pipeline.
 *
 * Promise: each function reads or writes `words` words (pm_bits_words of the stage
 * count), so a set has room for any number of stages. The grouping search keys its memo
 * tables on these words (codegen/group_dp.c).
 */
#ifndef PM_CODEGEN_BITSET_H
#define PM_CODEGEN_BITSET_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef uint64_t pm_word;

static inline int pm_bits_words(int n) { return (n + 63) / 64; }

static inline bool pm_bit_get(const pm_word *b, int i)
{
    return (b[i / 64] >> (i % 64)) & 1u;
}

static inline void pm_bit_set(pm_word *b, int i) { b[i / 64] |= (pm_word)1 << (i % 64); }

static inline void pm_bits_clear(pm_word *b, int words)
{
    memset(b, 0, (size_t)words * sizeof *b);
}

static inline void pm_bits_copy(pm_word *to, const pm_word *from, int words)
{
    memcpy(to, from, (size_t)words * sizeof *to);
}

/* to |= from */
static inline void pm_bits_or(pm_word *to, const pm_word *from, int words)
{
    for (int i = 0; i < words; i++)
        to[i] |= from[i];
}

/* to &= ~from */
static inline void pm_bits_minus(pm_word *to, const pm_word *from, int words)
{
    for (int i = 0; i < words; i++)
        to[i] &= ~from[i];
}

/* a is a subset of b */
static inline bool pm_bits_subset(const pm_word *a, const pm_word *b, int words)
{
    for (int i = 0; i < words; i++)
        if (a[i] & ~b[i])
            return false;
    return true;
}

static inline bool pm_bits_any(const pm_word *b, int words)
{
    for (int i = 0; i < words; i++)
        if (b[i])
            return true;
    return false;
}

static inline bool pm_bits_equal(const pm_word *a, const pm_word *b, int words)
{
    return memcmp(a, b, (size_t)words * sizeof *a) == 0;
}

static inline int pm_bits_count(const pm_word *b, int words)
{
    int n = 0;
    for (int i = 0; i < words; i++)
        n += __builtin_popcountll(b[i]);
    return n;
}

/* The highest member, or -1 for the empty set. */
static inline int pm_bits_last(const pm_word *b, int words)
{
    for (int i = words - 1; i >= 0; i--)
        if (b[i])
            return i * 64 + 63 - __builtin_clzll(b[i]);
    return -1;
}

/* The lowest member from i on, or -1. */
static inline int pm_bits_next(const pm_word *b, int words, int i)
{
    if (i < 0)
        i = 0;
    for (int k = i / 64; k < words; k++) {
        pm_word w = b[k];
        if (k == i / 64)
            w &= ~(pm_word)0 << (i % 64);
        if (w)
            return k * 64 + __builtin_ctzll(w);
    }
    return -1;
}

#endif
