"""polymage: image pipelines JIT-compiled in-process (libpolymage from Python).

Every builder call below is one call of libpolymage's C builder API (polymage._core), so a
pipeline built here is the C pipeline: same canonical text, same kernel cache key.
docs/python.md is the guide.
"""

import collections.abc as _abc
import enum as _enum
import numbers as _numbers
import operator as _operator
import os as _os
import threading as _threading

import numpy as _np

from . import _core
from ._core import (Error, ArgumentError, DTypeError, ClosedError, ExprTypeError,
                    InvalidPipelineError, MisuseError, UnsupportedError, OutOfMemoryError,
                    CompileError, InternalError)

__version__ = _core.version
_builtin_min, _builtin_max = min, max


class Type(_enum.IntEnum):
    """Element types (pm_type)."""
    u8 = 1
    i8 = 2
    u16 = 3
    i16 = 4
    u32 = 5
    i32 = 6
    i64 = 7
    f32 = 8
    f64 = 9


u8, i8, u16, i16, u32, i32, i64, f32, f64 = (Type.u8, Type.i8, Type.u16, Type.i16, Type.u32,
                                             Type.i32, Type.i64, Type.f32, Type.f64)
_DTYPES = {t: _np.dtype(n) for t, n in zip(Type, ("uint8", "int8", "uint16", "int16", "uint32",
                                                   "int32", "int64", "float32", "float64"))}
_INT_RANGES = {t: (int(_np.iinfo(d).min), int(_np.iinfo(d).max))
               for t, d in _DTYPES.items() if d.kind in "iu"}


def _type(t):
    """A Type from a Type, its name ('f32') or a NumPy dtype."""
    if isinstance(t, Type):
        return t
    if isinstance(t, str) and t in Type.__members__:
        return Type[t]
    dt = _np.dtype(t)
    for k, v in _DTYPES.items():
        if v == dt:
            return k
    raise DTypeError(f"no polymage type for {t!r}")


def dtype(t):
    """The NumPy dtype of a polymage type."""
    return _DTYPES[_type(t)]


class Boundary(_enum.IntEnum):
    """pm_boundary: how pad() and boundary() extend a function."""
    clamp = 0
    mirror = 1
    mirror_interior = 2
    wrap = 3
    constant = 4


# ---- Contexts ------------------------------------------------------------------------------

class Context:
    """A pm_ctx. Builders use the context of their operands, else the current one: the
    innermost `with Context():` of this thread, else a default context of the thread.
    A context and its objects are used by one thread at a time (as in C)."""

    _local = _threading.local()

    def __init__(self):
        self._c = _core.Context()

    def __enter__(self):
        self._local.__dict__.setdefault("stack", []).append(self._c)
        return self

    def __exit__(self, *exc):
        self._local.stack.pop()


def _current():
    stack = Context._local.__dict__.setdefault("stack", [])
    if stack:
        return stack[-1]
    default = getattr(Context._local, "default", None)
    if default is None:
        default = Context._local.default = _core.Context()
    return default


# ---- Expressions ---------------------------------------------------------------------------

# Operator codes of _core.binary (python/src/builder.c, binary_ops).
_ADD, _SUB, _MUL, _DIV, _MOD, _CDIV, _CMOD, _MIN, _MAX, _BAND, _BOR, _BXOR, _SHL, _SHR, \
    _LT, _LE, _EQ, _NE, _GE, _GT, _AND, _OR, _POW, _ATAN2, _ABSD = range(25)
_NEG, _NOT, _ABS = 100, 101, 102


def _ctx_of(*xs):
    for x in xs:
        if isinstance(x, (Expr, Function, Interval)):
            return x._h.context
    return _current()


def _lit(x, ctx):
    """An operand as a handle: an Expr's own, or a literal made weak (pm_int/pm_float)."""
    if isinstance(x, Expr):
        return x._h
    if isinstance(x, bool):
        raise TypeError("polymage: a bool is not a value (use a comparison)")
    if isinstance(x, int):
        return _core.int_(ctx, x)
    if isinstance(x, float):
        return _core.float_(ctx, x)
    raise TypeError(f"polymage: cannot use {type(x).__name__} as an expression")


def _bin(op, a, b, cls=None):
    ctx = _ctx_of(a, b)
    h = _core.binary(op, _lit(a, ctx), _lit(b, ctx))
    return (cls or Expr)(h)


