/* builder.c — the builder API of polymage.h as module functions over handles. Each one
 * calls the one C builder it is named after, so a pipeline built from Python is the C
 * pipeline, node for node (the Python layer, polymage/__init__.py, adds the operators).
 * A builder that returns NULL raises the context's error and clears it. */
#include "core.h"

/* The context a call works in: every handle argument must share it. */
typedef struct {
    CtxObject *ctx; /* borrowed */
} Scope;

static int scope_add(Scope *s, PyObject *h)
{
    CtxObject *c = ((HandleObject *)h)->ctx;
    if (s->ctx && s->ctx != c) {
        pm_py_raise(PM_ERR_MISUSE, "objects of two different polymage Contexts are mixed");
        return -1;
    }
    s->ctx = c;
    return 0;
}

static void *arg(Scope *s, PyObject *o, int kind, const char *what)
{
    void *p = pm_py_handle_ptr(o, kind, what);
    if (p && scope_add(s, o) < 0)
        return NULL;
    return p;
}

/* A sequence of handles of one kind -> a PyMem_Malloc'd array (the caller frees it);
 * None items become NULL when allow_none. */
static void **arg_list(Scope *s, PyObject *seq, int kind, int allow_none, const char *what,
                       int *n)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    void **out = PyMem_Calloc(len ? len : 1, sizeof *out);
    if (!out) {
        Py_DECREF(fast);
        return (void **)PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
        if (allow_none && o == Py_None)
            continue;
        if (!(out[i] = arg(s, o, kind, what))) {
            PyMem_Free(out);
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    *n = (int)len;
    return out;
}

/* A sequence of numbers -> a PyMem_Malloc'd array of doubles or ints. */
static double *doubles(PyObject *seq, int *n)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of numbers");
    if (!fast)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    double *out = PyMem_Calloc(len ? len : 1, sizeof *out);
    for (Py_ssize_t i = 0; out && i < len; i++)
        out[i] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (!out)
        return (double *)PyErr_NoMemory();
    if (PyErr_Occurred()) {
        PyMem_Free(out);
        return NULL;
    }
    *n = (int)len;
    return out;
}

static int *ints(PyObject *seq, int *n)
{
    PyObject *fast = PySequence_Fast(seq, "expected a sequence of integers");
    if (!fast)
        return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    int *out = PyMem_Calloc(len ? len : 1, sizeof *out);
    for (Py_ssize_t i = 0; out && i < len; i++)
        out[i] = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
    Py_DECREF(fast);
    if (!out)
        return (int *)PyErr_NoMemory();
    if (PyErr_Occurred()) {
        PyMem_Free(out);
        return NULL;
    }
    *n = (int)len;
    return out;
}

/* The handle of a builder's result, or the context's error. */
static PyObject *result(CtxObject *ctx, int kind, void *ptr)
{
    if (!ptr)
        return pm_py_raise_ctx(ctx->ctx, "the builder failed");
    return (PyObject *)pm_py_handle_new(ctx, kind, ptr);
}

static PyObject *status_result(CtxObject *ctx, pm_status s)
{
    if (s != PM_OK)
        return pm_py_raise_ctx(ctx->ctx, pm_status_name(s));
    Py_RETURN_NONE;
}

/* ---- Leaves --------------------------------------------------------------------------- */

static PyObject *b_int(PyObject *m, PyObject *args)
{
    CtxObject *c;
    long long v;
    if (!PyArg_ParseTuple(args, "O!L:int_", &CtxType, &c, &v))
        return NULL;
    return result(c, H_EXPR, pm_int(c->ctx, v));
}

static PyObject *b_float(PyObject *m, PyObject *args)
{
    CtxObject *c;
    double v;
    if (!PyArg_ParseTuple(args, "O!d:float_", &CtxType, &c, &v))
        return NULL;
    return result(c, H_EXPR, pm_float(c->ctx, v));
}

static PyObject *b_const(PyObject *m, PyObject *args)
{
    CtxObject *c;
    int t;
    double v;
    if (!PyArg_ParseTuple(args, "O!id:const", &CtxType, &c, &t, &v))
        return NULL;
    return result(c, H_EXPR, t == PM_F64 ? pm_f64(c->ctx, v) : pm_const(c->ctx, t, v));
}

