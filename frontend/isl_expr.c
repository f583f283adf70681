/* isl_expr.c — see isl_expr.h. Every helper that returns NULL for "not affine" frees
 * whatever it had built, so callers only ever own what they were given. */
#include "frontend/isl_expr.h"

#include <isl/local_space.h>
#include <isl/val.h>

#include <stdint.h>

/* ---- spaces ------------------------------------------------------------------------ */

__isl_give isl_space *pm_isl_param_space(isl_ctx *ctx, const pm_pipeline *p)
{
    int n = 0;
    for (int i = 0; i < p->nparams; i++)
        n += pm_type_is_int(p->params[i]->type);
    isl_space *space = isl_space_params_alloc(ctx, (unsigned)n);
    int k = 0;
    for (int i = 0; i < p->nparams; i++) {
        pm_expr *param = p->params[i];
        if (!pm_type_is_int(param->type))
            continue; /* float parameters never appear in affine expressions */
        space = isl_space_set_dim_id(space, isl_dim_param, (unsigned)k++,
                                     isl_id_alloc(ctx, param->name, param));
    }
    return space;
}

__isl_give isl_space *pm_isl_set_space(__isl_keep isl_space *params, int nvars,
                                       pm_expr *const *vars)
{
    isl_space *space = isl_space_set_from_params(isl_space_copy(params));
    space = isl_space_add_dims(space, isl_dim_set, (unsigned)nvars);
    for (int d = 0; d < nvars; d++)
        space = isl_space_set_dim_name(space, isl_dim_set, (unsigned)d, vars[d]->name);
    return space;
}

/* ---- affine expressions ------------------------------------------------------------- */

static __isl_give isl_pw_aff *constant(const pm_isl_env *env, long v)
{
    isl_ctx *ctx = isl_space_get_ctx(env->space);
    return isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(env->space)),
                                    isl_val_int_from_si(ctx, v));
}

__isl_give isl_pw_aff *pm_isl_var_pw_aff(const pm_isl_env *env, int d)
{
    isl_local_space *ls = isl_local_space_from_space(isl_space_copy(env->space));
    return isl_pw_aff_var_on_domain(ls, isl_dim_set, (unsigned)d);
}

static __isl_give isl_pw_aff *param_pw_aff(const pm_isl_env *env, const pm_expr *e)
{
    isl_ctx *ctx = isl_space_get_ctx(env->space);
    /* isl ids are unique per (name, user): this finds the dimension made for e. */
    isl_id *id = isl_id_alloc(ctx, e->name, (void *)(uintptr_t)e);
    int pos = isl_space_find_dim_by_id(env->space, isl_dim_param, id);
    isl_id_free(id);
    if (pos < 0)
        return NULL;
    isl_local_space *ls = isl_local_space_from_space(isl_space_copy(env->space));
    return isl_pw_aff_var_on_domain(ls, isl_dim_param, (unsigned)pos);
}

/* True when pa is one integer constant over its whole space; *v receives it. */
static bool const_of(__isl_keep isl_pw_aff *pa, long *v)
{
    if (isl_pw_aff_isa_aff(pa) != isl_bool_true)
        return false;
    isl_aff *aff = isl_pw_aff_as_aff(isl_pw_aff_copy(pa));
    bool ok = isl_aff_is_cst(aff) == isl_bool_true;
    if (ok) {
        isl_val *c = isl_aff_get_constant_val(aff);
        ok = isl_val_is_int(c) == isl_bool_true;
        if (ok)
            *v = isl_val_get_num_si(c);
        isl_val_free(c);
    }
    isl_aff_free(aff);
    return ok;
}

/* floor(a / v), v != 0. isl scales down only by positive values. */
static __isl_give isl_pw_aff *floor_div(__isl_take isl_pw_aff *a, long v)
{
    if (v < 0) {
        a = isl_pw_aff_neg(a);
        v = -v;
    }
    isl_ctx *ctx = isl_pw_aff_get_ctx(a);
    return isl_pw_aff_floor(isl_pw_aff_scale_down_val(a, isl_val_int_from_si(ctx, v)));
}

/* a - v * floor(a / v): pm_mod's result has the divisor's sign. */
static __isl_give isl_pw_aff *floor_mod(__isl_take isl_pw_aff *a, long v)
{
    isl_ctx *ctx = isl_pw_aff_get_ctx(a);
    isl_pw_aff *q = floor_div(isl_pw_aff_copy(a), v);
    return isl_pw_aff_sub(a, isl_pw_aff_scale_val(q, isl_val_int_from_si(ctx, v)));
}

