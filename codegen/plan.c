/* plan.c — the optimizer's shared record (see plan.h): allocation, the facts every
 * optimizing phase asks (costs, reads, volumes at the estimates), and the dumps. */
#include "codegen/plan.h"

#include "codegen/bitset.h"

#include <isl/id.h>
#include <isl/map.h>
#include <isl/point.h>
#include <isl/space.h>
#include <isl/val.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parameter value assumed where the caller gave no estimates: a mid-sized image. */
#define PM_DEFAULT_ESTIMATE 1024

/* A parameter-only isl function at the estimates (NAN when isl cannot tell). */
static double eval_at_estimates(const pm_plan *plan, __isl_keep isl_pw_aff *pa)
{
    const pm_poly *poly = plan->poly;
    isl_space *sp = isl_pw_aff_get_domain_space(pa);
    isl_point *pt = isl_point_zero(isl_space_copy(sp));
    int np = (int)isl_space_dim(sp, isl_dim_param);
    for (int i = 0; i < np; i++) {
        isl_id *id = isl_space_get_dim_id(sp, isl_dim_param, i);
        const pm_expr *param = id ? isl_id_get_user(id) : NULL;
        isl_id_free(id);
        int64_t v = PM_DEFAULT_ESTIMATE;
        if (param && plan->estimates && param->id >= 0) {
            int slot = poly->pipeline->param_slot[param->id];
            if (slot >= 0)
                v = plan->estimates[slot].i;
        }
        pt = isl_point_set_coordinate_val(pt, isl_dim_param, i,
                                          isl_val_int_from_si(poly->ctx, (long)v));
    }
    isl_space_free(sp);
    isl_val *v = isl_pw_aff_eval(isl_pw_aff_copy(pa), pt);
    double r = NAN;
    if (v && isl_val_is_rat(v) == isl_bool_true)
        r = isl_val_get_d(v);
    isl_val_free(v);
    return r;
}

pm_plan *pm_plan_new(const pm_poly *poly, const pm_options *o, const pm_value *estimates)
{
    pm_plan *plan = calloc(1, sizeof *plan);
    if (!plan)
        return NULL;
    plan->poly = poly;
    plan->o = *o;
    plan->estimates = estimates;
    int n = poly->nstages;
    plan->inlined = calloc((size_t)n + 1, sizeof *plan->inlined);
    plan->group_of = calloc((size_t)n + 1, sizeof *plan->group_of);
    plan->est_lb = calloc((size_t)(n + 1) * PM_MAX_DIMS, sizeof *plan->est_lb);
    plan->est_ub = calloc((size_t)(n + 1) * PM_MAX_DIMS, sizeof *plan->est_ub);
    plan->parallel_dim = calloc((size_t)poly->nstmts + 1, sizeof *plan->parallel_dim);
    plan->storage = calloc((size_t)poly->nstorage + 1, sizeof *plan->storage);
    plan->channel_dim = calloc((size_t)poly->nstmts + 1, sizeof *plan->channel_dim);
    if (!plan->inlined || !plan->group_of || !plan->est_lb || !plan->est_ub ||
        !plan->parallel_dim || !plan->channel_dim || !plan->storage) {
        pm_plan_free(plan);
        return NULL;
    }
    for (int s = 0; s < n; s++) {
        const pm_poly_storage *st = &poly->storage[poly->stages[s].storage];
        for (int d = 0; d < st->ndims; d++) {
            double lb = eval_at_estimates(plan, st->lb[d]);
            double ub = eval_at_estimates(plan, st->ub[d]);
            plan->est_lb[s * PM_MAX_DIMS + d] = isnan(lb) ? 0 : lb;
            plan->est_ub[s * PM_MAX_DIMS + d] = isnan(ub) ? PM_DEFAULT_ESTIMATE - 1 : ub;
        }
    }
    /* every function where the poly says until the storage phase decides */
    for (int k = 0; k < poly->nstorage; k++)
        plan->storage[k] = (pm_storage_plan){.kind = poly->storage[k].role,
                                             .index = poly->storage[k].io_index, .group = -1};
    return plan;
}

