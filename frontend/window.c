/* window.c — a pipeline's window form: demand, halo and block bounds (see window.h). */
#include "frontend/window.h"

#include "frontend/isl_expr.h"

#include <isl/aff.h>
#include <isl/ilp.h>
#include <isl/local_space.h>
#include <isl/options.h>
#include <isl/val.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- demand ----------------------------------------------------------------------------- */

/* A read of an input by one stage, kept to name the stage when the input's demand has no
 * fixed distance from the window. */
typedef struct contribution {
    int input;
    const pm_func *reader;
    isl_set *read;          /* NULL: the whole input (a data-dependent index)          */
} contribution;

typedef struct demand_walk {
    pm_pipeline *pw;
    const pm_pipeline *p;   /* the base: its functions                                 */
    isl_space *params;
    isl_set *context;
    isl_set **demand;       /* per function (inputs, then stages)                      */
    bool *whole;
    contribution *contrib;  /* NULL when not wanted                                    */
    int ncontrib, capcontrib;
    bool failed;
    const char *stage;      /* the stage being walked when isl failed, or NULL          */
} demand_walk;

static int func_index(const demand_walk *w, const pm_func *f)
{
    for (int i = 0; i < w->p->ninputs; i++)
        if (w->p->inputs[i] == f)
            return i;
    for (int i = 0; i < w->p->nstages; i++)
        if (w->p->stages[i] == f)
            return w->p->ninputs + i;
    return -1;
}

static __isl_give isl_space *func_space(const demand_walk *w, const pm_func *f)
{
    return isl_space_add_dims(isl_space_set_from_params(isl_space_copy(w->params)),
                              isl_dim_set, (unsigned)f->ndims);
}

/* f's whole domain (an image's box, a function's intervals with their steps), unnamed. */
static __isl_give isl_set *whole_domain(const demand_walk *w, const pm_func *f)
{
    isl_space *sp = func_space(w, f);
    isl_pw_aff *coords[PM_MAX_DIMS];
    pm_isl_env env = {sp, 0, NULL, NULL};
    for (int d = 0; d < f->ndims; d++)
        coords[d] = pm_isl_var_pw_aff(&env, d);
    isl_set *dom = pm_isl_in_domain(&env, f, coords);
    for (int d = 0; d < f->ndims; d++)
        isl_pw_aff_free(coords[d]);
    isl_space_free(sp);
    return dom ? isl_set_intersect_params(dom, isl_set_copy(w->context)) : NULL;
}

/* The box around s (per dimension its least and greatest point, piecewise over the
 * parameters): what a buffer holds, and a simpler set for isl to carry on. */
static __isl_give isl_set *bounding_box(__isl_take isl_set *s, __isl_keep isl_set *context)
{
    if (!s)
        return NULL;
    isl_size n = isl_set_dim(s, isl_dim_set);
    isl_space *sp = isl_set_get_space(s);
    isl_set *box = isl_set_universe(isl_space_copy(sp));
    for (int d = 0; d < n; d++) {
        /* one dimension at a time: isl's parametric minimum over the others explodes */
        isl_set *line = isl_set_project_out(isl_set_copy(s), isl_dim_set, (unsigned)d + 1,
                                            (unsigned)(n - d - 1));
        line = isl_set_coalesce(isl_set_project_out(line, isl_dim_set, 0, (unsigned)d));
        isl_pw_aff *lo = isl_pw_aff_coalesce(isl_pw_aff_gist_params(
            isl_set_dim_min(isl_set_copy(line), 0), isl_set_copy(context)));
        isl_pw_aff *hi = isl_pw_aff_coalesce(isl_pw_aff_gist_params(
            isl_set_dim_max(line, 0), isl_set_copy(context)));
        lo = isl_pw_aff_insert_dims(lo, isl_dim_in, 0, (unsigned)n);
        hi = isl_pw_aff_insert_dims(hi, isl_dim_in, 0, (unsigned)n);
        isl_pw_aff *x = isl_pw_aff_var_on_domain(isl_local_space_from_space(isl_space_copy(sp)),
                                                 isl_dim_set, (unsigned)d);
        box = isl_set_intersect(box, isl_pw_aff_ge_set(isl_pw_aff_copy(x), lo));
        box = isl_set_intersect(box, isl_pw_aff_le_set(x, hi));
    }
    isl_space_free(sp);
    isl_set_free(s);
    return isl_set_intersect_params(box, isl_set_copy(context));
}