static bool cast_is_exact(pm_type from, pm_type to)
{
    if (!pm_type_is_int(from) || !pm_type_is_int(to))
        return false;
    bool from_signed = pm_type_is_signed(from), to_signed = pm_type_is_signed(to);
    if (pm_type_bits(to) > pm_type_bits(from))
        return to_signed || !from_signed; /* a negative value cast to unsigned wraps */
    return pm_type_bits(to) == pm_type_bits(from) && to_signed == from_signed;
}

static __isl_give isl_pw_aff *binary_pw_aff(const pm_isl_env *env, const pm_expr *e)
{
    isl_pw_aff *a = pm_isl_pw_aff(env, e->a);
    if (!a)
        return NULL;
    isl_pw_aff *b = pm_isl_pw_aff(env, e->b);
    if (!b) {
        isl_pw_aff_free(a);
        return NULL;
    }
    long k = 0, ka = 0;
    bool b_const = const_of(b, &k);
    switch ((pm_binop)e->op) {
    case PM_OP_ADD:
        return isl_pw_aff_add(a, b);
    case PM_OP_SUB:
        return isl_pw_aff_sub(a, b);
    case PM_OP_MUL:
        if (b_const || const_of(a, &ka))
            return isl_pw_aff_mul(a, b);
        break;
    case PM_OP_DIV:
        if (b_const) {
            isl_pw_aff_free(b);
            if (k != 0)
                return floor_div(a, k);
            isl_pw_aff_free(a);
            return constant(env, 0); /* integer division by zero gives 0 (polymage.h) */
        }
        break;
    case PM_OP_MOD:
        if (b_const && k != 0) {
            isl_pw_aff_free(b);
            return floor_mod(a, k);
        }
        break;
    case PM_OP_CDIV:
    case PM_OP_CMOD:
        if (b_const && k != 0) {
            /* trunc(a / -v) = -trunc(a / v); the remainder keeps a's sign either way. */
            long m = k < 0 ? -k : k;
            isl_pw_aff_free(b);
            if (e->op == PM_OP_CMOD)
                return isl_pw_aff_tdiv_r(a, constant(env, m));
            isl_pw_aff *q = isl_pw_aff_tdiv_q(a, constant(env, m));
            return k < 0 ? isl_pw_aff_neg(q) : q;
        }
        break;
    case PM_OP_MIN:
        return isl_pw_aff_min(a, b);
    case PM_OP_MAX:
        return isl_pw_aff_max(a, b);
    case PM_OP_ABSD: {
        isl_pw_aff *d = isl_pw_aff_sub(a, b);
        return isl_pw_aff_max(isl_pw_aff_copy(d), isl_pw_aff_neg(d));
    }
    case PM_OP_SHL:
    case PM_OP_SHR:
        if (b_const && k >= 0 && k <= 62) {
            isl_pw_aff_free(b);
            long scale = 1L << k;
            if (e->op == PM_OP_SHR)
                return floor_div(a, scale); /* arithmetic shift = floor division */
            return isl_pw_aff_scale_val(a, isl_val_int_from_si(isl_pw_aff_get_ctx(a), scale));
        }
        break;
    default:
        break;
    }
    isl_pw_aff_free(a);
    isl_pw_aff_free(b);
    return NULL;
}

static __isl_give isl_pw_aff *select_pw_aff(const pm_isl_env *env, const pm_expr *e)
{
    isl_set *cond = pm_isl_cond(env, e->a);
    if (!cond)
        return NULL;
    isl_pw_aff *t = pm_isl_pw_aff(env, e->b);
    isl_pw_aff *f = t ? pm_isl_pw_aff(env, e->c) : NULL;
    if (!t || !f) {
        isl_set_free(cond);
        isl_pw_aff_free(t);
        return NULL;
    }
    /* The two pieces have disjoint domains, so their "union sum" is their union. */
    t = isl_pw_aff_intersect_domain(t, isl_set_copy(cond));
    f = isl_pw_aff_intersect_domain(f, isl_set_complement(cond));
    return isl_pw_aff_union_add(t, f);
}

