/* interp.c — pm_interpret, the reference interpreter: the oracle for compiled code.
 *
 * It evaluates the pipeline stage by stage, in the topological order pm_pipeline_new
 * chose, straight from the definitions: every function gets a full buffer over its domain
 * box (live-outs are written straight into the caller's output buffers, intermediates
 * are calloc'd and freed after their last consumer), and every point of the box is
 * visited in lexicographic order, so a function that reads its own earlier points
 * (time-iterated stencils, summed-area tables) finds them computed. Scalar semantics live
 * in interp_eval.c. Clarity first: there is no scheduling here at all.
 */
#include "frontend/checked.h"
#include "frontend/interp.h"
#include "frontend/signature.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- domains --------------------------------------------------------------------------- */

/* The value of an interval bound: checked int64 arithmetic (frontend/checked.h), like
 * pm_bound_eval in signature.c, so the boxes computed here are exactly the buffer shapes
 * pm_signature_check demands; false for a bound that is not one, or that overflows
 * (pm_signature_check rejects those parameter values first). */
static bool bound_value(const pm_pipeline *p, const pm_value *params, const pm_expr *e,
                        int64_t *out)
{
    int64_t a, b;
    switch (e->kind) {
    case PM_EXPR_INT:
        *out = e->ival;
        return true;
    case PM_EXPR_PARAM:
        if (!pm_type_is_int(e->type) || p->param_slot[e->id] < 0)
            return false;
        *out = params[p->param_slot[e->id]].i;
        return true;
    case PM_EXPR_CAST:
        return pm_type_is_int(e->type) && pm_type_is_int(e->a->type) &&
               bound_value(p, params, e->a, out);
    case PM_EXPR_UNARY:
        if (e->op != PM_OP_NEG || !bound_value(p, params, e->a, &a))
            return false;
        return pm_ck_neg(a, out);
    case PM_EXPR_BINARY:
        if (!bound_value(p, params, e->a, &a) || !bound_value(p, params, e->b, &b))
            return false;
        switch (e->op) {
        case PM_OP_ADD: return pm_ck_add(a, b, out);
        case PM_OP_SUB: return pm_ck_sub(a, b, out);
        case PM_OP_MUL: return pm_ck_mul(a, b, out);
        case PM_OP_DIV: return pm_ck_floordiv(a, b, out);
        case PM_OP_MOD: return pm_ck_floormod(a, b, out);
        case PM_OP_MIN: *out = a < b ? a : b; return true;
        case PM_OP_MAX: *out = a > b ? a : b; return true;
        default: return false;
        }
    default:
        return false;
    }
}

/* Fills b's box (lb, step, extent) from n intervals. */
static pm_status domain_box(const pm_pipeline *p, const pm_value *params, const pm_func *f,
                            int n, pm_interval *const *ivs, pm_ibuf *b)
{
    b->ndims = n;
    for (int d = 0; d < n; d++) {
        int64_t lb, ub;
        if (!bound_value(p, params, ivs[d]->lb, &lb) || !bound_value(p, params, ivs[d]->ub, &ub) ||
            !pm_ck_extent(lb, ub, ivs[d]->step, &b->extent[d]))
            return pm_ctx_set_error(p->ctx, PM_ERR_ARGUMENT,
                                    "%s: interval [%s, %s] has no int64 extent at these "
                                    "parameter values", f->name,
                                    pm_expr_to_cstr(p->ctx, ivs[d]->lb),
                                    pm_expr_to_cstr(p->ctx, ivs[d]->ub));
        b->lb[d] = lb;
        b->step[d] = ivs[d]->step;
    }
    return PM_OK;
}

/* Points in the box; INT64_MAX when the count overflows (such a box is never stored:
 * place_stage refuses it, and a reduction domain that large never finishes anyway). */
static int64_t box_count(const pm_ibuf *b)
{
    int64_t n;
    return pm_ck_count(b->ndims, b->extent, &n) ? n : INT64_MAX;
}

/* ---- walking a box in lexicographic order ---------------------------------------------- */

/* Sets every variable to the box's first point and k to 0. */
static void box_start(const pm_ibuf *b, const int *var_id, int64_t *k, int64_t *vars)
{
    for (int d = 0; d < b->ndims; d++) {
        k[d] = 0;
        vars[var_id[d]] = b->lb[d];
    }
}

/* Moves k (and the variables) to the next point, the last dimension fastest; false after
 * the last point. */
static bool box_next(const pm_ibuf *b, const int *var_id, int64_t *k, int64_t *vars)
{
    for (int d = b->ndims - 1; d >= 0; d--) {
        if (++k[d] < b->extent[d]) {
            vars[var_id[d]] = b->lb[d] + k[d] * b->step[d];
            return true;
        }
        k[d] = 0;
        vars[var_id[d]] = b->lb[d];
    }
    return false;
}