static PyObject *b_var(PyObject *m, PyObject *args)
{
    CtxObject *c;
    const char *name;
    if (!PyArg_ParseTuple(args, "O!s:var", &CtxType, &c, &name))
        return NULL;
    return result(c, H_EXPR, pm_var(c->ctx, name));
}

static PyObject *b_param(PyObject *m, PyObject *args)
{
    CtxObject *c;
    int t;
    const char *name;
    if (!PyArg_ParseTuple(args, "O!is:param", &CtxType, &c, &t, &name))
        return NULL;
    return result(c, H_EXPR, pm_param(c->ctx, t, name));
}

/* ---- Operators ------------------------------------------------------------------------ */

typedef pm_expr *(*binary_fn)(pm_expr *, pm_expr *);
/* Indexed by the code the Python layer passes (polymage/__init__.py, _BINARY). */
static const binary_fn binary_ops[] = {
    pm_add, pm_sub, pm_mul, pm_div, pm_mod, pm_cdiv, pm_cmod, pm_min, pm_max,
    pm_band, pm_bor, pm_bxor, pm_shl, pm_shr, pm_lt, pm_le, pm_eq, pm_ne, pm_ge, pm_gt,
    pm_and, pm_or, pm_pow, pm_atan2, pm_absd,
};

static PyObject *b_binary(PyObject *m, PyObject *args)
{
    int op;
    PyObject *a, *b;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "iOO:binary", &op, &a, &b))
        return NULL;
    if (op < 0 || op >= (int)(sizeof binary_ops / sizeof *binary_ops))
        return PyErr_Format(PyExc_ValueError, "binary: no operator %d", op);
    pm_expr *ea = arg(&s, a, H_EXPR, "operand"), *eb = ea ? arg(&s, b, H_EXPR, "operand") : NULL;
    if (!eb)
        return NULL;
    return result(s.ctx, H_EXPR, binary_ops[op](ea, eb));
}

/* Codes 0..11 are pm_math_fn; then neg, not, abs. */
static PyObject *b_unary(PyObject *m, PyObject *args)
{
    int op;
    PyObject *a;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "iO:unary", &op, &a))
        return NULL;
    pm_expr *e = arg(&s, a, H_EXPR, "operand"), *r;
    if (!e)
        return NULL;
    if (op >= PM_EXP && op <= PM_TRUNC)
        r = pm_math((pm_math_fn)op, e);
    else if (op == 100)
        r = pm_neg(e);
    else if (op == 101)
        r = pm_not(e);
    else if (op == 102)
        r = pm_abs(e);
    else
        return PyErr_Format(PyExc_ValueError, "unary: no operator %d", op);
    return result(s.ctx, H_EXPR, r);
}

static PyObject *b_cast(PyObject *m, PyObject *args)
{
    int t;
    PyObject *a;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "iO:cast", &t, &a))
        return NULL;
    pm_expr *e = arg(&s, a, H_EXPR, "cast");
    return e ? result(s.ctx, H_EXPR, pm_cast(t, e)) : NULL;
}

static PyObject *b_select(PyObject *m, PyObject *args)
{
    PyObject *c, *a, *b;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOO:select", &c, &a, &b))
        return NULL;
    pm_expr *ec = arg(&s, c, H_EXPR, "select"), *ea = ec ? arg(&s, a, H_EXPR, "select") : NULL,
            *eb = ea ? arg(&s, b, H_EXPR, "select") : NULL;
    return eb ? result(s.ctx, H_EXPR, pm_select(ec, ea, eb)) : NULL;
}

static PyObject *b_between(PyObject *m, PyObject *args)
{
    PyObject *a, *lo, *hi;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOO:between", &a, &lo, &hi))
        return NULL;
    pm_expr *ea = arg(&s, a, H_EXPR, "between"), *el = ea ? arg(&s, lo, H_EXPR, "between") : NULL,
            *eh = el ? arg(&s, hi, H_EXPR, "between") : NULL;
    return eh ? result(s.ctx, H_EXPR, pm_between(ea, el, eh)) : NULL;
}

/* ---- Intervals, images, functions, cases ---------------------------------------------- */

static PyObject *b_interval(PyObject *m, PyObject *args)
{
    PyObject *lo, *hi;
    long long step;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOL:interval", &lo, &hi, &step))
        return NULL;
    pm_expr *el = arg(&s, lo, H_EXPR, "Interval"), *eh = el ? arg(&s, hi, H_EXPR, "Interval") : NULL;
    return eh ? result(s.ctx, H_INTERVAL, pm_interval_new(el, eh, step)) : NULL;
}