__isl_give isl_pw_aff *pm_isl_pw_aff(const pm_isl_env *env, const pm_expr *e)
{
    if (!e || !pm_type_is_int(e->type))
        return NULL;
    switch (e->kind) {
    case PM_EXPR_INT:
        return constant(env, (long)e->ival);
    case PM_EXPR_VAR:
        for (int d = 0; d < env->nvars; d++)
            if (env->vars[d] == e)
                return pm_isl_var_pw_aff(env, d);
        return NULL;
    case PM_EXPR_PARAM:
        return param_pw_aff(env, e);
    case PM_EXPR_UNARY: {
        isl_pw_aff *a = pm_isl_pw_aff(env, e->a);
        if (a && e->op == PM_OP_NEG)
            return isl_pw_aff_neg(a);
        if (a && e->op == PM_OP_ABS)
            return isl_pw_aff_max(isl_pw_aff_copy(a), isl_pw_aff_neg(a));
        isl_pw_aff_free(a);
        return NULL;
    }
    case PM_EXPR_BINARY:
        return binary_pw_aff(env, e);
    case PM_EXPR_CAST:
        return cast_is_exact(e->a->type, e->type) ? pm_isl_pw_aff(env, e->a) : NULL;
    case PM_EXPR_SELECT:
        return select_pw_aff(env, e);
    default:
        return NULL; /* floats, math functions, calls */
    }
}

/* ---- bounds of any integer expression ---------------------------------------------- */

typedef struct pw_bounds {
    isl_pw_aff *lo, *hi; /* NULL: unbounded on that side */
} pw_bounds;

static void bounds_free(pw_bounds *b)
{
    isl_pw_aff_free(b->lo);
    isl_pw_aff_free(b->hi);
    b->lo = b->hi = NULL;
}

/* f(a, b) when both are bounded, else NULL (both consumed). */
static __isl_give isl_pw_aff *both(__isl_take isl_pw_aff *a, __isl_take isl_pw_aff *b,
                                   __isl_give isl_pw_aff *(*f)(__isl_take isl_pw_aff *,
                                                               __isl_take isl_pw_aff *))
{
    if (a && b)
        return f(a, b);
    isl_pw_aff_free(a);
    isl_pw_aff_free(b);
    return NULL;
}

/* f(a, b) when both are bounded, the bounded one when one is (a min's upper bound, a
 * max's lower bound), NULL when neither is. */
static __isl_give isl_pw_aff *either(__isl_take isl_pw_aff *a, __isl_take isl_pw_aff *b,
                                     __isl_give isl_pw_aff *(*f)(__isl_take isl_pw_aff *,
                                                                 __isl_take isl_pw_aff *))
{
    if (a && b)
        return f(a, b);
    return a ? a : b;
}

static pw_bounds bounds_of(const pm_isl_env *env, const pm_expr *e, int depth);

/* Bounds of an expression that is no binary operation: an exact cast and a negation pass
 * their operand's bounds on, a select joins its two values', and a narrow value lies in
 * its type's range. */
static pw_bounds other_bounds(const pm_isl_env *env, const pm_expr *e, int depth)
{
    pw_bounds r = {NULL, NULL};
    if (e->kind == PM_EXPR_CAST && pm_type_is_int(e->a->type) && cast_is_exact(e->a->type, e->type))
        return bounds_of(env, e->a, depth + 1);
    if (e->kind == PM_EXPR_UNARY && e->op == PM_OP_NEG) {
        pw_bounds a = bounds_of(env, e->a, depth + 1);
        r.lo = a.hi ? isl_pw_aff_neg(a.hi) : NULL;
        r.hi = a.lo ? isl_pw_aff_neg(a.lo) : NULL;
        return r;
    }
    if (e->kind == PM_EXPR_SELECT) {
        pw_bounds t = bounds_of(env, e->b, depth + 1), f = bounds_of(env, e->c, depth + 1);
        r.lo = both(t.lo, f.lo, isl_pw_aff_min);
        r.hi = both(t.hi, f.hi, isl_pw_aff_max);
        return r;
    }
    if (pm_type_bits(e->type) <= 16) {
        /* a narrow value (a call of an i16 function) lies in its type's range */
        int bits = pm_type_bits(e->type);
        bool sgn = pm_type_is_signed(e->type);
        r.lo = constant(env, sgn ? -(1L << (bits - 1)) : 0);
        r.hi = constant(env, sgn ? (1L << (bits - 1)) - 1 : (1L << bits) - 1);
    }
    return r;
}

