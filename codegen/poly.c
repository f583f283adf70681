/* poly.c — the polyhedral form of a pipeline (see poly.h).
 *
 * Shape: the isl spaces and case conditions; each function's buffer and box
 * (storage_init); per stage its statements (build_stage: case_stmt, reduction_stmts),
 * each with its domain, accesses and free dimensions; the exact-float stages; the dump.
 */
#include "codegen/poly.h"

#include "frontend/window.h"

#include "frontend/flat.h"
#include "frontend/isl_expr.h"

#include <isl/constraint.h>
#include <isl/id.h>
#include <isl/local_space.h>
#include <isl/printer.h>
#include <isl/space.h>
#include <isl/val.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- spaces ------------------------------------------------------------------------ */

/* A set space over the pipeline's integer parameters with n dims, tuple `name`. */
static __isl_give isl_space *stmt_space(const pm_poly *poly, const char *name, int n)
{
    isl_space *s = isl_space_set_from_params(isl_space_copy(poly->params));
    s = isl_space_add_dims(s, isl_dim_set, n);
    return isl_space_set_tuple_name(s, isl_dim_set, name);
}

/* Names the set dimensions after the variables, for readable dumps. */
static __isl_give isl_space *name_dims(__isl_take isl_space *sp, pm_expr **vars, int n)
{
    for (int d = 0; d < n; d++) {
        bool dup = false;
        for (int e = 0; e < d; e++)
            dup = dup || strcmp(vars[e]->name, vars[d]->name) == 0;
        if (!dup)
            sp = isl_space_set_dim_name(sp, isl_dim_set, d, vars[d]->name);
    }
    return sp;
}

/* Splits cond's top-level conjunction: the affine conjuncts are intersected into the
 * returned set (the universe when there are none); the others are appended to
 * residual[*nresidual] (up to max; NULL when there are more). */
static __isl_give isl_set *split_cond(const pm_isl_env *env, const pm_expr *cond,
                                      const pm_expr **residual, int *nresidual, int max)
{
    if (!cond)
        return isl_set_universe(isl_space_copy(env->space));
    if (cond->kind == PM_EXPR_BINARY && cond->op == PM_OP_AND) {
        isl_set *a = split_cond(env, cond->a, residual, nresidual, max);
        isl_set *b = a ? split_cond(env, cond->b, residual, nresidual, max) : NULL;
        if (!b) {
            isl_set_free(a);
            return NULL;
        }
        return isl_set_intersect(a, b);
    }
    isl_set *s = pm_isl_cond(env, cond);
    if (s)
        return s;
    if (*nresidual >= max)
        return NULL;
    residual[(*nresidual)++] = cond;
    return isl_set_universe(isl_space_copy(env->space));
}

/* ---- storage ----------------------------------------------------------------------- */

/* A window form's bounds of function f (frontend/window.h): an input's block, an output's
 * window (expressions of the parameters, PM_MAX_DIMS apart), or NULL (f's own). */
typedef struct window_bounds {
    pm_expr *const *lb, *const *ub;
    isl_set *demand;         /* a stage's demand (borrowed), or NULL                       */
    isl_set *context;        /* the window's parameter context (borrowed), or NULL         */
} window_bounds;

/* Restricts st's box to the stage's demand, so the stage is computed only where the
 * window reads it, and recomputes its bounds from it. Where the window reads nothing of f
 * (a window in a frame no case defines) the bounds stay the whole box's: the bounds are
 * total over the context, the box is empty there. */
static void restrict_to_demand(pm_poly_storage *st, const window_bounds *wb)
{
    isl_set *d = isl_set_set_tuple_name(isl_set_copy(wb->demand), st->func->name);
    isl_set *box = isl_set_coalesce(isl_set_intersect(isl_set_copy(st->box), d));
    isl_set *where = isl_set_params(isl_set_copy(box)); /* the windows that read f */
    for (int k = 0; k < st->ndims; k++) {
        /* the whole box's bounds are over a 0-dimensional set, dim_min's over params */
        isl_pw_aff *lb = isl_pw_aff_union_add(
            isl_set_dim_min(isl_set_copy(box), k),
            isl_pw_aff_subtract_domain(
                isl_pw_aff_project_domain_on_params(isl_pw_aff_copy(st->lb[k])),
                isl_set_copy(where)));
        isl_pw_aff *ub = isl_pw_aff_union_add(
            isl_set_dim_max(isl_set_copy(box), k),
            isl_pw_aff_subtract_domain(
                isl_pw_aff_project_domain_on_params(isl_pw_aff_copy(st->ub[k])),
                isl_set_copy(where)));
        isl_pw_aff_free(st->lb[k]);
        isl_pw_aff_free(st->ub[k]);
        st->lb[k] = isl_pw_aff_coalesce(isl_pw_aff_gist_params(lb, isl_set_copy(wb->context)));
        st->ub[k] = isl_pw_aff_coalesce(isl_pw_aff_gist_params(ub, isl_set_copy(wb->context)));
    }
    isl_set_free(where);
    isl_set_free(st->box);
    st->box = box;
}

