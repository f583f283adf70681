/* pipeline.c — pm_pipeline_new: the stage graph of a pipeline, then validation.
 *
 * Builds the graph from the live-outs (every function they reach), checks what a graph
 * walk can check (signature membership, undefined functions, variables outside their
 * domain, cycles between distinct functions), orders the stages topologically, and hands
 * the rest to pm_validate (isl). */
#include "frontend/ir.h"
#include "frontend/validate.h"

#include <stdlib.h>
#include <string.h>

typedef struct graph_walk {
    pm_pipeline *p;
    pm_func *current;       /* function whose definition is being walked              */
    const pm_expr *context; /* the expression being walked, for messages              */
    pm_func **funcs;        /* every function reached, by id: funcs[id]                */
    int nfuncs_cap;
    bool *param_used;       /* by ctx parameter id                                     */
    pm_status status;
} graph_walk;

static pm_status walk_error(graph_walk *w, pm_status status)
{
    w->status = status;
    return status;
}

static bool var_in_domain(const pm_func *f, const pm_expr *v)
{
    for (int d = 0; d < f->ndims; d++)
        if (f->vars[d] == v)
            return true;
    for (int d = 0; d < f->nrdims; d++)
        if (f->rvars[d] == v)
            return true;
    return false;
}

static bool reach_func(graph_walk *w, pm_func *f);

static bool visit_use(const pm_expr *e, void *user)
{
    graph_walk *w = user;
    pm_ctx *ctx = w->p->ctx;
    if (e->kind == PM_EXPR_PARAM) {
        w->param_used[e->id] = true;
    } else if (e->kind == PM_EXPR_VAR) {
        if (!w->current || w->current->kind == PM_FUNC_IMAGE) {
            pm_ctx_error(ctx, PM_ERR_INVALID,
                         "%s: bound %s uses variable %s; bounds and extents may use only "
                         "parameters and constants",
                         w->current ? w->current->name : w->p->name,
                         pm_expr_to_cstr(ctx, w->context), e->name);
            walk_error(w, PM_ERR_INVALID);
            return false;
        }
        if (!var_in_domain(w->current, e)) {
            pm_ctx_error(ctx, PM_ERR_INVALID,
                         "%s: %s uses variable %s, which is not a dimension of %s",
                         w->current->name, pm_expr_to_cstr(ctx, w->context), e->name,
                         w->current->name);
            walk_error(w, PM_ERR_INVALID);
            return false;
        }
    } else if (e->kind == PM_EXPR_CALL) {
        if (e->callee->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "%s calls %s, which belongs to another context",
                         w->current ? w->current->name : w->p->name, e->callee->name);
            walk_error(w, PM_ERR_MISUSE);
            return false;
        }
        pm_func *saved = w->current;
        const pm_expr *saved_context = w->context;
        bool ok = reach_func(w, e->callee);
        w->current = saved;
        w->context = saved_context;
        return ok;
    }
    return true;
}

static bool walk_expr(graph_walk *w, pm_func *current, const pm_expr *e)
{
    w->current = current;
    w->context = e;
    return pm_expr_walk(e, visit_use, w);
}

static bool walk_domain(graph_walk *w, pm_func *f, int n, pm_interval **ivs)
{
    for (int d = 0; d < n; d++) {
        /* Bounds belong to no function's variable scope: walk them as "image-like". */
        w->current = NULL;
        w->context = ivs[d]->lb;
        if (!pm_expr_walk(ivs[d]->lb, visit_use, w))
            return false;
        w->context = ivs[d]->ub;
        if (!pm_expr_walk(ivs[d]->ub, visit_use, w))
            return false;
    }
    (void)f;
    return true;
}

static bool reach_func(graph_walk *w, pm_func *f)
{
    pm_ctx *ctx = w->p->ctx;
    if (f->id >= w->nfuncs_cap) {
        pm_ctx_error(ctx, PM_ERR_INTERNAL, "function id %d out of range", f->id);
        walk_error(w, PM_ERR_INTERNAL);
        return false;
    }
    if (w->funcs[f->id])
        return true;
    w->funcs[f->id] = f;
    if (f->kind == PM_FUNC_IMAGE) {
        for (int d = 0; d < f->ndims; d++) {
            w->current = f;
            w->context = f->extents[d];
            if (!pm_expr_walk(f->extents[d], visit_use, w))
                return false;
        }
        return true;
    }
    if (!f->defined) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "%s %s is used but never defined",
                     f->kind == PM_FUNC_REDUCTION ? "reduction" : "function", f->name);
        walk_error(w, PM_ERR_INVALID);
        return false;
    }
    if (!walk_domain(w, f, f->ndims, f->intervals) || !walk_domain(w, f, f->nrdims, f->rintervals))
        return false;
    const pm_expr *exprs[1024];
    int n = pm_func_exprs(f, exprs, 1024);
    for (int i = 0; i < n; i++)
        if (!walk_expr(w, f, exprs[i]))
            return false;
    return true;
}