static PyObject *b_image(PyObject *m, PyObject *args)
{
    CtxObject *c;
    const char *name;
    int t, n;
    PyObject *ext;
    if (!PyArg_ParseTuple(args, "O!siO:image", &CtxType, &c, &name, &t, &ext))
        return NULL;
    Scope s = {c};
    void **e = arg_list(&s, ext, H_EXPR, 0, "Image extents", &n);
    if (!e)
        return NULL;
    PyObject *r = result(c, H_FUNC, pm_image_new(c->ctx, name, t, n, (pm_expr *const *)e));
    PyMem_Free(e);
    return r;
}

static PyObject *b_func(PyObject *m, PyObject *args)
{
    CtxObject *c;
    const char *name;
    int t, nv, ni;
    PyObject *vars, *ivs;
    if (!PyArg_ParseTuple(args, "O!siOO:func", &CtxType, &c, &name, &t, &vars, &ivs))
        return NULL;
    Scope s = {c};
    void **v = arg_list(&s, vars, H_EXPR, 0, "Function variables", &nv);
    void **iv = v ? arg_list(&s, ivs, H_INTERVAL, 0, "Function intervals", &ni) : NULL;
    PyObject *r = NULL;
    if (iv && nv != ni)
        PyErr_Format(PmArgumentError, "Function %s: %d variables but %d intervals", name, nv, ni);
    else if (iv)
        r = result(c, H_FUNC, pm_func_new(c->ctx, name, t, nv, (pm_expr *const *)v,
                                          (pm_interval *const *)iv));
    PyMem_Free(v);
    PyMem_Free(iv);
    return r;
}

static PyObject *b_case(PyObject *m, PyObject *args)
{
    PyObject *cond, *value;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OO:case", &cond, &value))
        return NULL;
    pm_expr *ec = NULL;
    if (cond != Py_None && !(ec = arg(&s, cond, H_EXPR, "Case condition")))
        return NULL;
    pm_expr *ev = arg(&s, value, H_EXPR, "Case value");
    return ev ? result(s.ctx, H_CASE, pm_case_new(ec, ev)) : NULL;
}

static PyObject *b_define(PyObject *m, PyObject *args)
{
    PyObject *f, *cases;
    int n;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OO:define", &f, &cases))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "define");
    void **c = fn ? arg_list(&s, cases, H_CASE, 0, "define: cases", &n) : NULL;
    if (!c)
        return NULL;
    pm_status st = pm_func_define(fn, n, (pm_case *const *)c);
    PyMem_Free(c);
    return status_result(s.ctx, st);
}

static PyObject *b_define_expr(PyObject *m, PyObject *args)
{
    PyObject *f, *v;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OO:define_expr", &f, &v))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "define");
    pm_expr *e = fn ? arg(&s, v, H_EXPR, "define") : NULL;
    return e ? status_result(s.ctx, pm_func_define_expr(fn, e)) : NULL;
}

static PyObject *b_reduction(PyObject *m, PyObject *args)
{
    CtxObject *c;
    const char *name;
    int t, op, nv = 0, ni = 0, nrv = 0, nri = 0;
    PyObject *vars, *ivs, *rvars, *rivs, *init;
    if (!PyArg_ParseTuple(args, "O!siOOOOiO:reduction", &CtxType, &c, &name, &t, &vars, &ivs,
                          &rvars, &rivs, &op, &init))
        return NULL;
    Scope s = {c};
    pm_expr *ei = NULL;
    void **v = NULL, **iv = NULL, **rv = NULL, **riv = NULL;
    PyObject *r = NULL;
    if ((init == Py_None || (ei = arg(&s, init, H_EXPR, "Reduction initial"))) &&
        (v = arg_list(&s, vars, H_EXPR, 0, "Reduction variables", &nv)) &&
        (iv = arg_list(&s, ivs, H_INTERVAL, 0, "Reduction intervals", &ni)) &&
        (rv = arg_list(&s, rvars, H_EXPR, 0, "Reduction reduction variables", &nrv)) &&
        (riv = arg_list(&s, rivs, H_INTERVAL, 0, "Reduction reduction intervals", &nri))) {
        if (nv != ni || nrv != nri)
            PyErr_Format(PmArgumentError, "Reduction %s: variables and intervals differ in "
                         "number", name);
        else
            r = result(c, H_FUNC, pm_reduction_new(c->ctx, name, t, nv, (pm_expr *const *)v,
                                                   (pm_interval *const *)iv, nrv,
                                                   (pm_expr *const *)rv,
                                                   (pm_interval *const *)riv, op, ei));
    }
    PyMem_Free(v);
    PyMem_Free(iv);
    PyMem_Free(rv);
    PyMem_Free(riv);
    return r;
}

