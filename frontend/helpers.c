/* helpers.c — the builder helpers of polymage.h: domains (pm_func_interval, pm_func_var,
 * pm_func_like), boundary conditions (pm_boundary_new, pm_pad), pm_crop, N-D stencils
 * (pm_stencil_nd, pm_stencil_func) and 2x down/up-sampling.
 *
 * Everything here is written with the public builders: the functions made are ordinary
 * functions with cases, so validation, the interpreter and the compiler need nothing
 * new. The one design rule is that boundary conditions are cases with affine conditions
 * (interior / below / above per dimension): the poly phase makes each case a statement of
 * its own, so the interior loop reads f directly and only the thin border pieces compute
 * clamped, mirrored or wrapped coordinates. */
#include "frontend/ir.h"

#include <stdio.h>
#include <string.h>

/* ---- domains ----------------------------------------------------------------------- */

static bool check_dim(pm_func *f, const char *what, int d)
{
    if (d < 0 || d >= f->ndims) {
        pm_ctx_error(f->ctx, PM_ERR_INVALID, "%s of %s: dimension %d does not exist (%s has %d, "
                     "numbered from 0)", what, f->name, d, f->name, f->ndims);
        return false;
    }
    return true;
}

/* f's lower and inclusive upper bound in dimension d (images: 0 and extent - 1). */
static void bounds(pm_func *f, int d, pm_expr **lb, pm_expr **ub)
{
    if (f->kind == PM_FUNC_IMAGE) {
        *lb = pm_int(f->ctx, 0);
        *ub = pm_addi(f->extents[d], -1);
    } else {
        *lb = f->intervals[d]->lb;
        *ub = f->intervals[d]->ub;
    }
}

pm_interval *pm_func_interval(pm_func *f, int d)
{
    if (!f || !check_dim(f, "interval", d))
        return NULL;
    if (f->kind != PM_FUNC_IMAGE)
        return f->intervals[d];
    pm_expr *lb, *ub;
    bounds(f, d, &lb, &ub);
    return pm_interval_new(lb, ub, 1);
}

pm_expr *pm_func_var(pm_func *f, int d)
{
    if (!f || !check_dim(f, "variable", d))
        return NULL;
    if (f->kind == PM_FUNC_IMAGE) {
        pm_ctx_error(f->ctx, PM_ERR_MISUSE, "variable of %s: %s is an image, it has no "
                     "variables (pm_func_like makes a function over its domain)", f->name,
                     f->name);
        return NULL;
    }
    return f->vars[d];
}

/* f's variables, or new ones "x0", "x1", ... for an image. */
static bool vars_of(pm_func *f, pm_expr **vars)
{
    for (int d = 0; d < f->ndims; d++) {
        if (f->kind == PM_FUNC_IMAGE) {
            char name[16];
            snprintf(name, sizeof name, "x%d", d);
            vars[d] = pm_var(f->ctx, name);
        } else {
            vars[d] = f->vars[d];
        }
        if (!vars[d])
            return false;
    }
    return true;
}

/* A function over ivs (f's intervals where ivs[d] is NULL) with f's variables. */
static pm_func *func_over(pm_func *f, const char *name, pm_type type,
                          pm_interval *const *ivs, pm_expr **vars)
{
    pm_interval *dom[PM_MAX_DIMS + 1] = {0};
    if (!vars_of(f, vars))
        return NULL;
    for (int d = 0; d < f->ndims; d++) {
        dom[d] = ivs && ivs[d] ? ivs[d] : pm_func_interval(f, d);
        if (!dom[d])
            return NULL;
    }
    return pm_func_new(f->ctx, name, type, f->ndims, vars, dom);
}

pm_func *pm_func_like(pm_func *f, const char *name, pm_type type)
{
    pm_expr *vars[PM_MAX_DIMS + 1];
    return f ? func_over(f, name, type, NULL, vars) : NULL;
}