/* Callees of f other than f itself, as a list of distinct functions. */
static int callees(const pm_func *f, pm_func **out, int max);

typedef struct callee_list {
    const pm_func *self;
    pm_func **out;
    int n, max;
} callee_list;

static bool collect_callee(const pm_expr *e, void *user)
{
    callee_list *l = user;
    if (e->kind != PM_EXPR_CALL || e->callee == l->self || e->callee->kind == PM_FUNC_IMAGE)
        return true;
    for (int i = 0; i < l->n; i++)
        if (l->out[i] == e->callee)
            return true;
    if (l->n < l->max)
        l->out[l->n++] = e->callee;
    return true;
}

static int callees(const pm_func *f, pm_func **out, int max)
{
    callee_list l = {f, out, 0, max};
    const pm_expr *exprs[1024];
    int n = pm_func_exprs(f, exprs, 1024);
    for (int i = 0; i < n; i++)
        pm_expr_walk(exprs[i], collect_callee, &l);
    return l.n;
}

/* Depth-first search for a cycle; on finding one, writes "A -> B -> A" into the ctx. */
static bool find_cycle(pm_pipeline *p, pm_func *f, int *color, pm_func **stack, int depth,
                       int nfuncs)
{
    color[f->id] = 1;
    stack[depth] = f;
    pm_func *next[256];
    int n = callees(f, next, 256);
    for (int i = 0; i < n; i++) {
        pm_func *g = next[i];
        if (color[g->id] == 1) {
            pm_str s = {0};
            int start = 0;
            while (stack[start] != g)
                start++;
            for (int k = depth; k >= start; k--)
                pm_str_append(&s, "%s -> ", stack[k]->name);
            pm_str_append(&s, "%s", f->name);
            pm_ctx_error(p->ctx, PM_ERR_INVALID,
                         "cycle between functions: %s (each uses the next; only a function's "
                         "own earlier points may be used)", s.data);
            pm_str_free(&s);
            return true;
        }
        if (color[g->id] == 0 && find_cycle(p, g, color, stack, depth + 1, nfuncs))
            return true;
    }
    color[f->id] = 2;
    return false;
}

/* Kahn's algorithm, smallest creation id first among ready stages, so the order is
 * stable and reads like the definition order. */
static pm_status order_stages(pm_pipeline *p, pm_func **funcs, int nfuncs_cap)
{
    int n = 0;
    for (int i = 0; i < nfuncs_cap; i++)
        if (funcs[i] && funcs[i]->kind != PM_FUNC_IMAGE)
            n++;
    p->stages = pm_ctx_alloc(p->ctx, sizeof(pm_func *) * (size_t)(n + 1));
    int *missing = calloc((size_t)nfuncs_cap + 1, sizeof(int)); /* producers not yet placed */
    bool *placed = calloc((size_t)nfuncs_cap + 1, sizeof(bool));
    pm_func **deps = malloc(sizeof(pm_func *) * 256);
    if (!p->stages || !missing || !placed || !deps) {
        free(missing);
        free(placed);
        free(deps);
        return pm_ctx_error(p->ctx, PM_ERR_NOMEM, "out of memory ordering %s", p->name);
    }
    p->nstages = 0;
    while (p->nstages < n) {
        pm_func *ready = NULL;
        for (int i = 0; i < nfuncs_cap && !ready; i++) {
            pm_func *f = funcs[i];
            if (!f || f->kind == PM_FUNC_IMAGE || placed[i])
                continue;
            int nd = callees(f, deps, 256);
            bool ok = true;
            for (int k = 0; k < nd; k++)
                if (!placed[deps[k]->id])
                    ok = false;
            if (ok)
                ready = f;
        }
        if (!ready) {
            free(missing);
            free(placed);
            free(deps);
            return pm_ctx_error(p->ctx, PM_ERR_INTERNAL, "%s: no stage ready while ordering",
                                p->name);
        }
        placed[ready->id] = true;
        p->stages[p->nstages++] = ready;
    }
    free(missing);
    free(placed);
    free(deps);
    return PM_OK;
}

