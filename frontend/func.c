/* func.c — intervals, images, functions, cases, reductions and the Stencil helper.
 *
 * Shape errors that can be seen while building (a variable used twice in one domain, a
 * float bound, a second definition) are reported here; what needs the whole pipeline
 * (cycles, affine bounds, overlapping cases, out-of-domain reads) waits for validation. */
#include "frontend/ir.h"

#include <string.h>

static bool is_integer_expr(pm_expr *e)
{
    return e && pm_type_is_int(e->type);
}

pm_interval *pm_interval_new(pm_expr *lb, pm_expr *ub, int64_t step)
{
    pm_ctx *ctx = lb ? lb->ctx : ub ? ub->ctx : NULL;
    if (!lb || !ub) {
        if (ctx && pm_ctx_recorded(ctx) == PM_OK)
            pm_ctx_error(ctx, PM_ERR_MISUSE, "interval: bound is NULL");
        return NULL;
    }
    if (lb->ctx != ub->ctx) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "interval: bounds belong to different contexts");
        return NULL;
    }
    if (!is_integer_expr(lb) || !is_integer_expr(ub)) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "interval [%s, %s]: bounds must be integer expressions",
                     pm_expr_to_cstr(ctx, lb), pm_expr_to_cstr(ctx, ub));
        return NULL;
    }
    if (step < 1) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "interval [%s, %s]: step %lld must be at least 1",
                     pm_expr_to_cstr(ctx, lb), pm_expr_to_cstr(ctx, ub), (long long)step);
        return NULL;
    }
    pm_interval *iv = pm_ctx_alloc(ctx, sizeof *iv);
    if (!iv)
        return NULL;
    iv->ctx = ctx;
    iv->lb = lb;
    iv->ub = ub;
    iv->step = step;
    return iv;
}

static bool check_name(pm_ctx *ctx, const char *what, const char *name)
{
    if (!name || !*name) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "%s needs a name", what);
        return false;
    }
    return true;
}

static bool check_storage_type(pm_ctx *ctx, const char *name, int type)
{
    if (!pm_type_valid(type) || type == PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "%s: element type %d is not a storage type "
                     "(u8, i8, u16, i16, u32, i32, i64, f32, f64)", name, type);
        return false;
    }
    return true;
}

static bool check_ndims(pm_ctx *ctx, const char *name, int ndims)
{
    if (ndims < 0 || ndims > PM_MAX_DIMS) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "%s: %d dimensions (at most %d)", name, ndims,
                     PM_MAX_DIMS);
        return false;
    }
    return true;
}

static pm_func *new_func(pm_ctx *ctx, pm_func_kind kind, const char *name, pm_type type,
                         int ndims)
{
    pm_func *f = pm_ctx_alloc(ctx, sizeof *f);
    if (!f)
        return NULL;
    f->ctx = ctx;
    f->kind = kind;
    f->name = pm_ctx_strdup(ctx, name);
    f->type = type;
    f->ndims = ndims;
    f->id = pm_ctx_next_func_id(ctx);
    return f;
}

pm_func *pm_image_new(pm_ctx *ctx, const char *name, pm_type type, int ndims,
                      pm_expr *const *extents)
{
    if (!ctx || !check_name(ctx, "image", name) || !check_storage_type(ctx, name, type) ||
        !check_ndims(ctx, name, ndims))
        return NULL;
    if (ndims > 0 && !extents) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "image %s: extent list is NULL", name);
        return NULL;
    }
    pm_func *f = new_func(ctx, PM_FUNC_IMAGE, name, type, ndims);
    if (!f)
        return NULL;
    f->extents = pm_ctx_alloc(ctx, sizeof(pm_expr *) * (size_t)(ndims + 1));
    if (!f->extents)
        return NULL;
    for (int d = 0; d < ndims; d++) {
        pm_expr *e = extents[d];
        if (!e) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "image %s: the extent of dimension %d is NULL",
                             name, d);
            return NULL;
        }
        if (e->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "image %s: the extent of dimension %d belongs to "
                         "another context", name, d);
            return NULL;
        }
        if (!is_integer_expr(e)) {
            pm_ctx_error(ctx, PM_ERR_TYPE, "image %s: the extent of dimension %d (%s) is not an "
                         "integer expression", name, d, pm_expr_to_cstr(ctx, e));
            return NULL;
        }
        f->extents[d] = e;
    }
    return f;
}

