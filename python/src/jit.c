/* jit.c — pipelines, the interpreter, jits and kernels. Compiles and runs release the
 * GIL; buffers are the callers' arrays seen through the buffer protocol (no copy). */
#include "core.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* Buffers of one call: the views to release and the pm_buffers over them. */
typedef struct {
    int n;
    Py_buffer views[2 * 64];
    pm_buffer in[64], out[64];
} CallBuffers;

static int call_buffers(pm_pipeline *p, PyObject *inputs, PyObject *outputs, CallBuffers *b)
{
    if (pm_pipeline_ninputs(p) > 64 || pm_pipeline_noutputs(p) > 64) {
        PyErr_SetString(PmArgumentError, "more than 64 inputs or outputs");
        return -1;
    }
    b->n = pm_pipeline_ninputs(p) + pm_pipeline_noutputs(p);
    return pm_py_buffers(p, inputs, outputs, b->views, b->in, b->out);
}

/* ---- Pipeline --------------------------------------------------------------------------- */

static PyObject *pipeline_wrap(CtxObject *ctx, pm_pipeline *p)
{
    PipelineObject *self = PyObject_New(PipelineObject, &PipelineType);
    if (!self)
        return NULL;
    Py_INCREF(ctx);
    self->ctx = ctx;
    self->p = p;
    return (PyObject *)self;
}

static void pipeline_dealloc(PipelineObject *self)
{
    Py_XDECREF(self->ctx);
    PyObject_Free(self);
}

/* pipeline(ctx, name, params, inputs, outputs): pm_pipeline_new. */
static PyObject *f_pipeline(PyObject *m, PyObject *args)
{
    CtxObject *c;
    const char *name;
    PyObject *seqs[3];
    if (!PyArg_ParseTuple(args, "O!sOOO:pipeline", &CtxType, &c, &name, &seqs[0], &seqs[1],
                          &seqs[2]))
        return NULL;
    void *ptrs[3][256];
    int n[3], kinds[3] = {H_EXPR, H_FUNC, H_FUNC};
    for (int s = 0; s < 3; s++) {
        PyObject *fast = PySequence_Fast(seqs[s], "Pipeline: expected sequences");
        if (!fast)
            return NULL;
        n[s] = (int)PySequence_Fast_GET_SIZE(fast);
        for (int i = 0; i < n[s] && i < 256; i++) {
            PyObject *o = PySequence_Fast_GET_ITEM(fast, i);
            if (!(ptrs[s][i] = pm_py_handle_ptr(o, kinds[s], "Pipeline")) ||
                ((HandleObject *)o)->ctx != c) {
                Py_DECREF(fast);
                return PyErr_Occurred() ? NULL
                                        : pm_py_raise(PM_ERR_MISUSE, "Pipeline: an object of "
                                                      "another polymage Context");
            }
        }
        Py_DECREF(fast);
        if (n[s] > 256)
            return pm_py_raise(PM_ERR_ARGUMENT, "Pipeline: more than 256 of one kind");
    }
    pm_pipeline *p;
    if (pm_pipeline_new(c->ctx, name, n[0], (pm_expr *const *)ptrs[0], n[1],
                        (pm_func *const *)ptrs[1], n[2], (pm_func *const *)ptrs[2], &p) != PM_OK)
        return pm_py_raise_ctx(c->ctx, "pm_pipeline_new failed");
    return pipeline_wrap(c, p);
}

/* pipeline_from_text(text): pm_pipeline_from_text in a new Context. */
static PyObject *f_pipeline_from_text(PyObject *m, PyObject *args)
{
    const char *text;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#:from_text", &text, &len))
        return NULL;
    CtxObject *c = (CtxObject *)PyObject_CallNoArgs((PyObject *)&CtxType);
    if (!c)
        return NULL;
    pm_pipeline *p;
    PyObject *r = NULL;
    if (pm_pipeline_from_text(c->ctx, text, (size_t)len, &p) != PM_OK)
        pm_py_raise_ctx(c->ctx, "pm_pipeline_from_text failed");
    else
        r = pipeline_wrap(c, p);
    Py_DECREF(c);
    return r;
}