class Expr:
    """An expression (pm_expr). Operators build C nodes: a + b is pm_add(a, b); with a
    literal right operand, e + k and e - k are pm_addi(e, k) / pm_addi(e, -k) (e - 1 is
    written as C code writes it), e * k is pm_muli / pm_mulf. / and // are both pm_div
    (floor division on integers, ordinary division on floats); % is pm_mod."""

    __slots__ = ("_h",)
    __hash__ = object.__hash__

    def __init__(self, handle):
        self._h = handle

    def __bool__(self):
        raise TypeError("a polymage expression has no truth value; use select() or Case")

    def __add__(self, o): return _bin(_ADD, self, o)
    def __radd__(self, o): return _bin(_ADD, o, self)

    def __sub__(self, o):
        if isinstance(o, (int, float)) and not isinstance(o, bool):
            return _bin(_ADD, self, -o)
        return _bin(_SUB, self, o)

    def __rsub__(self, o): return _bin(_SUB, o, self)
    def __mul__(self, o): return _bin(_MUL, self, o)
    def __rmul__(self, o): return _bin(_MUL, o, self)
    def __truediv__(self, o): return _bin(_DIV, self, o)
    def __rtruediv__(self, o): return _bin(_DIV, o, self)
    __floordiv__, __rfloordiv__ = __truediv__, __rtruediv__
    def __mod__(self, o): return _bin(_MOD, self, o)
    def __rmod__(self, o): return _bin(_MOD, o, self)
    def __pow__(self, o): return _bin(_POW, self, o)
    def __lshift__(self, o): return _bin(_SHL, self, o)
    def __rshift__(self, o): return _bin(_SHR, self, o)
    def __and__(self, o): return _bin(_BAND, self, o)
    def __rand__(self, o): return _bin(_BAND, o, self)
    def __or__(self, o): return _bin(_BOR, self, o)
    def __ror__(self, o): return _bin(_BOR, o, self)
    def __xor__(self, o): return _bin(_BXOR, self, o)
    def __invert__(self): return _bin(_BXOR, self, -1)
    def __neg__(self): return Expr(_core.unary(_NEG, self._h))
    def __pos__(self): return self
    def __abs__(self): return Expr(_core.unary(_ABS, self._h))
    def __lt__(self, o): return _bin(_LT, self, o, Condition)
    def __le__(self, o): return _bin(_LE, self, o, Condition)
    def __gt__(self, o): return _bin(_GT, self, o, Condition)
    def __ge__(self, o): return _bin(_GE, self, o, Condition)
    def __eq__(self, o): return _bin(_EQ, self, o, Condition)
    def __ne__(self, o): return _bin(_NE, self, o, Condition)

    def astype(self, t):
        """pm_cast(t, self)."""
        return cast(t, self)


class Condition(Expr):
    """A PM_BOOL expression: comparisons, between(); & | ~ are pm_and, pm_or, pm_not.
    Condition(a, '<=', b) is PolyMage's form of a <= b."""

    __slots__ = ()

    def __new__(cls, *args):
        return object.__new__(cls)

    def __init__(self, *args):
        if len(args) == 1:
            self._h = args[0]
            return
        a, op, b = args
        ops = {"<": _LT, "<=": _LE, ">": _GT, ">=": _GE, "==": _EQ, "!=": _NE}
        ctx = _ctx_of(a, b)
        self._h = _core.binary(ops[op], _lit(a, ctx), _lit(b, ctx))

    def __and__(self, o): return _bin(_AND, self, o, Condition)
    def __rand__(self, o): return _bin(_AND, o, self, Condition)
    def __or__(self, o): return _bin(_OR, self, o, Condition)
    def __ror__(self, o): return _bin(_OR, o, self, Condition)
    def __invert__(self): return Condition(_core.unary(_NOT, self._h))


def Parameter(t, name, ctx=None):
    """A run-time scalar (pm_param): kernels take it as a keyword, kernel(I, R=..)."""
    return Expr(_core.param(ctx._c if isinstance(ctx, Context) else _current(), _type(t), name))


def Variable(name, ctx=None):
    """A dimension label (pm_var, i32)."""
    return Expr(_core.var(ctx._c if isinstance(ctx, Context) else _current(), name))