static void add_demand(demand_walk *w, int k, __isl_take isl_set *read)
{
    if (!read) {
        w->failed = true;
        return;
    }
    w->demand[k] = isl_set_union(w->demand[k], read);
    if (!w->demand[k])
        w->failed = true;
}

static void note_contribution(demand_walk *w, int input, const pm_func *reader,
                              __isl_keep isl_set *read)
{
    if (!w->contrib || input >= w->p->ninputs)
        return;
    if (w->ncontrib == w->capcontrib) {
        int cap = w->capcontrib ? 2 * w->capcontrib : 16;
        contribution *c = realloc(w->contrib, sizeof *c * (size_t)cap);
        if (!c) {
            w->failed = true;
            return;
        }
        w->contrib = c;
        w->capcontrib = cap;
    }
    w->contrib[w->ncontrib++] = (contribution){input, reader, read ? isl_set_copy(read) : NULL};
}

typedef struct call_list {
    const pm_expr **calls;
    int n, cap;
    bool failed;
} call_list;

static bool collect_call(const pm_expr *e, void *user)
{
    call_list *l = user;
    if (e->kind != PM_EXPR_CALL)
        return true;
    for (int i = 0; i < l->n; i++)
        if (l->calls[i] == e)
            return true;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        const pm_expr **grown = realloc(l->calls, sizeof *grown * (size_t)cap);
        if (!grown) {
            l->failed = true;
            return false;
        }
        l->calls = grown;
        l->cap = cap;
    }
    l->calls[l->n++] = e;
    return true;
}

/* Every call in exprs, evaluated at the points of dom (in env's space), adds what it reads
 * to its callee's demand. */
static void add_reads(demand_walk *w, const pm_func *reader, const pm_isl_env *env,
                      __isl_keep isl_set *dom, int nexprs, const pm_expr *const *exprs)
{
    call_list calls = {0};
    for (int i = 0; i < nexprs; i++)
        if (exprs[i])
            pm_expr_walk(exprs[i], collect_call, &calls);
    if (calls.failed)
        w->failed = true;
    for (int i = 0; i < calls.n && !w->failed; i++) {
        const pm_expr *call = calls.calls[i];
        int k = func_index(w, call->callee);
        if (k < 0 || call->callee == reader)
            continue; /* a self read: the stage is needed whole (see walk) */
        isl_pw_multi_aff *pma = NULL;
        bool affine = call->nargs > 0;
        for (int d = 0; d < call->nargs && affine; d++) {
            isl_pw_aff *pa = pm_isl_pw_aff(env, call->args[d]);
            if (!pa) {
                affine = false;
                break;
            }
            isl_pw_multi_aff *one = isl_pw_multi_aff_from_pw_aff(pa);
            pma = pma ? isl_pw_multi_aff_flat_range_product(pma, one) : one;
        }
        if (!affine) {
            isl_pw_multi_aff_free(pma);
            w->whole[k] = true;
            note_contribution(w, k, reader, NULL);
            continue;
        }
        isl_set *read = isl_set_apply(isl_set_copy(dom), isl_map_from_pw_multi_aff(pma));
        note_contribution(w, k, reader, read);
        add_demand(w, k, read);
    }
    free(calls.calls);
}

static bool reads_itself(const pm_func *f)
{
    call_list calls = {0};
    if (f->kind == PM_FUNC_FUNCTION) {
        for (int c = 0; c < f->ncases; c++) {
            pm_expr_walk(f->cases[c]->value, collect_call, &calls);
            if (f->cases[c]->cond)
                pm_expr_walk(f->cases[c]->cond, collect_call, &calls);
        }
    } else {
        if (f->initial)
            pm_expr_walk(f->initial, collect_call, &calls);
        if (f->rvalue)
            pm_expr_walk(f->rvalue, collect_call, &calls);
        for (int d = 0; d < f->ndims && f->rindex; d++)
            pm_expr_walk(f->rindex[d], collect_call, &calls);
    }
    bool self = calls.failed;
    for (int i = 0; i < calls.n; i++)
        self |= calls.calls[i]->callee == f;
    free(calls.calls);
    return self;
}