static int64_t box_offset(const pm_ibuf *b, const int64_t *k)
{
    int64_t offset = 0;
    for (int d = 0; d < b->ndims; d++)
        offset += k[d] * b->stride[d];
    return offset;
}

/* ---- stages ----------------------------------------------------------------------------- */

/* Each point: the one case whose condition holds (validation guarantees at most one), its
 * value stored in f's type; points no case covers are not touched. */
static void eval_function(const pm_func *f, pm_ibuf *b, const pm_ienv *env)
{
    if (box_count(b) == 0)
        return;
    int var_id[PM_MAX_DIMS];
    int64_t k[PM_MAX_DIMS];
    for (int d = 0; d < f->ndims; d++)
        var_id[d] = f->vars[d]->id;
    box_start(b, var_id, k, env->vars);
    do {
        for (int c = 0; c < f->ncases; c++) {
            const pm_case *cs = f->cases[c];
            if (cs->cond && !pm_interp_eval(cs->cond, env).i)
                continue;
            pm_ival v = pm_interp_convert(pm_interp_eval(cs->value, env), cs->value->type, f->type);
            pm_interp_store(f->type, b->data, box_offset(b, k), v);
            break;
        }
    } while (box_next(b, var_id, k, env->vars));
}

/* Every point of the variable domain starts at `initial`; then, for every point of the
 * reduction domain in lexicographic order, f(index) = op(f(index), value), skipped when
 * the index is not a point of the variable domain (polymage.h). */
static pm_status eval_reduction(const pm_pipeline *p, const pm_value *params, const pm_func *f,
                                pm_ibuf *b, const pm_ienv *env)
{
    int var_id[PM_MAX_DIMS], rvar_id[PM_MAX_DIMS];
    int64_t k[PM_MAX_DIMS], rk[PM_MAX_DIMS];
    for (int d = 0; d < f->ndims; d++)
        var_id[d] = f->vars[d]->id;
    if (box_count(b) > 0) {
        box_start(b, var_id, k, env->vars);
        do {
            pm_ival v = pm_interp_convert(pm_interp_eval(f->initial, env), f->initial->type, f->type);
            pm_interp_store(f->type, b->data, box_offset(b, k), v);
        } while (box_next(b, var_id, k, env->vars));
    }

    pm_ibuf rbox;
    memset(&rbox, 0, sizeof rbox);
    pm_status st = domain_box(p, params, f, f->nrdims, f->rintervals, &rbox);
    if (st != PM_OK)
        return st;
    if (box_count(&rbox) == 0 || box_count(b) == 0)
        return PM_OK;
    for (int d = 0; d < f->nrdims; d++)
        rvar_id[d] = f->rvars[d]->id;
    int op = pm_reduce_binop(f->reduce_op);
    box_start(&rbox, rvar_id, rk, env->vars);
    do {
        int64_t offset = 0;
        bool inside = true;
        for (int d = 0; d < f->ndims && inside; d++) {
            int64_t c = pm_interp_eval(f->rindex[d], env).i;
            int64_t last = b->lb[d] + (b->extent[d] - 1) * b->step[d];
            inside = c >= b->lb[d] && c <= last && (c - b->lb[d]) % b->step[d] == 0;
            if (inside)
                offset += (c - b->lb[d]) / b->step[d] * b->stride[d];
        }
        if (!inside)
            continue;
        pm_ival value = pm_interp_convert(pm_interp_eval(f->rvalue, env), f->rvalue->type, f->type);
        pm_ival current = pm_interp_load(f->type, b->data, offset);
        pm_interp_store(f->type, b->data, offset, pm_interp_binop(op, f->type, current, value));
    } while (box_next(&rbox, rvar_id, rk, env->vars));
    return PM_OK;
}

/* ---- the expressions of a stage ---------------------------------------------------------- */

typedef bool (*expr_visit)(const pm_expr *e, void *user);

/* Walks every expression defining f (no fixed-size list, so no definition is too big). */
static bool walk_definition(const pm_func *f, expr_visit visit, void *user)
{
    if (f->kind == PM_FUNC_FUNCTION) {
        for (int i = 0; i < f->ncases; i++)
            if (!pm_expr_walk(f->cases[i]->cond, visit, user) ||
                !pm_expr_walk(f->cases[i]->value, visit, user))
                return false;
        return true;
    }
    if (!pm_expr_walk(f->initial, visit, user) || !pm_expr_walk(f->rvalue, visit, user))
        return false;
    for (int d = 0; d < f->ndims; d++)
        if (!pm_expr_walk(f->rindex[d], visit, user))
            return false;
    return true;
}