def const(t, value, ctx=None):
    """A constant of type t (pm_const; pm_f64 for f64): strong, unlike a literal."""
    return Expr(_core.const(ctx._c if isinstance(ctx, Context) else _current(), _type(t),
                            float(value)))


def literal(value, ctx=None):
    """The weak literal a number in an expression makes (pm_int for an int, pm_float for a
    float), as an expression of its own: for C's pm_sub(e, pm_float(k)) (e - k is
    e + (-k)), or for one literal node that several intervals share."""
    return Expr(_lit(value, ctx._c if isinstance(ctx, Context) else _current()))


def cast(t, e):
    """pm_cast(t, e)."""
    return Expr(_core.cast(_type(t), _lit(e, _ctx_of(e))))


def select(c, a, b):
    """pm_select: both arms are evaluated everywhere."""
    ctx = _ctx_of(c, a, b)
    return Expr(_core.select(_lit(c, ctx), _lit(a, ctx), _lit(b, ctx)))


def between(a, lo, hi):
    """lo <= a <= hi (pm_between: the C sample's box condition)."""
    ctx = _ctx_of(a, lo, hi)
    return Condition(_core.between(_lit(a, ctx), _lit(lo, ctx), _lit(hi, ctx)))


def min(a, b):  # noqa: A001 (PolyMage's name)
    """pm_min(a, b)."""
    return _bin(_MIN, a, b)


def max(a, b):  # noqa: A001
    """pm_max(a, b)."""
    return _bin(_MAX, a, b)


def clamp(a, lo, hi):
    """pm_clamp: min(max(a, lo), hi)."""
    return min(max(a, lo), hi)


def absd(a, b):
    """|a - b| without overflow (pm_absd)."""
    return _bin(_ABSD, a, b)


def cdiv(a, b):
    """C's truncating division (pm_cdiv)."""
    return _bin(_CDIV, a, b)


def cmod(a, b):
    """C's remainder (pm_cmod)."""
    return _bin(_CMOD, a, b)


def atan2(y, x):
    return _bin(_ATAN2, y, x)


def _math(code):
    return lambda e: Expr(_core.unary(code, _lit(e, _ctx_of(e))))


exp, log, sqrt, sin, cos, tan, atan, tanh, floor, ceil, round, trunc = (  # noqa: A001
    _math(i) for i in range(12))


# ---- Intervals, images, functions ------------------------------------------------------------

class Interval:
    """Interval(lb, ub, step=1): lb, lb+step, ... <= ub (the upper bound is inclusive)."""

    __slots__ = ("_h",)

    def __init__(self, lb, ub, step=1, *, _handle=None):
        if _handle is not None:
            self._h = _handle
            return
        ctx = _ctx_of(lb, ub)
        self._h = _core.interval(_lit(lb, ctx), _lit(ub, ctx), step)


class Case:
    """Case(condition, value); a None condition covers the whole domain."""

    __slots__ = ("_h",)

    def __init__(self, cond, value):
        ctx = _ctx_of(cond, value)
        self._h = _core.case(None if cond is None else _lit(cond, ctx), _lit(value, ctx))


class Function:
    """Function((variables, intervals), type, name), defined once by .defn = [cases] (or
    one expression) or define(...). f(x, y) and f[x, y] are calls (pm_call)."""

    __slots__ = ("_h", "name", "type", "ndims")

    def __init__(self, var_dom, t, name, ctx=None):
        variables, intervals = var_dom
        ctx = ctx._c if isinstance(ctx, Context) else _ctx_of(*variables, *intervals)
        self._wrap(_core.func(ctx, name, _type(t), [v._h for v in variables],
                              [i._h for i in intervals]))

    @classmethod
    def _of(cls, handle):
        f = object.__new__(Function if cls is Image else cls)
        f._wrap(handle)
        return f

    def _wrap(self, handle):
        self._h = handle
        self.name, t, self.ndims = _core.func_info(handle)
        self.type = Type(t)

    def __call__(self, *args):
        ctx = self._h.context
        return Expr(_core.call(self._h, [_lit(a, ctx) for a in args]))

    def __getitem__(self, args):
        return self(*(args if isinstance(args, tuple) else (args,)))

    def define(self, *cases):
        """define(Case, ...) or define(expression); returns the function."""
        if len(cases) == 1 and not isinstance(cases[0], Case):
            _core.define_expr(self._h, _lit(cases[0], self._h.context))
        else:
            _core.define(self._h, [c._h for c in cases])
        return self

    defn = property(None, lambda self, cases: self.define(*cases),
                    doc="PolyMage's f.defn = [Case(...), ...] (or [expression])")

    def var(self, d):
        """The variable of dimension d (pm_func_var)."""
        return Expr(_core.func_dim(self._h, d, True))

    def interval(self, d):
        """The domain of dimension d (pm_func_interval)."""
        return Interval(None, None, _handle=_core.func_dim(self._h, d, False))

    def intervals(self):
        """The domain of every dimension: [interval(0), interval(1), ...]."""
        return [self.interval(d) for d in range(self.ndims)]

    def like(self, name, t=None):
        """A new undefined function over this one's domain (pm_func_like)."""
        return Function._of(_core.func_like(self._h, name, _type(t or self.type)))

    def __repr__(self):
        return f"<polymage {type(self).__name__} {self.name} {self.type.name} {self.ndims}-D>"