static pm_status storage_init(pm_poly *poly, pm_poly_storage *st, pm_func *f,
                              const window_bounds *wb, pm_error *err)
{
    st->func = f;
    st->type = f->type;
    st->ndims = f->ndims;
    if (f->ndims > PM_MAX_DIMS)
        return pm_error_set(err, PM_ERR_UNSUPPORTED, "%s: more than %d dimensions",
                               f->name, PM_MAX_DIMS);
    isl_space *ps = isl_space_set_from_params(isl_space_copy(poly->params));
    pm_isl_env env = {ps, 0, NULL, NULL};
    isl_ctx *ctx = poly->ctx;
    isl_space *fs = stmt_space(poly, f->name, f->ndims);
    if (f->kind != PM_FUNC_IMAGE)
        fs = name_dims(fs, f->vars, f->ndims);
    isl_set *box = isl_set_universe(isl_space_copy(fs));
    for (int d = 0; d < f->ndims; d++) {
        isl_pw_aff *lb, *ub;
        if (wb && wb->lb) {
            lb = pm_isl_pw_aff(&env, wb->lb[d]);
            ub = pm_isl_pw_aff(&env, wb->ub[d]);
            st->step[d] = 1;
        } else if (f->kind == PM_FUNC_IMAGE) {
            lb = isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(ps)),
                                          isl_val_zero(ctx));
            ub = pm_isl_pw_aff(&env, f->extents[d]);
            if (ub)
                ub = isl_pw_aff_add(ub, isl_pw_aff_val_on_domain(
                                            isl_set_universe(isl_space_copy(ps)),
                                            isl_val_negone(ctx)));
            st->step[d] = 1;
        } else {
            lb = pm_isl_pw_aff(&env, f->intervals[d]->lb);
            ub = pm_isl_pw_aff(&env, f->intervals[d]->ub);
            st->step[d] = f->intervals[d]->step;
        }
        if (!lb || !ub) {
            isl_pw_aff_free(lb);
            isl_pw_aff_free(ub);
            isl_set_free(box);
            isl_space_free(fs);
            isl_space_free(ps);
            return pm_error_set(err, PM_ERR_UNSUPPORTED,
                                   "%s: bounds of dimension %d are not affine in the parameters",
                                   f->name, d);
        }
        st->lb[d] = lb;
        st->ub[d] = ub;
        /* lb(params) <= x_d <= ub(params) in f's space: the same bound expressions,
         * translated over f's space (they mention no variable). */
        pm_isl_env fenv = {fs, 0, NULL, NULL};
        isl_pw_aff *lbf, *ubf;
        if (wb && wb->lb) {
            lbf = pm_isl_pw_aff(&fenv, wb->lb[d]);
            ubf = pm_isl_pw_aff(&fenv, wb->ub[d]);
        } else if (f->kind == PM_FUNC_IMAGE) {
            lbf = isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(fs)), isl_val_zero(ctx));
            ubf = isl_pw_aff_add(pm_isl_pw_aff(&fenv, f->extents[d]),
                                 isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(fs)),
                                                          isl_val_negone(ctx)));
        } else {
            lbf = pm_isl_pw_aff(&fenv, f->intervals[d]->lb);
            ubf = pm_isl_pw_aff(&fenv, f->intervals[d]->ub);
        }
        isl_local_space *ls = isl_local_space_from_space(isl_space_copy(fs));
        isl_pw_aff *x = isl_pw_aff_var_on_domain(ls, isl_dim_set, d);
        isl_set *above = isl_pw_aff_ge_set(isl_pw_aff_copy(x), lbf);
        isl_set *c = isl_set_intersect(above, isl_pw_aff_le_set(x, ubf));
        box = isl_set_intersect(box, c);
    }
    isl_space_free(fs);
    isl_space_free(ps);
    st->box = wb && wb->context ? isl_set_intersect_params(box, isl_set_copy(wb->context)) : box;
    if (wb && wb->demand)
        restrict_to_demand(st, wb);
    st->flat = pm_func_flat_range(f, &st->flat_lo, &st->flat_hi);
    return PM_OK;
}

const pm_poly_storage *pm_poly_storage_of(const pm_poly *poly, const pm_func *f)
{
    for (int i = 0; i < poly->nstorage; i++)
        if (poly->storage[i].func == f)
            return &poly->storage[i];
    return NULL;
}

const pm_poly_access *pm_poly_access_of(const pm_poly_stmt *s, const pm_expr *call)
{
    for (int i = 0; i < s->naccesses; i++)
        if (s->accesses[i].call == call)
            return &s->accesses[i];
    return NULL;
}

/* ---- domains ----------------------------------------------------------------------- */

/* The function's variable domain with steps, in a space named `name`. */
__isl_give isl_set *pm_poly_var_domain(const pm_poly *poly, const pm_poly_storage *st,
                                       const char *name)
{
    isl_set *dom = isl_set_copy(st->box);
    dom = isl_set_set_tuple_name(dom, name);
    isl_ctx *ctx = poly->ctx;
    for (int d = 0; d < st->ndims; d++) {
        if (st->step[d] == 1)
            continue;
        isl_space *sp = isl_set_get_space(dom);
        isl_pw_aff *x = isl_pw_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                                 isl_dim_set, d);
        pm_isl_env fenv = {sp, 0, NULL, NULL};
        isl_pw_aff *lb = pm_isl_pw_aff(&fenv, st->func->intervals[d]->lb);
        isl_pw_aff *r = isl_pw_aff_mod_val(isl_pw_aff_sub(x, lb),
                                           isl_val_int_from_si(ctx, st->step[d]));
        isl_pw_aff *zero = isl_pw_aff_val_on_domain(isl_set_universe(sp), isl_val_zero(ctx));
        dom = isl_set_intersect(dom, isl_pw_aff_eq_set(r, zero));
    }
    return dom;
}

/* The reduction domain (rvars with their intervals). */
static __isl_give isl_set *red_domain(pm_poly *poly, pm_func *f, const char *name,
                                      pm_error *err)
{
    int n = f->nrdims;
    isl_space *sp = name_dims(stmt_space(poly, name, n), f->rvars, n);
    pm_isl_env env = {sp, n, f->rvars, NULL};
    isl_set *dom = isl_set_universe(isl_space_copy(sp));
    isl_ctx *ctx = poly->ctx;
    for (int d = 0; d < n; d++) {
        pm_interval *iv = f->rintervals[d];
        isl_pw_aff *lb = pm_isl_pw_aff(&env, iv->lb);
        isl_pw_aff *ub = pm_isl_pw_aff(&env, iv->ub);
        if (!lb || !ub) {
            isl_pw_aff_free(lb);
            isl_pw_aff_free(ub);
            isl_set_free(dom);
            isl_space_free(sp);
            pm_error_set(err, PM_ERR_UNSUPPORTED,
                            "%s: reduction bounds of dimension %d are not affine", f->name, d);
            return NULL;
        }
        isl_pw_aff *x = isl_pw_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                                 isl_dim_set, d);
        dom = isl_set_intersect(dom, isl_pw_aff_ge_set(isl_pw_aff_copy(x), isl_pw_aff_copy(lb)));
        dom = isl_set_intersect(dom, isl_pw_aff_le_set(isl_pw_aff_copy(x), ub));
        if (iv->step > 1) {
            isl_pw_aff *r = isl_pw_aff_mod_val(isl_pw_aff_sub(x, lb),
                                               isl_val_int_from_si(ctx, iv->step));
            isl_pw_aff *zero = isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(sp)),
                                                        isl_val_zero(ctx));
            dom = isl_set_intersect(dom, isl_pw_aff_eq_set(r, zero));
        } else {
            isl_pw_aff_free(x);
            isl_pw_aff_free(lb);
        }
    }
    isl_space_free(sp);
    return dom;
}