/* Copies a variable domain after checking it: distinct variables, intervals of ctx. */
static bool set_domain(pm_func *f, int n, pm_expr *const *vars, pm_interval *const *ivs,
                       pm_expr ***out_vars, pm_interval ***out_ivs, const char *which)
{
    pm_ctx *ctx = f->ctx;
    if (n > 0 && (!vars || !ivs)) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: %s variable or interval list is NULL", f->name,
                     which);
        return false;
    }
    pm_expr **v = pm_ctx_alloc(ctx, sizeof(pm_expr *) * (size_t)(n + 1));
    pm_interval **iv = pm_ctx_alloc(ctx, sizeof(pm_interval *) * (size_t)(n + 1));
    if (!v || !iv)
        return false;
    for (int d = 0; d < n; d++) {
        if (!vars[d] || !ivs[d]) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: %s dimension %d has a NULL %s", f->name,
                             which, d, vars[d] ? "interval" : "variable");
            return false;
        }
        if (vars[d]->ctx != ctx || ivs[d]->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: %s dimension %d belongs to another context",
                         f->name, which, d);
            return false;
        }
        if (vars[d]->kind != PM_EXPR_VAR) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: %s dimension %d is %s, not a variable", f->name,
                         which, d, pm_expr_to_cstr(ctx, vars[d]));
            return false;
        }
        for (int e = 0; e < d; e++) {
            /* by name too: two pm_var(ctx, "x") would be one isl dimension name */
            if (vars[e] == vars[d] || strcmp(vars[e]->name, vars[d]->name) == 0) {
                pm_ctx_error(ctx, PM_ERR_INVALID,
                             "%s: variable %s names two dimensions (%d and %d of its %s)",
                             f->name, vars[d]->name, e, d, which);
                return false;
            }
        }
        v[d] = vars[d];
        iv[d] = ivs[d];
    }
    *out_vars = v;
    *out_ivs = iv;
    return true;
}

pm_func *pm_func_new(pm_ctx *ctx, const char *name, pm_type type, int ndims,
                     pm_expr *const *vars, pm_interval *const *intervals)
{
    if (!ctx || !check_name(ctx, "function", name) || !check_storage_type(ctx, name, type) ||
        !check_ndims(ctx, name, ndims))
        return NULL;
    pm_func *f = new_func(ctx, PM_FUNC_FUNCTION, name, type, ndims);
    if (!f || !set_domain(f, ndims, vars, intervals, &f->vars, &f->intervals, "variable domain"))
        return NULL;
    return f;
}

pm_case *pm_case_new(pm_expr *cond, pm_expr *value)
{
    pm_ctx *ctx = value ? value->ctx : cond ? cond->ctx : NULL;
    if (!value) {
        if (ctx && pm_ctx_recorded(ctx) == PM_OK)
            pm_ctx_error(ctx, PM_ERR_MISUSE, "case: value is NULL");
        return NULL;
    }
    if (cond && cond->ctx != ctx) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "case: condition and value belong to different contexts");
        return NULL;
    }
    if (cond && cond->type != PM_BOOL) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "case: condition %s has type %s, not a condition",
                     pm_expr_to_cstr(ctx, cond), pm_type_name(cond->type));
        return NULL;
    }
    pm_case *c = pm_ctx_alloc(ctx, sizeof *c);
    if (!c)
        return NULL;
    c->ctx = ctx;
    c->cond = cond;
    c->value = value; /* converted to the function's type by pm_func_define */
    return c;
}

static pm_status check_value(pm_func *f, pm_expr *value, const char *what)
{
    if (value->ctx != f->ctx)
        return pm_ctx_error(f->ctx, PM_ERR_MISUSE, "%s: %s belongs to another context", f->name,
                            what);
    if (value->type == PM_BOOL)
        return pm_ctx_error(f->ctx, PM_ERR_TYPE,
                            "%s: %s %s is a condition; a %s function needs a value "
                            "(use pm_cast or pm_select)",
                            f->name, what, pm_expr_to_cstr(f->ctx, value), pm_type_name(f->type));
    return PM_OK;
}

