/* affine.c — pm_expr -> isl_pw_aff / isl_set (see affine.h). */
#include "codegen/affine.h"

#include <isl/local_space.h>
#include <isl/space.h>
#include <isl/val.h>

static __isl_give isl_set *universe(const pm_affine_env *env)
{
    return isl_set_universe(isl_space_copy(env->space));
}

static int var_dim(const pm_affine_env *env, int var_id)
{
    for (int d = 0; d < env->ndims; d++)
        if (env->var_ids[d] == var_id)
            return d;
    return -1;
}

/* The value of a constant pw_aff, when it is one with an integer value. */
static bool constant_of(__isl_keep isl_pw_aff *pa, long *out)
{
    if (isl_pw_aff_is_cst(pa) != isl_bool_true || isl_pw_aff_n_piece(pa) != 1)
        return false;
    isl_aff *aff = isl_pw_aff_as_aff(isl_pw_aff_copy(pa));
    if (!aff)
        return false;
    isl_val *v = isl_aff_get_constant_val(aff);
    isl_aff_free(aff);
    bool ok = v && isl_val_is_int(v);
    if (ok)
        *out = isl_val_get_num_si(v);
    isl_val_free(v);
    return ok;
}

__isl_give isl_pw_aff *pm_affine_pw_aff(const pm_affine_env *env, const pm_expr *e)
{
    isl_ctx *ctx = isl_space_get_ctx(env->space);
    if (!e || !pm_type_is_int(e->type))
        return NULL;
    switch (e->kind) {
    case PM_EXPR_INT:
        return isl_pw_aff_val_on_domain(universe(env), isl_val_int_from_si(ctx, e->ival));
    case PM_EXPR_VAR: {
        int d = var_dim(env, e->id);
        if (d < 0)
            return NULL;
        isl_local_space *ls = isl_local_space_from_space(isl_space_copy(env->space));
        return isl_pw_aff_var_on_domain(ls, isl_dim_set, d);
    }
    case PM_EXPR_PARAM: {
        int slot = env->pipeline->param_slot[e->id];
        if (slot < 0)
            return NULL;
        int pos = isl_space_find_dim_by_name(env->space, isl_dim_param, e->name);
        if (pos < 0)
            return NULL;
        isl_id *id = isl_space_get_dim_id(env->space, isl_dim_param, pos);
        return isl_pw_aff_param_on_domain_id(universe(env), id);
    }
    case PM_EXPR_CAST:
        /* Widening (or same-width signed) integer casts keep the value. */
        if (pm_type_is_int(e->a->type) && pm_type_bits(e->type) >= 32 &&
            pm_type_bits(e->type) >= pm_type_bits(e->a->type) &&
            (pm_type_bits(e->type) > pm_type_bits(e->a->type) || e->type == e->a->type))
            return pm_affine_pw_aff(env, e->a);
        return NULL;
    case PM_EXPR_UNARY:
        if (e->op == PM_OP_NEG) {
            isl_pw_aff *a = pm_affine_pw_aff(env, e->a);
            return a ? isl_pw_aff_neg(a) : NULL;
        }
        return NULL;
    case PM_EXPR_BINARY:
        break;
    default:
        return NULL;
    }
    isl_pw_aff *a = pm_affine_pw_aff(env, e->a);
    isl_pw_aff *b = a ? pm_affine_pw_aff(env, e->b) : NULL;
    if (!a || !b) {
        isl_pw_aff_free(a);
        isl_pw_aff_free(b);
        return NULL;
    }
    long c;
    switch (e->op) {
    case PM_OP_ADD: return isl_pw_aff_add(a, b);
    case PM_OP_SUB: return isl_pw_aff_sub(a, b);
    case PM_OP_MIN: return isl_pw_aff_min(a, b);
    case PM_OP_MAX: return isl_pw_aff_max(a, b);
    case PM_OP_MUL:
        if (constant_of(a, &c)) {
            isl_pw_aff_free(a);
            return isl_pw_aff_scale_val(b, isl_val_int_from_si(ctx, c));
        }
        if (constant_of(b, &c)) {
            isl_pw_aff_free(b);
            return isl_pw_aff_scale_val(a, isl_val_int_from_si(ctx, c));
        }
        break;
    case PM_OP_DIV:
        if (constant_of(b, &c) && c > 0) {
            isl_pw_aff_free(b);
            return isl_pw_aff_floor(isl_pw_aff_scale_down_val(a, isl_val_int_from_si(ctx, c)));
        }
        break;
    case PM_OP_MOD:
        if (constant_of(b, &c) && c > 0) {
            isl_pw_aff_free(b);
            return isl_pw_aff_mod_val(a, isl_val_int_from_si(ctx, c));
        }
        break;
    default:
        break;
    }
    isl_pw_aff_free(a);
    isl_pw_aff_free(b);
    return NULL;
}

__isl_give isl_set *pm_affine_set(const pm_affine_env *env, const pm_expr *cond)
{
    if (!cond || cond->type != PM_BOOL)
        return NULL;
    if (cond->kind == PM_EXPR_UNARY && cond->op == PM_OP_NOT) {
        isl_set *a = pm_affine_set(env, cond->a);
        return a ? isl_set_complement(a) : NULL;
    }
    if (cond->kind != PM_EXPR_BINARY)
        return NULL;
    if (cond->op == PM_OP_AND || cond->op == PM_OP_OR) {
        isl_set *a = pm_affine_set(env, cond->a);
        isl_set *b = a ? pm_affine_set(env, cond->b) : NULL;
        if (!b) {
            isl_set_free(a);
            return NULL;
        }
        return cond->op == PM_OP_AND ? isl_set_intersect(a, b) : isl_set_union(a, b);
    }
    isl_pw_aff *a = pm_affine_pw_aff(env, cond->a);
    isl_pw_aff *b = a ? pm_affine_pw_aff(env, cond->b) : NULL;
    if (!b) {
        isl_pw_aff_free(a);
        return NULL;
    }
    switch (cond->op) {
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

__isl_give isl_set *pm_affine_split(const pm_affine_env *env, const pm_expr *cond,
                                    const pm_expr **residual, int *nresidual, int max)
{
    if (!cond)
        return universe(env);
    if (cond->kind == PM_EXPR_BINARY && cond->op == PM_OP_AND) {
        isl_set *a = pm_affine_split(env, cond->a, residual, nresidual, max);
        isl_set *b = a ? pm_affine_split(env, cond->b, residual, nresidual, max) : NULL;
        if (!b) {
            isl_set_free(a);
            return NULL;
        }
        return isl_set_intersect(a, b);
    }
    isl_set *s = pm_affine_set(env, cond);
    if (s)
        return s;
    if (*nresidual >= max)
        return NULL;
    residual[(*nresidual)++] = cond;
    return universe(env);
}