/* Stage f (function index k) over its demand: what it reads. */
static void walk_stage(demand_walk *w, const pm_func *f, int k)
{
    isl_set *need = w->demand[k];
    isl_space *sp = pm_isl_set_space(w->params, f->ndims, f->vars);
    pm_isl_env env = {sp, f->ndims, f->vars, NULL};
    if (f->kind == PM_FUNC_FUNCTION) {
        for (int c = 0; c < f->ncases && !w->failed; c++) {
            isl_set *under = NULL, *over = NULL;
            pm_isl_cond_bounds(&env, f->cases[c]->cond, &under, &over);
            isl_set_free(under);
            isl_set *dom = isl_set_intersect(over, isl_set_copy(need));
            const pm_expr *exprs[2] = {f->cases[c]->value, f->cases[c]->cond};
            if (dom)
                add_reads(w, f, &env, dom, 2, exprs);
            else
                w->failed = true;
            isl_set_free(dom);
        }
    } else {
        const pm_expr *init[1] = {f->initial};
        add_reads(w, f, &env, need, 1, init);
        /* The updates that write a demanded cell: through each affine index, those whose
         * cell lies in the demand (a data-dependent index may write any cell). */
        isl_space *rsp = pm_isl_set_space(w->params, f->nrdims, f->rvars);
        pm_isl_env renv = {rsp, f->nrdims, f->rvars, NULL};
        isl_pw_aff *rc[PM_MAX_DIMS];
        for (int d = 0; d < f->nrdims; d++)
            rc[d] = pm_isl_var_pw_aff(&renv, d);
        isl_set *rdom = pm_isl_in_intervals(&renv, f->nrdims, f->rintervals, rc);
        for (int d = 0; d < f->nrdims; d++)
            isl_pw_aff_free(rc[d]);
        isl_set *cells = isl_set_copy(need);
        isl_pw_multi_aff *pma = NULL;
        int kept = 0;
        for (int d = f->ndims - 1; d >= 0 && rdom; d--) {
            isl_pw_aff *pa = pm_isl_pw_aff(&renv, f->rindex[d]);
            if (!pa) {
                cells = isl_set_project_out(cells, isl_dim_set, (unsigned)d, 1);
                continue;
            }
            isl_pw_multi_aff *one = isl_pw_multi_aff_from_pw_aff(pa);
            pma = pma ? isl_pw_multi_aff_flat_range_product(one, pma) : one;
            kept++;
        }
        if (rdom && kept > 0)
            rdom = isl_set_intersect(rdom, isl_set_preimage_pw_multi_aff(cells, pma));
        else
            isl_set_free(cells), isl_pw_multi_aff_free(pma);
        if (rdom) {
            const pm_expr *exprs[1 + PM_MAX_DIMS];
            int n = 0;
            exprs[n++] = f->rvalue;
            for (int d = 0; d < f->ndims; d++)
                exprs[n++] = f->rindex[d];
            add_reads(w, f, &renv, rdom, n, exprs);
        } else {
            w->failed = true;
        }
        isl_set_free(rdom);
        isl_space_free(rsp);
    }
    isl_space_free(sp);
}