/* Bounds of e = a * k, a mod k or a / k for a constant k, given a's bounds (consumed):
 * a scaled, the divisor's range, a floor division by a positive k; none otherwise. */
static pw_bounds by_constant_bounds(const pm_isl_env *env, const pm_expr *e, long k,
                                    pw_bounds a)
{
    pw_bounds r = {NULL, NULL};
    switch ((pm_binop)e->op) {
    case PM_OP_MUL: {
        isl_ctx *ctx = isl_space_get_ctx(env->space);
        isl_pw_aff *lo = a.lo ? isl_pw_aff_scale_val(a.lo, isl_val_int_from_si(ctx, k)) : NULL;
        isl_pw_aff *hi = a.hi ? isl_pw_aff_scale_val(a.hi, isl_val_int_from_si(ctx, k)) : NULL;
        r.lo = k >= 0 ? lo : hi;
        r.hi = k >= 0 ? hi : lo;
        return r;
    }
    case PM_OP_MOD: case PM_OP_CMOD:
        if (k != 0) { /* floor mod takes the divisor's sign, truncating mod the dividend's */
            long m = k < 0 ? -k : k;
            bool nonneg = e->op == PM_OP_MOD && k > 0, nonpos = e->op == PM_OP_MOD && k < 0;
            bounds_free(&a);
            r.lo = constant(env, nonneg ? 0 : -(m - 1));
            r.hi = constant(env, nonpos ? 0 : m - 1);
            return r;
        }
        break;
    case PM_OP_DIV:
        if (k > 0) { /* floor division by a positive constant is monotone */
            r.lo = a.lo ? floor_div(a.lo, k) : NULL;
            r.hi = a.hi ? floor_div(a.hi, k) : NULL;
            return r;
        }
        break;
    default:
        break;
    }
    bounds_free(&a);
    return r;
}

/* Bounds of a binary operation: sums, differences, minima and maxima of its operands'
 * bounds; products, remainders and quotients only by a constant. */
static pw_bounds binary_bounds(const pm_isl_env *env, const pm_expr *e, int depth)
{
    pw_bounds r = {NULL, NULL};
    if (e->op == PM_OP_MUL || e->op == PM_OP_DIV || e->op == PM_OP_MOD || e->op == PM_OP_CMOD) {
        long k = 0;
        isl_pw_aff *kb = pm_isl_pw_aff(env, e->b);
        bool konst = kb && const_of(kb, &k);
        isl_pw_aff_free(kb);
        if (!konst)
            return r;
        return by_constant_bounds(env, e, k, bounds_of(env, e->a, depth + 1));
    }
    pw_bounds a = bounds_of(env, e->a, depth + 1);
    switch ((pm_binop)e->op) {
    case PM_OP_ADD: case PM_OP_SUB: {
        pw_bounds b = bounds_of(env, e->b, depth + 1);
        if (e->op == PM_OP_ADD) {
            r.lo = both(a.lo, b.lo, isl_pw_aff_add);
            r.hi = both(a.hi, b.hi, isl_pw_aff_add);
        } else {
            r.lo = both(a.lo, b.hi, isl_pw_aff_sub);
            r.hi = both(a.hi, b.lo, isl_pw_aff_sub);
        }
        return r;
    }
    case PM_OP_MIN: case PM_OP_MAX: {
        pw_bounds b = bounds_of(env, e->b, depth + 1);
        if (e->op == PM_OP_MIN) {
            r.lo = both(a.lo, b.lo, isl_pw_aff_min);
            r.hi = either(a.hi, b.hi, isl_pw_aff_min);
        } else {
            r.lo = either(a.lo, b.lo, isl_pw_aff_max);
            r.hi = both(a.hi, b.hi, isl_pw_aff_max);
        }
        return r;
    }
    default:
        bounds_free(&a);
        return r;
    }
}

static pw_bounds bounds_of(const pm_isl_env *env, const pm_expr *e, int depth)
{
    pw_bounds r = {NULL, NULL};
    if (!e || !pm_type_is_int(e->type) || depth > 64)
        return r;
    isl_pw_aff *exact = pm_isl_pw_aff(env, e);
    if (exact) {
        r.lo = exact;
        r.hi = isl_pw_aff_copy(exact);
        return r;
    }
    if (e->kind != PM_EXPR_BINARY)
        return other_bounds(env, e, depth);
    return binary_bounds(env, e, depth);
}

