/* validate.c — see validate.h. The isl checks of a pipeline, in this order:
 *
 *  1. Bounds: every image extent and interval bound (variable and reduction domains) must
 *     translate to an isl piecewise affine function of the integer parameters
 *     (frontend/isl_expr.h says what is affine: quasi-affine forms such as N / 2, N % 4,
 *     min, max are). Everything after this works on those isl sets.
 *  2. The parameter context: all later questions are asked for parameter values that make
 *     every input image extent >= 1. Without it a negative size would make some domains
 *     empty and others not, and the answers would be about sizes nobody runs.
 *  3. Per function, in stage order:
 *     - overlapping cases: pairs of cases whose conditions surely hold together at some
 *       point of the domain. A condition with data-dependent parts (calls, floats, x * y)
 *       is replaced by the part of it that surely holds (its under-approximation), so two
 *       cases like "x >= 1 && I(x) > 0" and "x >= 1 && I(x) <= 0" are accepted: whether
 *       they overlap depends on the data, and that cannot be decided here.
 *     - reads: every call whose arguments are all affine must read inside the callee's
 *       domain at every point of the calling case's domain, which is the function's
 *       domain intersected with the over-approximation of the case condition (for a
 *       wholly affine condition, the condition itself; for "A && data-dependent", A).
 *       Calls inside select(c, a, b) are checked everywhere in the case domain, not only
 *       where c holds: select is eager (both arms are evaluated, as vector code does), so
 *       guard reads with case conditions, or clamp the index. Calls inside conditions are
 *       checked over the same case domain.
 *       A call with a non-affine argument (data-dependent lut(I(x, y)), or x * y) is not
 *       checked: the interpreter and the generated code clamp or guard such indices.
 *     - self-reference: a call of the function itself must read a point strictly before
 *       the one being defined, lexicographically, at every point of the case domain
 *       (PM_ERR_INVALID otherwise). A self-call with a data-dependent argument is
 *       accepted only when its affine leading arguments alone already read strictly
 *       earlier (f(t - 1, lut(x)) is fine); otherwise the order cannot be proven and
 *       the answer is PM_ERR_UNSUPPORTED.
 *     - reductions: the index and value are expressions of the reduction variables only
 *       and the initial value of the variables only; none of them may call the reduction
 *       itself (as in PolyMage). Reads in the index and value are checked over the
 *       reduction domain; the index itself may leave the variable domain (the update is
 *       skipped at run time, polymage.h), so it is not checked.
 * Reads at points of a callee's domain that no case covers are not errors (the value is
 * undefined, polymage.h); only domain containment is checked.
 * Every message names the function, the expression and one offending point found by isl
 * (the lexicographically smallest, parameters first, so it is the simplest example).
 * One isl_ctx per call, freed before returning.
 */
#include "frontend/validate.h"

#include "frontend/isl_expr.h"

#include <isl/options.h>

#include <stdlib.h>

typedef struct validator {
    pm_pipeline *p;
    pm_ctx *ctx;
    isl_ctx *isl;
    isl_space *params;   /* the pipeline's integer parameters                           */
    isl_set *context;    /* parameter values checked for: every image extent >= 1       */
} validator;

/* A NULL from isl with an isl error recorded is a library bug, not the user's. */
static pm_status isl_failure(validator *v, const char *where)
{
    const char *msg = isl_ctx_last_error_msg(v->isl);
    if (isl_ctx_last_error(v->isl) == isl_error_alloc)
        return pm_ctx_error(v->ctx, PM_ERR_NOMEM, "validation of %s: out of memory in isl (%s)",
                            v->p->name, where);
    return pm_ctx_error(v->ctx, PM_ERR_INTERNAL, "validation of %s: isl failed in %s: %s",
                        v->p->name, where, msg ? msg : "unknown error");
}

static bool isl_ok(validator *v)
{
    return isl_ctx_last_error(v->isl) == isl_error_none;
}