isl_set *pm_window_context(pm_pipeline *pw, isl_space *params)
{
    const pm_window *win = pw->window;
    const pm_pipeline *p = win->base;
    isl_space *ps = isl_space_set_from_params(isl_space_copy(params));
    pm_isl_env env = {ps, 0, NULL, NULL};
    isl_set *ctx = isl_set_universe(isl_space_copy(ps));
    isl_pw_aff *one = isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(ps)),
                                               isl_val_one(isl_space_get_ctx(ps)));
    for (int i = 0; i < p->ninputs; i++)
        for (int d = 0; d < p->inputs[i]->ndims; d++) {
            isl_pw_aff *e = pm_isl_pw_aff(&env, p->inputs[i]->extents[d]);
            if (e)
                ctx = isl_set_intersect(ctx, isl_pw_aff_ge_set(e, isl_pw_aff_copy(one)));
        }
    for (int d = 0; d < win->ndims; d++) {
        isl_pw_aff *lo = pm_isl_pw_aff(&env, win->lo[d]), *n = pm_isl_pw_aff(&env, win->n[d]);
        ctx = isl_set_intersect(ctx, isl_pw_aff_ge_set(isl_pw_aff_copy(n), isl_pw_aff_copy(one)));
        ctx = isl_set_intersect(ctx, isl_pw_aff_nonneg_set(isl_pw_aff_copy(lo)));
        isl_pw_aff *end = isl_pw_aff_add(lo, n); /* one past the window */
        for (int o = 0; o < p->noutputs; o++) {
            const pm_interval *iv = p->outputs[o]->intervals[d];
            isl_pw_aff *lb = pm_isl_pw_aff(&env, iv->lb), *ub = pm_isl_pw_aff(&env, iv->ub);
            isl_pw_aff *extent = isl_pw_aff_add(isl_pw_aff_sub(ub, lb), isl_pw_aff_copy(one));
            ctx = isl_set_intersect(ctx, isl_pw_aff_le_set(isl_pw_aff_copy(end), extent));
        }
        isl_pw_aff_free(end);
    }
    isl_pw_aff_free(one);
    isl_space_free(ps);
    return isl_set_params(ctx);
}

/* The demand of every function (window.h); contributions to the inputs when wanted. */
static bool demand_of(demand_walk *w)
{
    const pm_pipeline *p = w->p;
    const pm_window *win = w->pw->window;
    int nf = p->ninputs + p->nstages;
    for (int k = 0; k < nf; k++) {
        const pm_func *f = k < p->ninputs ? p->inputs[k] : p->stages[k - p->ninputs];
        isl_space *sp = func_space(w, f);
        w->demand[k] = isl_set_empty(sp);
    }
    /* The seeds: each output over the window, in coordinates (its lower bound + index). */
    for (int o = 0; o < p->noutputs && !w->failed; o++) {
        const pm_func *f = p->outputs[o];
        int k = func_index(w, f);
        isl_space *sp = func_space(w, f);
        pm_isl_env env = {sp, 0, NULL, NULL};
        isl_set *seed = whole_domain(w, f);
        for (int d = 0; d < f->ndims && seed; d++) {
            isl_pw_aff *x = pm_isl_var_pw_aff(&env, d);
            isl_pw_aff *lb = pm_isl_pw_aff(&env, f->intervals[d]->lb);
            isl_pw_aff *first = isl_pw_aff_add(lb, pm_isl_pw_aff(&env, win->lo[d]));
            isl_pw_aff *last = isl_pw_aff_add(isl_pw_aff_copy(first),
                                              pm_isl_pw_aff(&env, win->n[d]));
            last = isl_pw_aff_sub(last, isl_pw_aff_val_on_domain(isl_set_universe(
                                      isl_space_copy(sp)), isl_val_one(isl_space_get_ctx(sp))));
            seed = isl_set_intersect(seed, isl_pw_aff_ge_set(isl_pw_aff_copy(x), first));
            seed = isl_set_intersect(seed, isl_pw_aff_le_set(x, last));
        }
        isl_space_free(sp);
        add_demand(w, k, seed);
    }
    for (int s = p->nstages - 1; s >= 0 && !w->failed; s--) {
        const pm_func *f = p->stages[s];
        int k = p->ninputs + s;
        if (w->whole[k] || reads_itself(f)) {
            w->whole[k] = true;
            isl_set_free(w->demand[k]);
            w->demand[k] = whole_domain(w, f);
        } else {
            w->demand[k] = bounding_box(isl_set_intersect_params(w->demand[k],
                                                                 isl_set_copy(w->context)),
                                        w->context);
        }
        if (!w->demand[k]) {
            w->failed = true;
            w->stage = f->name;
            break;
        }
        walk_stage(w, f, k);
        if (w->failed)
            w->stage = f->name;
    }
    for (int i = 0; i < p->ninputs && !w->failed; i++) {
        if (w->whole[i]) {
            isl_set_free(w->demand[i]);
            w->demand[i] = whole_domain(w, p->inputs[i]);
        } else {
            w->demand[i] = isl_set_coalesce(isl_set_intersect_params(w->demand[i],
                                                                     isl_set_copy(w->context)));
        }
        w->failed |= !w->demand[i];
    }
    return !w->failed;
}

