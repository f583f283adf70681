/* module.c — polymage._core: the exceptions, the Context and handle types, buffers over
 * the buffer protocol, and the module itself. The builder functions are in builder.c,
 * pipelines, jits and kernels in jit.c. */
#include "core.h"

#include <string.h>

PyObject *PmError, *PmArgumentError, *PmDTypeError, *PmClosedError;
static PyObject *PmExprTypeError, *PmInvalidError, *PmMisuseError, *PmUnsupportedError,
    *PmOutOfMemoryError, *PmInternalError, *PmCompileError;

static PyObject *exception_of(pm_status s)
{
    switch (s) {
    case PM_ERR_ARGUMENT: return PmArgumentError;
    case PM_ERR_TYPE: return PmExprTypeError;
    case PM_ERR_INVALID: return PmInvalidError;
    case PM_ERR_MISUSE: return PmMisuseError;
    case PM_ERR_UNSUPPORTED: return PmUnsupportedError;
    case PM_ERR_NOMEM: return PmOutOfMemoryError;
    case PM_ERR_COMPILE: return PmCompileError;
    default: return PmInternalError;
    }
}

/* The exception carries the message as its argument and the status name as `.status`. */
PyObject *pm_py_raise(pm_status status, const char *message)
{
    PyObject *cls = exception_of(status);
    PyObject *exc = PyObject_CallFunction(cls, "s", message && *message ? message
                                                                          : pm_status_name(status));
    if (!exc)
        return NULL;
    PyObject_SetAttrString(exc, "status", PyUnicode_FromString(pm_status_name(status)));
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pm_py_raise_ctx(pm_ctx *ctx, const char *fallback)
{
    pm_status s = pm_ctx_status(ctx);
    const char *msg = pm_ctx_errmsg(ctx);
    pm_py_raise(s == PM_OK ? PM_ERR_INTERNAL : s, *msg ? msg : fallback);
    pm_ctx_clear_error(ctx);
    return NULL;
}

void pm_py_take_ctx_error(pm_ctx *ctx, CtxError *e)
{
    e->status = pm_ctx_status(ctx) == PM_OK ? PM_ERR_INTERNAL : pm_ctx_status(ctx);
    snprintf(e->message, sizeof e->message, "%s", pm_ctx_errmsg(ctx));
    pm_ctx_clear_error(ctx);
}

/* ---- Context ------------------------------------------------------------------------ */

static PyObject *ctx_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    if (!PyArg_ParseTuple(args, ":Context"))
        return NULL;
    CtxObject *self = (CtxObject *)type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    self->ctx = pm_ctx_new();
    self->lock = PyThread_allocate_lock();
    if (!self->ctx || !self->lock) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    return (PyObject *)self;
}