/* ---- calls in an expression --------------------------------------------------------- */

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
            return true; /* expressions are DAGs: one check per call node is enough */
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

/* ---- counterexample messages ---------------------------------------------------------- */

/* Appends "x = 5, y = 2 (R = 4, C = 3)" for one point of bad (consumed) and returns the
 * point, or NULL when isl found none. */
static __isl_give isl_point *append_point(pm_str *s, __isl_take isl_set *bad,
                                          const pm_isl_env *env)
{
    /* Only the parameters the offending set depends on are worth printing. */
    isl_size np = isl_set_dim(bad, isl_dim_param);
    bool *show = calloc(np > 0 ? (size_t)np : 1, sizeof *show);
    for (int j = 0; show && j < np; j++)
        show[j] = isl_set_involves_dims(bad, isl_dim_param, (unsigned)j, 1) == isl_bool_true;
    isl_point *pnt = show ? pm_isl_pick_point(bad) : (isl_set_free(bad), NULL);
    if (!pnt) {
        free(show);
        pm_str_append(s, "some point");
        return NULL;
    }
    const char *names[PM_MAX_DIMS];
    for (int d = 0; d < env->nvars && d < PM_MAX_DIMS; d++)
        names[d] = env->vars[d]->name;
    pm_isl_print_point(s, pnt, names, show);
    free(show);
    return pnt;
}

/* Reports an error about the points of bad (consumed): "<prefix> at <point><suffix>". */
static pm_status report(validator *v, pm_status status, pm_str *s, __isl_take isl_set *bad,
                        const pm_isl_env *env, int nargs, isl_pw_aff *const *reads,
                        const pm_func *callee, const char *suffix)
{
    pm_str_append(s, " at ");
    isl_point *pnt = append_point(s, bad, env);
    if (pnt && reads) {
        pm_str_append(s, ", where it reads %s(", callee->name);
        for (int d = 0; d < nargs; d++) {
            if (d)
                pm_str_append(s, ", ");
            pm_isl_print_value_at(s, reads[d], pnt);
        }
        pm_str_append(s, ")");
    }
    isl_point_free(pnt);
    pm_str_append(s, "%s", suffix ? suffix : "");
    pm_ctx_error(v->ctx, status, "%s", s->data ? s->data : "validation failed");
    pm_str_free(s);
    return status;
}

/* ---- 1. affine bounds ----------------------------------------------------------------- */

static bool find_float_param(const pm_expr *e, void *user)
{
    if (e->kind == PM_EXPR_PARAM && !pm_type_is_int(e->type)) {
        *(const pm_expr **)user = e;
        return false;
    }
    return true;
}

static pm_status check_bound(validator *v, const char *owner, const char *what,
                             const pm_expr *e)
{
    isl_space *space = pm_isl_set_space(v->params, 0, NULL);
    pm_isl_env env = {space, 0, NULL, NULL};
    isl_pw_aff *pa = pm_isl_pw_aff(&env, e);
    isl_space_free(space);
    if (pa) {
        isl_pw_aff_free(pa);
        return PM_OK;
    }
    if (!isl_ok(v))
        return isl_failure(v, "bounds");
    const pm_expr *fparam = NULL;
    pm_expr_walk(e, find_float_param, &fparam);
    if (fparam)
        return pm_ctx_error(v->ctx, PM_ERR_INVALID,
                            "%s: %s %s is not affine in the parameters (%s is a float "
                            "parameter; domains need integer parameters)",
                            owner, what, pm_expr_to_cstr(v->ctx, e), fparam->name);
    return pm_ctx_error(v->ctx, PM_ERR_INVALID,
                        "%s: %s %s is not affine in the parameters (allowed: integer "
                        "parameters and constants with +, -, * by a constant, / and %% by a "
                        "constant, min, max)",
                        owner, what, pm_expr_to_cstr(v->ctx, e));
}