/* ---- accesses ---------------------------------------------------------------------- */

typedef struct collect {
    const pm_expr **calls;
    int n, cap;
} collect;

static bool collect_call(const pm_expr *e, void *user)
{
    collect *c = user;
    if (e->kind != PM_EXPR_CALL)
        return true;
    for (int i = 0; i < c->n; i++)
        if (c->calls[i] == e)
            return true;
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 16;
        c->calls = realloc(c->calls, c->cap * sizeof *c->calls);
    }
    c->calls[c->n++] = e;
    return true;
}

/* Whether f maps every point of domain where it is defined into box (f taken): the
 * defined points lie in box's preimage under f, a substitution, where the image of the
 * domain would be a projection (local Laplacian's poly step 90 -> 87 ms, the same
 * proofs in every app's domains dump). */
static bool maps_inside(__isl_keep isl_set *domain, __isl_take isl_pw_multi_aff *f,
                        __isl_keep isl_set *box)
{
    f = isl_pw_multi_aff_set_tuple_id(f, isl_dim_out, isl_set_get_tuple_id(box));
    isl_set *defined = isl_set_intersect(isl_set_copy(domain),
                                         isl_pw_multi_aff_domain(isl_pw_multi_aff_copy(f)));
    isl_set *pre = isl_set_preimage_pw_multi_aff(isl_set_copy(box), f);
    isl_bool sub = isl_set_is_subset(defined, pre);
    isl_set_free(defined);
    isl_set_free(pre);
    return sub == isl_bool_true;
}

/* A data-dependent read (rel NULL) proven inside its callee's box: each argument's
 * bounds (pm_isl_pw_aff_bounds, exact for the affine ones) lie in the box over the whole
 * domain. Both corners inside prove every point between them inside where the box has
 * no stride along the arguments that are not exact. */
static bool bounded_inside(const pm_isl_env *env, __isl_keep isl_set *domain,
                           const pm_expr *call, const pm_poly_storage *cs)
{
    if (call->nargs == 0 || call->nargs != cs->ndims)
        return false;
    isl_pw_multi_aff *corner[2] = {NULL, NULL};
    bool ok = true;
    for (int d = 0; d < call->nargs && ok; d++) {
        isl_pw_aff *lo, *hi;
        pm_isl_pw_aff_bounds(env, call->args[d], &lo, &hi);
        ok = lo && hi && (cs->step[d] == 1 || isl_pw_aff_is_equal(lo, hi) == isl_bool_true);
        isl_pw_aff *side[2] = {lo, hi};
        for (int c = 0; c < 2; c++) {
            if (!ok) {
                isl_pw_aff_free(side[c]);
                continue;
            }
            isl_pw_multi_aff *one = isl_pw_multi_aff_from_pw_aff(side[c]);
            corner[c] = corner[c] ? isl_pw_multi_aff_flat_range_product(corner[c], one) : one;
        }
    }
    for (int c = 0; c < 2; c++) {
        if (ok)
            ok = maps_inside(domain, corner[c], cs->box);
        else
            isl_pw_multi_aff_free(corner[c]);
    }
    return ok;
}

pm_status pm_poly_stmt_accesses(pm_poly *poly, pm_poly_stmt *s, const pm_expr **roots,
                                int nroots, pm_error *err)
{
    collect c = {0};
    for (int i = 0; i < nroots; i++)
        if (roots[i])
            pm_expr_walk(roots[i], collect_call, &c);
    s->naccesses = c.n;
    s->accesses = calloc(c.n ? c.n : 1, sizeof *s->accesses);
    isl_space *sp = isl_set_get_space(s->domain);
    pm_isl_env env = {sp, s->ndims, s->vars, NULL};
    for (int i = 0; i < c.n; i++) {
        const pm_expr *call = c.calls[i];
        pm_poly_access *a = &s->accesses[i];
        a->call = call;
        a->callee = call->callee;
        const pm_poly_storage *cs = pm_poly_storage_of(poly, call->callee);
        if (!cs) {
            isl_space_free(sp);
            free(c.calls);
            return pm_error_set(err, PM_ERR_INTERNAL, "%s: reads %s, which has no storage",
                                   poly->stages[s->stage].func->name, call->callee->name);
        }
        isl_pw_multi_aff *pma = NULL;
        bool affine = call->nargs > 0;
        for (int d = 0; d < call->nargs && affine; d++) {
            isl_pw_aff *pa = pm_isl_pw_aff(&env, call->args[d]);
            if (!pa) {
                affine = false;
                break;
            }
            isl_pw_multi_aff *one = isl_pw_multi_aff_from_pw_aff(pa);
            pma = pma ? isl_pw_multi_aff_flat_range_product(pma, one) : one;
        }
        if (!affine) {
            isl_pw_multi_aff_free(pma);
            a->in_bounds = bounded_inside(&env, s->domain, call, cs);
            continue;
        }
        a->in_bounds = maps_inside(s->domain, isl_pw_multi_aff_copy(pma), cs->box);
        isl_map *rel = isl_map_from_pw_multi_aff(pma);
        a->rel = isl_map_set_tuple_name(rel, isl_dim_out, call->callee->name);
    }
    isl_space_free(sp);
    free(c.calls);
    return PM_OK;
}