/* "function f (i32, 2 dimensions)" */
static const char *describe_func(pm_ctx *ctx, const pm_func *f)
{
    static const char *kinds[] = {"image", "function", "reduction"};
    pm_str s = {0};
    pm_str_append(&s, "%s %s (%s, %d dimension%s, made %d%s)", kinds[f->kind], f->name,
                  pm_type_name(f->type), f->ndims, f->ndims == 1 ? "" : "s", f->id + 1,
                  f->id % 10 == 0 && f->id % 100 != 10 ? "st" :
                  f->id % 10 == 1 && f->id % 100 != 11 ? "nd" :
                  f->id % 10 == 2 && f->id % 100 != 12 ? "rd" : "th");
    const char *out = pm_ctx_strdup(ctx, s.data ? s.data : "");
    pm_str_free(&s);
    return out ? out : "";
}

/* Functions, images and parameters of one pipeline have distinct names: generated code,
 * dumps and messages name things by name (isl spaces too: two stages named f would be one
 * isl tuple). */
static pm_status check_names(pm_pipeline *p, pm_func **funcs, int cap, const bool *param_used)
{
    pm_ctx *ctx = p->ctx;
    for (int i = 0; i < cap; i++) {
        if (!funcs[i])
            continue;
        for (int j = 0; j < i; j++)
            if (funcs[j] && strcmp(funcs[i]->name, funcs[j]->name) == 0)
                return pm_ctx_error(ctx, PM_ERR_INVALID,
                                    "pipeline %s: two definitions are named %s: %s and %s",
                                    p->name, funcs[i]->name, describe_func(ctx, funcs[j]),
                                    describe_func(ctx, funcs[i]));
    }
    int nctx = pm_ctx_nparams(ctx);
    for (int i = 0; i < nctx; i++) {
        pm_expr *a = pm_ctx_param(ctx, i);
        if (!param_used[i] && p->param_slot[i] < 0)
            continue;
        for (int j = 0; j < i; j++) {
            pm_expr *b = pm_ctx_param(ctx, j);
            if ((param_used[j] || p->param_slot[j] >= 0) && strcmp(a->name, b->name) == 0)
                return pm_ctx_error(ctx, PM_ERR_INVALID,
                                    "pipeline %s: two parameters are named %s: parameter %s "
                                    "(%s, made %d) and parameter %s (%s, made %d)",
                                    p->name, a->name, b->name, pm_type_name(b->type), j + 1,
                                    a->name, pm_type_name(a->type), i + 1);
        }
        for (int k = 0; k < cap; k++)
            if (funcs[k] && strcmp(funcs[k]->name, a->name) == 0)
                return pm_ctx_error(ctx, PM_ERR_INVALID,
                                    "pipeline %s: two definitions are named %s: parameter %s "
                                    "(%s) and %s", p->name, a->name, a->name,
                                    pm_type_name(a->type), describe_func(ctx, funcs[k]));
    }
    return PM_OK;
}