static pm_status check_all_bounds(validator *v)
{
    pm_pipeline *p = v->p;
    for (int i = 0; i < p->ninputs; i++) {
        pm_func *img = p->inputs[i];
        for (int d = 0; d < img->ndims; d++) {
            pm_status st = check_bound(v, img->name, "extent", img->extents[d]);
            if (st != PM_OK)
                return st;
        }
    }
    for (int s = 0; s < p->nstages; s++) {
        pm_func *f = p->stages[s];
        for (int d = 0; d < f->ndims; d++) {
            pm_status st = check_bound(v, f->name, "interval bound", f->intervals[d]->lb);
            if (st == PM_OK)
                st = check_bound(v, f->name, "interval bound", f->intervals[d]->ub);
            if (st != PM_OK)
                return st;
        }
        for (int d = 0; d < f->nrdims; d++) {
            pm_status st = check_bound(v, f->name, "reduction interval bound",
                                       f->rintervals[d]->lb);
            if (st == PM_OK)
                st = check_bound(v, f->name, "reduction interval bound", f->rintervals[d]->ub);
            if (st != PM_OK)
                return st;
        }
    }
    return PM_OK;
}

/* ---- 2. the parameter context --------------------------------------------------------- */

static pm_status build_context(validator *v)
{
    isl_space *space = pm_isl_set_space(v->params, 0, NULL);
    pm_isl_env env = {space, 0, NULL, NULL};
    isl_set *ctx_set = isl_set_universe(isl_space_copy(space));
    for (int i = 0; i < v->p->ninputs; i++) {
        pm_func *img = v->p->inputs[i];
        for (int d = 0; d < img->ndims; d++) {
            isl_pw_aff *extent = pm_isl_pw_aff(&env, img->extents[d]);
            isl_pw_aff *one = isl_pw_aff_val_on_domain(isl_set_universe(isl_space_copy(space)),
                                                       isl_val_one(v->isl));
            ctx_set = isl_set_intersect(ctx_set, isl_pw_aff_ge_set(extent, one));
        }
    }
    isl_space_free(space);
    v->context = isl_set_params(ctx_set);
    return v->context ? PM_OK : isl_failure(v, "the parameter context");
}

/* ---- 3. reads and self-references ------------------------------------------------------ */

/* Where reads happen: a function's (or reduction's) variables and the points at which an
 * expression is evaluated. */
typedef struct scope {
    pm_func *f;
    pm_isl_env env;
    isl_pw_aff *point[PM_MAX_DIMS]; /* the variables as isl functions                    */
    isl_set *domain;                /* points where the expression is evaluated          */
    const char *where;              /* " in case 2", "" ...                              */
} scope;

static void scope_init(scope *sc, validator *v, pm_func *f, int n, pm_expr *const *vars)
{
    sc->f = f;
    sc->env.space = pm_isl_set_space(v->params, n, vars);
    sc->env.nvars = n;
    sc->env.vars = vars;
    sc->env.memo = NULL;
    for (int d = 0; d < n; d++)
        sc->point[d] = pm_isl_var_pw_aff(&sc->env, d);
    sc->domain = NULL;
    sc->where = "";
}

static void scope_free(scope *sc)
{
    for (int d = 0; d < sc->env.nvars; d++)
        isl_pw_aff_free(sc->point[d]);
    isl_set_free(sc->domain);
    isl_space_free(sc->env.space);
}

/* bad (consumed) is empty? -1 on isl failure. */
static int is_empty(__isl_keep isl_set *bad)
{
    isl_bool empty = isl_set_is_empty(bad);
    return empty == isl_bool_error ? -1 : empty == isl_bool_true;
}