static PyObject *pipeline_text(PipelineObject *self, PyObject *unused)
{
    size_t len;
    const char *t = pm_pipeline_text(self->p, &len);
    if (!t)
        return pm_py_raise_ctx(self->ctx->ctx, "pm_pipeline_text: out of memory");
    return PyUnicode_FromStringAndSize(t, (Py_ssize_t)len);
}

/* The signature: (name, [(input name, type, ndims)], [(output name, type, ndims)]). */
static PyObject *pipeline_signature(PipelineObject *self, PyObject *unused)
{
    PyObject *lists[2];
    for (int o = 0; o < 2; o++) {
        int n = o ? pm_pipeline_noutputs(self->p) : pm_pipeline_ninputs(self->p);
        if (!(lists[o] = PyList_New(n)))
            return o ? (Py_DECREF(lists[0]), NULL) : NULL;
        for (int i = 0; i < n; i++) {
            pm_func *f = o ? pm_pipeline_output(self->p, i) : pm_pipeline_input(self->p, i);
            PyList_SET_ITEM(lists[o], i, Py_BuildValue("(sii)", pm_func_name(f),
                                                       (int)pm_func_type(f), pm_func_ndims(f)));
        }
    }
    return Py_BuildValue("(sNN)", pm_pipeline_name(self->p), lists[0], lists[1]);
}

/* buffer_shape(is_output, index, params): pm_pipeline_buffer_shape as a tuple. */
static PyObject *pipeline_buffer_shape(PipelineObject *self, PyObject *args)
{
    int is_output, index, ndims;
    PyObject *params;
    pm_value v[256];
    int64_t ext[PM_MAX_DIMS];
    if (!PyArg_ParseTuple(args, "piO:buffer_shape", &is_output, &index, &params))
        return NULL;
    int np = pm_pipeline_nparams(self->p);
    if (np > 256 || pm_py_values(params, np, v, "parameters") < 0)
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    pm_status s;
    CtxError e;
    PM_PY_WITH_CTX(self->ctx, {
        s = pm_pipeline_buffer_shape(self->p, is_output, index, v, &ndims, ext);
        if (s != PM_OK)
            pm_py_take_ctx_error(self->ctx->ctx, &e);
    });
    if (s != PM_OK)
        return pm_py_raise(e.status, e.message);
    PyObject *t = PyTuple_New(ndims);
    for (int d = 0; t && d < ndims; d++)
        PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(ext[d]));
    return t;
}

/* interpret(params, inputs, outputs): pm_interpret, under the context's lock (it writes
 * its message into the context). */
static PyObject *pipeline_interpret(PipelineObject *self, PyObject *args)
{
    PyObject *params, *inputs, *outputs;
    pm_value v[256];
    CallBuffers b;
    if (!PyArg_ParseTuple(args, "OOO:interpret", &params, &inputs, &outputs))
        return NULL;
    int np = pm_pipeline_nparams(self->p);
    if (np > 256 || pm_py_values(params, np, v, "parameters") < 0)
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    if (call_buffers(self->p, inputs, outputs, &b) < 0)
        return NULL;
    pm_status s;
    CtxError e;
    PM_PY_WITH_CTX(self->ctx, {
        s = pm_interpret(self->p, v, b.in, b.out);
        if (s != PM_OK)
            pm_py_take_ctx_error(self->ctx->ctx, &e);
    });
    pm_py_release(b.views, b.n);
    if (s != PM_OK)
        return pm_py_raise(e.status, e.message);
    Py_RETURN_NONE;
}