static pm_status check_signature(pm_ctx *ctx, const char *name, int nparams,
                                 pm_expr *const *params, int ninputs, pm_func *const *inputs,
                                 int noutputs, pm_func *const *outputs)
{
    if (nparams < 0 || ninputs < 0 || noutputs < 1)
        return pm_ctx_error(ctx, PM_ERR_MISUSE,
                            "pipeline %s: needs at least one output and no negative counts", name);
    if ((nparams && !params) || (ninputs && !inputs) || !outputs)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: a list is NULL", name);
    for (int i = 0; i < nparams; i++) {
        if (!params[i])
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: parameter %d is NULL", name, i + 1);
        if (params[i]->ctx != ctx)
            return pm_ctx_error(ctx, PM_ERR_MISUSE,
                                "pipeline %s: parameter %d belongs to another context", name, i + 1);
        if (params[i]->kind != PM_EXPR_PARAM)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: parameter %d (%s) is not a "
                                "parameter", name, i + 1, pm_expr_to_cstr(ctx, params[i]));
        for (int j = 0; j < i; j++)
            if (params[j] == params[i])
                return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: parameter %s is listed twice",
                                    name, params[i]->name);
    }
    for (int i = 0; i < ninputs + noutputs; i++) {
        bool is_input = i < ninputs;
        pm_func *f = is_input ? inputs[i] : outputs[i - ninputs];
        int k = is_input ? i + 1 : i - ninputs + 1;
        const char *what = is_input ? "input" : "output";
        if (!f)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: %s %d is NULL", name, what, k);
        if (f->ctx != ctx)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: %s %s belongs to another context",
                                name, what, f->name);
        if (is_input && f->kind != PM_FUNC_IMAGE)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: input %s is not an image", name,
                                f->name);
        if (!is_input && f->kind == PM_FUNC_IMAGE)
            return pm_ctx_error(ctx, PM_ERR_MISUSE,
                                "pipeline %s: output %s is an image; outputs are functions", name,
                                f->name);
        for (int j = 0; j < i; j++) {
            pm_func *g = j < ninputs ? inputs[j] : outputs[j - ninputs];
            if (g == f)
                return pm_ctx_error(ctx, PM_ERR_MISUSE, "pipeline %s: %s is listed twice", name,
                                    f->name);
        }
    }
    return PM_OK;
}

/* The pipeline record: its lists copied into the context's memory, and each context
 * parameter's slot in the parameter list (-1 when the pipeline does not take it). NULL
 * when out of memory. */
static pm_pipeline *pipeline_alloc(pm_ctx *ctx, const char *name,
                                   int nparams, pm_expr *const *params,
                                   int ninputs, pm_func *const *inputs,
                                   int noutputs, pm_func *const *outputs)
{
    pm_pipeline *p = pm_ctx_alloc(ctx, sizeof *p);
    if (!p)
        return NULL;
    p->ctx = ctx;
    p->name = pm_ctx_strdup(ctx, name);
    p->nparams = nparams;
    p->ninputs = ninputs;
    p->noutputs = noutputs;
    p->params = pm_ctx_alloc(ctx, sizeof(pm_expr *) * (size_t)(nparams + 1));
    p->inputs = pm_ctx_alloc(ctx, sizeof(pm_func *) * (size_t)(ninputs + 1));
    p->outputs = pm_ctx_alloc(ctx, sizeof(pm_func *) * (size_t)(noutputs + 1));
    int nctx_params = pm_ctx_nparams(ctx);
    p->param_slot = pm_ctx_alloc(ctx, sizeof(int) * (size_t)(nctx_params + 1));
    if (!p->params || !p->inputs || !p->outputs || !p->param_slot)
        return NULL;
    /* Empty lists may be NULL, and memcpy from NULL is undefined even for 0 bytes. */
    if (nparams)
        memcpy(p->params, params, sizeof(pm_expr *) * (size_t)nparams);
    if (ninputs)
        memcpy(p->inputs, inputs, sizeof(pm_func *) * (size_t)ninputs);
    memcpy(p->outputs, outputs, sizeof(pm_func *) * (size_t)noutputs);
    for (int i = 0; i < nctx_params; i++)
        p->param_slot[i] = -1;
    for (int i = 0; i < nparams; i++)
        p->param_slot[params[i]->id] = i;
    return p;
}

/* What the walk from the outputs reached must be declared: each parameter in the
 * parameter list, each image in the input list. */
static pm_status check_reached(pm_pipeline *p, const graph_walk *w, const char *name,
                               int ninputs, pm_func *const *inputs)
{
    pm_ctx *ctx = p->ctx;
    int nctx_params = pm_ctx_nparams(ctx);
    for (int i = 0; i < nctx_params; i++) {
        if (w->param_used[i] && p->param_slot[i] < 0)
            return pm_ctx_error(ctx, PM_ERR_INVALID,
                                "pipeline %s uses parameter %s, which is not in its parameter list",
                                name, pm_ctx_param(ctx, i)->name);
    }
    for (int i = 0; i < w->nfuncs_cap; i++) {
        pm_func *f = w->funcs[i];
        if (!f || f->kind != PM_FUNC_IMAGE)
            continue;
        bool listed = false;
        for (int k = 0; k < ninputs; k++)
            listed |= inputs[k] == f;
        if (!listed)
            return pm_ctx_error(ctx, PM_ERR_INVALID,
                                "pipeline %s reads image %s, which is not in its input list",
                                name, f->name);
    }
    return PM_OK;
}

