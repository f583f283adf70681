"""polymage.dask: a pipeline over dask arrays, one window form kernel call per output chunk.

map_pipeline(pipeline, *arrays, **params) returns a dask array equal, bit for bit, to the
interpreter's output over the whole image (docs/python.md "Dask"). The halo comes from
the compiler (Pipeline.halo: isl's exact footprints); every chunk is a window of the
whole image (Pipeline.window), so each clamp and border case sees the whole image.
"""
import os as _os

import numpy as _np

import polymage as _pm

try:
    import dask.array as _da
    from dask import delayed as _delayed
except ImportError as e:  # pragma: no cover - python3-dask is in install-deps.sh
    raise ImportError("polymage.dask needs dask (Debian: python3-dask python3-distributed)") from e

# Per process (each Dask worker): one Jit and its kernels, so a worker compiles a
# pipeline once; workers that share cache_dir load each other's kernels from disk.
_jits = {}
_pipelines = {}  # canonical text -> Pipeline


def _jit(threads, cache_dir):
    key = (threads, cache_dir)
    jit = _jits.get(key)
    if jit is None:
        jit = _pm.Jit(threads=threads)
        if cache_dir:
            jit.set_policy(disk_dir=cache_dir)
        _jits[key] = jit
    return jit


def _kernel(text, estimates, threads, cache_dir):
    p = _pipelines.get(text)
    if p is None:  # reading a window form redoes its demand analysis (isl): once a process
        p = _pipelines[text] = _pm.Pipeline.from_text(text)
    return _jit(threads, cache_dir).compile(p, estimates)


def _run_chunk(text, estimates, threads, cache_dir, params, offset, shape, dtype, parts):
    """One output chunk: a zeroed array, each part's window written into its view. A part
    is (offset, shape, inputs); an input is (array, slices): a view of an input chunk as it
    lies in the worker's memory (the interior: no copy), or a block Dask assembled."""
    k = _kernel(text, estimates, threads, cache_dir)
    out = _np.empty(shape, dtype)  # empty + fill: huge pages, no faults inside the kernel
    out.fill(0)
    for sub_offset, sub_shape, inputs in parts:
        view = out[tuple(slice(so - o, so - o + n)
                         for so, o, n in zip(sub_offset, offset, sub_shape))]
        k.run_window(*(a[sl] for a, sl in inputs), offset=sub_offset, shape=sub_shape,
                     out=view, **params)
    return out


def _pipeline_of(p):
    if isinstance(p, _pm.Kernel):
        p = p.pipeline
    if not isinstance(p, _pm.Pipeline):
        raise TypeError(f"map_pipeline: expected a Pipeline or Kernel, got {type(p).__name__}")
    if p.is_window:
        raise _pm.ArgumentError(f"{p.name}: map_pipeline takes the whole-image pipeline, "
                                f"not its window form")
    if len(p.outputs) != 1:
        raise _pm.UnsupportedError(f"{p.name}: map_pipeline runs pipelines of one output "
                                   f"({len(p.outputs)} here)")
    return p


def map_pipeline(pipeline, *arrays, chunks=None, threads=1, cache_dir=None, **params):
    """The pipeline's output over dask arrays (one per input, whole images), as a dask
    array chunked like the first input (or `chunks`). Each output chunk is one task: a
    window form kernel (compiled once per process, `threads` threads each: Dask runs the
    chunks in parallel) run on the blocks of the inputs its window reads. Raises
    UnsupportedError naming the stage for a pipeline that reduces over the whole image,
    and ArgumentError when a chunk is smaller than the halo along some axis."""
    p = _pipeline_of(pipeline)
    if len(arrays) != len(p.inputs):
        raise _pm.ArgumentError(f"{p.name}: {len(p.inputs)} input arrays expected, "
                                f"got {len(arrays)}")
    arrays = [a if isinstance(a, _da.Array) else _da.from_array(a) for a in arrays]
    halo = p.halo()  # raises for whole-image reductions, naming the stage
    w = p.window()
    for a, (name, t, _) in zip(arrays, p.inputs):
        if a.dtype != _pm.dtype(t):
            raise _pm.ArgumentError(f"{p.name}: input {name} is {t.name}, the array "
                                    f"{a.dtype}")
    out_shape = tuple(p.output_shapes(**params)[0])
    for a, (name, _, _), want in zip(arrays, p.inputs,
                                     [w_ for w_ in _input_shapes(p, params)]):
        if tuple(a.shape) != tuple(want):
            raise _pm.ArgumentError(f"{p.name}: input {name} has shape {tuple(a.shape)}, "
                                    f"the parameters give {tuple(want)}")
    if chunks is None:
        first = arrays[0]
        lead = len(out_shape) - first.ndim
        chunks = tuple((n,) if d < lead else
                       _fit(first.chunks[d - lead], n) for d, n in enumerate(out_shape))
    else:
        chunks = _da.core.normalize_chunks(chunks, out_shape)
    for d, (lo, hi) in enumerate(halo):
        need = max(lo, hi)
        small = min(chunks[d][:-1]) if len(chunks[d]) > 1 else need  # the last may be short
        if small < need:
            raise _pm.ArgumentError(f"{p.name}: chunks along axis {d} must be at least "
                                    f"{need} points (the pipeline's halo there is {lo} "
                                    f"before and {hi} after a chunk); the smallest is {small}")
    estimates = dict(params)
    for d in range(len(out_shape)):
        estimates[f"window_lo{d}"] = 0
        estimates[f"window_n{d}"] = max(chunks[d])
    dtype = _pm.dtype(p.outputs[0][1])
    starts = [_np.cumsum((0,) + c[:-1]) for c in chunks]
    grid = _np.empty(tuple(len(c) for c in chunks), dtype=object)
    inputs = [_Chunked(a) for a in arrays]
    for idx in _np.ndindex(*grid.shape):
        offset = tuple(int(starts[d][i]) for d, i in enumerate(idx))
        shape = tuple(int(chunks[d][i]) for d, i in enumerate(idx))
        parts = _parts(p, params, inputs, offset, shape)
        task = _delayed(_run_chunk, pure=True)(w.text, estimates, threads, cache_dir,
                                               params, offset, shape, dtype, parts)
        grid[idx] = _da.from_delayed(task, shape, dtype=dtype)
    return _da.block(grid.tolist())