class Image(Function):
    """Image(type, name, extents): an input; dimension d covers 0 .. extents[d]-1."""

    __slots__ = ()

    def __init__(self, t, name, extents, ctx=None):
        ctx = ctx._c if isinstance(ctx, Context) else _ctx_of(*extents)
        self._wrap(_core.image(ctx, name, _type(t), [_lit(e, ctx) for e in extents]))


class Op(_enum.IntEnum):
    """pm_reduce_op."""
    sum = 0
    product = 1
    min = 2
    max = 3
    and_ = 4
    or_ = 5


class Reduction(Function):
    """Reduction((vars, intervals), (rvars, rintervals), type, name, op=Op.sum,
    initial=None); define(index, value) adds value at f(index...) for every point of the
    reduction domain (pm_reduction_define)."""

    __slots__ = ()

    def __init__(self, var_dom, red_dom, t, name, op=Op.sum, initial=None, ctx=None):
        (vs, ivs), (rvs, rivs) = var_dom, red_dom
        ctx = ctx._c if isinstance(ctx, Context) else _ctx_of(*vs, *ivs, *rvs, *rivs)
        init = None if initial is None else _lit(initial, ctx)
        self._wrap(_core.reduction(ctx, name, _type(t), [v._h for v in vs],
                                   [i._h for i in ivs], [v._h for v in rvs],
                                   [i._h for i in rivs], int(Op(op)), init))

    def define(self, index, value):
        """Returns the reduction."""
        ctx = self._h.context
        _core.reduction_define(self._h, [_lit(i, ctx) for i in index], _lit(value, ctx))
        return self


# ---- Helpers ---------------------------------------------------------------------------------

def Stencil(f, at, kernel, scale=1.0):
    """PolyMage's Stencil(f, (x, y), kernel, scale) (pm_stencil): the kernel is a picture
    of the (y, x) plane, its rows moving y and its columns x."""
    w = _np.asarray(kernel, dtype=float)
    if w.ndim != 2:
        raise ArgumentError("Stencil: the kernel must be 2-D (use stencil() for others)")
    ctx = f._h.context
    return Expr(_core.stencil2(f._h, [_lit(a, ctx) for a in at], float(scale), w.shape[0],
                               w.shape[1], w.ravel().tolist()))


def stencil(f, at, kernel, dims, scale=1.0):
    """scale * sum of kernel[i...] * f(at + offset) over the dimensions dims
    (pm_stencil_nd: the kernel's axis k moves dimension dims[k])."""
    w = _np.asarray(kernel, dtype=float)
    ctx = f._h.context
    return Expr(_core.stencil_nd(f._h, [_lit(a, ctx) for a in at], float(scale), list(dims),
                                 list(w.shape), w.ravel().tolist()))


def stencil_func(f, name, t, kernel, dims, scale=1.0):
    """A function defined by stencil() over f's domain shrunk by the kernel's reach."""
    w = _np.asarray(kernel, dtype=float)
    return Function._of(_core.stencil_func(f._h, name, _type(t), float(scale), list(dims),
                                           list(w.shape), w.ravel().tolist()))


def pointwise(name, t, fn, *funcs):
    """A function over funcs[0]'s domain (pm_func_like) whose value at each point is
    fn(funcs[0](point), funcs[1](point), ...): pointwise("mag", u8, lambda a, b: ..., gx, gy)."""
    f = funcs[0].like(name, t)
    at = [f.var(d) for d in range(f.ndims)]
    return f.define(fn(*(g(*at) for g in funcs)))


