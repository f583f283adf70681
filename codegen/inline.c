/* inline.c — point-wise stages folded into their consumers (see inline.h).
 *
 * Shape: per stage, the checks that it may fold into each reader (shifts of the reader's
 * variables, reads proven inside, at most the work limit), then the read-once stages
 * (identity readers), then the calls kept stored where inlining would recompute too
 * much (choose_recomputed_calls), and the inside proofs of several-case stages.
 */
#include "codegen/inline.h"

#include <isl/map.h>
#include <isl/set.h>
#include <stdlib.h>
#include <string.h>

static bool is_own_var(const pm_func *f, const pm_expr *e)
{
    if (e->kind != PM_EXPR_VAR)
        return false;
    for (int d = 0; d < f->ndims; d++)
        if (f->vars[d]->id == e->id)
            return true;
    return false;
}

/* A variable of f, or twice one (a downsampling read: the emitter evaluates the inlined
 * definition with every second lane, and its loads become even-lane shuffles). */
static bool is_scaled_var(const pm_func *f, const pm_expr *e)
{
    if (is_own_var(f, e))
        return true;
    return e->kind == PM_EXPR_BINARY && e->op == PM_OP_MUL &&
           ((e->a->kind == PM_EXPR_INT && e->a->ival == 2 && is_own_var(f, e->b)) ||
            (e->b->kind == PM_EXPR_INT && e->b->ival == 2 && is_own_var(f, e->a)));
}

/* A constant, or a (scaled) variable of f plus or minus a constant. */
static bool is_shift(const pm_func *f, const pm_expr *e)
{
    if (e->kind == PM_EXPR_INT || is_scaled_var(f, e))
        return true;
    if (e->kind == PM_EXPR_CAST && pm_type_is_int(e->type) && pm_type_bits(e->type) >= 32)
        return is_shift(f, e->a);
    return e->kind == PM_EXPR_BINARY && (e->op == PM_OP_ADD || e->op == PM_OP_SUB) &&
           is_scaled_var(f, e->a) && e->b->kind == PM_EXPR_INT;
}

/* Calls at equal arguments: of one function, the same point; of targets (read_once),
 * the same point of the stage they pass on. */
static bool same_args(const pm_expr *a, const pm_expr *b)
{
    if (a->nargs != b->nargs)
        return false;
    for (int i = 0; i < a->nargs; i++)
        if (!pm_plan_expr_equal(a->args[i], b->args[i]))
            return false;
    return true;
}

static bool find_call(const pm_expr *e, void *user)
{
    if (e->kind != PM_EXPR_CALL)
        return true;
    *(bool *)user = true;
    return false;
}

/* An integer argument computed from values read (outLPyramid's intensity level index
 * from its pixel): data-dependent, so the emitter carries its lanes as a vector. */
static bool is_dynamic(const pm_expr *e)
{
    bool found = false;
    if (pm_type_is_int(e->type))
        pm_expr_walk(e, find_call, &found);
    return found;
}

enum { DISTINCT_MAX = 32 };

typedef struct call_check {
    const pm_func *owner;   /* whose variables the arguments may use                  */
    const pm_func *callee;  /* NULL: every call; else only calls of this one          */
    bool pointwise;         /* arguments must be the owner's variables or constants   */
    bool dynamic;           /* data-dependent arguments are allowed too                 */
    bool ok;
    int ndynamic;           /* data-dependent arguments seen                            */
    int ncalls;             /* calls of callee                                          */
    int ndistinct;          /* of them, reading different points: equal calls at one
                               point are one value (LLVM merges the repeats)            */
    const pm_expr *distinct[DISTINCT_MAX];
} call_check;