static void ctx_dealloc(CtxObject *self)
{
    pm_ctx_free(self->ctx);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyTypeObject CtxType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polymage._core.Context",
    .tp_basicsize = sizeof(CtxObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A pm_ctx: owns every builder object made in it.",
    .tp_new = ctx_new,
    .tp_dealloc = (destructor)ctx_dealloc,
};

/* ---- Handles ------------------------------------------------------------------------ */

HandleObject *pm_py_handle_new(CtxObject *ctx, int kind, void *ptr)
{
    HandleObject *h = PyObject_New(HandleObject, &HandleType);
    if (!h)
        return NULL;
    Py_INCREF(ctx);
    h->ctx = ctx;
    h->kind = kind;
    h->ptr = ptr;
    return h;
}

void *pm_py_handle_ptr(PyObject *o, int kind, const char *what)
{
    static const char *kinds[] = {"expression", "interval", "case", "function"};
    if (!PyObject_TypeCheck(o, &HandleType) || ((HandleObject *)o)->kind != kind) {
        PyErr_Format(PyExc_TypeError, "%s: expected a polymage %s, got %.80s", what,
                     kinds[kind], Py_TYPE(o)->tp_name);
        return NULL;
    }
    return ((HandleObject *)o)->ptr;
}

static void handle_dealloc(HandleObject *self)
{
    Py_XDECREF(self->ctx);
    PyObject_Free(self);
}

static PyObject *handle_get_ctx(HandleObject *self, void *unused)
{
    Py_INCREF(self->ctx);
    return (PyObject *)self->ctx;
}

/* Two handles are the same node when they hold the same pointer (the Python layer's
 * objects compare with `is` on this). */
static PyObject *handle_get_id(HandleObject *self, void *unused)
{
    return PyLong_FromVoidPtr(self->ptr);
}

static PyGetSetDef handle_getset[] = {
    {"context", (getter)handle_get_ctx, NULL, "the Context that owns it", NULL},
    {"id", (getter)handle_get_id, NULL, "the C object's address", NULL},
    {NULL},
};

PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "polymage._core.Handle",
    .tp_basicsize = sizeof(HandleObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A builder object (expression, interval, case or function) of a Context.",
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_getset = handle_getset,
};

/* ---- Values and buffers ------------------------------------------------------------- */

int pm_py_values(PyObject *seq, int n, pm_value *out, const char *what)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (!fast)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PmArgumentError, "%s: %d values expected, got %zd", what, n,
                     PySequence_Fast_GET_SIZE(fast));
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *v = PySequence_Fast_GET_ITEM(fast, i);
        if (PyFloat_Check(v))
            out[i].f = PyFloat_AS_DOUBLE(v);
        else
            out[i].i = PyLong_AsLongLong(v);
        if (PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* The buffer-protocol format character of each storage type ('l' and 'q' are both
 * 64-bit on this platform; the item size is checked too). */
static int format_matches(const char *fmt, pm_type t, Py_ssize_t itemsize)
{
    if (!fmt)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    if ((Py_ssize_t)pm_type_size(t) != itemsize || fmt[0] == 0 || fmt[1] != 0)
        return 0;
    switch (t) {
    case PM_U8: return *fmt == 'B';
    case PM_I8: return *fmt == 'b';
    case PM_U16: return *fmt == 'H';
    case PM_I16: return *fmt == 'h';
    case PM_U32: return *fmt == 'I' || *fmt == 'L';
    case PM_I32: return *fmt == 'i' || *fmt == 'l';
    case PM_I64: return *fmt == 'l' || *fmt == 'q';
    case PM_F32: return *fmt == 'f';
    case PM_F64: return *fmt == 'd';
    default: return 0;
    }
}

static int buffer_fail(Py_buffer *view, PyObject *cls, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    PyBuffer_Release(view);
    if (msg) {
        PyErr_SetObject(cls, msg);
        Py_DECREF(msg);
    }
    return -1;
}

int pm_py_buffer(PyObject *obj, pm_func *f, int writable, const char *role, int index,
                 Py_buffer *view, pm_buffer *out)
{
    const char *name = pm_func_name(f);
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        int readonly = writable && PyObject_CheckBuffer(obj);
        PyErr_Clear();
        if (readonly)
            PyErr_Format(PmArgumentError, "%s %d (%s): the array is read-only", role, index,
                         name);
        else
            PyErr_Format(PmDTypeError, "%s %d (%s): expected an array (buffer protocol), "
                         "got %.80s", role, index, name, Py_TYPE(obj)->tp_name);
        return -1;
    }
    pm_type t = pm_func_type(f);
    if (!format_matches(view->format, t, view->itemsize))
        return buffer_fail(view, PmDTypeError, "%s %d (%s): element type '%s' (%zd bytes), "
                           "expected %s", role, index, name, view->format ? view->format : "B",
                           view->itemsize, pm_type_name(t));
    if (view->ndim != pm_func_ndims(f))
        return buffer_fail(view, PmArgumentError, "%s %d (%s): %d dimensions, expected %d",
                           role, index, name, view->ndim, pm_func_ndims(f));
    memset(out, 0, sizeof *out);
    out->data = view->buf;
    out->type = t;
    out->ndims = view->ndim;
    for (int d = 0; d < view->ndim; d++) {
        Py_ssize_t st = view->strides[d];
        /* pm_buffer's stride 0 means "dense", so a broadcast (stride 0) dimension cannot
         * be described; a stride between elements cannot either. */
        if (view->shape[d] > 1 && (st == 0 || st % view->itemsize))
            return buffer_fail(view, PmArgumentError, "%s %d (%s): stride %zd bytes in "
                               "dimension %d is not a non-zero multiple of the element size "
                               "%zd (copy it with numpy.ascontiguousarray)", role, index, name,
                               st, d, view->itemsize);
        out->extent[d] = view->shape[d];
        out->stride[d] = view->shape[d] > 1 ? st / view->itemsize : 1;
    }
    return 0;
}

void pm_py_release(Py_buffer *views, int n)
{
    for (int i = 0; i < n; i++)
        PyBuffer_Release(&views[i]);
}