def _value(f, value):
    return None if value is None else _lit(value, f._h.context)


def pad(f, name, kind, dims, amount, value=None):
    """f widened by `amount` points on both sides of each dimension in dims (pm_pad)."""
    return Function._of(_core.pad(f._h, name, int(Boundary(kind)), _value(f, value),
                                  list(dims), amount))


def boundary(f, name, kind, domain, value=None):
    """f over `domain` (one Interval or None per dimension) extended outside its own
    domain (pm_boundary_new)."""
    return Function._of(_core.boundary(f._h, name, int(Boundary(kind)), _value(f, value),
                                       [None if i is None else i._h for i in domain]))


def crop(f, name, window):
    """f over a window of its domain (pm_crop; None keeps a dimension)."""
    return Function._of(_core.crop(f._h, name, [None if i is None else i._h for i in window]))


def downsample(f, name, t, dims, n=3, weights=None, scale=1.0):
    """2x down-sampling in dims (pm_downsample; weights None: binomial of n taps)."""
    return Function._of(_core.downsample(f._h, name, _type(t), list(dims), n,
                                         None if weights is None else list(weights), scale))


def upsample(f, name, t, dims):
    """2x linear up-sampling in dims (pm_upsample)."""
    return Function._of(_core.upsample(f._h, name, _type(t), list(dims)))


# ---- Pipelines -------------------------------------------------------------------------------

_TYPE_NAMES = {t.name: t for t in Type}


def _param_signature(text):
    """[(name, Type)] of the parameters, read from the canonical text's `param` lines
    ("param 0 i32 1:R"): the one signature source for built and rebuilt pipelines."""
    out = []
    for line in text.split("\n"):
        if line.startswith("param "):
            _, _, t, name = line.split(" ", 3)
            out.append((name.split(":", 1)[1], _TYPE_NAMES[t]))
        elif out:
            break
    return out


