/* align.c — alignment and scaling of a group's stages (see align.h).
 *
 * Shape: each read of a member by a member (pm_align_reads) as a linear map of the
 * dimensions (lin_of); pm_align_group walks the members from the live-out back to the
 * producers, giving each dimension its group dimension and scale from a read
 * (align_read), then checks every read agrees (align_in_order).
 */
#include "codegen/align.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Variables of the function being read, as linear forms of the consumer's coordinates. */
typedef struct lin_env {
    const pm_func *f;
    pm_lin var[PM_MAX_DIMS];
    bool unknown[PM_MAX_DIMS]; /* read at a data-dependent coordinate (through an inlined
                                  function): no linear form */
} lin_env;

static bool lin_of(const lin_env *env, const pm_expr *e, pm_lin *out)
{
    pm_lin a, b;
    switch (e->kind) {
    case PM_EXPR_INT:
        *out = (pm_lin){-1, 0, (double)e->ival, (double)e->ival};
        return true;
    case PM_EXPR_VAR:
        for (int d = 0; d < env->f->ndims; d++)
            if (env->f->vars[d]->id == e->id) {
                *out = env->var[d];
                return !env->unknown[d];
            }
        return false;
    case PM_EXPR_CAST:
        return pm_type_is_int(e->type) && pm_type_is_int(e->a->type) &&
               pm_type_bits(e->type) >= 32 && lin_of(env, e->a, out);
    case PM_EXPR_UNARY:
        if (e->op != PM_OP_NEG || !lin_of(env, e->a, &a))
            return false;
        *out = (pm_lin){a.var, -a.coef, -a.hi, -a.lo};
        return true;
    case PM_EXPR_BINARY:
        if (!pm_type_is_int(e->type) || !lin_of(env, e->a, &a))
            return false;
        if ((e->op == PM_OP_DIV || e->op == PM_OP_MUL) && e->b->kind == PM_EXPR_INT) {
            double k = (double)e->b->ival;
            if (e->op == PM_OP_MUL) {
                *out = k >= 0 ? (pm_lin){a.var, a.coef * k, a.lo * k, a.hi * k}
                              : (pm_lin){a.var, a.coef * k, a.hi * k, a.lo * k};
                return true;
            }
            if (k <= 0)
                return false;
            /* floor(v / k) lies in [v/k - (k-1)/k, v/k] */
            *out = (pm_lin){a.var, a.coef / k, a.lo / k - (k - 1) / k, a.hi / k};
            return true;
        }
        if (e->op == PM_OP_MUL && e->a->kind == PM_EXPR_INT && lin_of(env, e->b, &b)) {
            double k = (double)e->a->ival;
            *out = k >= 0 ? (pm_lin){b.var, b.coef * k, b.lo * k, b.hi * k}
                          : (pm_lin){b.var, b.coef * k, b.hi * k, b.lo * k};
            return true;
        }
        if ((e->op != PM_OP_ADD && e->op != PM_OP_SUB) || !lin_of(env, e->b, &b))
            return false;
        if (a.var >= 0 && b.var >= 0 && a.var != b.var)
            return false;
        if (e->op == PM_OP_SUB)
            b = (pm_lin){b.var, -b.coef, -b.hi, -b.lo};
        *out = (pm_lin){a.var >= 0 ? a.var : b.var, a.coef + b.coef, a.lo + b.lo, a.hi + b.hi};
        if (fabs(out->coef) < 1e-12)
            out->var = -1;
        return true;
    default:
        return false;
    }
}

/* Dimension d of f has constant bounds lb..ub, step 1, at most PM_WHOLE_MAX points: a
 * data-dependent read along it may take any of them, and a tile computes them all. */
static bool whole_dim(const pm_func *f, int d, int64_t *lb, int64_t *ub)
{
    if (f->kind != PM_FUNC_FUNCTION || d >= f->ndims || !f->intervals || !f->intervals[d])
        return false;
    const pm_interval *iv = f->intervals[d];
    if (iv->step != 1 || iv->lb->kind != PM_EXPR_INT || iv->ub->kind != PM_EXPR_INT)
        return false;
    *lb = iv->lb->ival;
    *ub = iv->ub->ival;
    return *ub >= *lb && *ub - *lb + 1 <= PM_WHOLE_MAX;
}