/* Checks a list of distinct dimensions of f; chosen[d] is set for each. */
static bool check_dims(pm_func *f, const char *what, int n, const int *dims, bool *chosen)
{
    memset(chosen, 0, sizeof(bool) * PM_MAX_DIMS);
    if (n < 1 || n > f->ndims || !dims) {
        pm_ctx_error(f->ctx, n < 1 || n > f->ndims ? PM_ERR_INVALID : PM_ERR_MISUSE,
                     "%s over %s: %d chosen dimension%s (%s has %d)%s", what, f->name, n,
                     n == 1 ? "" : "s", f->name, f->ndims, dims ? "" : ", dimension list NULL");
        return false;
    }
    for (int k = 0; k < n; k++) {
        if (!check_dim(f, what, dims[k]))
            return false;
        if (chosen[dims[k]]) {
            pm_ctx_error(f->ctx, PM_ERR_INVALID, "%s over %s: dimension %d is chosen twice",
                         what, f->name, dims[k]);
            return false;
        }
        chosen[dims[k]] = true;
    }
    return true;
}

/* ---- boundary conditions -------------------------------------------------------------- */

/* The coordinate of f read for coordinate x outside [lb, ub] of a dimension of n points. */
static pm_expr *outside_index(pm_boundary kind, pm_expr *x, pm_expr *lb, pm_expr *ub,
                              pm_expr *n)
{
    pm_expr *rel = pm_sub(x, lb), *m, *period;
    switch (kind) {
    case PM_BOUNDARY_CLAMP:
        return pm_clamp(x, lb, ub);
    case PM_BOUNDARY_WRAP:
        return pm_add(lb, pm_mod(rel, n));
    case PM_BOUNDARY_MIRROR: /* period 2n: 0 .. n-1, then n-1 .. 0 */
        period = pm_muli(n, 2);
        m = pm_mod(rel, period);
        return pm_add(lb, pm_min(m, pm_sub(pm_addi(period, -1), m)));
    case PM_BOUNDARY_MIRROR_INTERIOR: /* period 2n-2: 0 .. n-1, then n-2 .. 1; n = 1 gives
                                         x mod 0 = 0 (integer division by zero is 0) */
        period = pm_addi(pm_muli(n, 2), -2);
        m = pm_mod(rel, period);
        return pm_add(lb, pm_min(m, pm_sub(period, m)));
    default:
        return NULL;
    }
}

/* The condition, its value and the domain list agree with each other. */
static bool boundary_args_ok(const pm_func *f, pm_boundary kind, const pm_expr *value,
                             pm_interval *const *domain)
{
    pm_ctx *ctx = f->ctx;
    if ((int)kind < PM_BOUNDARY_CLAMP || (int)kind > PM_BOUNDARY_CONSTANT) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "boundary of %s: unknown condition %d", f->name,
                     (int)kind);
        return false;
    }
    if (value && kind != PM_BOUNDARY_CONSTANT) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "boundary of %s: a value is only for "
                     "PM_BOUNDARY_CONSTANT", f->name);
        return false;
    }
    if (!domain && f->ndims > 0) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "boundary of %s: the domain list is NULL", f->name);
        return false;
    }
    return true;
}

/* f's bounds and number of points in each dimension the new domain chooses; how many it
 * chooses, or -1 (an error recorded) for one that is stepped. */
static int chosen_bounds(pm_func *f, pm_interval *const *domain, pm_expr **lb, pm_expr **ub,
                         pm_expr **n)
{
    int chosen = 0;
    for (int d = 0; d < f->ndims; d++) {
        if (!domain[d])
            continue;
        if (f->kind != PM_FUNC_IMAGE && f->intervals[d]->step != 1) {
            pm_ctx_error(f->ctx, PM_ERR_UNSUPPORTED, "boundary of %s: dimension %d has step "
                         "%lld; boundary conditions need step 1", f->name, d,
                         (long long)f->intervals[d]->step);
            return -1;
        }
        bounds(f, d, &lb[d], &ub[d]);
        n[d] = pm_addi(pm_sub(ub[d], lb[d]), 1);
        chosen++;
    }
    return chosen;
}

/* The cases of the extended function, into cases; returns their number. The interior
 * reads f directly; then, per chosen dimension d, one case below and one above f, with
 * the chosen dimensions before d inside, so that the cases are disjoint and cover the
 * rest of the domain. */