/* ---- dependences ------------------------------------------------------------------- */

/* Dependence distances of a function on itself: for each self read f(q) at point p,
 * the vector p - q, as a set in f's space. NULL when some self read is not affine. */
static __isl_give isl_set *self_distances(const pm_poly *poly, const pm_poly_stmt *s,
                                          bool *nonaffine)
{
    pm_func *f = poly->stages[s->stage].func;
    isl_set *deltas = NULL;
    for (int i = 0; i < s->naccesses; i++) {
        const pm_poly_access *a = &s->accesses[i];
        if (a->callee != f)
            continue;
        if (!a->rel) {
            *nonaffine = true;
            continue;
        }
        isl_map *m = isl_map_intersect_domain(isl_map_copy(a->rel), isl_set_copy(s->domain));
        m = isl_map_set_tuple_name(m, isl_dim_in, f->name);
        isl_set *d = isl_map_deltas(isl_map_reverse(m));
        deltas = deltas ? isl_set_union(deltas, d) : d;
    }
    return deltas;
}

/* The dimension k is free when every distance that is zero on dims < k is zero on k. */
static bool dim_free(__isl_keep isl_set *deltas, int k)
{
    if (!deltas)
        return true;
    isl_set *d = isl_set_copy(deltas);
    for (int i = 0; i < k; i++)
        d = isl_set_fix_si(d, isl_dim_set, i, 0);
    isl_set *nz = isl_set_complement(isl_set_fix_si(isl_set_universe(isl_set_get_space(d)),
                                                    isl_dim_set, k, 0));
    d = isl_set_intersect(d, nz);
    isl_bool empty = isl_set_is_empty(d);
    isl_set_free(d);
    return empty == isl_bool_true;
}

/* No two instances at these distances differ in dimension k. */
static bool dim_always_zero(__isl_keep isl_set *deltas, int k)
{
    isl_set *nz = isl_set_complement(isl_set_fix_si(isl_set_universe(isl_set_get_space(deltas)),
                                                    isl_dim_set, k, 0));
    isl_set *d = isl_set_intersect(isl_set_copy(deltas), nz);
    isl_bool empty = isl_set_is_empty(d);
    isl_set_free(d);
    return empty == isl_bool_true;
}

/* Distances between update instances that may write the same cell: pairs r, r' of the
 * reduction domain whose affine index components are equal (a data-dependent component,
 * like a histogram's bin, may be anything). NULL when the reduction reads itself (then
 * reads order the updates too) or no component is affine. Updates of one cell keep
 * their order when the outermost dimension they differ in runs serially, so a dimension
 * free in these distances may run in parallel with results identical to serial ones. */
static __isl_give isl_set *update_distances(const pm_poly *poly, const pm_poly_stmt *s)
{
    pm_func *f = poly->stages[s->stage].func;
    for (int i = 0; i < s->naccesses; i++)
        if (s->accesses[i].callee == f)
            return NULL;
    isl_space *sp = isl_set_get_space(s->domain);
    pm_isl_env env = {sp, s->ndims, s->vars, NULL};
    isl_pw_multi_aff *cell = NULL;
    for (int d = 0; d < f->ndims; d++) {
        isl_pw_aff *pa = pm_isl_pw_aff(&env, f->rindex[d]);
        if (!pa)
            continue; /* data-dependent: no constraint */
        isl_pw_multi_aff *one = isl_pw_multi_aff_from_pw_aff(pa);
        cell = cell ? isl_pw_multi_aff_flat_range_product(cell, one) : one;
    }
    isl_space_free(sp);
    if (!cell)
        return NULL;
    isl_map *w = isl_map_intersect_domain(isl_map_from_pw_multi_aff(cell),
                                          isl_set_copy(s->domain));
    isl_map *back = isl_map_reverse(isl_map_copy(w)); /* before w is consumed */
    return isl_map_deltas(isl_map_apply_range(w, back));
}

/* The dimensions of a reduction's written cell whose index is affine and lands inside
 * the function's box for every update of the domain: the emitter checks only the others
 * at run time (an index outside skips the update, polymage.h). The channel and cell
 * indices of bilateral grid's histogram are proven; its bin is data-dependent. */
static unsigned write_inside_dims(const pm_poly_stmt *s, const pm_func *f, __isl_keep isl_set *box)
{
    isl_space *sp = isl_set_get_space(s->domain);
    pm_isl_env env = {sp, s->ndims, s->vars, NULL};
    unsigned mask = 0;
    int n = f->ndims;
    for (int d = 0; d < n && d < 32; d++) {
        isl_pw_aff *pa = pm_isl_pw_aff(&env, f->rindex[d]);
        if (!pa)
            continue;
        isl_set *vals = isl_map_range(isl_map_intersect_domain(isl_map_from_pw_aff(pa),
                                                               isl_set_copy(s->domain)));
        isl_set *allowed = isl_set_project_out(isl_set_copy(box), isl_dim_set, (unsigned)d + 1,
                                               (unsigned)(n - d - 1));
        allowed = isl_set_project_out(allowed, isl_dim_set, 0, (unsigned)d);
        allowed = isl_set_reset_tuple_id(allowed);
        vals = isl_set_reset_tuple_id(vals);
        if (isl_set_is_subset(vals, allowed) == isl_bool_true)
            mask |= 1u << d;
        isl_set_free(vals);
        isl_set_free(allowed);
    }
    isl_space_free(sp);
    return mask;
}

typedef struct var_use {
    int id;
    bool found;
} var_use;

static bool visit_var_use(const pm_expr *e, void *user)
{
    var_use *u = user;
    if (e->kind == PM_EXPR_VAR && e->id == u->id)
        u->found = true;
    return !u->found;
}

/* The bin of a reduction's written cell and the reduction dimensions its other indices
 * leave free (poly.h: bin_extent, bin_dim, row_free_dims). */