bool pm_group_exports(const pm_group *gr)
{
    for (int m = 0; gr->exported && m < gr->nmembers; m++)
        if (gr->exported[m])
            return true;
    return false;
}

void pm_footprint_clear(pm_footprint *fp)
{
    for (int d = 0; d < PM_MAX_DIMS; d++) {
        isl_pw_aff_free(fp->lb[d]);
        isl_pw_aff_free(fp->own_lb[d]);
        isl_pw_aff_free(fp->own_ub[d]);
        fp->lb[d] = fp->own_lb[d] = fp->own_ub[d] = NULL;
    }
    isl_map_free(fp->box);
    fp->box = NULL;
}

void pm_plan_free(pm_plan *plan)
{
    if (!plan)
        return;
    for (int g = 0; g < plan->ngroups; g++) {
        pm_group *gr = &plan->groups[g];
        for (int m = 0; gr->fp && m < gr->nmembers; m++)
            pm_footprint_clear(&gr->fp[m]);
        free(gr->fp);
        free(gr->align);
        free(gr->members);
        free(gr->exported);
    }
    free(plan->groups);
    for (int i = 0; plan->read_cache && i < plan->poly->nstages; i++)
        free(plan->read_cache[i].reads);
    free(plan->read_cache);
    free(plan->cost_cache);
    free(plan->inlined);
    free(plan->inline_calls);
    free(plan->inside_calls);
    free(plan->group_of);
    free(plan->est_lb);
    free(plan->est_ub);
    free(plan->parallel_dim);
    free(plan->storage);
    free(plan->prefetch_calls);
    free(plan->channel_dim);
    free(plan);
}

int pm_plan_stage_of(const pm_plan *plan, const pm_func *f)
{
    for (int s = 0; s < plan->poly->nstages; s++)
        if (plan->poly->stages[s].func == f)
            return s;
    return -1;
}

static bool count_node(const pm_expr *e, void *user)
{
    double *n = user;
    *n += e->kind == PM_EXPR_MATH ? 8 : 1; /* exp, pow, ...: a few operations each */
    return true;
}

bool pm_plan_cache_costs(pm_plan *plan)
{
    int n = plan->poly->nstages;
    double *c = malloc((size_t)n * sizeof *c + 1);
    if (!c)
        return false;
    for (int s = 0; s < n; s++)
        c[s] = pm_plan_stage_cost(plan, s);
    free(plan->cost_cache);
    plan->cost_cache = c;
    return true;
}

double pm_plan_stage_cost(const pm_plan *plan, int stage)
{
    if (plan->cost_cache)
        return plan->cost_cache[stage];
    const pm_poly *poly = plan->poly;
    const pm_poly_stage *ps = &poly->stages[stage];
    const pm_func *f = ps->func;
    double cost = 0;
    if (f->kind == PM_FUNC_FUNCTION) {
        /* a point computes one case's value; affine conditions became the statements'
         * domains and cost nothing per point, only residual conjuncts are evaluated */
        for (int i = 0; i < f->ncases; i++)
            pm_expr_walk(f->cases[i]->value, count_node, &cost);
        if (f->ncases > 1)
            cost /= f->ncases;
        for (int k = 0; k < ps->nstmts; k++) {
            const pm_poly_stmt *st = &poly->stmts[ps->first_stmt + k];
            for (int r = 0; r < st->nresidual; r++)
                pm_expr_walk(st->residual[r], count_node, &cost);
        }
    } else {
        const pm_expr *roots[64];
        int n = pm_func_exprs(f, roots, 64);
        for (int i = 0; i < n; i++)
            if (roots[i])
                pm_expr_walk(roots[i], count_node, &cost);
    }
    return cost > 1 ? cost : 1;
}