class _Chunked:
    """An input dask array with its chunk boundaries and its chunks as Delayed objects
    (the keys the workers hold, so a task receives a chunk itself, not a copy)."""

    def __init__(self, a):
        self.array = a
        self.bounds = [_np.cumsum((0,) + tuple(c)) for c in a.chunks]
        self.delayed = a.to_delayed()

    def home(self, origin, ext):
        """(chunk index, slices inside it) when the block lies inside one chunk, else None."""
        idx, local = [], []
        for b, o, e in zip(self.bounds, origin, ext):
            i = int(_np.searchsorted(b, o, side="right")) - 1
            if e <= 0 or i < 0 or i >= len(b) - 1 or o + e > b[i + 1]:
                return None
            idx.append(i)
            local.append(slice(int(o - b[i]), int(o - b[i] + e)))
        return tuple(idx), tuple(local)

    def block(self, origin, ext):
        """The block as an input of a part: one chunk's view, or a block Dask assembles."""
        home = self.home(origin, ext)
        if home:
            return (self.delayed[home[0]], home[1])
        sl = tuple(slice(o, o + e) for o, e in zip(origin, ext))
        return (self.array[sl], tuple(slice(None) for _ in sl))


def _parts(p, params, inputs, offset, shape):
    """The windows that make up one output chunk. Its interior (every point whose inputs lie
    inside one chunk of each input array) reads the chunks themselves; the frame around it
    (the halo's width: the slabs before and after the interior along each axis) reads
    small blocks Dask assembles from the neighbouring chunks. A chunk without an interior
    is one window over an assembled block."""
    def whole():
        return [(offset, shape, [c.block(o, e) for c, (o, e) in
                                 zip(inputs, p.input_blocks(offset, shape, **params))])]
    lo, hi = list(offset), [o + n for o, n in zip(offset, shape)]
    for _ in range(4):  # shrink until every block fits one chunk (an upsampling output
        blocks = p.input_blocks(tuple(lo), tuple(n - l for l, n in zip(lo, hi)), **params)
        shrink = False  # moves its block less than one point a point)
        for c, (origin, ext) in zip(inputs, blocks):
            lead = len(origin) - len(lo)
            for j, (b, o, e) in enumerate(zip(c.bounds, origin, ext)):
                i = min(max(int(_np.searchsorted(b, o + e // 2, side="right")) - 1, 0),
                        len(b) - 2)
                before, after = max(0, int(b[i] - o)), max(0, int(o + e - b[i + 1]))
                if not before and not after:
                    continue
                d = j - lead
                if d < 0:
                    return whole()  # a dimension the window does not cut is split in chunks
                lo[d] += before
                hi[d] -= after
                shrink = True
        if any(l >= h for l, h in zip(lo, hi)):
            return whole()
        if not shrink:
            break
    else:
        return whole()
    inner = (tuple(lo), tuple(h - l for l, h in zip(lo, hi)))
    inner_blocks = p.input_blocks(*inner, **params)
    if any(c.home(o, e) is None for c, (o, e) in zip(inputs, inner_blocks)):
        return whole()
    parts = [(inner[0], inner[1], [c.block(o, e) for c, (o, e) in zip(inputs, inner_blocks)])]
    # the frame: along axis d, the slabs before and after the interior, over the
    # interior's extent in the axes before d and the chunk's whole extent after it
    for d in range(len(shape)):
        for a, b in ((offset[d], lo[d]), (hi[d], offset[d] + shape[d])):
            if a >= b:
                continue
            so = [lo[k] if k < d else offset[k] for k in range(len(shape))]
            se = [hi[k] - lo[k] if k < d else shape[k] for k in range(len(shape))]
            so[d], se[d] = a, b - a
            blocks = p.input_blocks(tuple(so), tuple(se), **params)
            parts.append((tuple(so), tuple(se),
                          [c.block(o, e) for c, (o, e) in zip(inputs, blocks)]))
    return parts


def _fit(in_chunks, n):
    """The input's chunk sizes cut to an output axis of n points."""
    out, total = [], 0
    for c in in_chunks:
        if total >= n:
            break
        c = min(c, n - total)
        out.append(c)
        total += c
    if total < n:
        out.append(n - total)
    return tuple(out)


def _input_shapes(p, params):
    vals = p._values(params)
    return [p._p.buffer_shape(False, i, vals) for i in range(len(p.inputs))]


def default_cache_dir():
    """A disk-cache folder for the workers of this user (under XDG_CACHE_HOME)."""
    base = _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache")
    return _os.path.join(base, "polymage", "dask")
