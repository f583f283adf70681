/* alias.c — exact overlap tests for strided boxes (see alias.h).
 *
 * Both questions become one: does  sum_k c_k * w_k = T  have a solution with integer
 * 0 <= w_k <= h_k? Variables are the index differences (self-aliasing) or the indices of
 * both buffers plus the byte offset inside an element (overlap). Arithmetic is in
 * __int128: coefficients are below 2^63 (the caller checked the spans) and there are at
 * most 2 * PM_MAX_DIMS + 1 variables, so no sum or product here can overflow.
 */
#include "frontend/alias.h"
#include "frontend/checked.h"

#include <stdint.h>

typedef __int128 i128;

enum { MAX_VARS = 2 * PM_MAX_DIMS + 1, BUDGET = 1 << 20 };

typedef struct problem {
    int n;
    i128 c[MAX_VARS], h[MAX_VARS]; /* c > 0, h > 0 after normalize() */
} problem;

static i128 gcd128(i128 a, i128 b)
{
    if (a < 0)
        a = -a;
    if (b < 0)
        b = -b;
    while (b) {
        i128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static i128 floor_div128(i128 a, i128 b) /* b > 0 */
{
    i128 q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static i128 mod128(i128 a, i128 m) /* m > 0, result in [0, m) */
{
    i128 r = a % m;
    return r < 0 ? r + m : r;
}

/* x with a * x == 1 (mod m), for gcd(a, m) == 1, m >= 1. */
static i128 inverse128(i128 a, i128 m)
{
    if (m == 1)
        return 0;
    i128 r0 = mod128(a, m), r1 = m, x0 = 1, x1 = 0;
    while (r1) {
        i128 q = r0 / r1, t = r0 - q * r1;
        r0 = r1;
        r1 = t;
        t = x0 - q * x1;
        x0 = x1;
        x1 = t;
    }
    return mod128(x0, m);
}

/* Adds variable w in [lo, hi] with coefficient c to the problem (sum = *target). */
static void add_var(problem *p, i128 *target, i128 c, i128 lo, i128 hi)
{
    if (hi < lo)
        return; /* callers never pass empty ranges */
    /* w = lo + u, u in [0, hi - lo] */
    *target -= c * lo;
    i128 h = hi - lo;
    if (c < 0) { /* c * u = c * h - (-c) * (h - u) */
        *target -= c * h;
        c = -c;
    }
    if (c == 0 || h == 0)
        return;
    p->c[p->n] = c;
    p->h[p->n] = h;
    p->n++;
}

/* Exactly: c1 * w1 + c2 * w2 = t with 0 <= w1 <= h1, 0 <= w2 <= h2, c1, c2 > 0. */
static bool solve2(i128 c1, i128 h1, i128 c2, i128 h2, i128 t)
{
    i128 g = gcd128(c1, c2);
    if (t % g != 0)
        return false;
    c1 /= g;
    c2 /= g;
    t /= g;
    /* w1 = r (mod c2) */
    i128 r = mod128(mod128(t, c2) * inverse128(c1, c2), c2);
    i128 lo = t - c2 * h2; /* c1 * w1 >= t - c2 * h2 */
    lo = lo <= 0 ? 0 : (lo + c1 - 1) / c1;
    i128 hi = floor_div128(t, c1);
    if (hi > h1)
        hi = h1;
    if (hi < lo)
        return false;
    i128 first = lo + mod128(r - lo, c2);
    return first <= hi;
}

/* Variables are sorted by decreasing coefficient; k is the first one still free. */
static pm_alias search(const problem *p, int k, i128 t, long *budget)
{
    int n = p->n - k;
    if (n == 0)
        return t == 0 ? PM_ALIAS_YES : PM_ALIAS_NO;
    i128 max = 0, g = 0;
    for (int i = k; i < p->n; i++) {
        max += p->c[i] * p->h[i];
        g = gcd128(g, p->c[i]);
    }
    if (t < 0 || t > max || t % g != 0)
        return PM_ALIAS_NO;
    if (n == 1)
        return t / p->c[k] <= p->h[k] ? PM_ALIAS_YES : PM_ALIAS_NO;
    if (n == 2)
        return solve2(p->c[k], p->h[k], p->c[k + 1], p->h[k + 1], t) ? PM_ALIAS_YES
                                                                      : PM_ALIAS_NO;
    i128 c = p->c[k], rest_max = max - c * p->h[k], rest_g = 0;
    for (int i = k + 1; i < p->n; i++)
        rest_g = gcd128(rest_g, p->c[i]);
    /* c * w must leave a remainder the rest can make: in [0, rest_max] and a multiple
     * of rest_g, so w runs over an arithmetic progression. */
    i128 lo = t - rest_max;
    lo = lo <= 0 ? 0 : (lo + c - 1) / c;
    i128 hi = t / c < p->h[k] ? t / c : p->h[k];
    i128 gg = gcd128(c, rest_g), m = rest_g / gg;
    i128 r = mod128((t / gg) % m * inverse128(c / gg, m), m);
    bool unknown = false;
    for (i128 w = lo + mod128(r - lo, m); w <= hi; w += m) {
        if (--*budget <= 0)
            return PM_ALIAS_MAYBE;
        pm_alias a = search(p, k + 1, t - c * w, budget);
        if (a == PM_ALIAS_YES)
            return a;
        unknown |= a == PM_ALIAS_MAYBE;
    }
    return unknown ? PM_ALIAS_MAYBE : PM_ALIAS_NO;
}

static pm_alias solve(problem *p, i128 t)
{
    /* largest coefficients first: they have the fewest values to try */
    for (int i = 1; i < p->n; i++)
        for (int j = i; j > 0 && p->c[j] > p->c[j - 1]; j--) {
            i128 c = p->c[j], h = p->h[j];
            p->c[j] = p->c[j - 1];
            p->h[j] = p->h[j - 1];
            p->c[j - 1] = c;
            p->h[j - 1] = h;
        }
    long budget = BUDGET;
    return search(p, 0, t, &budget);
}

bool pm_alias_span(const pm_buffer *b, const int64_t *stride, int64_t *lo, int64_t *hi)
{
    int64_t first = 0, last = 0, esize = (int64_t)pm_type_size(b->type);
    for (int d = 0; d < b->ndims; d++) {
        int64_t reach;
        if (b->extent[d] <= 0 || !pm_ck_mul(b->extent[d] - 1, stride[d], &reach) ||
            !pm_ck_add(reach < 0 ? first : last, reach, reach < 0 ? &first : &last))
            return false;
    }
    int64_t base = (int64_t)(intptr_t)b->data;
    return pm_ck_mul(first, esize, &first) && pm_ck_add(last, 1, &last) &&
           pm_ck_mul(last, esize, &last) && pm_ck_add(base, first, lo) &&
           pm_ck_add(base, last, hi);
}

pm_alias pm_alias_overlap(const pm_buffer *a, const int64_t *stride_a, const pm_buffer *b,
                          const int64_t *stride_b)
{
    int64_t alo, ahi, blo, bhi;
    if (!pm_alias_span(a, stride_a, &alo, &ahi) || !pm_alias_span(b, stride_b, &blo, &bhi))
        return PM_ALIAS_MAYBE;
    if (ahi <= blo || bhi <= alo)
        return PM_ALIAS_NO;
    /* Element i of a starts at pa = A + ea * sum(i_d * sa_d), element j of b at
     * pb = B + eb * sum(j_d * sb_d); they share a byte iff pa - pb = c with
     * -(ea - 1) <= c <= eb - 1:  ea*sum(i*sa) - eb*sum(j*sb) - c = B - A. */
    i128 ea = (i128)pm_type_size(a->type), eb = (i128)pm_type_size(b->type);
    problem p = {0};
    i128 t = (i128)(intptr_t)b->data - (i128)(intptr_t)a->data;
    for (int d = 0; d < a->ndims; d++)
        add_var(&p, &t, ea * stride_a[d], 0, a->extent[d] - 1);
    for (int d = 0; d < b->ndims; d++)
        add_var(&p, &t, -eb * stride_b[d], 0, b->extent[d] - 1);
    add_var(&p, &t, -1, -(ea - 1), eb - 1);
    return solve(&p, t);
}

pm_alias pm_alias_self(const pm_buffer *b, const int64_t *stride)
{
    int64_t lo, hi;
    if (!pm_alias_span(b, stride, &lo, &hi))
        return PM_ALIAS_MAYBE;
    /* Fast path: sorted by |stride|, each stride steps over everything the smaller ones
     * reach (row-major, column-major, padded rows): no two indices meet. */
    int order[PM_MAX_DIMS], n = 0;
    for (int d = 0; d < b->ndims; d++)
        if (b->extent[d] > 1)
            order[n++] = d;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            i128 x = stride[order[j]], y = stride[order[j - 1]];
            if ((x < 0 ? -x : x) >= (y < 0 ? -y : y))
                break;
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    i128 reach = 0;
    bool injective = true;
    for (int i = 0; i < n && injective; i++) {
        i128 s = stride[order[i]];
        s = s < 0 ? -s : s;
        injective = s > reach;
        reach += s * (b->extent[order[i]] - 1);
    }
    if (injective)
        return PM_ALIAS_NO;
    /* Exactly: is there a difference delta != 0 of two indices with sum(delta * s) = 0?
     * Take k as its first nonzero dimension, with delta_k > 0. */
    bool unknown = false;
    for (int k = 0; k < b->ndims; k++) {
        if (b->extent[k] <= 1)
            continue;
        problem p = {0};
        i128 t = 0;
        add_var(&p, &t, stride[k], 1, b->extent[k] - 1);
        for (int d = k + 1; d < b->ndims; d++)
            add_var(&p, &t, stride[d], -(b->extent[d] - 1), b->extent[d] - 1);
        pm_alias a = solve(&p, t);
        if (a == PM_ALIAS_YES)
            return a;
        unknown |= a == PM_ALIAS_MAYBE;
    }
    return unknown ? PM_ALIAS_MAYBE : PM_ALIAS_NO;
}