/* window(): pm_pipeline_window, the window form in the same context. */
static PyObject *pipeline_window(PipelineObject *self, PyObject *unused)
{
    pm_pipeline *pw = NULL;
    pm_status s;
    CtxError e;
    PM_PY_WITH_CTX(self->ctx, {
        s = pm_pipeline_window(self->p, &pw);
        if (s != PM_OK)
            pm_py_take_ctx_error(self->ctx->ctx, &e);
    });
    if (s != PM_OK)
        return pm_py_raise(e.status, e.message);
    return pipeline_wrap(self->ctx, pw);
}

/* halo(ndims): pm_pipeline_halo as ((lo, hi), ...) per output dimension. */
static PyObject *pipeline_halo(PipelineObject *self, PyObject *args)
{
    int ndims;
    if (!PyArg_ParseTuple(args, "i:halo", &ndims))
        return NULL;
    int64_t lo[PM_MAX_DIMS], hi[PM_MAX_DIMS];
    if (ndims < 0 || ndims > PM_MAX_DIMS)
        return pm_py_raise(PM_ERR_ARGUMENT, "halo: bad number of dimensions");
    pm_status s;
    CtxError e;
    PM_PY_WITH_CTX(self->ctx, {
        s = pm_pipeline_halo(self->p, ndims, lo, hi);
        if (s != PM_OK)
            pm_py_take_ctx_error(self->ctx->ctx, &e);
    });
    if (s != PM_OK)
        return pm_py_raise(e.status, e.message);
    PyObject *t = PyTuple_New(ndims);
    for (int d = 0; t && d < ndims; d++)
        PyTuple_SET_ITEM(t, d, Py_BuildValue("(LL)", (long long)lo[d], (long long)hi[d]));
    return t;
}

/* buffer_origin(is_output, index, params): pm_pipeline_buffer_origin as a tuple. */
static PyObject *pipeline_buffer_origin(PipelineObject *self, PyObject *args)
{
    int is_output, index, ndims;
    PyObject *params;
    pm_value v[256];
    int64_t org[PM_MAX_DIMS];
    if (!PyArg_ParseTuple(args, "piO:buffer_origin", &is_output, &index, &params))
        return NULL;
    int np = pm_pipeline_nparams(self->p);
    if (np > 256 || pm_py_values(params, np, v, "parameters") < 0)
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    pm_status s;
    CtxError e;
    PM_PY_WITH_CTX(self->ctx, {
        s = pm_pipeline_buffer_origin(self->p, is_output, index, v, &ndims, org);
        if (s != PM_OK)
            pm_py_take_ctx_error(self->ctx->ctx, &e);
    });
    if (s != PM_OK)
        return pm_py_raise(e.status, e.message);
    PyObject *t = PyTuple_New(ndims);
    for (int d = 0; t && d < ndims; d++)
        PyTuple_SET_ITEM(t, d, PyLong_FromLongLong(org[d]));
    return t;
}

static PyObject *pipeline_nparams(PipelineObject *self, void *unused)
{
    return PyLong_FromLong(pm_pipeline_nparams(self->p));
}

static PyMethodDef pipeline_methods[] = {
    {"text", (PyCFunction)pipeline_text, METH_NOARGS, "pm_pipeline_text"},
    {"window", (PyCFunction)pipeline_window, METH_NOARGS, "pm_pipeline_window"},
    {"halo", (PyCFunction)pipeline_halo, METH_VARARGS, "pm_pipeline_halo(ndims)"},
    {"buffer_origin", (PyCFunction)pipeline_buffer_origin, METH_VARARGS,
     "pm_pipeline_buffer_origin(is_output, index, params)"},
    {"signature", (PyCFunction)pipeline_signature, METH_NOARGS, "(name, inputs, outputs)"},
    {"buffer_shape", (PyCFunction)pipeline_buffer_shape, METH_VARARGS,
     "pm_pipeline_buffer_shape(is_output, index, params)"},
    {"interpret", (PyCFunction)pipeline_interpret, METH_VARARGS,
     "pm_interpret(params, inputs, outputs)"},
    {NULL},
};

static PyGetSetDef pipeline_getset[] = {
    {"nparams", (getter)pipeline_nparams, NULL, "number of parameters", NULL},
    {NULL},
};