pm_status pm_func_define(pm_func *f, int ncases, pm_case *const *cases)
{
    if (!f)
        return PM_ERR_MISUSE;
    pm_ctx *ctx = f->ctx;
    if (f->kind != PM_FUNC_FUNCTION)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s is %s, not a function: it cannot have cases",
                            f->name, f->kind == PM_FUNC_IMAGE ? "an image" : "a reduction");
    if (f->defined)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s is already defined", f->name);
    if (ncases < 1 || !cases)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: a definition needs at least one case",
                            f->name);
    pm_case **copy = pm_ctx_alloc(ctx, sizeof(pm_case *) * (size_t)ncases);
    if (!copy)
        return pm_ctx_recorded(ctx);
    for (int i = 0; i < ncases; i++) {
        pm_case *c = cases[i];
        if (!c) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: case %d is NULL", f->name, i + 1);
            return pm_ctx_recorded(ctx);
        }
        if (c->ctx != ctx)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s: case %d belongs to another context",
                                f->name, i + 1);
        pm_status st = check_value(f, c->value, "case value");
        if (st != PM_OK)
            return st;
        pm_case *stored = pm_ctx_alloc(ctx, sizeof *stored);
        if (!stored)
            return pm_ctx_recorded(ctx);
        *stored = *c;
        stored->value = pm_expr_convert(c->value, f->type);
        if (!stored->value)
            return pm_ctx_recorded(ctx);
        copy[i] = stored;
    }
    f->cases = copy;
    f->ncases = ncases;
    f->defined = true;
    return PM_OK;
}

pm_status pm_func_define_expr(pm_func *f, pm_expr *value)
{
    if (!f)
        return PM_ERR_MISUSE;
    if (!value) {
        if (pm_ctx_recorded(f->ctx) == PM_OK)
            pm_ctx_error(f->ctx, PM_ERR_MISUSE, "%s: definition is NULL", f->name);
        return pm_ctx_recorded(f->ctx);
    }
    pm_case *c = pm_case_new(NULL, value);
    if (!c)
        return pm_ctx_recorded(f->ctx);
    return pm_func_define(f, 1, &c);
}

pm_func *pm_reduction_new(pm_ctx *ctx, const char *name, pm_type type,
                          int ndims, pm_expr *const *vars, pm_interval *const *intervals,
                          int nrdims, pm_expr *const *rvars, pm_interval *const *rintervals,
                          pm_reduce_op op, pm_expr *initial)
{
    if (!ctx || !check_name(ctx, "reduction", name) || !check_storage_type(ctx, name, type) ||
        !check_ndims(ctx, name, ndims) || !check_ndims(ctx, name, nrdims))
        return NULL;
    if ((int)op < PM_REDUCE_SUM || (int)op > PM_REDUCE_OR) {
        pm_ctx_error(ctx, PM_ERR_MISUSE, "reduction %s: unknown operation %d", name, (int)op);
        return NULL;
    }
    if ((op == PM_REDUCE_AND || op == PM_REDUCE_OR) && pm_type_is_float((pm_type)type)) {
        pm_ctx_error(ctx, PM_ERR_TYPE, "reduction %s: and/or need an integer type, not %s", name,
                     pm_type_name(type));
        return NULL;
    }
    pm_func *f = new_func(ctx, PM_FUNC_REDUCTION, name, type, ndims);
    if (!f || !set_domain(f, ndims, vars, intervals, &f->vars, &f->intervals, "variable domain") ||
        !set_domain(f, nrdims, rvars, rintervals, &f->rvars, &f->rintervals, "reduction domain"))
        return NULL;
    f->nrdims = nrdims;
    for (int i = 0; i < nrdims; i++)
        for (int j = 0; j < ndims; j++)
            if (f->rvars[i] == f->vars[j] || strcmp(f->rvars[i]->name, f->vars[j]->name) == 0) {
                pm_ctx_error(ctx, PM_ERR_INVALID,
                             "reduction %s: variable %s is in both the variable and the "
                             "reduction domain", name, f->rvars[i]->name);
                return NULL;
            }
    f->reduce_op = op;
    if (initial) {
        if (initial->ctx != ctx) {
            pm_ctx_error(ctx, PM_ERR_MISUSE, "reduction %s: initial value belongs to another context",
                         name);
            return NULL;
        }
        if (check_value(f, initial, "initial value") != PM_OK)
            return NULL;
        f->initial = pm_expr_convert(initial, type);
    } else {
        f->initial = pm_const(ctx, type, 0);
    }
    return f->initial ? f : NULL;
}