static bool check_call(const pm_expr *e, void *user)
{
    call_check *c = user;
    if (e->kind != PM_EXPR_CALL || (c->callee && e->callee != c->callee))
        return true;
    c->ncalls++;
    bool seen = false;
    for (int i = 0; i < c->ndistinct && i < DISTINCT_MAX && !seen; i++)
        seen = pm_plan_expr_equal(c->distinct[i], e);
    if (!seen) {
        if (c->ndistinct < DISTINCT_MAX)
            c->distinct[c->ndistinct] = e;
        c->ndistinct++;
    }
    for (int i = 0; i < e->nargs; i++) {
        const pm_expr *a = e->args[i];
        bool shift = c->pointwise ? (a->kind == PM_EXPR_INT || is_own_var(c->owner, a))
                                  : is_shift(c->owner, a);
        bool good = shift || (c->dynamic && is_dynamic(a));
        if (!shift && good)
            c->ndynamic++;
        if (!good) {
            c->ok = false;
            return false;
        }
    }
    return true;
}

static bool walk_func(const pm_func *f, call_check *c)
{
    const pm_expr *roots[64];
    int n = pm_func_exprs(f, roots, 64);
    for (int i = 0; i < n && c->ok; i++)
        if (roots[i])
            pm_expr_walk(roots[i], check_call, c);
    return c->ok;
}

static bool is_output(const pm_pipeline *p, const pm_func *f)
{
    for (int i = 0; i < p->noutputs; i++)
        if (p->outputs[i] == f)
            return true;
    return false;
}

/* Every access of stage c's statements to f is affine. */
static bool reads_affine(const pm_poly *poly, int c, const pm_func *f)
{
    const pm_poly_stage *st = &poly->stages[c];
    for (int k = 0; k < st->nstmts; k++) {
        const pm_poly_stmt *s = &poly->stmts[st->first_stmt + k];
        for (int a = 0; a < s->naccesses; a++)
            if (s->accesses[a].callee == f && !s->accesses[a].rel)
                return false;
    }
    return true;
}

/* Every access of stage c's statements to f is proven in bounds. */
static bool reads_proven(const pm_poly *poly, int c, const pm_func *f)
{
    const pm_poly_stage *st = &poly->stages[c];
    for (int k = 0; k < st->nstmts; k++) {
        const pm_poly_stmt *s = &poly->stmts[st->first_stmt + k];
        for (int a = 0; a < s->naccesses; a++)
            if (s->accesses[a].callee == f && !s->accesses[a].in_bounds)
                return false;
    }
    return true;
}

/* Every read of stage fs's function by stage c lands where one of its cases holds, so
 * that evaluating the cases in place gives what the buffer would have held. Affine reads
 * are imaged through their relation; a data-dependent one, proven inside the box, needs
 * the cases to cover the whole box. Cases with run-time conjuncts are never proven to
 * cover anything. */
static bool reads_defined(const pm_poly *poly, int c, int fs)
{
    const pm_poly_stage *fst = &poly->stages[fs];
    const pm_poly_storage *fstore = pm_poly_storage_of(poly, fst->func);
    isl_set *cover = NULL;
    for (int k = 0; k < fst->nstmts; k++) {
        const pm_poly_stmt *stmt = &poly->stmts[fst->first_stmt + k];
        /* a merged statement covers the box; its parts, what the cases define */
        for (int p = 0; p < (stmt->nparts ? stmt->nparts : 1); p++) {
            const pm_poly_stmt *def = stmt->nparts ? &stmt->parts[p] : stmt;
            if (def->nresidual > 0 || !def->domain || def->kind != PM_STMT_CASE) {
                isl_set_free(cover);
                return false;
            }
            isl_set *d = isl_set_copy(def->domain);
            d = isl_set_set_tuple_id(d, isl_set_get_tuple_id(fstore->box));
            cover = cover ? isl_set_union(cover, d) : d;
        }
    }
    if (!cover)
        return false;
    bool ok = true;
    const pm_poly_stage *st = &poly->stages[c];
    for (int k = 0; k < st->nstmts && ok; k++) {
        const pm_poly_stmt *s = &poly->stmts[st->first_stmt + k];
        for (int a = 0; a < s->naccesses && ok; a++) {
            const pm_poly_access *acc = &s->accesses[a];
            if (acc->callee != fst->func)
                continue;
            isl_set *read;
            if (acc->rel && s->domain)
                read = isl_set_apply(isl_set_copy(s->domain), isl_map_copy(acc->rel));
            else if (acc->in_bounds)
                read = isl_set_copy(fstore->box);
            else {
                ok = false;
                break;
            }
            read = isl_set_set_tuple_id(read, isl_set_get_tuple_id(fstore->box));
            ok = isl_set_is_subset(read, cover) == isl_bool_true;
            isl_set_free(read);
        }
    }
    isl_set_free(cover);
    return ok;
}