double pm_plan_expr_cost(const pm_expr *e)
{
    double c = 0;
    if (e)
        pm_expr_walk(e, count_node, &c);
    return c;
}

double pm_plan_storage_bytes(const pm_plan *plan, int k)
{
    const pm_poly_storage *st = &plan->poly->storage[k];
    double v = pm_type_size(st->type);
    for (int d = 0; d < st->ndims; d++) {
        double e = (eval_at_estimates(plan, st->ub[d]) - eval_at_estimates(plan, st->lb[d])) /
                       (double)st->step[d] + 1;
        v *= e > 0 ? e : 0; /* NAN (isl cannot tell) counts as nothing */
    }
    return v;
}

bool pm_plan_expr_equal(const pm_expr *a, const pm_expr *b)
{
    if (a == b)
        return true;
    if (!a || !b || a->kind != b->kind || a->type != b->type || a->op != b->op)
        return false;
    switch (a->kind) {
    case PM_EXPR_INT: return a->ival == b->ival;
    case PM_EXPR_FLOAT: return memcmp(&a->fval, &b->fval, sizeof a->fval) == 0;
    case PM_EXPR_VAR: case PM_EXPR_PARAM: return a->id == b->id;
    case PM_EXPR_CALL:
        if (a->callee != b->callee || a->nargs != b->nargs)
            return false;
        for (int i = 0; i < a->nargs; i++)
            if (!pm_plan_expr_equal(a->args[i], b->args[i]))
                return false;
        return true;
    default:
        return pm_plan_expr_equal(a->a, b->a) && pm_plan_expr_equal(a->b, b->b) &&
               pm_plan_expr_equal(a->c, b->c);
    }
}

void pm_plan_split_offset(const pm_expr *e, const pm_expr **base, int64_t *k)
{
    *k = 0;
    *base = e;
    if (e->kind == PM_EXPR_INT) {
        *k = e->ival;
        *base = NULL;
    } else if (e->kind == PM_EXPR_BINARY && (e->op == PM_OP_ADD || e->op == PM_OP_SUB) &&
               e->b->kind == PM_EXPR_INT) {
        *k = e->op == PM_OP_ADD ? e->b->ival : -e->b->ival;
        *base = e->a;
    }
}

double pm_plan_dearest_case_cost(const pm_plan *plan, int stage)
{
    const pm_func *f = plan->poly->stages[stage].func;
    if (f->kind != PM_FUNC_FUNCTION || f->ncases <= 1)
        return pm_plan_stage_cost(plan, stage);
    double worst = 0;
    for (int i = 0; i < f->ncases; i++) {
        double c = 0;
        pm_expr_walk(f->cases[i]->value, count_node, &c);
        worst = c > worst ? c : worst;
    }
    return worst > 1 ? worst : 1;
}

/* Walks stage s's definition, every root expression, with visit on each node, until
 * *stop (stop NULL: to the end). */
static void walk_definition(const pm_plan *plan, int s, bool (*visit)(const pm_expr *, void *),
                            void *user, const bool *stop)
{
    const pm_expr *roots[64];
    int n = pm_func_exprs(plan->poly->stages[s].func, roots, 64);
    for (int i = 0; i < n && !(stop && *stop); i++)
        if (roots[i])
            pm_expr_walk(roots[i], visit, user);
}

/* The stage a call reads (-1: not a stage, an input), and whether the call is evaluated
 * in place (its definition walked instead). */
static int called_stage(const pm_plan *plan, const pm_expr *e, bool *in_place)
{
    if (e->kind != PM_EXPR_CALL)
        return -1;
    int c = pm_plan_stage_of(plan, e->callee);
    *in_place = c >= 0 && pm_plan_call_inlined(plan, e);
    return c;
}

typedef struct reads_walk {
    const pm_plan *plan;
    int target;
    bool found;
    int depth;
} reads_walk;

static bool reads_visit(const pm_expr *e, void *user);