static void bin_facts(pm_poly_stmt *s, const pm_func *f)
{
    s->bin_extent = 0;
    s->bin_dim = -1;
    s->row_free_dims = 0;
    int bin = -1;
    for (int d = 0; d < f->ndims; d++)
        if (d >= 32 || !(s->write_inside_dims & (1u << d))) {
            if (bin >= 0)
                return;
            bin = d;
        }
    if (bin < 0)
        return;
    const pm_interval *iv = f->intervals[bin];
    if (iv->lb->kind != PM_EXPR_INT || iv->ub->kind != PM_EXPR_INT || iv->step != 1 ||
        iv->ub->ival < iv->lb->ival || iv->ub->ival - iv->lb->ival >= PM_POLY_BIN_MAX)
        return;
    for (int k = 0; k < f->nrdims && k < 32; k++) {
        var_use u = {f->rvars[k]->id, false};
        for (int d = 0; d < f->ndims && !u.found; d++)
            if (d != bin)
                pm_expr_walk(f->rindex[d], visit_var_use, &u);
        if (!u.found)
            s->row_free_dims |= 1u << k;
    }
    s->bin_dim = bin;
    s->bin_extent = (int)(iv->ub->ival - iv->lb->ival + 1);
}

void pm_poly_stmt_dependences(const pm_poly *poly, pm_poly_stmt *s)
{
    s->free_dims = 0;
    s->vectorizable = false;
    s->distinct_cell_dims = 0;
    if (s->ndims == 0)
        return;
    if (s->kind == PM_STMT_UPDATE) {
        /* updates run in the reduction domain's lexicographic order, except along an
         * outer dimension whose instances never write a common cell */
        isl_set *deltas = update_distances(poly, s);
        if (!deltas)
            return;
        for (int k = 0; k < s->ndims && k < 32; k++) {
            if (dim_always_zero(deltas, k))
                s->distinct_cell_dims |= 1u << k;
            if (dim_free(deltas, k))
                s->free_dims |= 1u << k;
        }
        isl_set_free(deltas);
        return;
    }
    bool nonaffine = false;
    isl_set *deltas = s->kind == PM_STMT_CASE ? self_distances(poly, s, &nonaffine) : NULL;
    if (!nonaffine) {
        for (int k = 0; k < s->ndims && k < 32; k++)
            if (dim_free(deltas, k))
                s->free_dims |= 1u << k;
        s->vectorizable = s->ndims <= 32 && (s->free_dims & (1u << (s->ndims - 1)));
    }
    isl_set_free(deltas);
}

/* ---- building ---------------------------------------------------------------------- */

void pm_poly_part_bounds_clear(pm_poly_part_bounds *b)
{
    for (int i = 0; i < b->n; i++)
        isl_aff_free(b->aff[i]);
    free(b->aff);
    free(b->kind);
    memset(b, 0, sizeof *b);
}

void pm_poly_stmt_clear(pm_poly_stmt *s)
{
    isl_set_free(s->domain);
    for (int a = 0; a < s->naccesses; a++)
        isl_map_free(s->accesses[a].rel);
    free(s->accesses);
    for (int p = 0; p < s->nparts; p++) {
        pm_poly_stmt_clear(&s->parts[p]);
        if (s->part_bounds)
            pm_poly_part_bounds_clear(&s->part_bounds[p]);
    }
    free(s->parts);
    free(s->part_bounds);
    for (int d = 0; d < PM_MAX_DIMS; d++)
        isl_id_free(s->row_id[d]);
    memset(s, 0, sizeof *s);
}

/* Case c of stage si as statement s: its domain, run-time conjuncts, accesses, facts. */
static pm_status case_stmt(pm_poly *poly, int si, int c, pm_poly_stmt *s,
                           pm_isl_cond_memo *memo, pm_error *err)
{
    pm_func *f = poly->stages[si].func;
    const pm_poly_storage *sto = &poly->storage[poly->stages[si].storage];
    s->stage = si;
    s->kind = PM_STMT_CASE;
    s->case_index = c;
    s->ncases = 1;
    s->ndims = f->ndims;
    s->vars = f->vars;
    if (f->ncases == 1)
        snprintf(s->name, sizeof s->name, "%s", f->name);
    else
        snprintf(s->name, sizeof s->name, "%s_c%d", f->name, c);
    isl_set *dom = pm_poly_var_domain(poly, sto, s->name);
    isl_space *sp = isl_set_get_space(dom);
    pm_isl_env env = {sp, f->ndims, f->vars, memo};
    isl_set *cond = split_cond(&env, f->cases[c]->cond, s->residual, &s->nresidual,
                               PM_POLY_MAX_RESIDUAL);
    isl_space_free(sp);
    if (!cond) {
        isl_set_free(dom);
        return pm_error_set(err, PM_ERR_UNSUPPORTED,
                            "%s: case %d has more than %d non-affine conditions", f->name, c,
                            PM_POLY_MAX_RESIDUAL);
    }
    /* A convex domain is coalesced (cheap: its constraints simplified). A union is left
     * as the condition made it: the complement of a stage's interior box (the usual
     * border case) is pieces no coalescing merges, and coalescing them with the
     * parameters' divisions (R / 4) was a quarter of local Laplacian's poly step (56
     * such cases, 24 ms) for the same pieces; the cases step makes a union's pieces
     * disjoint statements of their own anyway. */
    dom = isl_set_intersect(dom, cond);
    s->domain = isl_set_n_basic_set(dom) > 1 ? dom : isl_set_coalesce(dom);
    const pm_expr *roots[1 + PM_POLY_MAX_RESIDUAL];
    int nroots = 0;
    roots[nroots++] = f->cases[c]->value;
    for (int r = 0; r < s->nresidual; r++)
        roots[nroots++] = s->residual[r];
    pm_status stt = pm_poly_stmt_accesses(poly, s, roots, nroots, err);
    if (stt == PM_OK)
        pm_poly_stmt_dependences(poly, s);
    return stt;
}

/* A reduction's two statements at s[0] (init over the variable domain) and s[1] (the
 * update over the reduction domain), with their accesses and facts. */