static int boundary_cases(pm_func *f, pm_boundary kind, pm_expr *value,
                          pm_interval *const *domain, pm_expr **vars, pm_expr **lb,
                          pm_expr **ub, pm_expr **n, pm_case **cases)
{
    int ncases = 0;
    pm_expr *inside = NULL;
    for (int d = 0; d < f->ndims; d++)
        if (domain[d]) {
            pm_expr *c = pm_between(vars[d], lb[d], ub[d]);
            inside = inside ? pm_and(inside, c) : c;
        }
    cases[ncases++] = pm_case_new(inside, pm_call_n(f, f->ndims, vars));
    pm_expr *before = NULL;
    for (int d = 0; d < f->ndims; d++) {
        if (!domain[d])
            continue;
        for (int side = 0; side < 2; side++) {
            pm_expr *c = side == 0 ? pm_lt(vars[d], lb[d]) : pm_gt(vars[d], ub[d]);
            if (before)
                c = pm_and(before, c);
            pm_expr *v = value;
            if (kind != PM_BOUNDARY_CONSTANT) {
                pm_expr *idx[PM_MAX_DIMS + 1];
                for (int e = 0; e < f->ndims; e++)
                    idx[e] = !domain[e] || e < d ? vars[e]
                                                 : outside_index(kind, vars[e], lb[e], ub[e], n[e]);
                v = pm_call_n(f, f->ndims, idx);
            }
            cases[ncases++] = pm_case_new(c, v);
        }
        pm_expr *in_d = pm_between(vars[d], lb[d], ub[d]);
        before = before ? pm_and(before, in_d) : in_d;
    }
    return ncases;
}

pm_func *pm_boundary_new(pm_func *f, const char *name, pm_boundary kind, pm_expr *value,
                         pm_interval *const *domain)
{
    if (!f || !boundary_args_ok(f, kind, value, domain))
        return NULL;
    pm_ctx *ctx = f->ctx;
    pm_expr *lb[PM_MAX_DIMS], *ub[PM_MAX_DIMS], *n[PM_MAX_DIMS];
    int chosen = chosen_bounds(f, domain, lb, ub, n);
    if (chosen < 0)
        return NULL;
    pm_expr *vars[PM_MAX_DIMS + 1];
    pm_func *g = func_over(f, name, f->type, domain, vars);
    if (!g)
        return NULL;
    if (chosen == 0) { /* nothing to extend: a copy */
        pm_func_define_expr(g, pm_call_n(f, f->ndims, vars));
        return pm_ctx_recorded(ctx) == PM_OK ? g : NULL;
    }
    if (kind == PM_BOUNDARY_CONSTANT && !value)
        value = pm_int(ctx, 0);
    pm_case *cases[2 * PM_MAX_DIMS + 1];
    int ncases = boundary_cases(f, kind, value, domain, vars, lb, ub, n, cases);
    if (pm_func_define(g, ncases, cases) != PM_OK)
        return NULL;
    return g;
}

pm_func *pm_pad(pm_func *f, const char *name, pm_boundary kind, pm_expr *value, int ndims,
                const int *dims, int64_t pad)
{
    if (!f)
        return NULL;
    bool chosen[PM_MAX_DIMS];
    if (!check_dims(f, "pad", ndims, dims, chosen))
        return NULL;
    if (pad < 0) {
        pm_ctx_error(f->ctx, PM_ERR_INVALID, "pad of %s: padding %lld is negative (pm_crop "
                     "narrows a domain)", f->name, (long long)pad);
        return NULL;
    }
    pm_interval *dom[PM_MAX_DIMS + 1] = {0};
    for (int d = 0; d < f->ndims; d++) {
        if (!chosen[d])
            continue;
        pm_expr *lb, *ub;
        bounds(f, d, &lb, &ub);
        dom[d] = pm_interval_new(pm_addi(lb, -pad), pm_addi(ub, pad), 1);
        if (!dom[d])
            return NULL;
    }
    return pm_boundary_new(f, name, kind, value, dom);
}