typedef struct last_use_walk {
    int *last_use; /* by function id: index of the last stage reading it */
    int stage;
} last_use_walk;

static bool note_use(const pm_expr *e, void *user)
{
    last_use_walk *w = user;
    if (e->kind == PM_EXPR_CALL && w->last_use[e->callee->id] < w->stage)
        w->last_use[e->callee->id] = w->stage;
    return true;
}

typedef struct var_walk {
    const pm_func *f;
    const pm_expr *found;
} var_walk;

static bool find_domain_var(const pm_expr *e, void *user)
{
    var_walk *w = user;
    if (e->kind != PM_EXPR_VAR)
        return true;
    for (int d = 0; d < w->f->ndims; d++)
        if (w->f->vars[d] == e) {
            w->found = e;
            return false;
        }
    return true;
}

/* A reduction's update runs once per point of the reduction domain, where the variables
 * of the variable domain have no value: an index or value using them means nothing. */
static pm_status check_reduction_vars(pm_ctx *ctx, const pm_func *f)
{
    var_walk w = {f, NULL};
    const char *what = "value";
    pm_expr_walk(f->rvalue, find_domain_var, &w);
    for (int d = 0; d < f->ndims && !w.found; d++) {
        pm_expr_walk(f->rindex[d], find_domain_var, &w);
        what = "index";
    }
    if (!w.found)
        return PM_OK;
    return pm_ctx_set_error(ctx, PM_ERR_INVALID,
                            "reduction %s: its %s uses %s, a variable of the variable domain; "
                            "indices and values may use only the reduction variables",
                            f->name, what, w.found->name);
}

/* ---- the driver ---------------------------------------------------------------------------- */

typedef struct interp_state {
    int nfuncs;
    pm_ibuf *store;     /* by function id                                        */
    const pm_ibuf **bufs; /* by function id: &store[id] for reached functions    */
    bool *owned;        /* by function id: data was allocated here               */
    int *last_use;      /* by function id                                        */
    pm_ival *params;    /* by context parameter id                               */
    int64_t *vars;      /* by variable id                                        */
} interp_state;

static void state_free(interp_state *s)
{
    for (int i = 0; s->store && s->owned && i < s->nfuncs; i++)
        if (s->owned[i])
            free(s->store[i].data);
    free(s->store);
    free(s->bufs);
    free(s->owned);
    free(s->last_use);
    free(s->params);
    free(s->vars);
}

static int max_var_id(const pm_pipeline *p)
{
    int max = 0;
    for (int s = 0; s < p->nstages; s++) {
        const pm_func *f = p->stages[s];
        for (int d = 0; d < f->ndims; d++)
            max = f->vars[d]->id > max ? f->vars[d]->id : max;
        for (int d = 0; d < f->nrdims; d++)
            max = f->rvars[d]->id > max ? f->rvars[d]->id : max;
    }
    return max;
}

static pm_ival param_value(pm_type t, pm_value v)
{
    pm_ival r;
    if (t == PM_F32)
        r.f = (float)v.f;
    else if (t == PM_F64)
        r.d = v.f;
    else
        r.i = pm_interp_wrap(t, v.i);
    return r;
}

static void view_of(const pm_buffer *buf, pm_ibuf *b)
{
    b->data = buf->data;
    b->type = buf->type;
    b->ndims = buf->ndims;
    pm_buffer_strides(buf, b->stride);
    for (int d = 0; d < buf->ndims; d++) {
        b->lb[d] = 0;
        b->step[d] = 1;
        b->extent[d] = buf->extent[d];
    }
}

/* Storage for stage f: the caller's output buffer for a live-out, else zeroed memory. */
static pm_status place_stage(const pm_pipeline *p, const pm_value *params, pm_buffer *outputs,
                             const pm_func *f, interp_state *s)
{
    pm_ibuf *b = &s->store[f->id];
    pm_status st = domain_box(p, params, f, f->ndims, f->intervals, b);
    if (st != PM_OK)
        return st;
    b->type = f->type;
    for (int i = 0; i < p->noutputs; i++) {
        if (p->outputs[i] == f) {
            /* the signature check already matched its extents to the box */
            b->data = outputs[i].data;
            pm_buffer_strides(&outputs[i], b->stride);
            return PM_OK;
        }
    }
    int64_t count, bytes, dense = 1;
    if (!pm_ck_count(f->ndims, b->extent, &count) ||
        !pm_ck_mul(count, (int64_t)pm_type_size(f->type), &bytes))
        return pm_ctx_set_error(p->ctx, PM_ERR_NOMEM,
                                "%s: its domain is too large to store (more than 2^63 bytes)",
                                f->name);
    for (int d = f->ndims - 1; d >= 0; d--) {
        b->stride[d] = dense;
        dense *= b->extent[d] > 0 ? b->extent[d] : 1; /* <= count: no overflow */
    }
    if (count == 0)
        return PM_OK;
    size_t esize = pm_type_size(f->type);
    if ((uint64_t)bytes > SIZE_MAX || !(b->data = calloc((size_t)count, esize)))
        return pm_ctx_set_error(p->ctx, PM_ERR_NOMEM,
                                "%s: out of memory for its %" PRId64 " elements", f->name, count);
    s->owned[f->id] = true;
    return PM_OK;
}