/* Records the calls of stage s's cases that stay inside their callee's box from every
 * point of s's box, not only where their case holds: an inlined function of several
 * cases evaluates all of them at every point read, and those reads need no clamp there
 * (lPyramid's even and odd up-sampling reads of Ux, all but the last column's of an odd
 * width). Out of memory only loses proofs (reads then clamp). */
static void record_stmt_inside_calls(pm_plan *plan, const pm_poly_storage *own,
                                     const pm_poly_stmt *sm)
{
    const pm_poly *poly = plan->poly;
    isl_set *box = isl_set_set_tuple_id(isl_set_copy(own->box),
                                        isl_set_get_tuple_id(sm->domain));
    for (int a = 0; a < sm->naccesses; a++) {
        const pm_poly_access *acc = &sm->accesses[a];
        const pm_poly_storage *cs = pm_poly_storage_of(poly, acc->callee);
        if (!acc->rel || !cs)
            continue;
        isl_set *read = isl_set_apply(isl_set_copy(box), isl_map_copy(acc->rel));
        bool inside = isl_set_is_subset(read, cs->box) == isl_bool_true;
        isl_set_free(read);
        const pm_expr **grown = inside ? realloc(plan->inside_calls,
                                                 (size_t)(plan->ninside_calls + 1) *
                                                     sizeof *grown)
                                       : NULL;
        if (grown) {
            plan->inside_calls = grown;
            plan->inside_calls[plan->ninside_calls++] = acc->call;
        }
    }
    isl_set_free(box);
}

static void record_inside_calls(pm_plan *plan, int s)
{
    const pm_poly *poly = plan->poly;
    const pm_poly_stage *st = &poly->stages[s];
    const pm_poly_storage *own = pm_poly_storage_of(poly, st->func);
    for (int k = 0; own && k < st->nstmts; k++) {
        const pm_poly_stmt *sm = &poly->stmts[st->first_stmt + k];
        /* a merged statement's records are restricted to their parts' points: the
         * parts' own relations hold over the whole box */
        for (int p = 0; p < sm->nparts; p++)
            record_stmt_inside_calls(plan, own, &sm->parts[p]);
        if (sm->nparts == 0)
            record_stmt_inside_calls(plan, own, sm);
    }
}

/* The reads of f by every consumer, for the read-once test. */
typedef struct call_list {
    const pm_func *const *targets; /* f, and inlined consumers that pass f's points on */
    int ntargets;
    const pm_func *consumer;       /* whose definition is walked */
    const pm_expr *call[16];
    const pm_func *by[16];         /* the consumer each call is in */
    int n;
    bool overflow;                 /* too many calls, or a call not one-to-one */
} call_list;

static bool is_target(const call_list *l, const pm_func *f)
{
    for (int i = 0; i < l->ntargets; i++)
        if (l->targets[i] == f)
            return true;
    return false;
}