void pm_isl_pw_aff_bounds(const pm_isl_env *env, const pm_expr *e, __isl_give isl_pw_aff **lo,
                          __isl_give isl_pw_aff **hi)
{
    pw_bounds b = bounds_of(env, e, 0);
    *lo = b.lo;
    *hi = b.hi;
}

/* ---- conditions --------------------------------------------------------------------- */

static __isl_give isl_set *compare_set(const pm_isl_env *env, const pm_expr *e)
{
    isl_pw_aff *a = pm_isl_pw_aff(env, e->a);
    isl_pw_aff *b = a ? pm_isl_pw_aff(env, e->b) : NULL;
    if (!a || !b) {
        isl_pw_aff_free(a);
        return NULL;
    }
    switch ((pm_binop)e->op) {
    case PM_OP_LT: return isl_pw_aff_lt_set(a, b);
    case PM_OP_LE: return isl_pw_aff_le_set(a, b);
    case PM_OP_EQ: return isl_pw_aff_eq_set(a, b);
    case PM_OP_NE: return isl_pw_aff_ne_set(a, b);
    case PM_OP_GE: return isl_pw_aff_ge_set(a, b);
    case PM_OP_GT: return isl_pw_aff_gt_set(a, b);
    default:
        isl_pw_aff_free(a);
        isl_pw_aff_free(b);
        return NULL;
    }
}

static bool is_logical(const pm_expr *e)
{
    return (e->kind == PM_EXPR_BINARY && (e->op == PM_OP_AND || e->op == PM_OP_OR)) ||
           (e->kind == PM_EXPR_UNARY && e->op == PM_OP_NOT) ||
           (e->kind == PM_EXPR_SELECT && e->type == PM_BOOL);
}

void pm_isl_cond_memo_clear(pm_isl_cond_memo *memo)
{
    for (int i = 0; i < memo->n; i++)
        isl_set_free(memo->set[i]);
    memo->n = 0;
}

static __isl_give isl_set *cond_set(const pm_isl_env *env, const pm_expr *e);

/* cond_set through env->memo: a set made in a space of another tuple name is renamed. */
__isl_give isl_set *pm_isl_cond(const pm_isl_env *env, const pm_expr *e)
{
    pm_isl_cond_memo *memo = env->memo;
    for (int i = 0; memo && i < memo->n; i++)
        if (memo->cond[i] == e)
            return isl_set_set_tuple_name(isl_set_copy(memo->set[i]),
                                          isl_space_get_tuple_name(env->space, isl_dim_set));
    isl_set *s = cond_set(env, e);
    if (s && memo && memo->n < PM_ISL_COND_MEMO_MAX) {
        memo->cond[memo->n] = e;
        memo->set[memo->n++] = isl_set_copy(s);
    }
    return s;
}

static __isl_give isl_set *cond_set(const pm_isl_env *env, const pm_expr *e)
{
    if (!e || e->type != PM_BOOL)
        return NULL;
    if (e->kind == PM_EXPR_BINARY && e->op >= PM_OP_LT && e->op <= PM_OP_GT)
        return compare_set(env, e);
    if (!is_logical(e))
        return NULL;
    if (e->kind == PM_EXPR_UNARY)
        return isl_set_complement(pm_isl_cond(env, e->a));
    isl_set *a = pm_isl_cond(env, e->a);
    isl_set *b = a ? pm_isl_cond(env, e->b) : NULL;
    if (!a || !b) {
        isl_set_free(a);
        return NULL;
    }
    if (e->kind == PM_EXPR_BINARY)
        return e->op == PM_OP_AND ? isl_set_intersect(a, b) : isl_set_union(a, b);
    isl_set *c = pm_isl_cond(env, e->c); /* select(a, b, c) = (a and b) or (not a and c) */
    if (!c) {
        isl_set_free(a);
        isl_set_free(b);
        return NULL;
    }
    isl_set *not_a = isl_set_complement(isl_set_copy(a));
    return isl_set_union(isl_set_intersect(a, b), isl_set_intersect(not_a, c));
}