class Pipeline:
    """Pipeline(name, params, inputs, outputs) (pm_pipeline_new: validates the whole
    pipeline). Pickles as its canonical text."""

    def __init__(self, name, params, inputs, outputs):
        fs = list(inputs) + list(outputs)
        ctx = _ctx_of(*params, *fs)
        self._init(_core.pipeline(ctx, name, [p._h for p in params], [f._h for f in inputs],
                                  [f._h for f in outputs]))

    def _init(self, core):
        self._p = core
        self.text = core.text()
        self.name, ins, outs = core.signature()
        self.params = _param_signature(self.text)
        self.inputs = [(n, Type(t), d) for n, t, d in ins]
        self.outputs = [(n, Type(t), d) for n, t, d in outs]
        if self.is_window:  # its own parameters: lo and n per output dimension
            for d in range(_rank(self.outputs[0][2])):
                self.params += [(f"window_lo{d}", Type.i64), (f"window_n{d}", Type.i64)]

    @classmethod
    def from_text(cls, text):
        """The pipeline of a canonical text, in a new context (pm_pipeline_from_text)."""
        if not isinstance(text, str):
            raise TypeError(f"Pipeline.from_text: expected the canonical text (str), got "
                            f"{type(text).__name__}")
        p = object.__new__(cls)
        p._init(_core.pipeline_from_text(text))
        return p

    def __reduce__(self):
        return (Pipeline.from_text, (self.text,))

    def __repr__(self):
        return f"<polymage Pipeline {self.name}{' (window form)' if self.is_window else ''}>"

    @property
    def is_window(self):
        """True for a window form (Pipeline.window())."""
        return self.text.endswith("\nwindow\n")

    def window(self):
        """The window form (pm_pipeline_window): this pipeline's outputs over a window of
        the whole image, bit for bit the whole run's values there (docs/python.md "Dask").
        Its parameters are this pipeline's, then window_lo<d> and window_n<d> per output
        dimension; its inputs are the blocks around the window (Pipeline.input_blocks).
        Raises UnsupportedError naming the stage when the pipeline reduces over the whole
        image."""
        if self.is_window:
            return self
        w = object.__new__(Pipeline)
        w._init(self._p.window())
        return w

    def halo(self):
        """Per output dimension, (lo, hi): how far before and after an output window the
        pipeline reads its inputs, the most over every window and image size
        (pm_pipeline_halo, from the exact footprints)."""
        return self._p.halo(_rank(self.outputs[0][2]))

    def input_blocks(self, offset, shape, **params):
        """For the window at `offset` of `shape` (output indices) of the whole image that
        params describe: per input, (origin, extents) of the block the window form reads."""
        w = self.window()
        vals = w._values(dict(params, **_window_values(offset, shape)))
        return [(w._p.buffer_origin(False, i, vals), w._p.buffer_shape(False, i, vals))
                for i in range(len(w.inputs))]

    def _values(self, kw, what="parameter"):
        """The values of the parameters (or estimates) in kw, in the pipeline's order, each
        checked against its type as pm_kernel_run checks them (pm_pipeline_buffer_shape,
        which shapes new outputs, does not), so a bad one is an ArgumentError naming it."""
        vals = []
        for name, t in self.params:
            if name not in kw:
                raise ArgumentError(f"{self.name}: {what} {name} is missing")
            v = kw[name]
            if t in (Type.f32, Type.f64):
                if not isinstance(v, _numbers.Real):
                    raise ArgumentError(f"{self.name}: {what} {name} ({t.name}) must be a "
                                        f"number, got {type(v).__name__} {v!r:.80}")
                vals.append(float(v))
                continue
            try:
                v = _operator.index(v)
            except TypeError:
                raise ArgumentError(f"{self.name}: {what} {name} ({t.name}) must be an "
                                    f"integer, got {type(v).__name__} {v!r:.80}") from None
            lo, hi = _INT_RANGES[t]
            if not lo <= v <= hi:
                raise ArgumentError(f"{self.name}: {what} {name} = {v} does not fit its "
                                    f"type {t.name}")
            vals.append(v)
        if len(kw) != len(vals):
            extra = set(kw) - {n for n, _ in self.params}
            raise ArgumentError(f"{self.name}: no parameter {', '.join(sorted(extra))}")
        return vals

    def output_shapes(self, **params):
        vals = self._values(params)
        return [self._p.buffer_shape(True, i, vals) for i in range(len(self.outputs))]

    def _outputs(self, vals, out):
        if out is None:
            return [_np.empty(self._p.buffer_shape(True, i, vals), dtype=_DTYPES[t])
                    for i, (_, t, _) in enumerate(self.outputs)]
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def interpret(self, *inputs, out=None, **params):
        """Runs the reference interpreter (pm_interpret); returns the outputs."""
        vals = self._values(params)
        outs = self._outputs(vals, out)
        self._p.interpret(vals, list(inputs), outs)
        return outs[0] if len(outs) == 1 else tuple(outs)


# ---- Compile and run --------------------------------------------------------------------------