static pm_status reduction_stmts(pm_poly *poly, int si, pm_poly_stmt *s, pm_error *err)
{
    pm_func *f = poly->stages[si].func;
    const pm_poly_storage *sto = &poly->storage[poly->stages[si].storage];
    s[0].stage = si;
    s[0].kind = PM_STMT_INIT;
    s[0].ndims = f->ndims;
    s[0].vars = f->vars;
    snprintf(s[0].name, sizeof s[0].name, "%s_init", f->name);
    s[0].domain = pm_poly_var_domain(poly, sto, s[0].name);
    const pm_expr *iroots[1] = {f->initial};
    pm_status stt = pm_poly_stmt_accesses(poly, &s[0], iroots, 1, err);
    if (stt != PM_OK)
        return stt;
    pm_poly_stmt_dependences(poly, &s[0]);
    s[1].stage = si;
    s[1].kind = PM_STMT_UPDATE;
    s[1].ndims = f->nrdims;
    s[1].vars = f->rvars;
    snprintf(s[1].name, sizeof s[1].name, "%s_update", f->name);
    s[1].domain = red_domain(poly, f, s[1].name, err);
    if (!s[1].domain)
        return err ? err->status : PM_ERR_UNSUPPORTED;
    const pm_expr *uroots[1 + PM_MAX_DIMS];
    int nu = 0;
    uroots[nu++] = f->rvalue;
    for (int d = 0; d < f->ndims; d++)
        uroots[nu++] = f->rindex[d];
    stt = pm_poly_stmt_accesses(poly, &s[1], uroots, nu, err);
    if (stt != PM_OK)
        return stt;
    pm_poly_stmt_dependences(poly, &s[1]);
    s[1].write_inside_dims = write_inside_dims(&s[1], f, sto->box);
    bin_facts(&s[1], f);
    return PM_OK;
}

/* Stage si's statements from *next_stmt on: one per case, or a reduction's two. */
static pm_status build_stage(pm_poly *poly, int si, int *next_stmt, pm_error *err)
{
    pm_poly_stage *st = &poly->stages[si];
    pm_func *f = st->func;
    st->first_stmt = *next_stmt;
    pm_status stt = PM_OK;
    if (f->kind == PM_FUNC_FUNCTION) {
        if (!f->defined || f->ncases < 1)
            return pm_error_set(err, PM_ERR_INVALID, "%s: function has no definition",
                                f->name);
        pm_isl_cond_memo memo = {.n = 0};
        for (int c = 0; c < f->ncases && stt == PM_OK; c++)
            stt = case_stmt(poly, si, c, &poly->stmts[(*next_stmt)++], &memo, err);
        pm_isl_cond_memo_clear(&memo);
    } else if (f->kind == PM_FUNC_REDUCTION) {
        if (!f->rindex || !f->rvalue)
            return pm_error_set(err, PM_ERR_INVALID, "%s: reduction has no definition",
                                f->name);
        stt = reduction_stmts(poly, si, &poly->stmts[*next_stmt], err);
        *next_stmt += 2;
    } else {
        return pm_error_set(err, PM_ERR_INTERNAL, "%s: an image is not a stage", f->name);
    }
    st->nstmts = *next_stmt - st->first_stmt;
    return stt;
}

static int output_index(const pm_pipeline *p, const pm_func *f)
{
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i] == f)
            return i;
    return -1;
}

/* ---- which stages round as the interpreter does ---------------------------------------- */

/* Does e's value decide something discrete from its float operands: a conversion of a
 * float to an integer or a boolean, a comparison or modulo of floats, floor, ceil,
 * round, trunc or atan2 (whose branch cut is a jump)? Its operands are then evaluated
 * exactly. */
bool pm_poly_discrete_of_float(const pm_expr *e)
{
    switch (e->kind) {
    case PM_EXPR_CAST:
        return pm_type_is_float(e->a->type) && !pm_type_is_float(e->type);
    case PM_EXPR_UNARY:
        return e->op == PM_OP_NOT && pm_type_is_float(e->a->type);
    case PM_EXPR_BINARY:
        return pm_type_is_float(e->a->type) &&
               ((e->op >= PM_OP_LT && e->op <= PM_OP_GT) || e->op == PM_OP_MOD ||
                e->op == PM_OP_CMOD || e->op == PM_OP_AND || e->op == PM_OP_OR);
    case PM_EXPR_MATH:
        return e->op == PM_FLOOR || e->op == PM_CEIL || e->op == PM_ROUND ||
               e->op == PM_TRUNC || e->op == PM_MATH_ATAN2;
    default:
        return false;
    }
}

/* Marks the callees e reads where an exact value is needed: everywhere when exact, else
 * below a discrete operation and in a select's condition. */
static void mark_exact_reads(pm_poly *poly, const pm_expr *e, bool exact)
{
    if (!e)
        return;
    if (e->kind == PM_EXPR_CALL) {
        for (int i = 0; exact && i < poly->nstages; i++)
            if (poly->stages[i].func == e->callee)
                poly->stages[i].float_exact = true;
        for (int a = 0; a < e->nargs; a++)
            mark_exact_reads(poly, e->args[a], true); /* indices are discrete */
        return;
    }
    bool below = exact || pm_poly_discrete_of_float(e);
    mark_exact_reads(poly, e->a, below || e->kind == PM_EXPR_SELECT);
    mark_exact_reads(poly, e->b, below);
    mark_exact_reads(poly, e->c, below);
}

/* A stage is exact when it is not of a float type, or when a reader reads it where an
 * exact value is needed, or an exact stage reads it. Readers come after their callees
 * (a self-read marks the stage itself), so one pass from the last stage settles it.
 * Conditions (cases, reductions' indices) are discrete. */