void pm_isl_cond_bounds(const pm_isl_env *env, const pm_expr *e, __isl_give isl_set **under,
                        __isl_give isl_set **over)
{
    if (!e) {
        *under = isl_set_universe(isl_space_copy(env->space));
        *over = isl_set_universe(isl_space_copy(env->space));
        return;
    }
    if (!is_logical(e)) {
        isl_set *exact = pm_isl_cond(env, e);
        if (exact) {
            *under = exact;
            *over = isl_set_copy(exact);
        } else {
            /* A data-dependent test: it may hold anywhere, and nowhere surely. */
            *under = isl_set_empty(isl_space_copy(env->space));
            *over = isl_set_universe(isl_space_copy(env->space));
        }
        return;
    }
    isl_set *ua, *oa, *ub, *ob;
    pm_isl_cond_bounds(env, e->a, &ua, &oa);
    if (e->kind == PM_EXPR_UNARY) { /* not: the approximations swap and complement */
        *under = isl_set_complement(oa);
        *over = isl_set_complement(ua);
        return;
    }
    pm_isl_cond_bounds(env, e->b, &ub, &ob);
    if (e->kind == PM_EXPR_BINARY) {
        bool and = e->op == PM_OP_AND;
        *under = and ? isl_set_intersect(ua, ub) : isl_set_union(ua, ub);
        *over = and ? isl_set_intersect(oa, ob) : isl_set_union(oa, ob);
        return;
    }
    isl_set *uc, *oc;
    pm_isl_cond_bounds(env, e->c, &uc, &oc);
    isl_set *u_not_a = isl_set_complement(isl_set_copy(oa));
    isl_set *o_not_a = isl_set_complement(isl_set_copy(ua));
    *under = isl_set_union(isl_set_intersect(ua, ub), isl_set_intersect(u_not_a, uc));
    *over = isl_set_union(isl_set_intersect(oa, ob), isl_set_intersect(o_not_a, oc));
}

/* ---- domains ------------------------------------------------------------------------ */

__isl_give isl_set *pm_isl_in_intervals(const pm_isl_env *env, int n,
                                        pm_interval *const *intervals,
                                        isl_pw_aff *const *coords)
{
    isl_set *set = isl_set_universe(isl_space_copy(env->space));
    for (int d = 0; d < n; d++) {
        isl_pw_aff *lb = pm_isl_pw_aff(env, intervals[d]->lb);
        isl_pw_aff *ub = lb ? pm_isl_pw_aff(env, intervals[d]->ub) : NULL;
        if (!lb || !ub) {
            isl_pw_aff_free(lb);
            isl_set_free(set);
            return NULL;
        }
        isl_pw_aff *c = coords[d];
        set = isl_set_intersect(set, isl_pw_aff_le_set(isl_pw_aff_copy(lb), isl_pw_aff_copy(c)));
        set = isl_set_intersect(set, isl_pw_aff_le_set(isl_pw_aff_copy(c), ub));
        if (intervals[d]->step > 1) {
            /* lb, lb + step, ...: (c - lb) mod step == 0 */
            isl_ctx *ctx = isl_space_get_ctx(env->space);
            isl_pw_aff *off = isl_pw_aff_sub(isl_pw_aff_copy(c), lb);
            off = isl_pw_aff_mod_val(off, isl_val_int_from_si(ctx, (long)intervals[d]->step));
            set = isl_set_intersect(set, isl_pw_aff_zero_set(off));
        } else {
            isl_pw_aff_free(lb);
        }
    }
    return set;
}

__isl_give isl_set *pm_isl_in_domain(const pm_isl_env *env, const pm_func *f,
                                     isl_pw_aff *const *coords)
{
    if (f->kind != PM_FUNC_IMAGE)
        return pm_isl_in_intervals(env, f->ndims, f->intervals, coords);
    isl_set *set = isl_set_universe(isl_space_copy(env->space));
    for (int d = 0; d < f->ndims; d++) {
        isl_pw_aff *extent = pm_isl_pw_aff(env, f->extents[d]);
        if (!extent) {
            isl_set_free(set);
            return NULL;
        }
        isl_pw_aff *c = coords[d];
        set = isl_set_intersect(set, isl_pw_aff_ge_set(isl_pw_aff_copy(c), constant(env, 0)));
        set = isl_set_intersect(set, isl_pw_aff_lt_set(isl_pw_aff_copy(c), extent));
    }
    return set;
}

