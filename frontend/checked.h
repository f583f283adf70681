/* checked.h — overflow-checked int64 arithmetic for sizes, extents, stride spans and
 * byte counts.
 *
 * Promise: every function computes the exact mathematical result into *out and returns
 * true, or returns false (leaving *out unspecified) when the result does not fit an
 * int64. Nothing here is undefined behaviour for any input. So the interpreter, the
 * signature checks and the parameter evaluation answer hostile values with an error
 * instead of a wrapped size (R = INT64_MIN, strides of INT64_MAX / 4, extents of 2^32).
 * The compiled code follows the same rule with LLVM's *.with.overflow intrinsics
 * (codegen/llvm/module.c).
 */
#ifndef PM_FRONTEND_CHECKED_H
#define PM_FRONTEND_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

static inline bool pm_ck_add(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}

static inline bool pm_ck_sub(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_sub_overflow(a, b, out);
}

static inline bool pm_ck_mul(int64_t a, int64_t b, int64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}

static inline bool pm_ck_neg(int64_t a, int64_t *out)
{
    return !__builtin_sub_overflow((int64_t)0, a, out);
}

/* Floor division; b == 0 gives 0 (the bound language's rule). INT64_MIN / -1 overflows. */
static inline bool pm_ck_floordiv(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0) {
        *out = 0;
        return true;
    }
    if (a == INT64_MIN && b == -1)
        return false;
    int64_t q = a / b;
    if (a % b != 0 && (a < 0) != (b < 0))
        q--;
    *out = q;
    return true;
}

/* Floor modulo (the divisor's sign); b == 0 gives 0. Never overflows. */
static inline bool pm_ck_floormod(int64_t a, int64_t b, int64_t *out)
{
    if (b == 0 || b == -1) {
        *out = 0;
        return true;
    }
    int64_t r = a % b;
    if (r != 0 && (r < 0) != (b < 0))
        r += b;
    *out = r;
    return true;
}

/* Number of points lb, lb+step, ... <= ub (0 when ub < lb); step >= 1. */
static inline bool pm_ck_extent(int64_t lb, int64_t ub, int64_t step, int64_t *out)
{
    if (ub < lb) {
        *out = 0;
        return true;
    }
    /* ub - lb may not fit an int64 even when both do; compute it unsigned. */
    uint64_t span = (uint64_t)ub - (uint64_t)lb;
    uint64_t n = span / (uint64_t)(step > 0 ? step : 1) + 1;
    if (n == 0 || n > (uint64_t)INT64_MAX)
        return false;
    *out = (int64_t)n;
    return true;
}

/* Product of n extents (each >= 0); 0 if any is 0, even when the others are huge. */
static inline bool pm_ck_count(int n, const int64_t *extent, int64_t *out)
{
    for (int d = 0; d < n; d++) {
        if (extent[d] == 0) {
            *out = 0;
            return true;
        }
    }
    int64_t count = 1;
    for (int d = 0; d < n; d++)
        if (extent[d] < 0 || !pm_ck_mul(count, extent[d], &count))
            return false;
    *out = count;
    return true;
}

#endif