static bool stage_reads(const pm_plan *plan, int s, int p, int depth)
{
    if (depth > 64)
        return true; /* inlined chains are acyclic; be safe */
    reads_walk w = {plan, p, false, depth};
    walk_definition(plan, s, reads_visit, &w, &w.found);
    return w.found;
}

static bool reads_visit(const pm_expr *e, void *user)
{
    reads_walk *w = user;
    bool in_place;
    int c = called_stage(w->plan, e, &in_place);
    if (c < 0)
        return true;
    if (c == w->target && !in_place) {
        w->found = true;
        return false;
    }
    if (in_place && stage_reads(w->plan, c, w->target, w->depth + 1)) {
        w->found = true;
        return false;
    }
    return true;
}

const pm_storage_plan *pm_plan_storage_of(const pm_plan *plan, const pm_func *f)
{
    const pm_poly_storage *st = pm_poly_storage_of(plan->poly, f);
    return st ? &plan->storage[st - plan->poly->storage] : NULL;
}

bool pm_plan_call_inside(const pm_plan *plan, const pm_expr *call)
{
    for (int i = 0; i < plan->ninside_calls; i++)
        if (plan->inside_calls[i] == call)
            return true;
    return false;
}

bool pm_plan_call_prefetched(const pm_plan *plan, const pm_expr *call)
{
    for (int i = 0; i < plan->nprefetch_calls; i++)
        if (plan->prefetch_calls[i] == call)
            return true;
    return false;
}

bool pm_plan_call_inlined(const pm_plan *plan, const pm_expr *call)
{
    int c = pm_plan_stage_of(plan, call->callee);
    if (c >= 0 && plan->inlined[c])
        return true;
    for (int i = 0; i < plan->ninline_calls; i++)
        if (plan->inline_calls[i] == call)
            return true;
    return false;
}

bool pm_plan_reads(const pm_plan *plan, int s, int p)
{
    return s != p && stage_reads(plan, s, p, 0);
}

typedef struct producers_walk {
    const pm_plan *plan;
    uint64_t *into;
    int depth;
} producers_walk;

static bool producers_visit(const pm_expr *e, void *user);

static void stage_producers(const pm_plan *plan, int s, uint64_t *into, int depth)
{
    if (depth > 64) /* inlined chains are acyclic; be safe */
        return;
    producers_walk w = {plan, into, depth};
    walk_definition(plan, s, producers_visit, &w, NULL);
}

static bool producers_visit(const pm_expr *e, void *user)
{
    producers_walk *w = user;
    bool in_place;
    int c = called_stage(w->plan, e, &in_place);
    if (c < 0)
        return true;
    if (in_place)
        stage_producers(w->plan, c, w->into, w->depth + 1);
    else
        pm_bit_set(w->into, c);
    return true;
}

void pm_plan_producers(const pm_plan *plan, int s, uint64_t *into)
{
    bool self = pm_bit_get(into, s);
    stage_producers(plan, s, into, 0);
    if (!self) /* a stage does not read itself here (pm_plan_reads) */
        into[s / 64] &= ~((uint64_t)1 << (s % 64));
}

double pm_plan_stage_volume(const pm_plan *plan, int stage)
{
    const pm_poly_storage *st = &plan->poly->storage[plan->poly->stages[stage].storage];
    double v = 1;
    for (int d = 0; d < st->ndims; d++) {
        double e = (plan->est_ub[stage * PM_MAX_DIMS + d] - plan->est_lb[stage * PM_MAX_DIMS + d]) /
                       (double)st->step[d] + 1;
        v *= e > 0 ? e : 0;
    }
    return v;
}

/* ---- dumps ------------------------------------------------------------------------ */

/* The groups dump's grouping line: the search, the chosen grouping's cost and greedy's
 * beside it (costs in the tile model's units, group_dp.h). */