__isl_give isl_set *pm_isl_lex_lt(__isl_keep isl_space *space, int n, isl_pw_aff *const *a,
                                  isl_pw_aff *const *b)
{
    /* a <_lex b  iff  for some k: a_i = b_i for i < k and a_k < b_k */
    isl_set *result = isl_set_empty(isl_space_copy(space));
    isl_set *equal_prefix = isl_set_universe(isl_space_copy(space));
    for (int k = 0; k < n; k++) {
        isl_set *less = isl_pw_aff_lt_set(isl_pw_aff_copy(a[k]), isl_pw_aff_copy(b[k]));
        result = isl_set_union(result, isl_set_intersect(isl_set_copy(equal_prefix), less));
        equal_prefix = isl_set_intersect(equal_prefix,
                                         isl_pw_aff_eq_set(isl_pw_aff_copy(a[k]),
                                                           isl_pw_aff_copy(b[k])));
    }
    isl_set_free(equal_prefix);
    return result;
}

/* ---- counterexamples ---------------------------------------------------------------- */

__isl_give isl_point *pm_isl_pick_point(__isl_take isl_set *set)
{
    if (!set)
        return NULL;
    isl_size np = isl_set_dim(set, isl_dim_param), nd = isl_set_dim(set, isl_dim_set);
    if (np < 0 || nd < 0) {
        isl_set_free(set);
        return NULL;
    }
    isl_space *space = isl_set_get_space(set);
    /* Parameters become ordinary (leading) coordinates, so the lexicographic minimum is
     * one concrete point: the smallest parameter values first, then the smallest point. */
    isl_set *flat = isl_set_move_dims(set, isl_dim_set, 0, isl_dim_param, 0, (unsigned)np);
    isl_point *fp = NULL;
    static const int limits[] = {16, 1024};
    for (int i = 0; i < 2 && !fp; i++) {
        isl_set *boxed = isl_set_copy(flat);
        for (int j = 0; j < np + nd; j++) {
            boxed = isl_set_lower_bound_si(boxed, isl_dim_set, (unsigned)j, -limits[i]);
            boxed = isl_set_upper_bound_si(boxed, isl_dim_set, (unsigned)j, limits[i]);
        }
        if (isl_set_is_empty(boxed) == isl_bool_false)
            fp = isl_set_sample_point(isl_set_lexmin(boxed));
        else
            isl_set_free(boxed);
    }
    if (!fp)
        fp = isl_set_sample_point(isl_set_copy(flat)); /* huge or unbounded: any point */
    isl_set_free(flat);
    if (!fp || isl_point_is_void(fp) != isl_bool_false) {
        isl_point_free(fp);
        isl_space_free(space);
        return NULL;
    }
    isl_point *pnt = isl_point_zero(space);
    for (int j = 0; j < np + nd; j++) {
        isl_val *v = isl_point_get_coordinate_val(fp, isl_dim_set, j);
        pnt = j < np ? isl_point_set_coordinate_val(pnt, isl_dim_param, j, v)
                     : isl_point_set_coordinate_val(pnt, isl_dim_set, j - np, v);
    }
    isl_point_free(fp);
    return pnt;
}

static void print_val(pm_str *s, __isl_take isl_val *v)
{
    if (v && isl_val_is_int(v) == isl_bool_true)
        pm_str_append(s, "%ld", isl_val_get_num_si(v));
    else
        pm_str_append(s, "?");
    isl_val_free(v);
}

void pm_isl_print_point(pm_str *s, __isl_keep isl_point *pnt, const char *const *names,
                        const bool *show_param)
{
    isl_space *space = isl_point_get_space(pnt);
    isl_size np = isl_space_dim(space, isl_dim_param), nd = isl_space_dim(space, isl_dim_set);
    for (int j = 0; j < nd; j++) {
        pm_str_append(s, "%s%s = ", j ? ", " : "", names[j]);
        print_val(s, isl_point_get_coordinate_val(pnt, isl_dim_set, j));
    }
    int shown = 0;
    for (int j = 0; j < np; j++) {
        if (!show_param[j])
            continue;
        const char *name = isl_space_get_dim_name(space, isl_dim_param, (unsigned)j);
        pm_str_append(s, "%s%s = ", shown++ ? ", " : nd ? " (" : "", name ? name : "?");
        print_val(s, isl_point_get_coordinate_val(pnt, isl_dim_param, j));
    }
    if (shown && nd)
        pm_str_append(s, ")");
    isl_space_free(space);
}

void pm_isl_print_value_at(pm_str *s, __isl_keep isl_pw_aff *pa, __isl_keep isl_point *pnt)
{
    print_val(s, isl_pw_aff_eval(isl_pw_aff_copy(pa), isl_point_copy(pnt)));
}