static void mark_exact_stages(pm_poly *poly)
{
    /* A window form rounds every float operation as the interpreter does, so a window's
     * values do not depend on how its kernel fused or vectorized (frontend/window.h). */
    if (poly->pipeline->window) {
        for (int i = 0; i < poly->nstages; i++)
            poly->stages[i].float_exact = true;
        return;
    }
    for (int i = poly->nstages - 1; i >= 0; i--) {
        pm_poly_stage *sg = &poly->stages[i];
        const pm_func *f = sg->func;
        if (!pm_type_is_float(f->type))
            sg->float_exact = true;
        bool exact = sg->float_exact;
        for (int c = 0; c < f->ncases; c++) {
            mark_exact_reads(poly, f->cases[c]->cond, true);
            mark_exact_reads(poly, f->cases[c]->value, exact);
        }
        if (f->kind == PM_FUNC_REDUCTION) {
            for (int d = 0; f->rindex && d < f->ndims; d++)
                mark_exact_reads(poly, f->rindex[d], true);
            mark_exact_reads(poly, f->rvalue, exact);
        }
        /* a self-read made the stage exact only now: its reads again, exactly */
        if (sg->float_exact && !exact)
            i++;
    }
}

pm_poly *pm_poly_new(isl_ctx *ctx, pm_pipeline *p, pm_error *err)
{
    pm_poly *poly = calloc(1, sizeof *poly);
    if (!poly) {
        pm_error_set(err, PM_ERR_NOMEM, "%s: out of memory", p->name);
        return NULL;
    }
    poly->ctx = ctx;
    poly->pipeline = p;
    /* Parameters: the integer ones, named as in the pipeline; the pm_expr rides along
     * as the id's user pointer so generated code can find its value. */
    poly->params = pm_isl_param_space(ctx, p);

    poly->nstages = p->nstages;
    poly->stages = calloc(p->nstages ? p->nstages : 1, sizeof *poly->stages);
    poly->nstorage = p->ninputs + p->nstages;
    poly->storage = calloc(poly->nstorage ? poly->nstorage : 1, sizeof *poly->storage);
    int nstmts = 0;
    for (int i = 0; i < p->nstages; i++)
        nstmts += p->stages[i]->kind == PM_FUNC_REDUCTION ? 2
                  : p->stages[i]->ncases > 0 ? 2 * p->stages[i]->ncases /* merges: poly.h */
                                             : 1;
    poly->stmts_cap = nstmts ? nstmts : 1; /* the cases phase's merges fit; its splits grow it */
    poly->stmts = calloc((size_t)poly->stmts_cap, sizeof *poly->stmts);
    pm_status st = PM_OK;
    /* A window form: inputs are blocks, outputs windows, and every stage is computed
     * only where the window reads it (frontend/window.h). */
    const pm_window *win = p->window;
    isl_set **demand = NULL, *context = NULL;
    if (win) {
        demand = calloc((size_t)poly->nstorage + 1, sizeof *demand);
        context = pm_window_context(p, poly->params);
        if (!demand || !context || !pm_window_demand(p, poly->params, demand))
            st = pm_error_set(err, PM_ERR_INTERNAL, "%s: isl could not find what the window "
                              "reads", p->name);
    }
    for (int i = 0; i < p->ninputs && st == PM_OK; i++) {
        poly->storage[i].role = PM_STORAGE_INPUT;
        poly->storage[i].io_index = i;
        window_bounds wb = {win ? win->in_lb + i * PM_MAX_DIMS : NULL,
                            win ? win->in_ub + i * PM_MAX_DIMS : NULL, NULL, context};
        st = storage_init(poly, &poly->storage[i], p->inputs[i], win ? &wb : NULL, err);
    }
    for (int i = 0; i < p->nstages && st == PM_OK; i++) {
        pm_poly_storage *sto = &poly->storage[p->ninputs + i];
        int out = output_index(p, p->stages[i]);
        sto->role = out >= 0 ? PM_STORAGE_OUTPUT : PM_STORAGE_SCRATCH;
        sto->io_index = out >= 0 ? out : -1;
        window_bounds wb = {NULL, NULL, NULL, context};
        if (win && out >= 0) {
            wb.lb = win->out_lb + out * PM_MAX_DIMS;
            wb.ub = win->out_ub + out * PM_MAX_DIMS;
        } else if (win) {
            wb.demand = demand[p->ninputs + i];
        }
        st = storage_init(poly, sto, p->stages[i], win ? &wb : NULL, err);
        poly->stages[i].func = p->stages[i];
        poly->stages[i].storage = p->ninputs + i;
    }
    for (int i = 0; demand && i < poly->nstorage; i++)
        isl_set_free(demand[i]);
    free(demand);
    isl_set_free(context);
    int next = 0;
    for (int i = 0; i < p->nstages && st == PM_OK; i++)
        st = build_stage(poly, i, &next, err);
    poly->nstmts = next;
    if (st == PM_OK)
        mark_exact_stages(poly);
    if (st != PM_OK) {
        pm_poly_free(poly);
        return NULL;
    }
    return poly;
}

void pm_poly_free(pm_poly *poly)
{
    if (!poly)
        return;
    for (int i = 0; i < poly->nstmts; i++)
        pm_poly_stmt_clear(&poly->stmts[i]);
    for (int i = 0; i < poly->nstorage; i++) {
        pm_poly_storage *st = &poly->storage[i];
        for (int d = 0; d < st->ndims; d++) {
            isl_pw_aff_free(st->lb[d]);
            isl_pw_aff_free(st->ub[d]);
        }
        isl_set_free(st->box);
    }
    free(poly->stmts);
    free(poly->stages);
    free(poly->storage);
    isl_space_free(poly->params);
    free(poly);
}

/* ---- dump -------------------------------------------------------------------------- */

static void print_isl(pm_str *out, char *text)
{
    pm_str_append(out, "%s", text ? text : "(null)");
    free(text);
}

/* One statement of the "domains" dump, its lines indented by `in`; a merged
 * statement's parts below it, each with its interval at a row. */
/* " k" for each bit k < n of mask; how many. */
static int print_dims(pm_str *out, unsigned mask, int n)
{
    int count = 0;
    for (int k = 0; k < n && k < 32; k++)
        if (mask & (1u << k)) {
            pm_str_append(out, " %d", k);
            count++;
        }
    return count;
}