/* Whether the definitions reached form a cycle (find_cycle reports the first); color and
 * stack are find_cycle's, one entry per function id. */
static bool has_cycle(pm_pipeline *p, pm_func **funcs, int *color, pm_func **stack, int cap)
{
    for (int i = 0; i < cap; i++) {
        if (funcs[i] && funcs[i]->kind != PM_FUNC_IMAGE && color[i] == 0 &&
            find_cycle(p, funcs[i], color, stack, 0, cap))
            return true;
    }
    return false;
}

static pm_status pipeline_build(pm_ctx *ctx, const char *name,
                                int nparams, pm_expr *const *params,
                                int ninputs, pm_func *const *inputs,
                                int noutputs, pm_func *const *outputs,
                                pm_pipeline **out)
{
    if (!out)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "pm_pipeline_new: out is NULL");
    if (!name || !*name)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "pm_pipeline_new: a pipeline needs a name");
    /* An error while building the definitions is the first thing the user must see. */
    if (pm_ctx_recorded(ctx) != PM_OK)
        return pm_ctx_recorded(ctx);
    pm_status st = check_signature(ctx, name, nparams, params, ninputs, inputs, noutputs, outputs);
    if (st != PM_OK)
        return st;
    pm_pipeline *p = pipeline_alloc(ctx, name, nparams, params, ninputs, inputs, noutputs,
                                    outputs);
    if (!p)
        return PM_ERR_NOMEM;

    /* Function ids are dense in creation order: index the walk by id. */
    int cap = pm_ctx_nfuncs(ctx) + 1;
    graph_walk w = {.p = p, .nfuncs_cap = cap};
    w.funcs = calloc((size_t)cap, sizeof(pm_func *));
    w.param_used = calloc((size_t)pm_ctx_nparams(ctx) + 1, sizeof(bool));
    int *color = calloc((size_t)cap, sizeof(int));
    pm_func **stack = calloc((size_t)cap, sizeof(pm_func *));
    if (!w.funcs || !w.param_used || !color || !stack) {
        st = pm_ctx_error(ctx, PM_ERR_NOMEM, "out of memory building %s", name);
        goto done;
    }
    for (int i = 0; i < noutputs; i++)
        if (!reach_func(&w, outputs[i])) {
            st = pm_ctx_recorded(ctx);
            goto done;
        }
    st = check_reached(p, &w, name, ninputs, inputs);
    if (st == PM_OK)
        st = check_names(p, w.funcs, cap, w.param_used);
    if (st == PM_OK && has_cycle(p, w.funcs, color, stack, cap))
        st = PM_ERR_INVALID;
    if (st == PM_OK)
        st = order_stages(p, w.funcs, cap);
    if (st == PM_OK)
        st = pm_validate(p);
done:
    free(w.funcs);
    free(w.param_used);
    free(color);
    free(stack);
    if (st == PM_OK)
        *out = p;
    return st;
}

pm_status pm_pipeline_new(pm_ctx *ctx, const char *name,
                          int nparams, pm_expr *const *params,
                          int ninputs, pm_func *const *inputs,
                          int noutputs, pm_func *const *outputs,
                          pm_pipeline **out)
{
    if (out)
        *out = NULL;
    if (!ctx)
        return PM_ERR_MISUSE;
    /* A refusal is about this pipeline: the context builds the next one as before. */
    pm_ctx_call_begin(ctx);
    pm_status st = pipeline_build(ctx, name, nparams, params, ninputs, inputs, noutputs,
                                  outputs, out);
    pm_ctx_call_end(ctx);
    return st;
}

const char *pm_pipeline_name(const pm_pipeline *p) { return p ? p->name : NULL; }
int pm_pipeline_nparams(const pm_pipeline *p) { return p ? p->nparams : -1; }
int pm_pipeline_ninputs(const pm_pipeline *p) { return p ? p->ninputs : -1; }
int pm_pipeline_noutputs(const pm_pipeline *p) { return p ? p->noutputs : -1; }

pm_func *pm_pipeline_input(const pm_pipeline *p, int i)
{
    return p && i >= 0 && i < p->ninputs ? p->inputs[i] : NULL;
}

pm_func *pm_pipeline_output(const pm_pipeline *p, int i)
{
    return p && i >= 0 && i < p->noutputs ? p->outputs[i] : NULL;
}