pm_func *pm_crop(pm_func *f, const char *name, pm_interval *const *window)
{
    if (!f)
        return NULL;
    if (!window && f->ndims > 0) {
        pm_ctx_error(f->ctx, PM_ERR_MISUSE, "crop of %s: the window list is NULL", f->name);
        return NULL;
    }
    pm_expr *vars[PM_MAX_DIMS + 1];
    pm_func *g = func_over(f, name, f->type, window, vars);
    if (!g || pm_func_define_expr(g, pm_call_n(f, f->ndims, vars)) != PM_OK)
        return NULL;
    return g;
}

/* ---- stencils and sampling ------------------------------------------------------------ */

/* The type taps of f are summed in (see pm_stencil_nd in polymage.h). */
static pm_type sum_type(pm_type t)
{
    if (pm_type_is_float(t))
        return t;
    return pm_type_bits(t) <= 16 ? PM_F32 : PM_F64;
}

/* The coordinates of tap w (row-major over the kernel, the last axis fastest) around the
 * centre `at`: at moved by i_k - size[k]/2 along dims[k]. */
static void tap_index(const pm_func *f, pm_expr *const *at, int nk, const int *dims,
                      const int *size, int64_t w, pm_expr **idx)
{
    for (int d = 0; d < f->ndims; d++)
        idx[d] = at[d];
    for (int k = nk - 1; k >= 0; k--) {
        int off = (int)(w % size[k]) - size[k] / 2;
        w /= size[k];
        if (off)
            idx[dims[k]] = pm_addi(at[dims[k]], off);
    }
}

/* w * f(idx), with f's value converted to the sum type; w == 1 skips the product. */
static pm_expr *tap(pm_func *f, pm_expr **idx, double w)
{
    pm_ctx *ctx = f->ctx;
    pm_type st = sum_type(f->type);
    pm_expr *v = pm_call_n(f, f->ndims, idx);
    if (st != f->type)
        v = pm_cast(st, v);
    if (w == 1)
        return v;
    /* a float function keeps pm_stencil's weak literal (same expression, same bits);
     * the sum type of an integer function is strong already */
    return pm_mul(pm_float(ctx, w), v);
}

static pm_expr *scaled(pm_func *f, pm_expr *sum, double scale)
{
    if (!sum)
        return pm_const(f->ctx, sum_type(f->type), 0);
    return scale == 1 ? sum : pm_mul(sum, pm_float(f->ctx, scale));
}

pm_expr *pm_stencil_nd(pm_func *f, pm_expr *const *at, double scale, int nk, const int *dims,
                       const int *size, const double *weights)
{
    if (!f)
        return NULL;
    pm_ctx *ctx = f->ctx;
    bool chosen[PM_MAX_DIMS];
    if (!check_dims(f, "stencil", nk, dims, chosen))
        return NULL;
    if (!at || !size || !weights) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "stencil over %s: missing %s", f->name,
                     !at ? "centre" : !size ? "kernel size" : "weights");
        return NULL;
    }
    int64_t total = 1;
    for (int k = 0; k < nk; k++) {
        if (size[k] < 1 || size[k] > 1024) {
            pm_ctx_error(ctx, PM_ERR_INVALID, "stencil over %s: kernel axis %d has size %d "
                         "(1 .. 1024)", f->name, k, size[k]);
            return NULL;
        }
        total *= size[k];
        if (total > (1 << 20)) {
            pm_ctx_error(ctx, PM_ERR_INVALID, "stencil over %s: more than 2^20 kernel weights",
                         f->name);
            return NULL;
        }
    }
    for (int d = 0; d < f->ndims; d++)
        if (!at[d]) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "stencil over %s: centre coordinate %d is NULL",
                             f->name, d);
            return NULL;
        }
    pm_expr *sum = NULL;
    for (int64_t w = 0; w < total; w++) {
        if (weights[w] == 0)
            continue;
        pm_expr *idx[PM_MAX_DIMS + 1];
        tap_index(f, at, nk, dims, size, w, idx);
        pm_expr *t = tap(f, idx, weights[w]);
        sum = sum ? pm_add(sum, t) : t;
    }
    return scaled(f, sum, scale);
}