static void walk_free(demand_walk *w, int nf)
{
    for (int k = 0; k < nf && w->demand; k++)
        isl_set_free(w->demand[k]);
    free(w->demand);
    free(w->whole);
    for (int i = 0; i < w->ncontrib; i++)
        isl_set_free(w->contrib[i].read);
    free(w->contrib);
    isl_set_free(w->context);
}

static bool walk_init(demand_walk *w, pm_pipeline *pw, isl_space *params, bool contributions)
{
    memset(w, 0, sizeof *w);
    w->pw = pw;
    w->p = pw->window->base;
    w->params = params;
    int nf = w->p->ninputs + w->p->nstages;
    w->demand = calloc((size_t)nf + 1, sizeof *w->demand);
    w->whole = calloc((size_t)nf + 1, sizeof *w->whole);
    w->context = pm_window_context(pw, params);
    if (contributions) {
        w->contrib = malloc(sizeof *w->contrib * 16);
        w->capcontrib = 16;
    }
    return w->demand && w->whole && w->context && (!contributions || w->contrib);
}

bool pm_window_demand(pm_pipeline *pw, isl_space *params, isl_set **demand)
{
    demand_walk w;
    int nf = pw->window->base->ninputs + pw->window->base->nstages;
    isl_ctx *ictx = isl_space_get_ctx(params);
    unsigned long budget = isl_ctx_get_max_operations(ictx);
    isl_ctx_set_max_operations(ictx, PM_WINDOW_ISL_OPERATIONS);
    isl_ctx_reset_operations(ictx);
    bool ok = walk_init(&w, pw, params, false) && demand_of(&w);
    isl_ctx_set_max_operations(ictx, budget);
    isl_ctx_reset_operations(ictx);
    for (int k = 0; k < nf; k++) {
        demand[k] = NULL;
        if (ok && !w.whole[k]) {
            demand[k] = w.demand[k];
            w.demand[k] = NULL;
        }
    }
    walk_free(&w, nf);
    return ok;
}

/* ---- halo ------------------------------------------------------------------------------- */

/* The greatest distance of s's points beyond the window along dimension e of s (tied to
 * window dimension d): below the window (upper = false: lo - x) or above it (x - (lo + n
 * - 1)), over every parameter value of the context. *out = -1 when unbounded, else at
 * least 0. False when isl fails. */
static bool beyond(__isl_keep isl_set *s, const pm_window *win, int d, int e, bool upper,
                   int64_t *out)
{
    isl_size np = isl_set_dim(s, isl_dim_param), n = isl_set_dim(s, isl_dim_set);
    int lo_pos = isl_set_find_dim_by_name(s, isl_dim_param, win->lo[d]->name);
    int n_pos = isl_set_find_dim_by_name(s, isl_dim_param, win->n[d]->name);
    if (np < 0 || n < 0 || lo_pos < 0 || n_pos < 0)
        return false;
    isl_set *flat = isl_set_move_dims(isl_set_copy(s), isl_dim_set, (unsigned)n, isl_dim_param,
                                      0, (unsigned)np);
    isl_local_space *ls = isl_local_space_from_space(isl_set_get_space(flat));
    isl_aff *x = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set, (unsigned)e);
    isl_aff *lo = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set,
                                        (unsigned)(n + lo_pos));
    isl_aff *obj;
    if (upper) {
        isl_aff *len = isl_aff_var_on_domain(isl_local_space_copy(ls), isl_dim_set,
                                             (unsigned)(n + n_pos));
        obj = isl_aff_add_constant_si(isl_aff_sub(isl_aff_sub(x, lo), len), 1);
    } else {
        obj = isl_aff_sub(lo, x);
    }
    isl_local_space_free(ls);
    isl_val *v = isl_set_max_val(flat, obj);
    isl_aff_free(obj);
    isl_set_free(flat);
    if (!v)
        return false;
    if (isl_val_is_infty(v))
        *out = -1;
    else if (isl_val_is_neginfty(v) || isl_val_is_neg(v))
        *out = 0;
    else
        *out = isl_val_get_num_si(v);
    isl_val_free(v);
    return true;
}