static int buffer_list(pm_pipeline *p, PyObject *seq, int output, Py_buffer *views,
                       pm_buffer *bufs)
{
    int n = output ? pm_pipeline_noutputs(p) : pm_pipeline_ninputs(p);
    const char *role = output ? "output" : "input";
    PyObject *fast = PySequence_Fast(seq, "buffers: expected a sequence of arrays");
    if (!fast)
        return -1;
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PmArgumentError, "%s: %d %ss expected, got %zd", pm_pipeline_name(p), n,
                     role, PySequence_Fast_GET_SIZE(fast));
        Py_DECREF(fast);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        pm_func *f = output ? pm_pipeline_output(p, i) : pm_pipeline_input(p, i);
        if (pm_py_buffer(PySequence_Fast_GET_ITEM(fast, i), f, output, role, i, &views[i],
                         &bufs[i]) < 0) {
            pm_py_release(views, i);
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

int pm_py_buffers(pm_pipeline *p, PyObject *inputs, PyObject *outputs, Py_buffer *views,
                  pm_buffer *in, pm_buffer *out)
{
    int nin = pm_pipeline_ninputs(p);
    if (buffer_list(p, inputs, 0, views, in) < 0)
        return -1;
    if (buffer_list(p, outputs, 1, views + nin, out) < 0) {
        pm_py_release(views, nin);
        return -1;
    }
    return 0;
}

/* ---- The module --------------------------------------------------------------------- */

static PyObject *add_exception(PyObject *m, const char *name, PyObject *bases)
{
    char full[64];
    snprintf(full, sizeof full, "polymage.%s", name);
    /* `status`: the library's status name, None for the extension's own checks. */
    PyObject *dict = Py_BuildValue("{sO}", "status", Py_None);
    PyObject *e = dict ? PyErr_NewException(full, bases, dict) : NULL;
    Py_XDECREF(dict);
    Py_XDECREF(bases);
    if (e && PyModule_AddObjectRef(m, name, e) < 0)
        Py_CLEAR(e);
    return e;
}

static int add_exceptions(PyObject *m)
{
    PmError = add_exception(m, "Error", Py_NewRef(PyExc_Exception));
    if (!PmError)
        return -1;
#define SUB(var, name, base) \
    if (!(var = add_exception(m, name, PyTuple_Pack(2, PmError, base)))) return -1;
    SUB(PmArgumentError, "ArgumentError", PyExc_ValueError)
    SUB(PmDTypeError, "DTypeError", PyExc_TypeError)
    SUB(PmClosedError, "ClosedError", PyExc_ValueError)
    SUB(PmExprTypeError, "ExprTypeError", PyExc_TypeError)
    SUB(PmInvalidError, "InvalidPipelineError", PyExc_ValueError)
    SUB(PmMisuseError, "MisuseError", PyExc_ValueError)
    SUB(PmUnsupportedError, "UnsupportedError", PyExc_NotImplementedError)
    SUB(PmOutOfMemoryError, "OutOfMemoryError", PyExc_MemoryError)
    SUB(PmCompileError, "CompileError", PyExc_RuntimeError)
    SUB(PmInternalError, "InternalError", PyExc_RuntimeError)
#undef SUB
    return 0;
}

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "polymage._core",
    .m_doc = "The C core of polymage: thin wrappers of libpolymage's C API.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__core(void)
{
    PyTypeObject *types[] = {&CtxType, &HandleType, &PipelineType, &JitType, &KernelType};
    const char *names[] = {"Context", "Handle", "Pipeline", "Jit", "Kernel"};
    PyObject *m = PyModule_Create(&core_module);
    if (!m)
        return NULL;
    for (int i = 0; i < 5; i++)
        if (PyType_Ready(types[i]) < 0 || PyModule_AddObjectRef(m, names[i],
                                                                (PyObject *)types[i]) < 0)
            goto fail;
    if (PyModule_AddFunctions(m, pm_py_builder_methods) < 0 ||
        PyModule_AddFunctions(m, pm_py_helper_methods) < 0 ||
        PyModule_AddFunctions(m, pm_py_pipeline_functions) < 0 || add_exceptions(m) < 0)
        goto fail;
    if (PyModule_AddStringConstant(m, "version", pm_version()) < 0 ||
        PyModule_AddStringConstant(m, "build_id", pm_build_id()) < 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