/* The exact integer form of pm_stencil_func (see polymage.h): for an integer f of at most
 * 16 bits, integer weights, a scale of 2^-k (k >= 0) and an integer result type, the taps
 * are summed in the narrowest of u16, i16, u32, i32 that holds every sum the types of f
 * allow, shifted right by k and clamped into the result type. Those are the values of
 * the float sum (exact in f32 below 2^24), truncated and saturated as a float stored
 * into an integer is, so only the speed changes: integer lanes, no conversions (a 5x5
 * blur of u8 ran 2.1x faster). NULL when the form does not apply (a float sum follows),
 * or on a misuse recorded in the context. */
static pm_expr *integer_stencil(pm_func *f, pm_expr *const *at, pm_type type, double scale,
                                int nk, const int *dims, const int *size,
                                const double *weights)
{
    if (pm_type_is_float(f->type) || pm_type_bits(f->type) > 16 || pm_type_is_float(type) ||
        type == PM_BOOL || f->type == PM_BOOL)
        return NULL;
    int shift = 0;
    while (shift < 31 && scale * (double)((int64_t)1 << shift) < 1)
        shift++;
    if (scale * (double)((int64_t)1 << shift) != 1)
        return NULL;
    int64_t total = 1;
    for (int k = 0; k < nk; k++) {
        if (size[k] < 1 || size[k] > 1024)
            return NULL; /* pm_stencil_nd reports it */
        total *= size[k];
        if (total > 4096)
            return NULL; /* a float sum: keeps the bound on the range below simple */
    }
    int64_t fmin = pm_type_is_signed(f->type) ? -((int64_t)1 << (pm_type_bits(f->type) - 1)) : 0;
    int64_t fmax = pm_type_is_signed(f->type) ? ((int64_t)1 << (pm_type_bits(f->type) - 1)) - 1
                                              : ((int64_t)1 << pm_type_bits(f->type)) - 1;
    int64_t lo = 0, hi = 0; /* every partial sum lies inside [lo, hi]: each tap's range holds 0 */
    for (int64_t w = 0; w < total; w++) {
        double wv = weights[w];
        if (wv != wv || wv < -65536 || wv > 65536 || wv != (double)(int64_t)wv)
            return NULL;
        int64_t iw = (int64_t)wv; /* |iw| * 2^16 * 4096 < 2^45: no overflow */
        lo += iw > 0 ? iw * fmin : iw * fmax;
        hi += iw > 0 ? iw * fmax : iw * fmin;
    }
    if (shift && lo < 0)
        return NULL; /* >> rounds down, the float store toward zero */
    pm_type st = lo >= 0 ? (hi <= UINT16_MAX ? PM_U16 : hi <= UINT32_MAX ? PM_U32 : PM_BOOL)
                         : (lo >= INT16_MIN && hi <= INT16_MAX ? PM_I16
                            : lo >= INT32_MIN && hi <= INT32_MAX ? PM_I32 : PM_BOOL);
    if (st == PM_BOOL)
        return NULL;
    pm_ctx *ctx = f->ctx;
    pm_expr *sum = NULL;
    for (int64_t w = 0; w < total; w++) {
        if (weights[w] == 0)
            continue;
        pm_expr *idx[PM_MAX_DIMS + 1];
        tap_index(f, at, nk, dims, size, w, idx);
        pm_expr *t = pm_cast(st, pm_call_n(f, f->ndims, idx));
        if (weights[w] != 1)
            t = pm_mul(pm_const(ctx, st, weights[w]), t);
        sum = sum ? pm_add(sum, t) : t;
    }
    if (!sum)
        sum = pm_const(ctx, st, 0);
    if (shift) {
        sum = pm_shr(sum, pm_const(ctx, st, shift));
        lo >>= shift;
        hi >>= shift;
    }
    int bits = pm_type_bits(type);
    int64_t tmin = pm_type_is_signed(type) ? (bits == 64 ? INT64_MIN : -((int64_t)1 << (bits - 1))) : 0;
    int64_t tmax = pm_type_is_signed(type) ? (bits == 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1)
                                           : (bits >= 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << bits) - 1));
    if (hi > tmax)
        sum = pm_min(sum, pm_const(ctx, st, (double)tmax));
    if (lo < tmin)
        sum = pm_max(sum, pm_const(ctx, st, (double)tmin));
    return st == type ? sum : pm_cast(type, sum);
}