static void append_grouping(pm_str *s, const pm_plan *plan)
{
    const pm_grouping_report *r = &plan->grouping;
    static const char *const names[] = {"", "greedy", "capped DP", "DP", "capped DP (tiered)"};
    int k = plan->o.grouping >= 1 && plan->o.grouping <= 4 ? plan->o.grouping : 0;
    if (!plan->o.fusion) {
        pm_str_append(s, "grouping: none (fusion off), cost %.4g\n", r->cost);
        return;
    }
    pm_str_append(s, "grouping: %s, cost %.4g (greedy's %.4g)", names[k], r->cost, r->greedy_cost);
    if (plan->o.grouping != PM_GROUPING_GREEDY)
        pm_str_append(s, ", %s; %ld states, %ld groups priced%s", r->dp_chosen ? "the DP's" : "greedy's kept",
                      r->states, r->priced, r->exhausted ? ", budget spent: the rest greedy" : "");
    pm_str_append(s, "\n");
}

char *pm_plan_groups_to_string(const pm_plan *plan)
{
    const pm_poly *poly = plan->poly;
    pm_str s = {0};
    pm_str_append(&s, "inlined:");
    int ninl = 0;
    for (int i = 0; i < poly->nstages; i++)
        if (plan->inlined[i]) {
            pm_str_append(&s, " %s", poly->stages[i].func->name);
            ninl++;
        }
    pm_str_append(&s, "%s\n", ninl ? "" : " none");
    if (plan->ninline_calls > 0) {
        /* the callees whose reads at data-dependent points evaluate their definition */
        pm_str_append(&s, "recomputed where read at data-dependent points:");
        for (int i = 0; i < plan->ninline_calls; i++) {
            bool seen = false;
            for (int j = 0; j < i && !seen; j++)
                seen = plan->inline_calls[j]->callee == plan->inline_calls[i]->callee;
            if (!seen)
                pm_str_append(&s, " %s", plan->inline_calls[i]->callee->name);
        }
        pm_str_append(&s, "\n");
    }
    append_grouping(&s, plan);
    for (int g = 0; g < plan->ngroups; g++) {
        const pm_group *gr = &plan->groups[g];
        pm_str_append(&s, "group %d: live-out %s, %d stage%s, %s", g,
                      poly->stages[gr->liveout].func->name, gr->nmembers,
                      gr->nmembers == 1 ? "" : "s", gr->tiled ? "overlapped tiles" : "untiled");
        if (gr->tiled) {
            pm_str_append(&s, " [");
            const pm_func *lo = poly->stages[gr->liveout].func;
            for (int t = 0; t < gr->ntiled; t++)
                pm_str_append(&s, "%s%s:%lld", t ? " x " : "", lo->vars[gr->tiled_dim[t]]->name,
                              (long long)gr->tile[t]);
            pm_str_append(&s, "], redundant computation %.1f%%, scratch %lld bytes per tile",
                          100 * gr->redundancy, (long long)gr->scratch_bytes);
            if (gr->block_rows > 0)
                pm_str_append(&s, ", blocks of %lld rows", (long long)gr->block_rows);
        }
        pm_str_append(&s, ", cost %.4g", gr->cost);
        pm_str_append(&s, "\n");
        for (int m = 0; m < gr->nmembers; m++) {
            int st = gr->members[m];
            const pm_func *f = poly->stages[st].func;
            pm_str_append(&s, "  %s(", f->name);
            for (int d = 0; d < f->ndims; d++) {
                const pm_align *a = &gr->align[m];
                const pm_func *lo = poly->stages[gr->liveout].func;
                if (!gr->tiled || a->dim_of[d] < 0)
                    pm_str_append(&s, "%s%s", d ? ", " : "", f->vars[d]->name);
                else if (a->scale[d] == 1)
                    pm_str_append(&s, "%s%s", d ? ", " : "", lo->vars[a->dim_of[d]]->name);
                else
                    pm_str_append(&s, "%s%g*%s", d ? ", " : "", a->scale[d],
                                  lo->vars[a->dim_of[d]]->name);
            }
            pm_str_append(&s, ")");
            if (gr->tiled && st != gr->liveout) {
                pm_str_append(&s, " footprint per tile");
                for (int d = 0; d < f->ndims; d++)
                    pm_str_append(&s, "%s%lld", d ? " x " : " ", (long long)gr->fp[m].ext[d]);
                pm_str_append(&s, " (interior");
                for (int d = 0; d < f->ndims; d++)
                    pm_str_append(&s, "%s%.0f", d ? " x " : " ", gr->fp[m].model_ext[d]);
                pm_str_append(&s, ")");
                if (gr->exported && gr->exported[m])
                    pm_str_append(&s, ", exported: each tile copies its part out");
            } else if (gr->tiled) {
                pm_str_append(&s, " live-out");
            }
            pm_str_append(&s, "\n");
        }
    }
    return s.data ? s.data : calloc(1, 1);
}