PyTypeObject PipelineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polymage._core.Pipeline",
    .tp_basicsize = sizeof(PipelineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pm_pipeline; keeps its Context alive.",
    .tp_dealloc = (destructor)pipeline_dealloc,
    .tp_methods = pipeline_methods,
    .tp_getset = pipeline_getset,
};

/* ---- Compile options -------------------------------------------------------------------- */

/* A compile option's value as an int: a TypeError or an ArgumentError naming the option. */
static int option_int(const char *name, PyObject *val, int *out)
{
    long v = PyLong_AsLong(val);
    if (v == -1 && PyErr_Occurred()) {
        int overflow = PyErr_ExceptionMatches(PyExc_OverflowError);
        PyErr_Clear();
        if (overflow)
            PyErr_Format(PmArgumentError, "compile option %s: %R does not fit an int", name, val);
        else
            PyErr_Format(PyExc_TypeError, "compile option %s: expected an int, got %.80s", name,
                         Py_TYPE(val)->tp_name);
        return -1;
    }
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PmArgumentError, "compile option %s: %ld does not fit an int", name, v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Keywords of Jit.compile / Jit.run over pm_compile_options_default(). */
static int compile_options(PyObject *kw, pm_compile_options *o)
{
    *o = pm_compile_options_default();
    if (!kw)
        return 0;
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kw, &pos, &key, &val)) {
        const char *k = PyUnicode_AsUTF8(key);
        if (!k)
            return -1;
        if (!strcmp(k, "overlap_threshold")) {
            o->overlap_threshold = PyFloat_AsDouble(val);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                PyErr_Format(PyExc_TypeError, "compile option overlap_threshold: expected a "
                             "number, got %.80s", Py_TYPE(val)->tp_name);
                return -1;
            }
        } else if (!strcmp(k, "tile_size")) {
            PyObject *fast = PySequence_Fast(val, "compile option tile_size: expected a "
                                                  "sequence of ints");
            if (!fast)
                return -1;
            Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
            if (n > PM_MAX_DIMS) {
                Py_DECREF(fast);
                PyErr_Format(PmArgumentError, "compile option tile_size: %zd sizes, at most %d",
                             n, PM_MAX_DIMS);
                return -1;
            }
            for (Py_ssize_t i = 0; i < n; i++)
                if (option_int("tile_size", PySequence_Fast_GET_ITEM(fast, i),
                               &o->tile_size[i]) < 0) {
                    Py_DECREF(fast);
                    return -1;
                }
            Py_DECREF(fast);
        } else {
            int *field = !strcmp(k, "threads") ? &o->threads
                       : !strcmp(k, "vector_width") ? &o->vector_width
                       : !strcmp(k, "fusion") ? &o->fusion
                       : !strcmp(k, "opt_level") ? &o->opt_level
                       : !strcmp(k, "group_limit") ? &o->group_limit
                       : !strcmp(k, "grouping") ? &o->grouping
                       : !strcmp(k, "dp_budget") ? &o->dp_budget
                       : !strcmp(k, "stream_outputs") ? &o->stream_outputs
                       : !strcmp(k, "prefetch_reads") ? &o->prefetch_reads : NULL;
            if (!field) {
                PyErr_Format(PyExc_TypeError, "unknown compile option '%s'", k);
                return -1;
            }
            if (option_int(k, val, field) < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- Jit -------------------------------------------------------------------------------- */

static PyObject *jit_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"threads", "compile_threads", "isolate_compiles", "opt_level", NULL};
    pm_jit_options o = pm_jit_options_default();
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$iipi:Jit", kwlist, &o.threads,
                                     &o.compile_threads, &o.isolate_compiles, &o.opt_level))
        return NULL;
    JitObject *self = (JitObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    pm_error err = {0};
    Py_BEGIN_ALLOW_THREADS
    self->jit = pm_jit_new(&o, &err);
    Py_END_ALLOW_THREADS
    if (!self->jit) {
        Py_DECREF(self);
        return pm_py_raise(err.status, err.message);
    }
    return (PyObject *)self;
}