static pm_status check_self_order(validator *v, scope *sc, const pm_expr *call,
                                  isl_pw_aff **args, int naffine)
{
    pm_func *f = sc->f;
    const char *text = pm_expr_to_cstr(v->ctx, call);
    if (naffine == 0)
        return pm_ctx_error(v->ctx, PM_ERR_UNSUPPORTED,
                            "%s: self-reference %s%s has a data-dependent first index: it "
                            "cannot be proven to read a point before the one defined",
                            f->name, text, sc->where);
    /* Over the affine leading arguments the read must already be strictly earlier. */
    isl_set *earlier = pm_isl_lex_lt(sc->env.space, naffine, args, sc->point);
    isl_set *bad = isl_set_subtract(isl_set_copy(sc->domain), earlier);
    int empty = is_empty(bad);
    if (empty < 0) {
        isl_set_free(bad);
        return isl_failure(v, "self-reference");
    }
    if (empty) {
        isl_set_free(bad);
        return PM_OK;
    }
    pm_str s = {0};
    pm_str_append(&s, "%s: self-reference %s%s reads a point not before (", f->name, text,
                  sc->where);
    for (int d = 0; d < f->ndims; d++)
        pm_str_append(&s, "%s%s", d ? ", " : "", f->vars[d]->name);
    pm_str_append(&s, ")");
    bool partial = naffine < call->nargs;
    return report(v, partial ? PM_ERR_UNSUPPORTED : PM_ERR_INVALID, &s, bad, &sc->env,
                  partial ? 0 : call->nargs, partial ? NULL : args, f,
                  partial ? " (its other indices are data-dependent, so the order cannot be "
                            "proven)"
                          : "");
}

static pm_status check_call(validator *v, scope *sc, const pm_expr *call)
{
    pm_func *callee = call->callee;
    bool self = callee == sc->f;
    isl_pw_aff *args[PM_MAX_DIMS] = {NULL};
    int naffine = 0; /* leading affine arguments */
    bool all_affine = true;
    for (int d = 0; d < call->nargs; d++) {
        args[d] = pm_isl_pw_aff(&sc->env, call->args[d]);
        if (!args[d]) {
            if (!isl_ok(v))
                break;
            all_affine = false;
        } else if (all_affine) {
            naffine++;
        }
    }
    pm_status st = PM_OK;
    if (!isl_ok(v)) {
        st = isl_failure(v, "an access");
    } else if (self) {
        st = check_self_order(v, sc, call, args, naffine);
    }
    if (st == PM_OK && all_affine) {
        isl_set *inside = pm_isl_in_domain(&sc->env, callee, args);
        isl_set *bad = inside ? isl_set_subtract(isl_set_copy(sc->domain), inside) : NULL;
        int empty = bad ? is_empty(bad) : -1;
        if (empty < 0) {
            isl_set_free(bad);
            st = isl_failure(v, "an access");
        } else if (empty) {
            isl_set_free(bad);
        } else {
            pm_str s = {0};
            pm_str_append(&s, "%s: access %s%s reads outside %s's domain", sc->f->name,
                          pm_expr_to_cstr(v->ctx, call), sc->where, callee->name);
            st = report(v, PM_ERR_INVALID, &s, bad, &sc->env, call->nargs, args, callee, NULL);
        }
    }
    for (int d = 0; d < call->nargs; d++)
        isl_pw_aff_free(args[d]);
    return st;
}

/* Checks every call in the expressions, evaluated over sc->domain. */
static pm_status check_reads(validator *v, scope *sc, int n, const pm_expr *const *exprs)
{
    call_list calls = {0};
    for (int i = 0; i < n; i++)
        pm_expr_walk(exprs[i], collect_call, &calls);
    pm_status st = calls.failed ? pm_ctx_error(v->ctx, PM_ERR_NOMEM, "out of memory validating %s",
                                               sc->f->name)
                                : PM_OK;
    for (int i = 0; i < calls.n && st == PM_OK; i++)
        st = check_call(v, sc, calls.calls[i]);
    free(calls.calls);
    return st;
}

/* ---- functions ------------------------------------------------------------------------ */