/* The variable a shift argument moves with (x in x, 2x, x + k), or NULL. */
static const pm_expr *shift_var(const pm_expr *a)
{
    if (a->kind == PM_EXPR_VAR)
        return a;
    if (a->kind == PM_EXPR_CAST)
        return shift_var(a->a);
    if (a->kind == PM_EXPR_BINARY && (a->op == PM_OP_ADD || a->op == PM_OP_SUB) &&
        a->b->kind == PM_EXPR_INT)
        return shift_var(a->a);
    if (a->kind == PM_EXPR_BINARY && a->op == PM_OP_MUL && a->a->kind == PM_EXPR_INT)
        return shift_var(a->b);
    if (a->kind == PM_EXPR_BINARY && a->op == PM_OP_MUL && a->b->kind == PM_EXPR_INT)
        return shift_var(a->a);
    return NULL;
}

/* Distinct points of the consumer read distinct points through this call: every one of
 * the consumer's variables moves some argument (corrected(c, x, y) reading red(x, y)
 * reads each point of red three times). */
static bool one_to_one(const pm_func *consumer, const pm_expr *call)
{
    for (int d = 0; d < consumer->ndims; d++) {
        bool moves = false;
        for (int i = 0; i < call->nargs && !moves; i++) {
            const pm_expr *v = shift_var(call->args[i]);
            moves = v && v->id == consumer->vars[d]->id;
        }
        if (!moves)
            return false;
    }
    return true;
}

static bool list_call(const pm_expr *e, void *user)
{
    call_list *l = user;
    if (e->kind != PM_EXPR_CALL || !is_target(l, e->callee))
        return true;
    if (!one_to_one(l->consumer, e)) {
        l->overflow = true;
        return false;
    }
    for (int i = 0; i < l->n; i++)
        if (l->by[i] == l->consumer && same_args(l->call[i], e))
            return true; /* the same point of the same consumer: one value */
    if (l->n == 16) {
        l->overflow = true;
        return false;
    }
    l->by[l->n] = l->consumer;
    l->call[l->n++] = e;
    return true;
}

/* Every variable of the consumer moves some argument of call other than skip. */
static bool moves_without(const pm_func *consumer, const pm_expr *call, int skip)
{
    for (int d = 0; d < consumer->ndims; d++) {
        bool moves = false;
        for (int i = 0; i < call->nargs && !moves; i++) {
            const pm_expr *v = i == skip ? NULL : shift_var(call->args[i]);
            moves = v && v->id == consumer->vars[d]->id;
        }
        if (!moves)
            return false;
    }
    return true;
}

/* Two calls read disjoint points: some argument is a different constant in each; or,
 * by one consumer, they differ in one argument only, by a constant (lPyramid(li, x, y)
 * and lPyramid(li + 1, x, y)), and the others, equal, tell the consumer's points apart:
 * the same consumer point reads two points, different ones read different points. */
static bool disjoint_calls(const pm_expr *a, const pm_expr *b, const pm_func *by_a,
                           const pm_func *by_b)
{
    for (int d = 0; d < a->nargs && d < b->nargs; d++)
        if (a->args[d]->kind == PM_EXPR_INT && b->args[d]->kind == PM_EXPR_INT &&
            a->args[d]->ival != b->args[d]->ival)
            return true;
    if (by_a != by_b || a->nargs != b->nargs)
        return false;
    int differ = -1;
    for (int d = 0; d < a->nargs; d++) {
        if (pm_plan_expr_equal(a->args[d], b->args[d]))
            continue;
        if (differ >= 0)
            return false;
        differ = d;
    }
    if (differ < 0)
        return false;
    const pm_expr *ba, *bb;
    int64_t ka, kb;
    pm_plan_split_offset(a->args[differ], &ba, &ka);
    pm_plan_split_offset(b->args[differ], &bb, &kb);
    return ka != kb && ba && bb && pm_plan_expr_equal(ba, bb) && moves_without(by_a, a, differ);
}

typedef struct identity_check {
    const call_list *l;
    const pm_func *g;
    bool identity, any;
} identity_check;

static bool check_identity(const pm_expr *e, void *user)
{
    identity_check *c = user;
    if (e->kind != PM_EXPR_CALL || !is_target(c->l, e->callee))
        return true;
    c->any = true;
    bool id = e->nargs == c->g->ndims;
    for (int d = 0; d < e->nargs && id; d++)
        id = e->args[d]->kind == PM_EXPR_VAR && e->args[d]->id == c->g->vars[d]->id;
    c->identity = c->identity && id;
    return c->identity;
}