pm_func *pm_stencil_func(pm_func *f, const char *name, pm_type type, double scale, int nk,
                         const int *dims, const int *size, const double *weights)
{
    if (!f)
        return NULL;
    bool chosen[PM_MAX_DIMS];
    if (!check_dims(f, "stencil", nk, dims, chosen))
        return NULL;
    if (!size) {
        pm_ctx_error(f->ctx, PM_ERR_MISUSE, "stencil over %s: missing kernel size", f->name);
        return NULL;
    }
    pm_interval *dom[PM_MAX_DIMS + 1] = {0};
    for (int k = 0; k < nk; k++) {
        int d = dims[k];
        if (f->kind != PM_FUNC_IMAGE && f->intervals[d]->step != 1) {
            pm_ctx_error(f->ctx, PM_ERR_UNSUPPORTED, "stencil over %s: dimension %d has step "
                         "%lld; pm_stencil_func needs step 1", f->name, d,
                         (long long)f->intervals[d]->step);
            return NULL;
        }
        if (size[k] < 1)
            break; /* pm_stencil_nd reports it */
        pm_expr *lb, *ub;
        bounds(f, d, &lb, &ub);
        dom[d] = pm_interval_new(pm_addi(lb, size[k] / 2),
                                 pm_addi(ub, -(size[k] - 1 - size[k] / 2)), 1);
    }
    pm_expr *vars[PM_MAX_DIMS + 1];
    pm_func *g = func_over(f, name, type, dom, vars);
    if (!g)
        return NULL;
    pm_expr *v = integer_stencil(f, vars, type, scale, nk, dims, size, weights);
    if (!v && pm_ctx_recorded(f->ctx) == PM_OK)
        v = pm_stencil_nd(f, vars, scale, nk, dims, size, weights);
    if (!v || pm_func_define_expr(g, v) != PM_OK)
        return NULL;
    return g;
}

/* Checks the sampling helpers' common arguments: dims distinct, step 1. */
static bool check_sampling(pm_func *f, const char *what, int ndims, const int *dims,
                           bool *chosen)
{
    if (!check_dims(f, what, ndims, dims, chosen))
        return false;
    for (int d = 0; d < f->ndims; d++)
        if (chosen[d] && f->kind != PM_FUNC_IMAGE && f->intervals[d]->step != 1) {
            pm_ctx_error(f->ctx, PM_ERR_UNSUPPORTED, "%s of %s: dimension %d has step %lld; "
                         "2x sampling needs step 1", what, f->name, d,
                         (long long)f->intervals[d]->step);
            return false;
        }
    return true;
}

pm_func *pm_downsample(pm_func *f, const char *name, pm_type type, int ndims, const int *dims,
                       int n, const double *weights, double scale)
{
    if (!f)
        return NULL;
    pm_ctx *ctx = f->ctx;
    bool chosen[PM_MAX_DIMS];
    if (!check_sampling(f, "downsample", ndims, dims, chosen))
        return NULL;
    if (n < 1 || n > 64) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "downsample of %s: %d taps (1 .. 64)", f->name, n);
        return NULL;
    }
    double w[64];
    if (weights) {
        memcpy(w, weights, sizeof(double) * (size_t)n);
    } else { /* binomial, normalized: one row of Pascal's triangle / 2^(n-1) */
        w[0] = 1;
        for (int i = 1; i < n; i++) {
            w[i] = 0;
            for (int j = i; j > 0; j--)
                w[j] += w[j - 1];
        }
        scale = 1;
        for (int i = 1; i < n; i++)
            scale /= 2;
        for (int k = 1; k < ndims; k++)
            for (int i = 1; i < n; i++)
                scale /= 2;
    }
    int first = -(n - 1) / 2, last = first + n - 1; /* tap offsets */
    pm_interval *dom[PM_MAX_DIMS + 1] = {0};
    for (int d = 0; d < f->ndims; d++) {
        if (!chosen[d])
            continue;
        pm_expr *lb, *ub;
        bounds(f, d, &lb, &ub);
        /* 2x + first >= lb and 2x + last <= ub */
        dom[d] = pm_interval_new(pm_divi(pm_addi(lb, -first + 1), 2),
                                 pm_divi(pm_addi(ub, -last), 2), 1);
        if (!dom[d])
            return NULL;
    }
    pm_expr *vars[PM_MAX_DIMS + 1];
    pm_func *g = func_over(f, name, type, dom, vars);
    if (!g)
        return NULL;
    /* every combination of taps over the chosen dimensions, the last varying fastest */
    int64_t total = 1;
    for (int k = 0; k < ndims; k++)
        total *= n;
    if (total > (1 << 20)) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "downsample of %s: %d taps in %d dimensions is more "
                     "than 2^20 taps", f->name, n, ndims);
        return NULL;
    }
    pm_expr *sum = NULL;
    for (int64_t t = 0; t < total; t++) {
        pm_expr *idx[PM_MAX_DIMS + 1];
        for (int d = 0; d < f->ndims; d++)
            idx[d] = vars[d];
        double wt = 1;
        int64_t rest = t;
        for (int k = ndims - 1; k >= 0; k--) {
            int i = (int)(rest % n);
            rest /= n;
            wt *= w[i];
            idx[dims[k]] = pm_addi(pm_muli(vars[dims[k]], 2), first + i);
        }
        if (wt == 0)
            continue;
        pm_expr *e = tap(f, idx, wt);
        sum = sum ? pm_add(sum, e) : e;
    }
    if (pm_func_define_expr(g, scaled(f, sum, scale)) != PM_OK)
        return NULL;
    return g;
}