static PyObject *b_reduction_define(PyObject *m, PyObject *args)
{
    PyObject *f, *index, *value;
    int n;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOO:reduction_define", &f, &index, &value))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "Reduction.define");
    pm_expr *ev = fn ? arg(&s, value, H_EXPR, "Reduction.define") : NULL;
    void **ix = ev ? arg_list(&s, index, H_EXPR, 0, "Reduction.define index", &n) : NULL;
    if (!ix)
        return NULL;
    pm_status st = pm_reduction_define(fn, n, (pm_expr *const *)ix, ev);
    PyMem_Free(ix);
    return status_result(s.ctx, st);
}

static PyObject *b_call(PyObject *m, PyObject *args)
{
    PyObject *f, *a;
    int n;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OO:call", &f, &a))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "call");
    void **e = fn ? arg_list(&s, a, H_EXPR, 0, "call arguments", &n) : NULL;
    if (!e)
        return NULL;
    PyObject *r = result(s.ctx, H_EXPR, pm_call_n(fn, n, (pm_expr *const *)e));
    PyMem_Free(e);
    return r;
}

/* Accessors: (name, type, ndims), the variable and interval of dimension d. */
static PyObject *b_func_info(PyObject *m, PyObject *args)
{
    PyObject *f;
    if (!PyArg_ParseTuple(args, "O:func_info", &f))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "func_info");
    if (!fn)
        return NULL;
    return Py_BuildValue("(sii)", pm_func_name(fn), (int)pm_func_type(fn), pm_func_ndims(fn));
}

static PyObject *b_func_dim(PyObject *m, PyObject *args)
{
    PyObject *f;
    int d, want_var;
    if (!PyArg_ParseTuple(args, "Oip:func_dim", &f, &d, &want_var))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "func_dim");
    if (!fn)
        return NULL;
    CtxObject *c = ((HandleObject *)f)->ctx;
    if (want_var)
        return result(c, H_EXPR, pm_func_var(fn, d));
    return result(c, H_INTERVAL, pm_func_interval(fn, d));
}

static PyObject *b_func_like(PyObject *m, PyObject *args)
{
    PyObject *f;
    const char *name;
    int t;
    if (!PyArg_ParseTuple(args, "Osi:func_like", &f, &name, &t))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "func_like");
    return fn ? result(((HandleObject *)f)->ctx, H_FUNC, pm_func_like(fn, name, t)) : NULL;
}

extern PyMethodDef pm_py_helper_methods[];

PyMethodDef pm_py_builder_methods[] = {
    {"int_", b_int, METH_VARARGS, "pm_int(ctx, value)"},
    {"float_", b_float, METH_VARARGS, "pm_float(ctx, value)"},
    {"const", b_const, METH_VARARGS, "pm_const(ctx, type, value) (pm_f64 for f64)"},
    {"var", b_var, METH_VARARGS, "pm_var(ctx, name)"},
    {"param", b_param, METH_VARARGS, "pm_param(ctx, type, name)"},
    {"binary", b_binary, METH_VARARGS, "binary(op code, a, b)"},
    {"unary", b_unary, METH_VARARGS, "unary(op code, a)"},
    {"cast", b_cast, METH_VARARGS, "pm_cast(type, a)"},
    {"select", b_select, METH_VARARGS, "pm_select(cond, a, b)"},
    {"between", b_between, METH_VARARGS, "pm_between(a, lo, hi)"},
    {"interval", b_interval, METH_VARARGS, "pm_interval_new(lb, ub, step)"},
    {"image", b_image, METH_VARARGS, "pm_image_new(ctx, name, type, extents)"},
    {"func", b_func, METH_VARARGS, "pm_func_new(ctx, name, type, vars, intervals)"},
    {"case", b_case, METH_VARARGS, "pm_case_new(cond or None, value)"},
    {"define", b_define, METH_VARARGS, "pm_func_define(f, cases)"},
    {"define_expr", b_define_expr, METH_VARARGS, "pm_func_define_expr(f, value)"},
    {"reduction", b_reduction, METH_VARARGS,
     "pm_reduction_new(ctx, name, type, vars, intervals, rvars, rintervals, op, initial)"},
    {"reduction_define", b_reduction_define, METH_VARARGS, "pm_reduction_define(f, index, value)"},
    {"call", b_call, METH_VARARGS, "pm_call_n(f, args)"},
    {"func_info", b_func_info, METH_VARARGS, "(name, type, ndims) of a function"},
    {"func_dim", b_func_dim, METH_VARARGS, "pm_func_var / pm_func_interval(f, d)"},
    {"func_like", b_func_like, METH_VARARGS, "pm_func_like(f, name, type)"},
    {NULL},
};