static bool constant_extent(const pm_expr *e)
{
    return e->kind == PM_EXPR_INT;
}

/* Tie each input dimension to an output dimension (window.h), measure the halo, and
 * refuse a tied dimension whose demand has no fixed distance from the window. */
static pm_status measure_halo(pm_pipeline *pw, pm_window *win)
{
    pm_pipeline *p = win->base;
    isl_ctx *ictx = isl_ctx_alloc();
    if (!ictx)
        return pm_ctx_error(p->ctx, PM_ERR_NOMEM, "%s: out of memory", p->name);
    isl_options_set_on_error(ictx, ISL_ON_ERROR_CONTINUE);
    isl_ctx_set_max_operations(ictx, PM_WINDOW_ISL_OPERATIONS);
    isl_space *params = pm_isl_param_space(ictx, pw);
    demand_walk w;
    int nf = p->ninputs + p->nstages;
    pm_status st = PM_OK;
    if (!walk_init(&w, pw, params, true) || !demand_of(&w)) {
        if (isl_ctx_last_error(ictx) == isl_error_quota)
            st = pm_ctx_error(p->ctx, PM_ERR_UNSUPPORTED, "%s: cannot run on windows: finding "
                              "what a window reads%s%s took isl more than its budget of %d "
                              "million operations (deep pyramids: their bounds nest a floor "
                              "division per level)", p->name, w.stage ? " of stage " : "",
                              w.stage ? w.stage : "", PM_WINDOW_ISL_OPERATIONS / 1000000);
        else
            st = pm_ctx_error(p->ctx, isl_ctx_last_error(ictx) == isl_error_alloc
                                          ? PM_ERR_NOMEM : PM_ERR_INTERNAL,
                              "%s: isl could not find what a window reads: %s", p->name,
                              isl_ctx_last_error_msg(ictx) ? isl_ctx_last_error_msg(ictx) : "");
    }
    for (int d = 0; d < win->ndims; d++)
        win->halo_lo[d] = win->halo_hi[d] = 0;
    for (int i = 0; i < p->ninputs && st == PM_OK; i++) {
        const pm_func *in = p->inputs[i];
        for (int e = 0; e < in->ndims && st == PM_OK; e++) {
            int d = e + (win->ndims - in->ndims);
            win->in_tied[i * PM_MAX_DIMS + e] = -1;
            if (d < 0 || constant_extent(in->extents[e]))
                continue;
            win->in_tied[i * PM_MAX_DIMS + e] = d;
            int64_t lo = -1, hi = -1;
            if (!w.whole[i] && (!beyond(w.demand[i], win, d, e, false, &lo) ||
                                !beyond(w.demand[i], win, d, e, true, &hi))) {
                st = pm_ctx_error(p->ctx, PM_ERR_INTERNAL, "%s: isl could not measure the "
                                  "halo of input %s", p->name, in->name);
                break;
            }
            if (lo >= 0 && hi >= 0) {
                if (lo > win->halo_lo[d])
                    win->halo_lo[d] = lo;
                if (hi > win->halo_hi[d])
                    win->halo_hi[d] = hi;
                continue;
            }
            /* Name the stage whose read of this input has no fixed distance. */
            const char *who = NULL;
            for (int c = 0; c < w.ncontrib && !who; c++) {
                const contribution *r = &w.contrib[c];
                int64_t a = -1, b = -1;
                if (r->input != i)
                    continue;
                if (!r->read || !beyond(r->read, win, d, e, false, &a) ||
                    !beyond(r->read, win, d, e, true, &b) || a < 0 || b < 0)
                    who = r->reader->name;
            }
            st = pm_ctx_error(p->ctx, PM_ERR_UNSUPPORTED,
                              "%s: cannot run on windows: %s%s reads input %s along its "
                              "dimension %d at no fixed distance from the output window (a "
                              "reduction over the whole image, or a data-dependent index)",
                              p->name, who ? "stage " : "", who ? who : "a stage", in->name, e);
        }
    }
    walk_free(&w, nf);
    isl_space_free(params);
    isl_ctx_free(ictx);
    return st;
}

