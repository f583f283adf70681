/* clone.c — a pipeline copied into another context (see clone.h).
 *
 * Two passes: every reached function is first made (empty) in the original creation
 * order, so calls can point at any of them, then the expressions are copied node by node
 * through a map from old to new nodes, which keeps the DAG's sharing. */
#include "frontend/clone.h"

#include "frontend/ir.h"
#include "frontend/window.h"
#include "frontend/ptrmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct cloner {
    const pm_pipeline *from;
    pm_ctx *into;
    pm_ptrmap nodes;      /* old pm_expr * -> index in copies                             */
    pm_expr **copies;
    size_t ncopies, copies_cap;
    pm_ptrmap funcs;      /* old pm_func * -> index in new_funcs                          */
    pm_func **new_funcs;
    pm_expr **new_params; /* by slot                                                      */
    bool failed;
} cloner;

static void *alloc_array(cloner *c, size_t count, size_t size)
{
    void *m = pm_ctx_alloc(c->into, size * (count ? count : 1));
    if (!m)
        c->failed = true;
    return m;
}

static pm_func *mapped_func(cloner *c, const pm_func *f)
{
    int64_t k;
    return pm_ptrmap_get(&c->funcs, f, &k) ? c->new_funcs[k] : NULL;
}

static pm_expr *clone_expr(cloner *c, const pm_expr *e)
{
    if (!e || c->failed)
        return NULL;
    int64_t k;
    if (pm_ptrmap_get(&c->nodes, e, &k))
        return c->copies[k];
    pm_expr *n = NULL;
    if (e->kind == PM_EXPR_PARAM) {
        int slot = e->id >= 0 && e->id < pm_ctx_nparams(c->from->ctx)
                       ? c->from->param_slot[e->id] : -1;
        if (slot < 0 || slot >= c->from->nparams) {
            pm_ctx_error(c->into, PM_ERR_INTERNAL, "clone: parameter %s has no slot", e->name);
            c->failed = true;
            return NULL;
        }
        n = c->new_params[slot];
    } else {
        n = pm_ctx_alloc(c->into, sizeof *n);
        if (!n) {
            c->failed = true;
            return NULL;
        }
        *n = *e;
        n->ctx = c->into;
        n->a = clone_expr(c, e->a);
        n->b = clone_expr(c, e->b);
        n->c = clone_expr(c, e->c);
        if (e->name && !(n->name = pm_ctx_strdup(c->into, e->name)))
            c->failed = true;
        if (e->kind == PM_EXPR_VAR)
            n->id = pm_ctx_next_var_id(c->into);
        if (e->kind == PM_EXPR_CALL) {
            n->callee = mapped_func(c, e->callee);
            n->args = alloc_array(c, (size_t)e->nargs, sizeof *n->args);
            for (int i = 0; n->args && i < e->nargs; i++)
                n->args[i] = clone_expr(c, e->args[i]);
            if (!n->callee && !c->failed) {
                pm_ctx_error(c->into, PM_ERR_INTERNAL, "clone: %s calls %s, not in the pipeline",
                             c->from->name, e->callee->name);
                c->failed = true;
            }
        }
    }
    if (c->failed)
        return NULL;
    if (c->ncopies == c->copies_cap) {
        size_t cap = c->copies_cap ? 2 * c->copies_cap : 256;
        pm_expr **grown = realloc(c->copies, cap * sizeof *grown);
        if (!grown) {
            c->failed = true;
            return NULL;
        }
        c->copies = grown;
        c->copies_cap = cap;
    }
    c->copies[c->ncopies] = n;
    if (!pm_ptrmap_put(&c->nodes, e, (int64_t)c->ncopies++))
        c->failed = true;
    return n;
}

static pm_expr **clone_exprs(cloner *c, pm_expr **es, int n)
{
    if (!es)
        return NULL;
    pm_expr **out = alloc_array(c, (size_t)n, sizeof *out);
    for (int i = 0; out && i < n; i++)
        out[i] = clone_expr(c, es[i]);
    return out;
}

static pm_interval **clone_intervals(cloner *c, pm_interval **ivs, int n)
{
    if (!ivs)
        return NULL;
    pm_interval **out = alloc_array(c, (size_t)n, sizeof *out);
    for (int i = 0; out && i < n && !c->failed; i++) {
        out[i] = pm_ctx_alloc(c->into, sizeof *out[i]);
        if (!out[i]) {
            c->failed = true;
            break;
        }
        out[i]->ctx = c->into;
        out[i]->lb = clone_expr(c, ivs[i]->lb);
        out[i]->ub = clone_expr(c, ivs[i]->ub);
        out[i]->step = ivs[i]->step;
    }
    return out;
}

/* The definitions of f into its (already made) copy g. */
static void clone_definition(cloner *c, const pm_func *f, pm_func *g)
{
    g->extents = clone_exprs(c, f->extents, f->ndims);
    g->vars = clone_exprs(c, f->vars, f->ndims);
    g->intervals = clone_intervals(c, f->intervals, f->ndims);
    g->rvars = clone_exprs(c, f->rvars, f->nrdims);
    g->rintervals = clone_intervals(c, f->rintervals, f->nrdims);
    if (f->cases) {
        g->cases = alloc_array(c, (size_t)f->ncases, sizeof *g->cases);
        for (int i = 0; g->cases && i < f->ncases && !c->failed; i++) {
            g->cases[i] = pm_ctx_alloc(c->into, sizeof *g->cases[i]);
            if (!g->cases[i]) {
                c->failed = true;
                break;
            }
            g->cases[i]->ctx = c->into;
            g->cases[i]->cond = clone_expr(c, f->cases[i]->cond);
            g->cases[i]->value = clone_expr(c, f->cases[i]->value);
        }
    }
    g->initial = clone_expr(c, f->initial);
    g->rindex = clone_exprs(c, f->rindex, f->ndims);
    g->rvalue = clone_expr(c, f->rvalue);
}