/* Does every statement of f that makes this call read inside the callee's box: an
 * affine read (validation keeps those inside), or a data-dependent one proven inside
 * (poly.c)? Only such reads may take a group member along a whole dimension: a clamped
 * read would need the callee's box, and a member's scratch holds its footprint. */
static bool read_in_box(const pm_plan *plan, const pm_func *f, const pm_expr *call)
{
    int s = pm_plan_stage_of(plan, f);
    if (s < 0)
        return false;
    const pm_poly_stage *st = &plan->poly->stages[s];
    bool found = false;
    for (int k = 0; k < st->nstmts; k++) {
        const pm_poly_access *acc = pm_poly_access_of(&plan->poly->stmts[st->first_stmt + k], call);
        if (!acc)
            continue;
        found = true;
        if (!acc->rel && !acc->in_bounds)
            return false;
    }
    return found;
}

typedef struct reads_ctx {
    const pm_plan *plan;
    int consumer;
    const lin_env *env;
    pm_read **out;
    int *n;
    bool ok;
    int depth;
} reads_ctx;

static bool collect_reads_of(const pm_plan *plan, int consumer, const pm_func *f,
                             const lin_env *env, pm_read **out, int *n, int depth);

static bool visit_call(const pm_expr *e, void *user)
{
    reads_ctx *r = user;
    if (e->kind != PM_EXPR_CALL || !r->ok)
        return r->ok;
    int p = pm_plan_stage_of(r->plan, e->callee);
    if (p < 0)
        return true; /* an input image: not a member of any group */
    if (p == r->consumer && r->depth == 0) {
        r->ok = false; /* a self-reference: never in a fused group */
        return false;
    }
    lin_env inner = {e->callee, {{0}}, {0}};
    pm_read rd = {r->consumer, p, true, true, e->nargs, {{0}}};
    for (int i = 0; i < e->nargs; i++) {
        if (!lin_of(r->env, e->args[i], &rd.arg[i])) {
            rd.affine = false;
            inner.unknown[i] = true; /* its reads there are data-dependent too */
            int64_t lb, ub;
            if (whole_dim(e->callee, i, &lb, &ub) &&
                read_in_box(r->plan, r->env->f, e))
                rd.arg[i] = (pm_lin){-1, 0, (double)lb, (double)ub};
            else
                rd.bounded = false;
        }
        inner.var[i] = rd.arg[i];
    }
    if (pm_plan_call_inlined(r->plan, e)) {
        r->ok = collect_reads_of(r->plan, r->consumer, e->callee, &inner, r->out, r->n,
                                 r->depth + 1);
        return r->ok;
    }
    pm_read *grown = realloc(*r->out, (size_t)(*r->n + 1) * sizeof *grown);
    if (!grown) {
        r->ok = false;
        return false;
    }
    *r->out = grown;
    grown[(*r->n)++] = rd;
    return true;
}

static bool collect_reads_of(const pm_plan *plan, int consumer, const pm_func *f,
                             const lin_env *env, pm_read **out, int *n, int depth)
{
    if (depth > 32)
        return false;
    const pm_expr *roots[64];
    int nr = pm_func_exprs(f, roots, 64);
    reads_ctx r = {plan, consumer, env, out, n, true, depth};
    for (int i = 0; i < nr && r.ok; i++)
        if (roots[i])
            pm_expr_walk(roots[i], visit_call, &r);
    return r.ok;
}

/* Appends cache entry e to *out; false when out of memory. */
static bool reads_from_cache(const pm_read_cache *e, pm_read **out, int *n)
{
    if (!e->ok || e->n == 0)
        return e->ok;
    pm_read *grown = realloc(*out, (size_t)(*n + e->n) * sizeof *grown);
    if (!grown)
        return false;
    memcpy(grown + *n, e->reads, (size_t)e->n * sizeof *grown);
    *out = grown;
    *n += e->n;
    return true;
}

bool pm_align_cache_reads(pm_plan *plan)
{
    int n = plan->poly->nstages;
    pm_read_cache *c = calloc((size_t)n + 1, sizeof *c);
    if (!c)
        return false;
    for (int s = 0; s < n; s++)
        c[s].ok = pm_align_reads(plan, s, &c[s].reads, &c[s].n);
    plan->read_cache = c;
    return true;
}