/* Every call of a target in g reads it at g's own variables, in order: g(x, y) reads
 * f(x, y), so an inlined g passes f's points on unchanged. *reads: g calls a target. */
static bool identity_reader(const call_list *l, const pm_func *g, bool *reads)
{
    identity_check c = {l, g, true, false};
    const pm_expr *roots[64];
    int n = pm_func_exprs(g, roots, 64);
    for (int i = 0; i < n && c.identity; i++)
        if (roots[i])
            pm_expr_walk(roots[i], check_identity, &c);
    *reads = c.any || !c.identity;
    return c.identity;
}

/* Every point of stage s's function is read at most once by all its consumers together:
 * each call reads distinct points at distinct consumer points (one_to_one), and calls
 * are one, or equal (one value at one point), or told apart by a constant argument
 * (interpolated(0, x, y) and interpolated(1, x, y)). An inlined consumer that reads s
 * only at its own point (det(x, y) = Sxx(x, y) * ...) passes s's points on: its readers'
 * calls of it count as reads of s. Inlining such a stage only moves its work into the
 * consumer, whatever the stage itself reads. */
static bool read_once(const pm_plan *plan, int s)
{
    const pm_poly *poly = plan->poly;
    const pm_func *targets[64];
    call_list l = {.targets = targets, .ntargets = 1};
    targets[0] = poly->stages[s].func;
    for (int c = s + 1; c < poly->nstages && !l.overflow; c++) {
        const pm_func *g = poly->stages[c].func;
        bool reads = false;
        bool identity = identity_reader(&l, g, &reads);
        if (!reads)
            continue;
        if (plan->inlined[c] && identity && l.ntargets < 64) {
            targets[l.ntargets++] = g;
            continue;
        }
        l.consumer = g;
        const pm_expr *roots[64];
        int n = pm_func_exprs(g, roots, 64);
        for (int i = 0; i < n && !l.overflow; i++)
            if (roots[i])
                pm_expr_walk(roots[i], list_call, &l);
    }
    if (l.overflow)
        return false;
    for (int i = 0; i < l.n; i++)
        for (int j = i + 1; j < l.n; j++)
            if (!disjoint_calls(l.call[i], l.call[j], l.by[i], l.by[j]))
                return false;
    return true;
}

static bool self_reads(const pm_func *f)
{
    call_check c = {.owner = f, .callee = f, .ok = true};
    walk_func(f, &c);
    return c.ncalls > 0;
}

/* Recomputing a stage in place instead of reading its buffer at data-dependent points
 * pays while its work per point stays below this (expression nodes, loads counted): a
 * gather from a large buffer misses the caches, a handful of operations do not. */
#define PM_RECOMPUTE_MAX 32.0

typedef struct recompute_walk {
    pm_plan *plan;
    const double *work;
    const pm_poly_stage *reader; /* the inlined stage whose definition is walked */
    bool failed;                 /* out of memory */
} recompute_walk;

/* Every access of the reader's statements through this call is proven in bounds. */
static bool call_proven(const pm_poly *poly, const pm_poly_stage *st, const pm_expr *call)
{
    bool seen = false;
    for (int k = 0; k < st->nstmts; k++) {
        const pm_poly_stmt *s = &poly->stmts[st->first_stmt + k];
        const pm_poly_access *acc = pm_poly_access_of(s, call);
        if (acc && !acc->in_bounds)
            return false;
        seen = seen || acc;
    }
    return seen;
}