static int by_id(const void *a, const void *b)
{
    const pm_func *f = *(pm_func *const *)a, *g = *(pm_func *const *)b;
    return (f->id > g->id) - (f->id < g->id);
}

/* The parameters in slot order: in the new context, id == slot. */
static void clone_params(cloner *c)
{
    const pm_pipeline *p = c->from;
    for (int i = 0; i < p->nparams && !c->failed; i++) {
        pm_expr *n = pm_ctx_alloc(c->into, sizeof *n);
        if (!n) {
            c->failed = true;
            break;
        }
        *n = *p->params[i];
        n->ctx = c->into;
        n->name = pm_ctx_strdup(c->into, p->params[i]->name);
        n->id = pm_ctx_add_param(c->into, n);
        c->failed = !n->name || n->id != i;
        c->new_params[i] = n;
    }
}

/* The inputs and stages, old (nfuncs entries) sorted by id, copied in creation order so
 * that ids keep their relative order (stage-order ties and anything else ordered by id
 * read the same in the copy); then their definitions. */
static void clone_funcs(cloner *c, pm_func **old, int nfuncs)
{
    const pm_pipeline *p = c->from;
    if (!c->failed) {
        memcpy(old, p->inputs, sizeof *old * (size_t)p->ninputs);
        memcpy(old + p->ninputs, p->stages, sizeof *old * (size_t)p->nstages);
        qsort(old, (size_t)nfuncs, sizeof *old, by_id);
    }
    for (int i = 0; i < nfuncs && !c->failed; i++) {
        pm_func *g = pm_ctx_alloc(c->into, sizeof *g);
        if (!g) {
            c->failed = true;
            break;
        }
        *g = *old[i];
        g->ctx = c->into;
        g->name = pm_ctx_strdup(c->into, old[i]->name);
        g->id = pm_ctx_next_func_id(c->into);
        /* Filled by clone_definition; nothing may point into the original. */
        g->extents = g->vars = g->rvars = g->rindex = NULL;
        g->intervals = g->rintervals = NULL;
        g->cases = NULL;
        g->initial = g->rvalue = NULL;
        c->new_funcs[i] = g;
        c->failed = !g->name || !pm_ptrmap_put(&c->funcs, old[i], i);
    }
    for (int i = 0; i < nfuncs && !c->failed; i++)
        clone_definition(c, old[i], c->new_funcs[i]);
}

/* The copy's record q: counts, and its lists pointing at the copied parameters and
 * functions. */
static void fill_pipeline(cloner *c, pm_pipeline *q)
{
    const pm_pipeline *p = c->from;
    if (!c->failed) {
        q->ctx = c->into;
        q->name = pm_ctx_strdup(c->into, p->name);
        q->nparams = p->nparams;
        q->ninputs = p->ninputs;
        q->noutputs = p->noutputs;
        q->nstages = p->nstages;
        q->params = alloc_array(c, (size_t)p->nparams, sizeof *q->params);
        q->inputs = alloc_array(c, (size_t)p->ninputs, sizeof *q->inputs);
        q->outputs = alloc_array(c, (size_t)p->noutputs, sizeof *q->outputs);
        q->stages = alloc_array(c, (size_t)p->nstages, sizeof *q->stages);
        q->param_slot = alloc_array(c, (size_t)p->nparams, sizeof *q->param_slot);
        c->failed |= !q->name;
    }
    for (int i = 0; !c->failed && i < p->nparams; i++) {
        q->params[i] = c->new_params[i];
        q->param_slot[i] = i;
    }
    for (int i = 0; !c->failed && i < p->ninputs; i++)
        q->inputs[i] = mapped_func(c, p->inputs[i]);
    for (int i = 0; !c->failed && i < p->noutputs; i++)
        q->outputs[i] = mapped_func(c, p->outputs[i]);
    for (int i = 0; !c->failed && i < p->nstages; i++)
        q->stages[i] = mapped_func(c, p->stages[i]);
}

pm_pipeline *pm_pipeline_clone(const pm_pipeline *p, pm_ctx *into)
{
    if (!p || !into)
        return NULL;
    if (p->window) { /* the base's copy, made a window form again in `into` */
        pm_pipeline *base = pm_pipeline_clone(p->window->base, into);
        pm_pipeline *q = NULL;
        return base && pm_pipeline_window(base, &q) == PM_OK ? q : NULL;
    }
    cloner c = {.from = p, .into = into};
    int nfuncs = p->ninputs + p->nstages;
    pm_func **old = malloc(sizeof *old * (size_t)(nfuncs + 1));
    c.new_funcs = malloc(sizeof *c.new_funcs * (size_t)(nfuncs + 1));
    c.new_params = alloc_array(&c, (size_t)p->nparams, sizeof *c.new_params);
    pm_pipeline *q = pm_ctx_alloc(into, sizeof *q);
    if (!old || !c.new_funcs || !q)
        c.failed = true;
    clone_params(&c);
    clone_funcs(&c, old, nfuncs);
    fill_pipeline(&c, q);

    free(old);
    free(c.new_funcs);
    free(c.copies);
    pm_ptrmap_free(&c.nodes);
    pm_ptrmap_free(&c.funcs);
    if (c.failed) {
        pm_ctx_error(into, PM_ERR_NOMEM, "%s: out of memory copying the pipeline", p->name);
        return NULL;
    }
    return q;
}
