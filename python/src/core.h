/* core.h — what the parts of polymage._core share: the Python objects that own their C
 * counterparts, and the error and buffer helpers.
 *
 * Ownership: every object below holds a strong reference to the Context whose pm_ctx
 * made its C object (so the context outlives every handle into it); a Kernel holds its
 * Jit and its Pipeline (the signature, for argument checks and output shapes), never
 * the reverse. The C objects are freed in dealloc: pm_ctx_free by the Context,
 * pm_kernel_free by the Kernel (or by close()), pm_jit_free by the Jit. */
#ifndef PM_PY_CORE_H
#define PM_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <polymage.h>

/* A context is one thread's at a time (polymage.h), but Python threads share pipelines
 * freely, and compiles and runs release the GIL: the calls that use a pipeline without
 * the GIL (compile, the serving call, the interpreter, buffer shapes) hold its context's
 * lock, so two threads compiling one pipeline take turns. Builders run under the GIL
 * only; building in a context while another thread compiles its pipeline is the
 * caller's race, as in C. */
typedef struct {
    PyObject_HEAD
    pm_ctx *ctx;               /* owned */
    PyThread_type_lock lock;   /* owned */
} CtxObject;

/* Runs `stmt` with the GIL released and ctx's lock held (the lock is taken without the
 * GIL, so a thread waiting for it never blocks the one holding it). */
#define PM_PY_WITH_CTX(ctxobj, stmt)                           \
    do {                                                       \
        Py_BEGIN_ALLOW_THREADS                                 \
        PyThread_acquire_lock((ctxobj)->lock, WAIT_LOCK);      \
        stmt;                                                  \
        PyThread_release_lock((ctxobj)->lock);                 \
        Py_END_ALLOW_THREADS                                   \
    } while (0)

/* One handle type for every builder object (expression, interval, case, function):
 * `kind` says which pointer is set. */
enum { H_EXPR, H_INTERVAL, H_CASE, H_FUNC };
typedef struct {
    PyObject_HEAD
    CtxObject *ctx; /* strong reference */
    int kind;
    void *ptr;      /* owned by ctx->ctx */
} HandleObject;

typedef struct {
    PyObject_HEAD
    CtxObject *ctx; /* strong reference */
    pm_pipeline *p; /* owned by ctx->ctx */
} PipelineObject;

typedef struct {
    PyObject_HEAD
    pm_jit *jit;    /* owned */
} JitObject;

typedef struct {
    PyObject_HEAD
    pm_kernel *k;          /* one reference, dropped by close() or dealloc; NULL: closed */
    pm_kernel *closing;    /* closed while runs were going on: the last run frees it */
    int running;           /* runs in progress (changed under the GIL) */
    JitObject *jit;        /* strong reference */
    PipelineObject *pipe;  /* strong reference: the signature */
} KernelObject;

extern PyTypeObject CtxType, HandleType, PipelineType, JitType, KernelType;

/* Exceptions (module attributes; made in module.c). */
extern PyObject *PmError, *PmArgumentError, *PmDTypeError, *PmClosedError;

/* Raises the exception of `status` with `message`; returns NULL. */
PyObject *pm_py_raise(pm_status status, const char *message);
/* Raises the context's recorded error and clears it (the Python call failed, the
 * context stays usable); returns NULL. */
PyObject *pm_py_raise_ctx(pm_ctx *ctx, const char *fallback);
/* A context's error, copied while its lock is held (raised later with pm_py_raise). */
typedef struct {
    pm_status status;
    char message[1024];
} CtxError;
void pm_py_take_ctx_error(pm_ctx *ctx, CtxError *e);

HandleObject *pm_py_handle_new(CtxObject *ctx, int kind, void *ptr);
/* The C pointer of a handle of `kind`, or NULL with TypeError set. */
void *pm_py_handle_ptr(PyObject *o, int kind, const char *what);

/* A list of run-time values (int or float objects) -> pm_value[n]; -1 on error. */
int pm_py_values(PyObject *seq, int n, pm_value *out, const char *what);

/* Buffers: the exporter's memory viewed as a pm_buffer of f's type and rank (no copy;
 * strides in elements). `view` must be released with PyBuffer_Release. -1 with the
 * exception set. */
int pm_py_buffer(PyObject *obj, pm_func *f, int writable, const char *role, int index,
                 Py_buffer *view, pm_buffer *out);
/* Buffers for every input and output of p; views[0..nin+nout) to release with
 * pm_py_release. -1 on error (nothing left to release). */
int pm_py_buffers(pm_pipeline *p, PyObject *inputs, PyObject *outputs, Py_buffer *views,
                  pm_buffer *in, pm_buffer *out);
void pm_py_release(Py_buffer *views, int n);

/* Module functions of builder.c (the builder API) and jit.c (jit, kernels, pipelines). */
extern PyMethodDef pm_py_builder_methods[];
extern PyMethodDef pm_py_helper_methods[];
extern PyMethodDef pm_py_pipeline_functions[];

#endif