/* An update's facts: the written index's dimensions checked at run time, the cells'
 * distinct dimensions, a histogram's bin. */
static void print_update_facts(pm_str *out, const pm_poly *poly, const pm_poly_stmt *s,
                               const char *in)
{
    pm_str_append(out, "%s  written index checked at run time in dims", in);
    int nchk = 0;
    for (int k = 0; k < poly->stages[s->stage].func->ndims; k++)
        if (k >= 32 || !(s->write_inside_dims & (1u << k))) {
            pm_str_append(out, " %d", k);
            nchk++;
        }
    pm_str_append(out, nchk ? "\n" : " none\n");
    if (s->distinct_cell_dims) {
        pm_str_append(out, "%s  cells distinct along dims", in);
        print_dims(out, s->distinct_cell_dims, s->ndims);
        pm_str_append(out, "\n");
    }
    if (s->bin_extent > 0) {
        pm_str_append(out, "%s  bin: index %d, %d points; rows free of dims", in, s->bin_dim,
                      s->bin_extent);
        int nfree = print_dims(out, s->row_free_dims, s->ndims);
        pm_str_append(out, nfree ? "\n" : " none\n");
    }
}

static void print_accesses(pm_str *out, const pm_poly_stmt *s, const char *in)
{
    for (int a = 0; a < s->naccesses; a++) {
        const pm_poly_access *acc = &s->accesses[a];
        pm_str_append(out, "%s  read ", in);
        pm_expr_print(out, acc->call);
        pm_str_append(out, ": ");
        if (acc->rel)
            print_isl(out, isl_map_to_str(acc->rel));
        else
            pm_str_append(out, "data-dependent");
        pm_str_append(out, acc->in_bounds ? " (in bounds)\n" : " (clamped)\n");
    }
}

static void print_stmt(pm_str *out, const pm_poly *poly, const pm_poly_stmt *s, const char *in);

/* A merged statement's parts: each one's interval of a row, then the part itself. */
static void print_parts(pm_str *out, const pm_poly *poly, const pm_poly_stmt *s, const char *in)
{
    if (s->nparts > 0)
        pm_str_append(out, "%s  %d parts, one statement for isl; per row, each part's interval "
                           "of dim %d (\"dim\"):\n", in, s->nparts, s->ndims - 1);
    for (int p = 0; p < s->nparts; p++) {
        const pm_poly_part_bounds *b = &s->part_bounds[p];
        pm_str_append(out, "%s  part %d:", in, p);
        for (int i = 0; i < b->n; i++) {
            static const char *fmt[] = {" dim >= %s", " dim <= %s", " %s >= 0", " %s == 0"};
            isl_printer *pr = isl_printer_to_str(isl_aff_get_ctx(b->aff[i]));
            pr = isl_printer_set_output_format(pr, ISL_FORMAT_C);
            pr = isl_printer_print_aff(pr, b->aff[i]);
            char *e = isl_printer_get_str(pr);
            isl_printer_free(pr);
            pm_str_append(out, fmt[b->kind[i]], e ? e : "(null)");
            pm_str_append(out, i + 1 < b->n ? "," : "\n");
            free(e);
        }
        print_stmt(out, poly, &s->parts[p], "      ");
    }
}

static void print_stmt(pm_str *out, const pm_poly *poly, const pm_poly_stmt *s, const char *in)
{
    static const char *sk[] = {"case", "init", "update"};
    pm_str_append(out, "%s%s %s: ", in, sk[s->kind], s->name);
    print_isl(out, isl_set_to_str(s->domain));
    pm_str_append(out, "\n%s  free of dependences in dims", in);
    bool any = print_dims(out, s->free_dims, s->ndims) > 0;
    pm_str_append(out, "%s, %s\n", any ? "" : " none",
                  s->vectorizable ? "vectorizable" : "not vectorizable");
    if (s->kind == PM_STMT_UPDATE)
        print_update_facts(out, poly, s, in);
    if (s->branch_cases)
        pm_str_append(out, "%s  cases %d..%d chosen per row by a branch\n", in, s->case_index,
                      s->case_index + s->ncases - 1);
    if (s->border_dims) {
        pm_str_append(out, "%s  border strip along dims", in);
        print_dims(out, s->border_dims, s->ndims);
        pm_str_append(out, " (scalar code)\n");
    }
    for (int r = 0; r < s->nresidual; r++) {
        pm_str_append(out, "%s  run-time condition: ", in);
        pm_expr_print(out, s->residual[r]);
        pm_str_append(out, "\n");
    }
    print_accesses(out, s, in);
    print_parts(out, poly, s, in);
}

char *pm_poly_to_string(const pm_poly *poly)
{
    pm_str out = {0};
    for (int i = 0; i < poly->nstorage; i++) {
        const pm_poly_storage *st = &poly->storage[i];
        if (st->role == PM_STORAGE_SCRATCH) /* its place is the storage phase's */
            pm_str_append(&out, "storage %s: a stage, %s, box ", st->func->name,
                          pm_type_name(st->type));
        else
            pm_str_append(&out, "storage %s: %s %d, %s, box ", st->func->name,
                          st->role == PM_STORAGE_INPUT ? "input" : "output", st->io_index,
                          pm_type_name(st->type));
        print_isl(&out, isl_set_to_str(st->box));
        pm_str_append(&out, "\n");
    }
    for (int i = 0; i < poly->nstages; i++) {
        const pm_poly_stage *sg = &poly->stages[i];
        pm_str_append(&out, "stage %d: %s%s\n", i, sg->func->name,
                      pm_type_is_float(sg->func->type)
                          ? sg->float_exact ? " (float arithmetic exact: its values reach a discrete result)"
                                            : " (multiply-adds may fuse)"
                          : "");
        for (int k = 0; k < sg->nstmts; k++)
            print_stmt(&out, poly, &poly->stmts[sg->first_stmt + k], "  ");
    }
    if (!out.data)
        pm_str_append(&out, "%s", "");
    return out.data;
}