char *pm_plan_to_dot(const pm_plan *plan)
{
    const pm_poly *poly = plan->poly;
    const pm_pipeline *p = poly->pipeline;
    pm_str s = {0};
    pm_str_append(&s, "digraph \"%s\" {\n  rankdir=TB;\n  node [shape=box, fontname=\"Helvetica\"];\n",
                  p->name);
    for (int i = 0; i < p->ninputs; i++)
        pm_str_append(&s, "  \"%s\" [shape=ellipse];\n", p->inputs[i]->name);
    for (int g = 0; g < plan->ngroups; g++) {
        const pm_group *gr = &plan->groups[g];
        pm_str_append(&s, "  subgraph cluster_%d {\n    label=\"group %d%s\";\n    style=%s;\n", g, g,
                      gr->tiled ? " (tiled)" : "", gr->tiled ? "filled; color=lightgrey" : "dashed");
        for (int m = 0; m < gr->nmembers; m++)
            pm_str_append(&s, "    \"%s\"%s;\n", poly->stages[gr->members[m]].func->name,
                          gr->members[m] == gr->liveout ? " [style=\"bold,filled\", fillcolor=white]" : "");
        pm_str_append(&s, "  }\n");
    }
    for (int i = 0; i < poly->nstages; i++)
        if (plan->inlined[i])
            pm_str_append(&s, "  \"%s\" [style=dotted, label=\"%s (inlined)\"];\n",
                          poly->stages[i].func->name, poly->stages[i].func->name);
    /* edges: every direct call */
    for (int c = 0; c < poly->nstages; c++) {
        for (int i = 0; i < p->ninputs; i++) {
            bool reads = false;
            const pm_poly_stage *st = &poly->stages[c];
            for (int k = 0; k < st->nstmts && !reads; k++) {
                const pm_poly_stmt *sm = &poly->stmts[st->first_stmt + k];
                for (int a = 0; a < sm->naccesses && !reads; a++)
                    reads = sm->accesses[a].callee == p->inputs[i];
            }
            if (reads)
                pm_str_append(&s, "  \"%s\" -> \"%s\";\n", p->inputs[i]->name,
                              poly->stages[c].func->name);
        }
        for (int q = 0; q < poly->nstages; q++) {
            bool reads = false;
            const pm_poly_stage *st = &poly->stages[c];
            for (int k = 0; k < st->nstmts && !reads; k++) {
                const pm_poly_stmt *sm = &poly->stmts[st->first_stmt + k];
                for (int a = 0; a < sm->naccesses && !reads; a++)
                    reads = sm->accesses[a].callee == poly->stages[q].func && q != c;
            }
            if (reads)
                pm_str_append(&s, "  \"%s\" -> \"%s\";\n", poly->stages[q].func->name,
                              poly->stages[c].func->name);
        }
    }
    pm_str_append(&s, "}\n");
    return s.data ? s.data : calloc(1, 1);
}