pm_func *pm_upsample(pm_func *f, const char *name, pm_type type, int ndims, const int *dims)
{
    if (!f)
        return NULL;
    pm_ctx *ctx = f->ctx;
    bool chosen[PM_MAX_DIMS];
    if (!check_sampling(f, "upsample", ndims, dims, chosen))
        return NULL;
    pm_interval *dom[PM_MAX_DIMS + 1] = {0};
    for (int d = 0; d < f->ndims; d++) {
        if (!chosen[d])
            continue;
        pm_expr *lb, *ub;
        bounds(f, d, &lb, &ub);
        dom[d] = pm_interval_new(pm_addi(pm_muli(lb, 2), 1), pm_muli(ub, 2), 1);
        if (!dom[d])
            return NULL;
    }
    pm_expr *vars[PM_MAX_DIMS + 1];
    pm_func *g = func_over(f, name, type, dom, vars);
    if (!g)
        return NULL;
    /* one case per parity pattern of the chosen dimensions (bit k: dims[k] odd) */
    int ncases = 1 << ndims;
    pm_case **cases = pm_ctx_alloc(ctx, sizeof(pm_case *) * (size_t)ncases);
    if (!cases)
        return NULL;
    for (int pat = 0; pat < ncases; pat++) {
        pm_expr *cond = NULL;
        for (int k = 0; k < ndims; k++) {
            pm_expr *c = pm_eq(pm_modi(vars[dims[k]], 2), pm_int(ctx, (pat >> k) & 1));
            cond = cond ? pm_and(cond, c) : c;
        }
        /* taps: in each chosen dimension the near sample i = x/2 (weight 3/4) and the far
         * one i -1 (even x) or i + 1 (odd x) (weight 1/4); 2^ndims products */
        pm_expr *sum = NULL;
        for (int t = 0; t < ncases; t++) {
            pm_expr *idx[PM_MAX_DIMS + 1];
            for (int d = 0; d < f->ndims; d++)
                idx[d] = vars[d];
            double wt = 1;
            for (int k = 0; k < ndims; k++) {
                bool far = (t >> k) & 1, odd = (pat >> k) & 1;
                pm_expr *half = pm_divi(vars[dims[k]], 2);
                idx[dims[k]] = far ? pm_addi(half, odd ? 1 : -1) : half;
                wt *= far ? 0.25 : 0.75;
            }
            pm_expr *e = tap(f, idx, wt);
            sum = sum ? pm_add(sum, e) : e;
        }
        cases[pat] = pm_case_new(cond, sum);
    }
    if (pm_func_define(g, ncases, cases) != PM_OK)
        return NULL;
    return g;
}