static void jit_dealloc(JitObject *self)
{
    if (self->jit) {
        Py_BEGIN_ALLOW_THREADS /* waits for running background compiles */
        pm_jit_free(self->jit);
        Py_END_ALLOW_THREADS
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *kernel_wrap(JitObject *jit, PipelineObject *pipe, pm_kernel *k);

/* compile(pipeline, estimates or None, **options) -> Kernel. */
static PyObject *jit_compile(JitObject *self, PyObject *args, PyObject *kw)
{
    PipelineObject *pipe;
    PyObject *est;
    pm_value v[256];
    pm_compile_options o;
    if (!PyArg_ParseTuple(args, "O!O:compile", &PipelineType, &pipe, &est) ||
        compile_options(kw, &o) < 0)
        return NULL;
    int np = pm_pipeline_nparams(pipe->p);
    if (np > 256 || (est != Py_None && pm_py_values(est, np, v, "estimates") < 0))
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    pm_error err = {0};
    pm_kernel *k;
    PM_PY_WITH_CTX(pipe->ctx, k = pm_jit_compile(self->jit, pipe->p, est == Py_None ? NULL : v,
                                                 &o, &err));
    if (!k)
        return pm_py_raise(err.status, err.message);
    return kernel_wrap(self, pipe, k);
}

/* run(pipeline, params, inputs, outputs, **options): the serving call pm_jit_run. */
static PyObject *jit_run(JitObject *self, PyObject *args, PyObject *kw)
{
    PipelineObject *pipe;
    PyObject *params, *inputs, *outputs;
    pm_value v[256];
    pm_compile_options o;
    CallBuffers b;
    if (!PyArg_ParseTuple(args, "O!OOO:run", &PipelineType, &pipe, &params, &inputs, &outputs) ||
        compile_options(kw, &o) < 0)
        return NULL;
    int np = pm_pipeline_nparams(pipe->p);
    if (np > 256 || pm_py_values(params, np, v, "parameters") < 0)
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    if (call_buffers(pipe->p, inputs, outputs, &b) < 0)
        return NULL;
    pm_error err = {0};
    pm_status s;
    PM_PY_WITH_CTX(pipe->ctx, s = pm_jit_run(self->jit, pipe->p, &o, v, b.in, b.out, &err));
    pm_py_release(b.views, b.n);
    if (s != PM_OK)
        return pm_py_raise(err.status, err.message);
    Py_RETURN_NONE;
}

static PyObject *jit_stats(JitObject *self, PyObject *unused)
{
    pm_cache_stats s;
    if (pm_jit_stats(self->jit, &s, sizeof s) != PM_OK)
        return pm_py_raise(PM_ERR_INTERNAL, "pm_jit_stats failed");
    return Py_BuildValue(
        "{sKsKsKsKsKsKsKsKsdsdsLsisisisKsKsKsKsKsKsKsLsKsK}", "hits", s.hits, "misses", s.misses,
        "fallback_runs", s.fallback_runs, "sync_compiles", s.sync_compiles,
        "background_compiles", s.background_compiles, "failed_compiles", s.failed_compiles,
        "queue_full", s.queue_full, "evictions", s.evictions, "compile_ms_total",
        s.compile_ms_total, "compile_ms_max", s.compile_ms_max, "code_bytes",
        (long long)s.code_bytes, "kernels", s.kernels, "queued", s.queued, "compiling",
        s.compiling, "disk_hits", s.disk_hits, "disk_writes", s.disk_writes, "disk_rejected",
        s.disk_rejected, "disk_untrusted", s.disk_untrusted, "isolated_compiles",
        s.isolated_compiles, "isolated_failures", s.isolated_failures,
        "shared_compile_waits", s.shared_compile_waits, "scratch_bytes",
        (long long)s.scratch_bytes, "scratch_released", s.scratch_released, "upgrades",
        s.upgrades);
}

/* set_policy(**fields): the jit's current policy with the fields given changed. */
static PyObject *jit_set_policy(JitObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"bucket_ratio", "max_kernels", "max_code_bytes", "background",
                             "compile_threads", "max_queued", "disk_dir", "disk_max_bytes",
                             "max_scratch_bytes", "scratch_idle_ms", "background_nice", NULL};
    pm_cache_policy p = pm_cache_policy_default();
    if (pm_jit_get_policy(self->jit, &p, sizeof p) != PM_OK)
        return pm_py_raise(PM_ERR_INTERNAL, "pm_jit_get_policy failed");
    /* disk_dir points into the jit's copy, freed by the set: keep our own. */
    PyObject *dir = p.disk_dir ? PyUnicode_FromString(p.disk_dir) : Py_NewRef(Py_None);
    long long max_code = p.max_code_bytes, disk_max = p.disk_max_bytes;
    long long max_scratch = p.max_scratch_bytes;
    PyObject *newdir = dir;
    int ok = PyArg_ParseTupleAndKeywords(args, kw, "|$diLiiiOLLii:set_policy", kwlist,
                                         &p.bucket_ratio, &p.max_kernels, &max_code,
                                         &p.background, &p.compile_threads, &p.max_queued,
                                         &newdir, &disk_max, &max_scratch, &p.scratch_idle_ms,
                                         &p.background_nice);
    PyObject *r = NULL;
    if (ok) {
        p.max_code_bytes = max_code;
        p.disk_max_bytes = disk_max;
        p.max_scratch_bytes = max_scratch;
        p.disk_dir = newdir == Py_None ? NULL : PyUnicode_AsUTF8(newdir);
        pm_error err = {0};
        if (newdir != Py_None && !p.disk_dir)
            ;
        else if (pm_jit_set_policy(self->jit, &p, &err) != PM_OK)
            pm_py_raise(err.status, err.message);
        else
            r = Py_NewRef(Py_None);
    }
    Py_XDECREF(dir);
    return r;
}

static PyObject *jit_wait_idle(JitObject *self, PyObject *unused)
{
    Py_BEGIN_ALLOW_THREADS
    pm_jit_wait_idle(self->jit);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef jit_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))jit_compile, METH_VARARGS | METH_KEYWORDS,
     "pm_jit_compile(pipeline, estimates, **options) -> Kernel"},
    {"run", (PyCFunction)(void (*)(void))jit_run, METH_VARARGS | METH_KEYWORDS,
     "pm_jit_run(pipeline, params, inputs, outputs, **options)"},
    {"stats", (PyCFunction)jit_stats, METH_NOARGS, "pm_jit_stats as a dict"},
    {"set_policy", (PyCFunction)(void (*)(void))jit_set_policy, METH_VARARGS | METH_KEYWORDS,
     "pm_jit_set_policy(**fields)"},
    {"wait_idle", (PyCFunction)jit_wait_idle, METH_NOARGS, "pm_jit_wait_idle"},
    {NULL},
};