/* ---- the window form -------------------------------------------------------------------- */

static pm_expr *param_named(pm_ctx *ctx, const char *fmt, int d)
{
    char name[32];
    snprintf(name, sizeof name, fmt, d);
    return pm_param(ctx, PM_I64, name);
}

/* A pipeline runs on windows when its outputs share a rank, have unit steps, and no
 * parameter takes a name the window form gives its own. */
static pm_status check_windowable(const pm_pipeline *p)
{
    pm_ctx *ctx = p->ctx;
    if (p->window)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: already a window form", p->name);
    if (p->noutputs < 1)
        return pm_ctx_error(ctx, PM_ERR_UNSUPPORTED, "%s: no outputs", p->name);
    int ndims = p->outputs[0]->ndims;
    for (int o = 0; o < p->noutputs; o++) {
        const pm_func *f = p->outputs[o];
        if (f->ndims != ndims)
            return pm_ctx_error(ctx, PM_ERR_UNSUPPORTED, "%s: cannot run on windows: its "
                                "outputs %s and %s differ in rank (%d and %d)", p->name,
                                p->outputs[0]->name, f->name, ndims, f->ndims);
        for (int d = 0; d < f->ndims; d++)
            if (f->intervals[d]->step != 1)
                return pm_ctx_error(ctx, PM_ERR_UNSUPPORTED, "%s: cannot run on windows: "
                                    "output %s has a step of %lld in dimension %d", p->name,
                                    f->name, (long long)f->intervals[d]->step, d);
    }
    for (int i = 0; i < p->nparams; i++)
        if (strncmp(p->params[i]->name, "window_", 7) == 0)
            return pm_ctx_error(ctx, PM_ERR_UNSUPPORTED, "%s: cannot run on windows: its "
                                "parameter %s takes a name the window form gives its own",
                                p->name, p->params[i]->name);
    return PM_OK;
}

/* The window form's record, a copy of p's with the window's parameters (offset and size
 * per dimension) after p's own; its bounds tables allocated, not yet filled. */
static pm_status window_alloc(pm_pipeline *p, int ndims, pm_pipeline **out)
{
    pm_ctx *ctx = p->ctx;
    pm_pipeline *pw = pm_ctx_alloc(ctx, sizeof *pw);
    pm_window *win = pm_ctx_alloc(ctx, sizeof *win);
    if (!pw || !win)
        return pm_ctx_recorded(ctx);
    *pw = *p;
    pw->canon = NULL;
    pw->window_form = NULL;
    pw->window = win;
    win->base = p;
    win->ndims = ndims;
    for (int d = 0; d < ndims; d++) {
        win->lo[d] = param_named(ctx, "window_lo%d", d);
        win->n[d] = param_named(ctx, "window_n%d", d);
        if (!win->lo[d] || !win->n[d])
            return pm_ctx_recorded(ctx);
    }
    int np = p->nparams + 2 * ndims, nctx = pm_ctx_nparams(ctx);
    pw->nparams = np;
    pw->params = pm_ctx_alloc(ctx, sizeof *pw->params * (size_t)np);
    pw->param_slot = pm_ctx_alloc(ctx, sizeof *pw->param_slot * (size_t)(nctx + 1));
    size_t nin = (size_t)(p->ninputs ? p->ninputs : 1) * PM_MAX_DIMS;
    size_t nout = (size_t)p->noutputs * PM_MAX_DIMS;
    win->in_lb = pm_ctx_alloc(ctx, sizeof(pm_expr *) * nin);
    win->in_ub = pm_ctx_alloc(ctx, sizeof(pm_expr *) * nin);
    win->in_tied = pm_ctx_alloc(ctx, sizeof(int) * nin);
    win->out_lb = pm_ctx_alloc(ctx, sizeof(pm_expr *) * nout);
    win->out_ub = pm_ctx_alloc(ctx, sizeof(pm_expr *) * nout);
    if (!pw->params || !pw->param_slot || !win->in_lb || !win->in_ub || !win->in_tied ||
        !win->out_lb || !win->out_ub)
        return pm_ctx_recorded(ctx);
    for (int i = 0; i < p->nparams; i++)
        pw->params[i] = p->params[i];
    for (int d = 0; d < ndims; d++) {
        pw->params[p->nparams + 2 * d] = win->lo[d];
        pw->params[p->nparams + 2 * d + 1] = win->n[d];
    }
    for (int i = 0; i <= nctx; i++)
        pw->param_slot[i] = -1;
    for (int i = 0; i < np; i++)
        pw->param_slot[pw->params[i]->id] = i;
    *out = pw;
    return PM_OK;
}