/* ---- Helpers (boundaries, stencils, sampling) ------------------------------------------ */

static PyObject *h_stencil(PyObject *m, PyObject *args)
{
    PyObject *f, *at, *dims, *size, *w;
    double scale;
    int nat, nd, ns, nw;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOdOOO:stencil_nd", &f, &at, &scale, &dims, &size, &w))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "stencil");
    void **e = fn ? arg_list(&s, at, H_EXPR, 0, "stencil centre", &nat) : NULL;
    int *d = e ? ints(dims, &nd) : NULL, *sz = d ? ints(size, &ns) : NULL;
    double *wt = sz ? doubles(w, &nw) : NULL;
    PyObject *r = NULL;
    if (wt && nd != ns)
        PyErr_SetString(PmArgumentError, "stencil: dims and size differ in length");
    else if (wt)
        r = result(s.ctx, H_EXPR, pm_stencil_nd(fn, (pm_expr *const *)e, scale, nd, d, sz, wt));
    PyMem_Free(e), PyMem_Free(d), PyMem_Free(sz), PyMem_Free(wt);
    return r;
}

/* pm_stencil itself (PolyMage's 2-D Stencil), so its text is the C helper's. */
static PyObject *h_stencil2(PyObject *m, PyObject *args)
{
    PyObject *f, *at, *w;
    double scale;
    int rows, cols, nat, nw;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OOdiiO:stencil2", &f, &at, &scale, &rows, &cols, &w))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "Stencil");
    void **e = fn ? arg_list(&s, at, H_EXPR, 0, "Stencil centre", &nat) : NULL;
    double *wt = e ? doubles(w, &nw) : NULL;
    PyObject *r = NULL;
    if (wt && (nat != 2 || nw != rows * cols))
        PyErr_SetString(PmArgumentError, "Stencil: 2 centre coordinates and rows*cols weights");
    else if (wt)
        r = result(s.ctx, H_EXPR, pm_stencil(fn, (pm_expr *const *)e, scale, rows, cols, wt));
    PyMem_Free(e), PyMem_Free(wt);
    return r;
}

static PyObject *h_stencil_func(PyObject *m, PyObject *args)
{
    PyObject *f, *dims, *size, *w;
    const char *name;
    int t, nd, ns, nw;
    double scale;
    if (!PyArg_ParseTuple(args, "OsidOOO:stencil_func", &f, &name, &t, &scale, &dims, &size, &w))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "stencil_func");
    int *d = fn ? ints(dims, &nd) : NULL, *sz = d ? ints(size, &ns) : NULL;
    double *wt = sz ? doubles(w, &nw) : NULL;
    PyObject *r = NULL;
    if (wt && nd != ns)
        PyErr_SetString(PmArgumentError, "stencil_func: dims and size differ in length");
    else if (wt)
        r = result(((HandleObject *)f)->ctx, H_FUNC,
                   pm_stencil_func(fn, name, t, scale, nd, d, sz, wt));
    PyMem_Free(d), PyMem_Free(sz), PyMem_Free(wt);
    return r;
}

static PyObject *h_pad(PyObject *m, PyObject *args)
{
    PyObject *f, *value, *dims;
    const char *name;
    int kind, nd;
    long long pad;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OsiOOL:pad", &f, &name, &kind, &value, &dims, &pad))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "pad");
    pm_expr *v = NULL;
    if (!fn || (value != Py_None && !(v = arg(&s, value, H_EXPR, "pad value"))))
        return NULL;
    int *d = ints(dims, &nd);
    PyObject *r = d ? result(s.ctx, H_FUNC, pm_pad(fn, name, kind, v, nd, d, pad)) : NULL;
    PyMem_Free(d);
    return r;
}