PyTypeObject JitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polymage._core.Jit",
    .tp_basicsize = sizeof(JitObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pm_jit: the JIT session and its kernel cache.",
    .tp_new = jit_new,
    .tp_dealloc = (destructor)jit_dealloc,
    .tp_methods = jit_methods,
};

/* ---- Kernel ------------------------------------------------------------------------------ */

static PyObject *kernel_wrap(JitObject *jit, PipelineObject *pipe, pm_kernel *k)
{
    KernelObject *self = PyObject_New(KernelObject, &KernelType);
    if (!self) {
        pm_kernel_free(k);
        return NULL;
    }
    self->k = k;
    self->closing = NULL;
    self->running = 0;
    self->jit = (JitObject *)Py_NewRef(jit);
    self->pipe = (PipelineObject *)Py_NewRef(pipe);
    return (PyObject *)self;
}

static PyObject *kernel_close(KernelObject *self, PyObject *unused)
{
    if (self->running && self->k)
        self->closing = self->k; /* freed when the last run returns */
    else
        pm_kernel_free(self->k);
    self->k = NULL;
    Py_RETURN_NONE;
}

static void kernel_dealloc(KernelObject *self)
{
    pm_kernel_free(self->k);
    Py_XDECREF(self->pipe);
    Py_XDECREF(self->jit);
    PyObject_Free(self);
}