class Kernel:
    """A compiled pipeline (pm_kernel). kernel(*inputs, out=None, **params) runs it
    (without the GIL) and returns its outputs: new NumPy arrays, or the out= arrays
    written in place through their strides. close() frees it; later calls raise
    ClosedError. It keeps its Pipeline's signature (for shapes) and its Jit alive."""

    def __init__(self, core, pipeline, estimates=None, options=None):
        self._k = core
        self.pipeline = pipeline
        self._how = (estimates, dict(options or {}))

    def __reduce__(self):
        # The canonical text plus the estimates and options: the other side compiles it
        # with its own process-wide Jit (or finds it in its cache).
        return (_kernel_from_text, (self.pipeline.text,) + self._how)

    def _closed(self):
        return ClosedError(f"{self.pipeline.name}: the kernel is closed (Kernel.close() was "
                           f"called)")

    def __call__(self, *inputs, out=None, **params):
        p = self.pipeline
        if self._k.closed:
            raise self._closed()
        vals = p._values(params)
        outs = p._outputs(vals, out)
        self._k.run(vals, list(inputs), outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def run_window(self, *inputs, offset, shape=None, out=None, **params):
        """Runs a kernel of a window form on the window at `offset` (output indices) of
        the whole image that params describe, as large as `shape` or the out= arrays:
        the inputs are the blocks Pipeline.input_blocks names. New outputs are zeroed
        (points no case defines stay 0, as in a zeroed whole output)."""
        p = self.pipeline
        if self._k.closed:
            raise self._closed()
        if not p.is_window:
            raise ArgumentError(f"{p.name}: run_window needs a kernel of the window form "
                                f"(compile(pipeline.window(), ...))")
        if shape is None:
            if out is None:
                raise ArgumentError(f"{p.name}: run_window needs shape= or out=")
            shape = (out[0] if isinstance(out, (tuple, list)) else out).shape
        vals = p._values(dict(params, **_window_values(offset, shape)))
        if out is None:
            # empty + fill, not zeros: NumPy's calloc path leaves the pages to fault in
            # inside the kernel, which took 60 ms instead of 35 for a 4096^2 f32 Harris
            # window (np.empty's large arrays get huge pages)
            outs = [_np.empty(tuple(shape), dtype=_DTYPES[t]) for _, t, _ in p.outputs]
            for o in outs:
                o.fill(0)
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
        self._k.run(vals, list(inputs), outs)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def close(self):
        self._k.close()

    @property
    def closed(self):
        return self._k.closed

    @property
    def compile_ms(self):
        if self._k.closed:
            raise self._closed()
        return self._k.compile_ms

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _rank(dims):
    return dims if isinstance(dims, int) else len(dims)


def _window_values(offset, shape):
    """The window form's own parameter values for a window at offset of shape."""
    offset, shape = tuple(offset), tuple(shape)
    if len(offset) != len(shape):
        raise ArgumentError(f"window: offset {offset} and shape {shape} differ in rank")
    vals = {}
    for d, (lo, n) in enumerate(zip(offset, shape)):
        vals[f"window_lo{d}"] = lo
        vals[f"window_n{d}"] = n
    return vals


def _check_pipeline(p, call):
    if not isinstance(p, Pipeline):
        raise TypeError(f"{call}: expected a polymage Pipeline, got {type(p).__name__}")


class Jit:
    """A pm_jit: the JIT session and its kernel cache. Jit(threads=0, compile_threads=0,
    isolate_compiles=False)."""

    def __init__(self, **options):
        self._j = _core.Jit(**options)

    def compile(self, pipeline, estimates=None, **options):
        """pm_jit_compile: estimates a dict of parameter values (sizes) or None; options
        threads, vector_width, fusion, opt_level, tile_size, overlap_threshold,
        group_limit."""
        _check_pipeline(pipeline, "compile")
        if estimates is not None and not isinstance(estimates, _abc.Mapping):
            raise TypeError(f"compile: estimates must be a dict of parameter values or None, "
                            f"got {type(estimates).__name__}")
        est = None if estimates is None else pipeline._values(estimates, "estimate")
        return Kernel(self._j.compile(pipeline._p, est, **options), pipeline, estimates, options)

    def run(self, pipeline, *inputs, out=None, options=None, **params):
        """The serving call pm_jit_run: the kernel of the parameters' size bucket (another
        bucket's at once while a background compile makes it). Returns the outputs."""
        _check_pipeline(pipeline, "run")
        vals = pipeline._values(params)
        outs = pipeline._outputs(vals, out)
        self._j.run(pipeline._p, vals, list(inputs), outs, **(options or {}))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def stats(self):
        """pm_jit_stats as a dict."""
        return self._j.stats()

    def set_policy(self, **fields):
        """pm_jit_set_policy: bucket_ratio, max_kernels, max_code_bytes, background,
        compile_threads, max_queued, disk_dir, disk_max_bytes, max_scratch_bytes,
        scratch_idle_ms, background_nice (others unchanged)."""
        if fields.get("disk_dir") is not None:
            fields["disk_dir"] = _os.fspath(fields["disk_dir"])
        self._j.set_policy(**fields)

    def wait_idle(self):
        self._j.wait_idle()


_default_jit = None
_default_lock = _threading.Lock()


def default_jit():
    """The process-wide Jit that compile() uses (made on first use)."""
    global _default_jit
    with _default_lock:
        if _default_jit is None:
            _default_jit = Jit()
        return _default_jit


def compile(pipeline, estimates=None, **options):  # noqa: A001
    """Compiles a pipeline with the process-wide Jit (see Jit.compile)."""
    return default_jit().compile(pipeline, estimates, **options)


def _kernel_from_text(text, estimates, options):
    """An unpickled Kernel: its pipeline rebuilt from the text, compiled by compile()."""
    return compile(Pipeline.from_text(text), estimates, **options)