static PyObject *h_boundary(PyObject *m, PyObject *args)
{
    PyObject *f, *value, *domain;
    const char *name;
    int kind, n;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OsiOO:boundary", &f, &name, &kind, &value, &domain))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "boundary");
    pm_expr *v = NULL;
    if (!fn || (value != Py_None && !(v = arg(&s, value, H_EXPR, "boundary value"))))
        return NULL;
    void **dom = arg_list(&s, domain, H_INTERVAL, 1, "boundary domain", &n);
    if (!dom)
        return NULL;
    PyObject *r = NULL;
    if (n != pm_func_ndims(fn))
        PyErr_Format(PmArgumentError, "boundary: %d intervals for %d dimensions", n,
                     pm_func_ndims(fn));
    else
        r = result(s.ctx, H_FUNC, pm_boundary_new(fn, name, kind, v, (pm_interval *const *)dom));
    PyMem_Free(dom);
    return r;
}

static PyObject *h_crop(PyObject *m, PyObject *args)
{
    PyObject *f, *window;
    const char *name;
    int n;
    Scope s = {0};
    if (!PyArg_ParseTuple(args, "OsO:crop", &f, &name, &window))
        return NULL;
    pm_func *fn = arg(&s, f, H_FUNC, "crop");
    void **w = fn ? arg_list(&s, window, H_INTERVAL, 1, "crop window", &n) : NULL;
    if (!w)
        return NULL;
    PyObject *r = NULL;
    if (n != pm_func_ndims(fn))
        PyErr_Format(PmArgumentError, "crop: %d intervals for %d dimensions", n, pm_func_ndims(fn));
    else
        r = result(s.ctx, H_FUNC, pm_crop(fn, name, (pm_interval *const *)w));
    PyMem_Free(w);
    return r;
}

static PyObject *h_downsample(PyObject *m, PyObject *args)
{
    PyObject *f, *dims, *w;
    const char *name;
    int t, n, nd, nw = 0;
    double scale;
    if (!PyArg_ParseTuple(args, "OsiOiOd:downsample", &f, &name, &t, &dims, &n, &w, &scale))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "downsample");
    int *d = fn ? ints(dims, &nd) : NULL;
    double *wt = NULL;
    if (d && w != Py_None && !(wt = doubles(w, &nw))) {
        PyMem_Free(d);
        return NULL;
    }
    PyObject *r = NULL;
    if (d && wt && nw != n)
        PyErr_Format(PmArgumentError, "downsample: %d weights for %d taps", nw, n);
    else if (d)
        r = result(((HandleObject *)f)->ctx, H_FUNC,
                   pm_downsample(fn, name, t, nd, d, n, wt, scale));
    PyMem_Free(d), PyMem_Free(wt);
    return r;
}

static PyObject *h_upsample(PyObject *m, PyObject *args)
{
    PyObject *f, *dims;
    const char *name;
    int t, nd;
    if (!PyArg_ParseTuple(args, "OsiO:upsample", &f, &name, &t, &dims))
        return NULL;
    pm_func *fn = pm_py_handle_ptr(f, H_FUNC, "upsample");
    int *d = fn ? ints(dims, &nd) : NULL;
    PyObject *r = d ? result(((HandleObject *)f)->ctx, H_FUNC, pm_upsample(fn, name, t, nd, d))
                    : NULL;
    PyMem_Free(d);
    return r;
}

PyMethodDef pm_py_helper_methods[] = {
    {"stencil_nd", h_stencil, METH_VARARGS, "pm_stencil_nd(f, at, scale, dims, size, weights)"},
    {"stencil2", h_stencil2, METH_VARARGS, "pm_stencil(f, at, scale, rows, cols, weights)"},
    {"stencil_func", h_stencil_func, METH_VARARGS,
     "pm_stencil_func(f, name, type, scale, dims, size, weights)"},
    {"pad", h_pad, METH_VARARGS, "pm_pad(f, name, kind, value, dims, pad)"},
    {"boundary", h_boundary, METH_VARARGS, "pm_boundary_new(f, name, kind, value, domain)"},
    {"crop", h_crop, METH_VARARGS, "pm_crop(f, name, window)"},
    {"downsample", h_downsample, METH_VARARGS,
     "pm_downsample(f, name, type, dims, n, weights, scale)"},
    {"upsample", h_upsample, METH_VARARGS, "pm_upsample(f, name, type, dims)"},
    {NULL},
};