bool pm_align_reads(const pm_plan *plan, int c, pm_read **out, int *n)
{
    if (plan->read_cache)
        return reads_from_cache(&plan->read_cache[c], out, n);
    const pm_func *f = plan->poly->stages[c].func;
    if (f->kind != PM_FUNC_FUNCTION)
        return false;
    lin_env env = {f, {{0}}, {0}};
    for (int d = 0; d < f->ndims; d++)
        env.var[d] = (pm_lin){d, 1, 0, 0};
    return collect_reads_of(plan, c, f, &env, out, n, 0);
}

static int member_index(const int *members, int n, int stage)
{
    for (int m = 0; m < n; m++)
        if (members[m] == stage)
            return m;
    return -1;
}

/* Producer pm's alignment constrained by one read of consumer m (align[m] known): each
 * argument along a consumer coordinate places the producer's coordinate on the same
 * group dimension at the composed scale. False on a flip or a conflict with an
 * earlier read. */
static bool align_read(pm_align *align, int m, int pm, const pm_read *rd)
{
    for (int k = 0; k < rd->nargs; k++) {
        const pm_lin *a = &rd->arg[k];
        if (a->var < 0)
            continue; /* a constant position: no constraint */
        if (a->coef <= 0)
            return false; /* a flip */
        int j = align[m].dim_of[a->var];
        double s = align[m].scale[a->var] * a->coef;
        if (j < 0)
            continue; /* follows a coordinate that follows no group dimension */
        pm_align *pa = &align[pm];
        if (pa->dim_of[k] == -2) {
            pa->dim_of[k] = j;
            pa->scale[k] = s;
        } else if (pa->dim_of[k] != j || fabs(pa->scale[k] - s) > 1e-9 * s) {
            return false;
        }
    }
    return true;
}

/* Distinct coordinates of each member follow distinct group dimensions, in order; the
 * coordinates no read placed become -1 (they follow none). */
static bool align_in_order(const pm_poly *poly, const int *members, int nmembers,
                           pm_align *align)
{
    bool ok = true;
    for (int m = 0; m < nmembers && ok; m++) {
        const pm_func *f = poly->stages[members[m]].func;
        int last = -1;
        for (int d = 0; d < f->ndims && ok; d++) {
            int j = align[m].dim_of[d];
            if (j == -2) {
                align[m].dim_of[d] = -1;
                continue;
            }
            if (j < 0)
                continue;
            if (j <= last)
                ok = false;
            last = j;
        }
    }
    return ok;
}

bool pm_align_group(const pm_plan *plan, const int *members, int nmembers, pm_align *align)
{
    const pm_poly *poly = plan->poly;
    int lo = members[nmembers - 1];
    const pm_func *L = poly->stages[lo].func;
    for (int m = 0; m < nmembers; m++)
        for (int d = 0; d < PM_MAX_DIMS; d++)
            align[m].dim_of[d] = -2; /* not yet known */
    for (int d = 0; d < L->ndims; d++) {
        align[nmembers - 1].dim_of[d] = d;
        align[nmembers - 1].scale[d] = 1;
    }
    pm_read *reads = NULL;
    int nreads = 0;
    bool ok = true;
    /* consumers before producers: a member's placement comes from its consumers' */
    for (int m = nmembers - 1; m >= 0 && ok; m--) {
        int c = members[m];
        const pm_func *cf = poly->stages[c].func;
        for (int d = 0; d < cf->ndims; d++)
            if (align[m].dim_of[d] == -2) {
                if (m == nmembers - 1)
                    ok = false;
                align[m].dim_of[d] = -1; /* never read along a variable */
                align[m].scale[d] = 0;
            }
        nreads = 0;
        if (!pm_align_reads(plan, c, &reads, &nreads)) {
            ok = false;
            break;
        }
        for (int r = 0; r < nreads && ok; r++) {
            int pm = member_index(members, nmembers, reads[r].producer);
            if (pm < 0)
                continue; /* produced outside the group */
            ok = pm < m && (reads[r].affine || reads[r].bounded) &&
                 align_read(align, m, pm, &reads[r]);
        }
    }
    free(reads);
    return ok && align_in_order(poly, members, nmembers, align);
}