static bool visit_recompute(const pm_expr *e, void *user)
{
    recompute_walk *w = user;
    pm_plan *plan = w->plan;
    if (e->kind != PM_EXPR_CALL || w->failed)
        return !w->failed;
    int s = pm_plan_stage_of(plan, e->callee);
    if (s < 0 || plan->inlined[s] || pm_plan_call_inlined(plan, e))
        return true;
    const pm_func *f = e->callee;
    call_check own = {.owner = f, .pointwise = true, .dynamic = true, .ok = true};
    if (f->kind != PM_FUNC_FUNCTION || f->ncases != 1 || f->cases[0]->cond || self_reads(f) ||
        !walk_func(f, &own) || w->work[s] > PM_RECOMPUTE_MAX ||
        !call_proven(plan->poly, w->reader, e))
        return true;
    const pm_expr **grown = realloc(plan->inline_calls,
                                    (size_t)(plan->ninline_calls + 1) * sizeof *grown);
    if (!grown) {
        w->failed = true;
        return false;
    }
    plan->inline_calls = grown;
    plan->inline_calls[plan->ninline_calls++] = e;
    return true;
}

/* Work per point of the cases of stage s's function one read reaches, the most over
 * its readers' reads (affine ones imaged through their relations, data-dependent ones
 * reaching every case): evaluated in place, a call computes every case whose
 * condition is not constant-false where it reads (a case chosen by a constant argument,
 * deinterleaved(0, x, y), folds away). Conditions are not counted: they select. */
static double reached_cases_cost(const pm_poly *poly, int fs)
{
    const pm_poly_stage *fst = &poly->stages[fs];
    const pm_func *f = fst->func;
    const pm_poly_storage *fstore = pm_poly_storage_of(poly, f);
    double worst = 0;
    for (int c = fs + 1; c < poly->nstages; c++) {
        const pm_poly_stage *st = &poly->stages[c];
        for (int k = 0; k < st->nstmts; k++) {
            const pm_poly_stmt *s = &poly->stmts[st->first_stmt + k];
            for (int a = 0; a < s->naccesses; a++) {
                const pm_poly_access *acc = &s->accesses[a];
                if (acc->callee != f)
                    continue;
                isl_set *read = acc->rel && s->domain
                                    ? isl_set_apply(isl_set_copy(s->domain), isl_map_copy(acc->rel))
                                    : isl_set_copy(fstore->box);
                read = isl_set_set_tuple_id(read, isl_set_get_tuple_id(fstore->box));
                /* a case split into pieces (border strips) counts once */
                bool seen[64] = {false};
                double cost = 0;
                for (int j = 0; j < fst->nstmts; j++) {
                    const pm_poly_stmt *stmt = &poly->stmts[fst->first_stmt + j];
                    for (int p = 0; p < (stmt->nparts ? stmt->nparts : 1); p++) {
                        const pm_poly_stmt *def = stmt->nparts ? &stmt->parts[p] : stmt;
                        if (def->kind != PM_STMT_CASE)
                            continue;
                        bool reached = !def->domain;
                        if (def->domain) {
                            isl_set *d = isl_set_set_tuple_id(isl_set_copy(def->domain),
                                                              isl_set_get_tuple_id(fstore->box));
                            reached = isl_set_is_disjoint(read, d) != isl_bool_true;
                            isl_set_free(d);
                        }
                        for (int i = def->case_index;
                             reached && i < def->case_index + def->ncases && i < f->ncases; i++)
                            if (i >= 64 || !seen[i]) {
                                cost += pm_plan_expr_cost(f->cases[i]->value);
                                if (i < 64)
                                    seen[i] = true;
                            }
                    }
                }
                isl_set_free(read);
                worst = cost > worst ? cost : worst;
            }
        }
    }
    return worst;
}

/* In the definitions of stages inlined at data-dependent points, the calls of cheap
 * point-wise stages (a LUT read counts as point-wise) are evaluated in place: the
 * callee stays stored for its other readers, but these reads stop gathering from its
 * buffer, and a producer read only by them can fuse with its remaining consumers. */