/* Once the halo is measured: each input's block (the window widened by the halo, clipped
 * to the image; the whole extent in a dimension no window dimension ties) and each
 * output's window. */
static void window_bounds(const pm_pipeline *p, pm_window *win)
{
    pm_ctx *ctx = p->ctx;
    for (int i = 0; i < p->ninputs; i++) {
        const pm_func *in = p->inputs[i];
        for (int e = 0; e < in->ndims; e++) {
            int d = win->in_tied[i * PM_MAX_DIMS + e];
            pm_expr **lb = &win->in_lb[i * PM_MAX_DIMS + e], **ub = &win->in_ub[i * PM_MAX_DIMS + e];
            if (d < 0) {
                *lb = pm_int(ctx, 0);
                *ub = pm_addi(in->extents[e], -1);
            } else {
                *lb = pm_max(pm_int(ctx, 0), pm_addi(win->lo[d], -win->halo_lo[d]));
                *ub = pm_addi(pm_min(in->extents[e],
                                     pm_addi(pm_add(win->lo[d], win->n[d]), win->halo_hi[d])),
                              -1);
            }
        }
    }
    for (int o = 0; o < p->noutputs; o++)
        for (int d = 0; d < win->ndims; d++) {
            pm_expr *first = pm_add(p->outputs[o]->intervals[d]->lb, win->lo[d]);
            win->out_lb[o * PM_MAX_DIMS + d] = first;
            win->out_ub[o * PM_MAX_DIMS + d] = pm_addi(pm_add(first, win->n[d]), -1);
        }
}

static pm_status make_window(pm_pipeline *p, pm_pipeline **out)
{
    pm_ctx *ctx = p->ctx;
    pm_status st = check_windowable(p);
    if (st != PM_OK)
        return st;
    pm_pipeline *pw = NULL;
    st = window_alloc(p, p->outputs[0]->ndims, &pw);
    if (st != PM_OK || !pw)
        return st;
    st = measure_halo(pw, pw->window);
    if (st != PM_OK)
        return st;
    window_bounds(p, pw->window);
    if (pm_ctx_recorded(ctx) != PM_OK)
        return pm_ctx_recorded(ctx);
    p->window_form = pw;
    *out = pw;
    return PM_OK;
}

pm_status pm_pipeline_window(pm_pipeline *p, pm_pipeline **out)
{
    if (out)
        *out = NULL;
    if (!p)
        return PM_ERR_MISUSE;
    if (!out)
        return pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "pm_pipeline_window: out is NULL");
    if (p->window_form) {
        *out = p->window_form;
        return PM_OK;
    }
    pm_ctx_call_begin(p->ctx);
    pm_status st = make_window(p, out);
    pm_ctx_call_end(p->ctx);
    return st;
}

pm_status pm_pipeline_halo(pm_pipeline *p, int ndims, int64_t *lo, int64_t *hi)
{
    if (!p)
        return PM_ERR_MISUSE;
    pm_pipeline *pw = p->window ? p : NULL;
    pm_status st = pw ? PM_OK : pm_pipeline_window(p, &pw);
    if (st != PM_OK)
        return st;
    const pm_window *win = pw->window;
    if (!lo || !hi || ndims != win->ndims)
        return pm_ctx_set_error(p->ctx, PM_ERR_MISUSE, "pm_pipeline_halo: %s has %d output "
                                "dimensions, not %d%s", p->name, win->ndims, ndims,
                                !lo || !hi ? " (or lo/hi is NULL)" : "");
    for (int d = 0; d < ndims; d++) {
        lo[d] = win->halo_lo[d];
        hi[d] = win->halo_hi[d];
    }
    return PM_OK;
}