pm_status pm_reduction_define(pm_func *f, int nindex, pm_expr *const *index, pm_expr *value)
{
    if (!f)
        return PM_ERR_MISUSE;
    pm_ctx *ctx = f->ctx;
    if (f->kind != PM_FUNC_REDUCTION)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s is not a reduction: use pm_func_define",
                            f->name);
    if (f->defined)
        return pm_ctx_error(ctx, PM_ERR_MISUSE, "%s is already defined", f->name);
    if (nindex != f->ndims)
        return pm_ctx_error(ctx, PM_ERR_INVALID, "reduce into %s with %d indices: %s has %d "
                            "dimension%s", f->name, nindex, f->name, f->ndims,
                            f->ndims == 1 ? "" : "s");
    if (!value || (nindex > 0 && !index)) {
        if (pm_ctx_recorded(ctx) == PM_OK)
            pm_ctx_error(ctx, PM_ERR_MISUSE, "reduce into %s: %s is NULL", f->name,
                         value ? "index list" : "value");
        return pm_ctx_recorded(ctx);
    }
    pm_status st = check_value(f, value, "reduced value");
    if (st != PM_OK)
        return st;
    pm_expr **idx = pm_ctx_alloc(ctx, sizeof(pm_expr *) * (size_t)(nindex + 1));
    if (!idx)
        return pm_ctx_recorded(ctx);
    for (int i = 0; i < nindex; i++) {
        if (!index[i]) {
            if (pm_ctx_recorded(ctx) == PM_OK)
                pm_ctx_error(ctx, PM_ERR_MISUSE, "reduce into %s: index %d is NULL", f->name, i + 1);
            return pm_ctx_recorded(ctx);
        }
        if (index[i]->ctx != ctx)
            return pm_ctx_error(ctx, PM_ERR_MISUSE, "reduce into %s: index %d belongs to another "
                                "context", f->name, i + 1);
        if (!pm_type_is_int(index[i]->type))
            return pm_ctx_error(ctx, PM_ERR_TYPE,
                                "reduce into %s: index %d (%s) has type %s; indices must be "
                                "integers", f->name, i + 1, pm_expr_to_cstr(ctx, index[i]),
                                pm_type_name(index[i]->type));
        idx[i] = index[i]->type == PM_I64 ? index[i] : pm_expr_convert(index[i], PM_I32);
    }
    f->rindex = idx;
    f->rvalue = pm_expr_convert(value, f->type);
    f->defined = f->rvalue != NULL;
    return pm_ctx_recorded(ctx) == PM_OK ? PM_OK : pm_ctx_recorded(ctx);
}

pm_expr *pm_stencil(pm_func *f, pm_expr *const at[2], double scale, int rows, int cols,
                    const double *weights)
{
    if (!f)
        return NULL;
    pm_ctx *ctx = f->ctx;
    if (f->ndims != 2) {
        pm_ctx_error(ctx, PM_ERR_INVALID, "stencil over %s: it has %d dimensions, a stencil "
                     "needs 2 (pm_stencil_nd takes any number, over the dimensions you choose)",
                     f->name, f->ndims);
        return NULL;
    }
    if (!at || !at[0] || !at[1] || !weights || rows < 1 || cols < 1) {
        if (pm_ctx_recorded(ctx) == PM_OK)
            pm_ctx_error(ctx, PM_ERR_MISUSE, "stencil over %s: missing centre, weights or size",
                         f->name);
        return NULL;
    }
    pm_expr *sum = NULL;
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++) {
            double w = weights[i * cols + j];
            if (w == 0)
                continue;
            /* PolyMage's convention: the kernel's column index moves the first
             * coordinate and its row index the second (Figure 1's Ix kernel
             * [[-1,0,1],[-2,0,2],[-1,0,1]] is a derivative along x). */
            int dx = j - cols / 2, dy = i - rows / 2;
            pm_expr *term = pm_call(f, dx ? pm_addi(at[0], dx) : at[0],
                                    dy ? pm_addi(at[1], dy) : at[1]);
            if (w != 1)
                term = pm_mul(pm_float(ctx, w), term);
            sum = sum ? pm_add(sum, term) : term;
        }
    }
    if (!sum)
        return pm_float(ctx, 0);
    return scale == 1 ? sum : pm_mul(sum, pm_float(ctx, scale));
}

const char *pm_func_name(const pm_func *f) { return f ? f->name : NULL; }
pm_type pm_func_type(const pm_func *f) { return f ? f->type : PM_BOOL; }
int pm_func_ndims(const pm_func *f) { return f ? f->ndims : -1; }

int pm_func_exprs(const pm_func *f, const pm_expr **out, int max)
{
    int n = 0;
#define PUT(e) do { if ((e) && n < max) out[n++] = (e); } while (0)
    if (f->kind == PM_FUNC_FUNCTION) {
        for (int i = 0; i < f->ncases; i++) {
            PUT(f->cases[i]->cond);
            PUT(f->cases[i]->value);
        }
    } else if (f->kind == PM_FUNC_REDUCTION) {
        PUT(f->initial);
        if (f->defined) {
            for (int i = 0; i < f->ndims; i++)
                PUT(f->rindex[i]);
            PUT(f->rvalue);
        }
    }
#undef PUT
    return n;
}