static pm_status check_overlaps(validator *v, scope *sc, isl_set **under)
{
    pm_func *f = sc->f;
    for (int i = 0; i < f->ncases; i++) {
        for (int j = i + 1; j < f->ncases; j++) {
            isl_set *both = isl_set_intersect(isl_set_copy(under[i]), isl_set_copy(under[j]));
            both = isl_set_intersect(both, isl_set_copy(sc->domain));
            int empty = is_empty(both);
            if (empty < 0) {
                isl_set_free(both);
                return isl_failure(v, "overlapping cases");
            }
            if (empty) {
                isl_set_free(both);
                continue;
            }
            pm_str s = {0};
            pm_str_append(&s, "%s: cases %d (%s) and %d (%s) overlap", f->name, i + 1,
                          f->cases[i]->cond ? pm_expr_to_cstr(v->ctx, f->cases[i]->cond)
                                            : "everywhere",
                          j + 1,
                          f->cases[j]->cond ? pm_expr_to_cstr(v->ctx, f->cases[j]->cond)
                                            : "everywhere");
            return report(v, PM_ERR_INVALID, &s, both, &sc->env, 0, NULL, f, NULL);
        }
    }
    return PM_OK;
}

static pm_status check_function(validator *v, pm_func *f)
{
    scope sc;
    scope_init(&sc, v, f, f->ndims, f->vars);
    isl_set *dom = pm_isl_in_intervals(&sc.env, f->ndims, f->intervals, sc.point);
    dom = isl_set_intersect_params(dom, isl_set_copy(v->context));
    isl_set **under = calloc((size_t)f->ncases, sizeof *under);
    isl_set **over = calloc((size_t)f->ncases, sizeof *over);
    pm_status st = PM_OK;
    if (!under || !over)
        st = pm_ctx_error(v->ctx, PM_ERR_NOMEM, "out of memory validating %s", f->name);
    for (int i = 0; i < f->ncases && st == PM_OK; i++)
        pm_isl_cond_bounds(&sc.env, f->cases[i]->cond, &under[i], &over[i]);
    if (st == PM_OK && (!dom || !isl_ok(v)))
        st = isl_failure(v, "a function's domain");
    if (st == PM_OK) {
        sc.domain = isl_set_copy(dom);
        st = check_overlaps(v, &sc, under);
    }
    char where[48];
    for (int i = 0; i < f->ncases && st == PM_OK; i++) {
        isl_set_free(sc.domain);
        sc.domain = isl_set_intersect(isl_set_copy(dom), isl_set_copy(over[i]));
        snprintf(where, sizeof where, " in case %d", i + 1);
        sc.where = f->ncases > 1 ? where : "";
        const pm_expr *exprs[2] = {f->cases[i]->value, f->cases[i]->cond};
        st = check_reads(v, &sc, f->cases[i]->cond ? 2 : 1, exprs);
    }
    for (int i = 0; i < f->ncases; i++) {
        if (under)
            isl_set_free(under[i]);
        if (over)
            isl_set_free(over[i]);
    }
    free(under);
    free(over);
    isl_set_free(dom);
    scope_free(&sc);
    return st;
}

/* ---- reductions ------------------------------------------------------------------------ */

typedef struct scope_walk {
    pm_func *f;
    pm_expr *const *allowed;
    int nallowed;
    const pm_expr *bad_var;
    bool self_call;
} scope_walk;

static bool visit_scope(const pm_expr *e, void *user)
{
    scope_walk *w = user;
    if (e->kind == PM_EXPR_CALL && e->callee == w->f) {
        w->self_call = true;
        return false;
    }
    if (e->kind == PM_EXPR_VAR) {
        for (int i = 0; i < w->nallowed; i++)
            if (w->allowed[i] == e)
                return true;
        w->bad_var = e;
        return false;
    }
    return true;
}