static void choose_recomputed_calls(pm_plan *plan, const bool *dynamic, const double *work)
{
    const pm_poly *poly = plan->poly;
    for (int t = 0; t < poly->nstages; t++) {
        if (!dynamic[t])
            continue;
        recompute_walk w = {plan, work, &poly->stages[t], false};
        const pm_expr *roots[64];
        int n = pm_func_exprs(poly->stages[t].func, roots, 64);
        for (int i = 0; i < n && !w.failed; i++)
            if (roots[i])
                pm_expr_walk(roots[i], visit_recompute, &w);
    }
}

void pm_inline_decide(pm_plan *plan)
{
    const pm_poly *poly = plan->poly;
    int n = poly->nstages;
    if (!plan->o.fusion || n == 0)
        return;
    double limit = plan->o.inline_limit;
    /* work per point of each stage with the stages inlined so far expanded */
    double *work = calloc((size_t)n, sizeof *work);
    double *base = calloc((size_t)n, sizeof *base);
    bool *dynamic_read = calloc((size_t)n, sizeof *dynamic_read);
    if (!work || !base || !dynamic_read) {
        free(work);
        free(base);
        free(dynamic_read);
        return;
    }
    for (int s = 0; s < n; s++)
        base[s] = work[s] = pm_plan_dearest_case_cost(plan, s);
    /* Producers first; then again while something was inlined, since a consumer folded
     * later can make its producer read-once (Sxx once det and trace are inlined). */
    bool changed = true;
    for (int pass = 0; changed && pass < 8; pass++) {
        changed = false;
        for (int s = 0; s < n; s++) {
            const pm_func *f = poly->stages[s].func;
            if (plan->inlined[s] || f->kind != PM_FUNC_FUNCTION || f->ncases < 1 ||
                is_output(poly->pipeline, f) || self_reads(f))
                continue;
            call_check own = {.owner = f, .pointwise = true, .ok = true};
            bool once = read_once(plan, s);
            if (!walk_func(f, &own) && !once)
                continue;
            bool ok = true, any = false, dynamic = false;
            for (int c = s + 1; c < n && ok; c++) {
                const pm_func *g = poly->stages[c].func;
                call_check cc = {.owner = g, .callee = f, .dynamic = once, .ok = true};
                walk_func(g, &cc);
                if (cc.ncalls == 0)
                    continue;
                any = true;
                dynamic = dynamic || cc.ndynamic > 0;
                ok = cc.ok && g->kind == PM_FUNC_FUNCTION && reads_proven(poly, c, f) &&
                     (reads_affine(poly, c, f) && f->ncases == 1 && !f->cases[0]->cond
                          ? true
                          : reads_defined(poly, c, s)) &&
                     (once || work[c] + cc.ndistinct * (work[s] - 1) <= limit * base[c]);
            }
            /* Several cases are all evaluated at every point read (each lane picks its
             * own). Read at data-dependent points, most of whose buffer would never be
             * read (lPyramid(k, x, y) at the two intensity levels around a pixel's),
             * that always pays; read once at affine points, when the cases a read can
             * reach cost at most the limit times the dearest (pyramid blending's
             * up-sampled levels Uy, two cases by column parity, read once by the
             * blend: 0.83x; camera pipe's Bayer planes deinterleaved(k, x, y), one case
             * per constant k: 0.95x). */
            if (!ok || !any ||
                (f->ncases > 1 && !dynamic &&
                 !(once && reached_cases_cost(poly, s) <= limit * base[s])))
                continue;
            plan->inlined[s] = true;
            dynamic_read[s] = dynamic;
            if (f->ncases > 1)
                record_inside_calls(plan, s);
            changed = true;
            for (int c = s + 1; c < n; c++) {
                call_check cc = {.owner = poly->stages[c].func, .callee = f, .ok = true};
                walk_func(poly->stages[c].func, &cc);
                work[c] += cc.ndistinct * (work[s] - 1);
            }
        }
    }
    choose_recomputed_calls(plan, dynamic_read, work);
    free(work);
    free(base);
    free(dynamic_read);
}