static pm_status setup(pm_pipeline *p, const pm_value *params, const pm_buffer *inputs,
                       interp_state *s)
{
    pm_ctx *ctx = p->ctx;
    int nctx_params = pm_ctx_nparams(ctx);
    s->nfuncs = pm_ctx_nfuncs(ctx);
    s->store = calloc((size_t)s->nfuncs + 1, sizeof *s->store);
    s->bufs = calloc((size_t)s->nfuncs + 1, sizeof *s->bufs);
    s->owned = calloc((size_t)s->nfuncs + 1, sizeof *s->owned);
    s->last_use = calloc((size_t)s->nfuncs + 1, sizeof *s->last_use);
    s->params = calloc((size_t)nctx_params + 1, sizeof *s->params);
    s->vars = calloc((size_t)max_var_id(p) + 1, sizeof *s->vars);
    if (!s->store || !s->bufs || !s->owned || !s->last_use || !s->params || !s->vars)
        return pm_ctx_set_error(ctx, PM_ERR_NOMEM, "%s: out of memory starting the interpreter",
                                p->name);
    for (int i = 0; i < s->nfuncs; i++) {
        s->bufs[i] = &s->store[i];
        s->last_use[i] = -1;
    }
    for (int i = 0; i < p->nparams; i++)
        s->params[p->params[i]->id] = param_value(p->params[i]->type, params[i]);
    for (int i = 0; i < p->ninputs; i++)
        view_of(&inputs[i], &s->store[p->inputs[i]->id]);
    for (int st = 0; st < p->nstages; st++) {
        const pm_func *f = p->stages[st];
        if (f->kind == PM_FUNC_REDUCTION) {
            pm_status rst = check_reduction_vars(ctx, f);
            if (rst != PM_OK)
                return rst;
        }
        last_use_walk w = {s->last_use, st};
        walk_definition(f, note_use, &w);
    }
    return PM_OK;
}

static pm_status interpret(pm_pipeline *p, const pm_value *params, const pm_buffer *inputs,
                           pm_buffer *outputs)
{
    pm_ctx *ctx = p->ctx;
    if (!p->stages)
        return pm_ctx_set_error(ctx, PM_ERR_MISUSE,
                                "pm_interpret: pipeline %s was not built by pm_pipeline_new",
                                p->name);
    pm_signature *sig = pm_signature_new(p);
    if (!sig)
        return pm_ctx_recorded(ctx) != PM_OK ? pm_ctx_recorded(ctx) : PM_ERR_NOMEM;
    char msg[1024];
    pm_status st = pm_signature_check(sig, params, inputs, outputs, msg, sizeof msg);
    pm_signature_free(sig);
    if (st != PM_OK)
        return pm_ctx_set_error(ctx, st, "%s", msg);

    interp_state s;
    memset(&s, 0, sizeof s);
    st = setup(p, params, inputs, &s);
    pm_ienv env = {s.bufs, s.params, s.vars};
    for (int i = 0; st == PM_OK && i < p->nstages; i++) {
        const pm_func *f = p->stages[i];
        st = place_stage(p, params, outputs, f, &s);
        if (st != PM_OK)
            break;
        if (f->kind == PM_FUNC_REDUCTION)
            st = eval_reduction(p, params, f, &s.store[f->id], &env);
        else
            eval_function(f, &s.store[f->id], &env);
        /* Intermediates nobody reads any more go now: memory stays near the live set. */
        for (int j = 0; j <= i; j++) {
            const pm_func *g = p->stages[j];
            if (s.owned[g->id] && s.last_use[g->id] <= i) {
                free(s.store[g->id].data);
                s.store[g->id].data = NULL;
                s.owned[g->id] = false;
            }
        }
    }
    state_free(&s);
    return st;
}

pm_status pm_interpret(pm_pipeline *p, const pm_value *params, const pm_buffer *inputs,
                       pm_buffer *outputs)
{
    if (!p)
        return PM_ERR_MISUSE;
    pm_ctx_call_begin(p->ctx); /* a refused run is about this run alone */
    pm_status st = interpret(p, params, inputs, outputs);
    pm_ctx_call_end(p->ctx);
    return st;
}