/* The reduction's own rule: no self-reads; each part uses only its own variables. */
static pm_status check_reduction_scope(validator *v, pm_func *f, const char *what,
                                       const pm_expr *e, int n, pm_expr *const *allowed,
                                       const char *allowed_name)
{
    scope_walk w = {f, allowed, n, NULL, false};
    pm_expr_walk(e, visit_scope, &w);
    if (w.self_call)
        return pm_ctx_error(v->ctx, PM_ERR_INVALID,
                            "reduction %s: %s %s reads %s itself; a reduction may not read "
                            "its own values (the reduction operator already combines them)",
                            f->name, what, pm_expr_to_cstr(v->ctx, e), f->name);
    if (w.bad_var)
        return pm_ctx_error(v->ctx, PM_ERR_INVALID,
                            "reduction %s: %s %s uses variable %s; it may use only the %s",
                            f->name, what, pm_expr_to_cstr(v->ctx, e), w.bad_var->name,
                            allowed_name);
    return PM_OK;
}

static pm_status check_reduction(validator *v, pm_func *f)
{
    pm_status st = PM_OK;
    for (int d = 0; d < f->ndims && st == PM_OK; d++)
        st = check_reduction_scope(v, f, "index", f->rindex[d], f->nrdims, f->rvars,
                                   "reduction variables");
    if (st == PM_OK)
        st = check_reduction_scope(v, f, "value", f->rvalue, f->nrdims, f->rvars,
                                   "reduction variables");
    if (st == PM_OK && f->initial)
        st = check_reduction_scope(v, f, "initial value", f->initial, f->ndims, f->vars,
                                   "variables of its variable domain");
    if (st != PM_OK)
        return st;

    /* Reads of the update, over the reduction domain. */
    scope sc;
    scope_init(&sc, v, f, f->nrdims, f->rvars);
    sc.domain = pm_isl_in_intervals(&sc.env, f->nrdims, f->rintervals, sc.point);
    sc.domain = isl_set_intersect_params(sc.domain, isl_set_copy(v->context));
    sc.where = " in the update";
    const pm_expr *update[PM_MAX_DIMS + 1];
    for (int d = 0; d < f->ndims; d++)
        update[d] = f->rindex[d];
    update[f->ndims] = f->rvalue;
    st = sc.domain ? check_reads(v, &sc, f->ndims + 1, update) : isl_failure(v, "a reduction");
    scope_free(&sc);
    if (st != PM_OK || !f->initial)
        return st;

    /* Reads of the initial value, over the variable domain. */
    scope_init(&sc, v, f, f->ndims, f->vars);
    sc.domain = pm_isl_in_intervals(&sc.env, f->ndims, f->intervals, sc.point);
    sc.domain = isl_set_intersect_params(sc.domain, isl_set_copy(v->context));
    sc.where = " in the initial value";
    const pm_expr *init[1] = {f->initial};
    st = sc.domain ? check_reads(v, &sc, 1, init) : isl_failure(v, "a reduction");
    scope_free(&sc);
    return st;
}

/* ---- driver -------------------------------------------------------------------------- */

pm_status pm_validate(pm_pipeline *p)
{
    if (!p)
        return PM_ERR_MISUSE;
    validator v = {.p = p, .ctx = p->ctx};
    v.isl = isl_ctx_alloc();
    if (!v.isl)
        return pm_ctx_error(p->ctx, PM_ERR_NOMEM, "out of memory validating %s", p->name);
    /* isl reports its own errors through isl_ctx_last_error; keep stderr quiet. */
    isl_options_set_on_error(v.isl, ISL_ON_ERROR_CONTINUE);
    v.params = pm_isl_param_space(v.isl, p);
    pm_status st = v.params ? check_all_bounds(&v) : isl_failure(&v, "the parameter space");
    if (st == PM_OK)
        st = build_context(&v);
    for (int s = 0; s < p->nstages && st == PM_OK; s++) {
        pm_func *f = p->stages[s];
        st = f->kind == PM_FUNC_REDUCTION ? check_reduction(&v, f) : check_function(&v, f);
    }
    isl_set_free(v.context);
    isl_space_free(v.params);
    isl_ctx_free(v.isl);
    return st;
}