/* run(params, inputs, outputs): pm_kernel_run without the GIL. */
static PyObject *kernel_run(KernelObject *self, PyObject *args)
{
    PyObject *params, *inputs, *outputs;
    pm_value v[256];
    CallBuffers b;
    if (!PyArg_ParseTuple(args, "OOO:run", &params, &inputs, &outputs))
        return NULL;
    if (!self->k) {
        PyErr_SetString(PmClosedError, "the kernel is closed (Kernel.close() was called)");
        return NULL;
    }
    pm_pipeline *p = self->pipe->p;
    int np = pm_pipeline_nparams(p);
    if (np > 256 || pm_py_values(params, np, v, "parameters") < 0)
        return PyErr_Occurred() ? NULL : pm_py_raise(PM_ERR_ARGUMENT, "too many parameters");
    if (call_buffers(p, inputs, outputs, &b) < 0)
        return NULL;
    pm_error err = {0};
    pm_status s;
    /* close() from another thread while this run has no GIL must not free the kernel
     * under it: it leaves the kernel to the last run (kernel_close). */
    pm_kernel *k = self->k;
    self->running++;
    Py_BEGIN_ALLOW_THREADS
    s = pm_kernel_run(k, v, b.in, b.out, &err);
    Py_END_ALLOW_THREADS
    if (--self->running == 0 && self->closing) {
        pm_kernel_free(self->closing);
        self->closing = NULL;
    }
    pm_py_release(b.views, b.n);
    if (s != PM_OK)
        return pm_py_raise(err.status, err.message);
    Py_RETURN_NONE;
}

static PyObject *kernel_get_closed(KernelObject *self, void *unused)
{
    return PyBool_FromLong(self->k == NULL);
}

static PyObject *kernel_get_compile_ms(KernelObject *self, void *unused)
{
    if (!self->k)
        return PyErr_SetString(PmClosedError, "the kernel is closed"), NULL;
    return PyFloat_FromDouble(pm_kernel_compile_ms(self->k));
}

static PyObject *kernel_get_pipeline(KernelObject *self, void *unused)
{
    return Py_NewRef((PyObject *)self->pipe);
}

static PyMethodDef kernel_methods[] = {
    {"run", (PyCFunction)kernel_run, METH_VARARGS, "pm_kernel_run(params, inputs, outputs)"},
    {"close", (PyCFunction)kernel_close, METH_NOARGS, "pm_kernel_free (then calls raise)"},
    {NULL},
};

static PyGetSetDef kernel_getset[] = {
    {"closed", (getter)kernel_get_closed, NULL, "close() was called", NULL},
    {"compile_ms", (getter)kernel_get_compile_ms, NULL, "pm_kernel_compile_ms", NULL},
    {"pipeline", (getter)kernel_get_pipeline, NULL, "the pipeline (its signature)", NULL},
    {NULL},
};

PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polymage._core.Kernel",
    .tp_basicsize = sizeof(KernelObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pm_kernel: one reference, dropped by close() or when collected.",
    .tp_dealloc = (destructor)kernel_dealloc,
    .tp_methods = kernel_methods,
    .tp_getset = kernel_getset,
};

PyMethodDef pm_py_pipeline_functions[] = {
    {"pipeline", f_pipeline, METH_VARARGS, "pm_pipeline_new(ctx, name, params, inputs, outputs)"},
    {"pipeline_from_text", f_pipeline_from_text, METH_VARARGS, "pm_pipeline_from_text(text)"},
    {NULL},
};
