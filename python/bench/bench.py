"""make bench-python: polymage against what a Python user would pick instead, OpenCV, on
the same arrays in one process, and what a call from Python costs over the same kernel
called from C (docs/benchmarks.md, "Python: polymage against OpenCV").

    PYTHONPATH=build/python /usr/bin/python3 python/bench/bench.py [--quick]
        [--threads 1,2] [--rounds N] [--runs N] [--cases blur_rgb,sobel,...] [--build DIR]

Every case times polymage (a Kernel called with out=) and OpenCV with
cv2.setNumThreads equal to the kernel's threads, both writing into arrays made once, on
the same input arrays. Rounds interleave them: each round runs every implementation at
every thread count in turn (warm-up calls first), so a slow minute of a shared machine
slows all alike; the runs of all rounds are pooled into the median, quartiles and
extremes. Each OpenCV result is checked against the pipeline's output within the stated
tolerance, and where the two cannot match exactly the output says how they differ. Exit
status 1 when a check fails; the targets are reported, never enforced.

Time it alone (/work/shared/tools/timed, or flock /tmp/pm-bench.lock).
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import cv2
except ImportError:                    # Debian's python3-opencv (scripts/install-deps.sh)
    print("bench-python needs OpenCV: apt-get install python3-opencv", file=sys.stderr)
    sys.exit(77)                       # ctest's skip status (test_python_bench)
import polymage as pm
from polymage import filters

try:                                   # the apps in Python (unsharp_mask(), params(), inputs())
    from polymage import apps as _apps
except ImportError:                    # until then: the C samples' pipelines, by canonical text
    _apps = None

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

# The package's targets at 2 threads: OpenCV's median / polymage's at least this much.
TARGETS = {"blur_rgb": 1.0, "sobel": 1.0, "unsharp_mask": 1.5, "harris": 1.5}
CALL_COST_TARGET_US = 5.0

# Picture sizes (rows, cols): the paper's for the apps (samples/*.c paper_rows/cols), and
# unsharp mask's 2048 x 2048 picture for the two filters, which have no paper size; the
# quick sizes are the samples' quick_rows/cols.
SIZES = {"blur_rgb": (2048, 2048), "blur_rgb_u16": (2048, 2048), "sobel": (2048, 2048), "unsharp_mask": (2048, 2048),
         "harris": (6400, 6400), "pyramid_blend": (2048, 2048)}
QUICK_SIZES = {"blur_rgb": (256, 320), "blur_rgb_u16": (256, 320), "sobel": (256, 320), "unsharp_mask": (200, 256),
               "harris": (256, 320), "pyramid_blend": (96, 128)}


# ---- The apps' pipelines, parameters and inputs ----------------------------------------------

def _canon_text(name, build):
    tool = os.environ.get("PM_CANON_TEXT") or os.path.join(build, "python", "pm_py_canon_text")
    r = subprocess.run([tool, name], capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{tool} {name}: {r.stderr.strip()}")
    return r.stdout


def _picture(rows, cols, channels, seed=1):
    """8-bit levels of a synthetic photo (channels x rows x cols): smooth shading, the
    edges of a checkerboard and of discs, and noise, so blurs, thresholds and corner
    responses see structure as in a photo."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, rows, dtype=np.float32)[:, None]
    y = np.linspace(0, 1, cols, dtype=np.float32)[None, :]
    board = ((np.floor(x * 24) + np.floor(y * 24)) % 2) * 50
    discs = (((x * 9) % 1 - 0.5) ** 2 + ((y * 9) % 1 - 0.5) ** 2 < 0.1) * 40
    out = np.empty((channels, rows, cols), np.uint8)
    for c in range(channels):
        shade = 90 + 50 * np.sin(5 * x + 3 * y + c) * np.cos(2 * x - 4 * y)
        noise = rng.integers(-6, 7, (rows, cols))
        out[c] = np.clip(shade + board + discs + noise, 0, 255).astype(np.uint8)
    return out


def _fallback_params(name, rows, cols):
    """The C registry's params(rows, cols) (samples/<name>/<name>.c)."""
    if name == "unsharp_mask":
        return {"R": rows, "C": cols, "threshold": 0.001, "weight": 3.0}
    if name == "harris":
        return {"R": rows - 2, "C": cols - 2}
    if name == "pyramid_blend":
        return {"R": rows + 60, "C": cols + 60}
    raise KeyError(name)


def _fallback_inputs(name, rows, cols):
    """Inputs laid out as the C samples' fill_from lays them out, from _picture."""
    if name == "unsharp_mask":                     # [3][R+4][C+4], a zero frame of 2
        img = np.zeros((3, rows + 4, cols + 4), np.float32)
        img[:, 2:rows + 2, 2:cols + 2] = _picture(rows, cols, 3) / np.float32(255)
        return [img]
    if name == "harris":                           # [rows][cols] grey / 255
        return [_picture(rows, cols, 1)[0] / np.float32(255)]
    if name == "pyramid_blend":                    # clamp-padded 31 before, 29 after
        pic = _picture(rows, cols, 3) / np.float32(255)
        pad = ((0, 0), (31, 29), (31, 29))
        img1 = np.pad(pic, pad, mode="edge")
        img2 = np.pad(np.ascontiguousarray(pic[:, :, ::-1]), pad, mode="edge")
        mask = np.zeros((rows + 60, cols + 60), np.float32)
        mask[31 + (789 * rows) // 2048:] = 1
        return [img1, img2, mask]
    raise KeyError(name)


def app(name, rows, cols, build):
    """(pipeline, params, inputs) of a benchmark app at a picture of rows x cols."""
    if _apps is not None:
        return (getattr(_apps, name)(), _apps.params(name, rows, cols),
                _apps.inputs(name, rows, cols))
    return (pm.Pipeline.from_text(_canon_text(name, build)), _fallback_params(name, rows, cols),
            _fallback_inputs(name, rows, cols))


# ---- The cases: a pipeline and its OpenCV baseline ---------------------------------------------

class Case:
    """One comparison: the pipeline with its parameters, inputs and output arrays, the
    OpenCV baseline opencv() writing into arrays of its own, check(outputs) -> (ok, text),
    and what the two compute differently (`differs`)."""

    def __init__(self, name, size, pipeline, params, inputs, opencv, check, differs):
        self.name, self.size, self.pipeline, self.params = name, size, pipeline, params
        self.inputs, self.opencv, self.check, self.differs = inputs, opencv, check, differs
        self.outputs = [np.empty(s, pm.dtype(t)) for s, (_, t, _) in
                        zip(pipeline.output_shapes(**params), pipeline.outputs)]


def _same(returned, dst):
    """OpenCV reallocates dst silently when it does not fit: insist it did not."""
    assert returned is dst or np.shares_memory(returned, dst), "OpenCV did not use dst"


def blur_rgb_case(rows, cols, build):
    rgb = _picture(rows, cols, 3)
    dst = np.empty_like(rgb)

    def opencv():                                  # one call per plane of the same array
        for c in range(3):
            _same(cv2.GaussianBlur(rgb[c], (5, 5), 0, dst=dst[c],
                                   borderType=cv2.BORDER_REPLICATE), dst[c])

    def check(out):
        d = dst.astype(np.int16) - out[0]
        ok = d.min() >= 0 and d.max() <= 1
        return ok, (f"OpenCV - polymage in {{{d.min()}..{d.max()}}} (allowed 0..1), "
                    f"{np.count_nonzero(d) / d.size:.0%} of the values differ by 1")

    return Case("blur_rgb", f"{rows}x{cols}x3 u8", filters.blur_rgb(), {"R": rows, "C": cols},
                [rgb], opencv, check,
                "GaussianBlur 5x5 (sigma 0: OpenCV's kernel is the same 1 4 6 4 1 / 16) with "
                "BORDER_REPLICATE on each plane; OpenCV rounds the sum / 256 to nearest, "
                "blur_rgb.c rounds it down")


def _blur_rgb_u16():
    """blur_rgb's filter with both passes summed in u16 (the values reach 255 * 16 * 16,
    which fits) and >> 8 for / 256: the same values as blur_rgb() (the check holds it to
    the same relation with OpenCV). The example's pm_stencil_func sums its second pass in
    u32, because it knows only bx's type (u16), not its values' range; this row shows
    what a value-range analysis would gain."""
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.u8, "I", [3, R, C])
        E = pm.pad(I, "E", pm.Boundary.clamp, [1, 2], 2)
        c, x, y = map(pm.Variable, ("c", "x", "y"))
        w = [pm.const(pm.u16, v) for v in (1, 4, 6, 4, 1)]

        def taps(at):                              # w[0] at(-2) + ... + w[4] at(2)
            terms = [at(k - 2) * w[k] for k in range(5)]
            return sum(terms[1:], terms[0])
        bx = pm.Function(([c, x, y], [E.interval(0), pm.Interval(0, R - 1), E.interval(2)]),
                         pm.u16, "bx")
        bx.define(taps(lambda d: E(c, x + d, y).astype(pm.u16)))
        by = pm.Function(([c, x, y], [E.interval(0), pm.Interval(0, R - 1),
                                      pm.Interval(0, C - 1)]), pm.u8, "by")
        by.define((taps(lambda d: bx(c, x, y + d)) >> 8).astype(pm.u8))
        return pm.Pipeline("blur_rgb_u16", [R, C], [I], [by])


def blur_rgb_u16_case(rows, cols, build):
    case = blur_rgb_case(rows, cols, build)
    example = pm.compile(case.pipeline, case.params)(*case.inputs, **case.params)
    against_opencv = case.check

    def check(out):
        ok, text = against_opencv(out)
        same = np.array_equal(out[0], example)
        return ok and same, f"equals blur_rgb's output: {same}; {text}"

    case.name, case.pipeline, case.check = "blur_rgb_u16", _blur_rgb_u16(), check
    case.differs = ("as blur_rgb's; the pipeline is not blur_rgb.c's but the same filter "
                    "with u16 sums and >> 8 (checked equal to blur_rgb's output)")
    return case


def sobel_case(rows, cols, build):
    gray = _picture(rows, cols, 1)[0]
    gx, gy, mag = (np.empty((rows, cols), np.float32) for _ in range(3))
    dst = np.empty((rows, cols), np.uint8)

    def opencv():
        _same(cv2.Sobel(gray, cv2.CV_32F, 1, 0, dst=gx, ksize=3,
                        borderType=cv2.BORDER_REPLICATE), gx)
        _same(cv2.Sobel(gray, cv2.CV_32F, 0, 1, dst=gy, ksize=3,
                        borderType=cv2.BORDER_REPLICATE), gy)
        _same(cv2.magnitude(gx, gy, magnitude=mag), mag)
        _same(cv2.convertScaleAbs(mag, dst=dst), dst)

    def check(out):
        trunc = np.minimum(mag, 255).astype(np.uint8)
        d = dst.astype(np.int16) - out[0]
        ok = np.array_equal(trunc, out[0]) and d.min() >= 0 and d.max() <= 1
        return ok, (f"polymage == OpenCV's f32 magnitude truncated: "
                    f"{np.array_equal(trunc, out[0])}; u8 OpenCV - polymage in "
                    f"{{{d.min()}..{d.max()}}} (allowed 0..1), "
                    f"{np.count_nonzero(d) / d.size:.0%} differ by 1")

    return Case("sobel", f"{rows}x{cols} u8", filters.sobel(), {"R": rows, "C": cols}, [gray],
                opencv, check,
                "Sobel ksize 3 (CV_32F, BORDER_REPLICATE) x and y, magnitude, convertScaleAbs; "
                "OpenCV rounds the magnitude to nearest into u8, sobel.c truncates it")


def unsharp_case(rows, cols, build):
    p, params, (img,) = app("unsharp_mask", rows, cols, build)
    thr, w = params["threshold"], params["weight"]
    R, C = params["R"], params["C"]
    # The planes stacked, (3 (R+4)) x (C+4): each plane's 2-pixel frame of zeros keeps the
    # 5x5 window of every picture pixel inside its own plane, so one call does all three.
    flat = img.reshape(3 * (R + 4), C + 4)
    blur, detail, res = (np.empty_like(flat) for _ in range(3))
    below = np.empty(flat.shape, np.uint8)

    def opencv():                                  # res = sharpened, then img where below
        _same(cv2.GaussianBlur(flat, (5, 5), 0, dst=blur, borderType=cv2.BORDER_CONSTANT), blur)
        _same(cv2.addWeighted(flat, 1 + w, blur, -w, 0, dst=res), res)
        _same(cv2.absdiff(flat, blur, dst=detail), detail)
        _same(cv2.compare(detail, thr, cv2.CMP_LT, dst=below), below)
        _same(cv2.copyTo(flat, below, res), res)

    tol = 1e-4

    def check(out):
        mine = res.reshape(3, R + 4, C + 4)[:, 2:R + 2, 2:C + 2]
        d = np.abs(mine - out[0])
        # where |img - blur| is within rounding of the threshold the two may pick
        # different branches: the pixel then differs by about weight * threshold
        near = np.abs(detail.reshape(3, R + 4, C + 4)[:, 2:R + 2, 2:C + 2] - thr) < 1e-6
        bad = (d > tol) & ~near
        flips = np.count_nonzero((d > tol) & near)
        return not bad.any(), (f"max|diff| {d[~near].max() if (~near).any() else 0:.2g} "
                               f"(tolerance {tol:g}); {flips} pixels at the threshold "
                               f"took the other branch")

    return Case("unsharp_mask", f"{rows}x{cols}x3 f32", p, params, [img], opencv, check,
                "GaussianBlur 5x5 (sigma 0 = 1 4 6 4 1 / 16) over the zero-framed planes, "
                "addWeighted(img, 1+weight, blur, -weight), absdiff, compare, copyTo; "
                "OpenCV also computes the frame (a view of its result is compared)")


def harris_case(rows, cols, build):
    p, params, (img,) = app("harris", rows, cols, build)
    R, C = params["R"], params["C"]
    dst = np.empty_like(img)

    def opencv():   # blockSize 3 (an unnormalized 3x3 box sum), Sobel 3x3 (scale 1/12), k 0.04
        _same(cv2.cornerHarris(img, 3, 3, 0.04, dst=dst), dst)

    rel = 1e-5

    def check(out):
        inner = (slice(2, R), slice(2, C))         # x in [2, R-1], y in [2, C-1]
        ref = dst[inner]
        d = np.abs(ref - out[0][inner]).max()
        top = np.abs(ref).max()
        return d <= rel * top, (f"max|diff| {d:.2g} = {d / top:.2g} x max|response| "
                                f"(tolerance {rel:g}x) inside the 2-pixel frame")

    return Case("harris", f"{rows}x{cols} f32", p, params, [img], opencv, check,
                "cornerHarris(blockSize 3, ksize 3, k 0.04): the same Sobel / 12, 3x3 box sum "
                "and det - k trace^2; OpenCV also fills the 2-pixel frame (BORDER_REFLECT_101) "
                "that the pipeline leaves unwritten; compared inside it")


def pyramid_blend_case(rows, cols, build):
    p, params, (img1, img2, mask) = app("pyramid_blend", rows, cols, build)
    levels = 4

    def pyramid_arrays(shape):
        sizes = [shape]
        for _ in range(levels - 1):
            sizes.append(((sizes[-1][0] + 1) // 2, (sizes[-1][1] + 1) // 2))
        return [np.empty(s, np.float32) for s in sizes]

    # Every array made once: the mask's pyramid and 1 - it, per plane the two pyramids,
    # the up-sampled levels and the blend.
    m, m1 = pyramid_arrays(mask.shape), pyramid_arrays(mask.shape)
    g1, g2, l1, l2, up, res, t1, t2 = (pyramid_arrays(mask.shape) for _ in range(8))
    result = np.empty(img1.shape, np.float32)

    def down(src, dst):
        _same(cv2.pyrDown(src, dst=dst, dstsize=dst.shape[::-1]), dst)

    def upto(src, dst):
        _same(cv2.pyrUp(src, dst=dst, dstsize=dst.shape[::-1]), dst)

    def opencv():
        m[0][...] = mask
        for lv in range(1, levels):
            down(m[lv - 1], m[lv])
        for lv in range(levels):
            cv2.subtract(1.0, m[lv], dst=m1[lv])
        for c in range(3):                         # one plane at a time
            for g, lap, src in ((g1, l1, img1[c]), (g2, l2, img2[c])):
                g[0] = src
                for lv in range(1, levels):
                    down(g[lv - 1], g[lv])
                for lv in range(levels - 1):       # Laplacian levels: G_l - Up(G_l+1)
                    upto(g[lv + 1], up[lv])
                    cv2.subtract(g[lv], up[lv], dst=lap[lv])
                lap[levels - 1] = g[levels - 1]
            for lv in range(levels):               # Lap1 * M + Lap2 * (1 - M)
                cv2.multiply(l1[lv], m[lv], dst=t1[lv])
                cv2.multiply(l2[lv], m1[lv], dst=t2[lv])
                cv2.add(t1[lv], t2[lv], dst=res[lv])
            out = res[levels - 1]
            for lv in range(levels - 2, -1, -1):   # collapse: Res_l + Up(O_l+1)
                upto(out, up[lv])
                cv2.add(res[lv], up[lv], dst=res[lv])
                out = res[lv]
            result[c] = out

    tol = 1e-4

    def check(outs):
        r, cc = outs[0].shape[1:]
        d = np.abs(result[:, 31:31 + r, 31:31 + cc] - outs[0]).max()
        return d <= tol, f"max|diff| {d:.2g} (tolerance {tol:g}) over the output"

    return Case("pyramid_blend", f"{rows}x{cols}x3 f32", p, params, [img1, img2, mask], opencv,
                check,
                "pyrDown x3 / pyrUp per plane (OpenCV's 5-tap kernel and up-sampling are the "
                "app's), subtract, multiply, add; OpenCV computes every level over the whole "
                "padded picture with BORDER_REFLECT_101 (the pipeline only where the output "
                "needs it), equal inside; the mask's levels and 1 - mask once per call, not "
                "per plane. The other "
                "pyramid apps (local Laplacian, interpolate) use other kernels than "
                "pyrDown/pyrUp")


CASES = {"blur_rgb": blur_rgb_case, "blur_rgb_u16": blur_rgb_u16_case, "sobel": sobel_case,
         "unsharp_mask": unsharp_case, "harris": harris_case, "pyramid_blend": pyramid_blend_case}


# ---- Timing ------------------------------------------------------------------------------------

def stats(ms):
    q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) > 1 else ms * 3
    return {"median": statistics.median(ms), "q1": q[0], "q3": q[2], "min": min(ms),
            "max": max(ms), "n": len(ms)}


def _timed_runs(run, runs, first):
    """Warm-up calls (at least 2 and 20 ms; 3 in the first round), then `runs` timed."""
    t0, n = time.perf_counter(), 0
    while n < (3 if first else 2) or time.perf_counter() - t0 < 0.02:
        run()
        n += 1
    out = []
    for _ in range(runs):
        a = time.perf_counter()
        run()
        out.append((time.perf_counter() - a) * 1e3)
    return out


def bench_case(case, threads, rounds, runs):
    kernels = {t: pm.compile(case.pipeline, case.params, threads=t) for t in threads}

    def pm_run(t):
        k = kernels[t]
        return lambda: k(*case.inputs, out=case.outputs, **case.params)

    impls = {"polymage": pm_run, "opencv": lambda t: case.opencv}  # cv2.setNumThreads(t) first
    checks = []
    case.opencv()
    for t in threads:                               # the kernel at each thread count
        case.outputs[0].fill(0)
        pm_run(t)()
        ok, text = case.check(case.outputs)
        checks.append((t, ok, text))
    times = {(name, t): [] for name in impls for t in threads}
    order = list(impls)
    for r in range(rounds):
        for t in threads:
            cv2.setNumThreads(t)
            for name in (order if r % 2 == 0 else order[::-1]):
                times[(name, t)] += _timed_runs(impls[name](t), runs, r == 0)
    return {k: stats(v) for k, v in times.items()}, checks


# ---- The call cost -----------------------------------------------------------------------------

def _autorange(call, most, seconds=0.1):
    """Calls per batch: as many as take about `seconds`, at least 20 and at most `most` (a
    kernel on 2 threads whose second core is busy costs a scheduler slice per call)."""
    t0 = time.perf_counter()
    for _ in range(20):
        call()
    per_call = (time.perf_counter() - t0) / 20
    return max(20, min(most, int(seconds / per_call)))


def call_cost(threads, rounds, most_calls, batches, build):
    """One call of blur_rgb at 8 x 8 from Python (Kernel.__call__ with out=) against
    pm_kernel_run of the same kernel from C (pm_call_cost), batches of up to `most_calls`
    calls (fewer when calls are slow), rounds interleaving the two; returns
    {threads: (Python ns per call, C ns per call, calls per batch)}."""
    tool = os.environ.get("PM_CALL_COST") or os.path.join(build, "python", "pm_call_cost")
    p = filters.blur_rgb()
    params = {"R": 8, "C": 8}
    a = _picture(8, 8, 3)
    out = np.empty((3, 8, 8), np.uint8)
    values = [("f:%r" if t in (pm.f32, pm.f64) else "i:%d") % params[n] for n, t in p.params]
    kernels = {t: pm.compile(p, params, threads=t) for t in threads}
    calls = {t: _autorange(lambda: kernels[t](a, R=8, C=8, out=out), most_calls)
             for t in threads}
    result = {t: ([], [], calls[t]) for t in threads}
    with tempfile.NamedTemporaryFile("w", suffix=".pmtext") as f:
        f.write(p.text)
        f.flush()
        for r in range(rounds):
            for t in threads:
                k, n = kernels[t], calls[t]
                for _ in range(n):                  # warm-up
                    k(a, R=8, C=8, out=out)
                for _ in range(batches):
                    t0 = time.perf_counter_ns()
                    for _ in range(n):
                        k(a, R=8, C=8, out=out)
                    result[t][0].append((time.perf_counter_ns() - t0) / n)
                c = subprocess.run([tool, f.name, str(t), str(n), str(batches)] + values,
                                   capture_output=True, text=True)
                if c.returncode:
                    raise RuntimeError(f"{tool}: {c.stderr.strip()}")
                result[t][1].extend(float(line.split()[1]) for line in c.stdout.splitlines())
    return result


# ---- Report ------------------------------------------------------------------------------------

def _load():
    """The 1-minute load average: what else ran on the machine's cores meanwhile."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, 2 rounds: a smoke run")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--runs", type=int, help="timed runs per round")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--no-call-cost", action="store_true")
    ap.add_argument("--no-dask", action="store_true",
                    help="skip Harris on Dask (dask_bench.py: 16384^2, --quick 1024^2)")
    ap.add_argument("--build", default=os.environ.get("PM_BUILD", os.path.join(ROOT, "build")),
                    help="the build tree (pm_py_canon_text, pm_call_cost)")
    a = ap.parse_args(argv)
    threads = [int(t) for t in a.threads.split(",")]
    rounds = a.rounds or (2 if a.quick else 5)
    runs = a.runs or (3 if a.quick else 4)
    sizes = QUICK_SIZES if a.quick else SIZES
    cv2.ocl.setUseOpenCL(False)

    print(f"polymage {pm.__version__} against OpenCV {cv2.__version__} "
          f"(cv2.setNumThreads = the kernel's threads), the same arrays, one process")
    print(f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
          f"apps from {'polymage.apps' if _apps else 'the C samples (canonical text)'}; "
          f"{rounds} rounds x {runs} runs, interleaved; times in ms; load average {_load()}")
    head = (f"{'case':14} {'size':18} {'thr':>3} {'impl':9} {'median':>9} {'q1':>9} "
            f"{'q3':>9} {'min':>9} {'max':>9} {'vs PM':>7}")
    print(head)
    failed, ratios = [], {}
    for name in a.cases.split(","):
        rows, cols = sizes[name]
        case = CASES[name](rows, cols, a.build)
        res, checks = bench_case(case, threads, rounds, runs)
        for t in threads:
            base = res[("polymage", t)]["median"]
            for (impl, tt), s in res.items():
                if tt != t:
                    continue
                ratio = s["median"] / base
                if impl == "opencv":
                    ratios[(name, t)] = ratio
                vs = "-" if impl == "polymage" else f"{ratio:.2f}x"
                print(f"{name:14} {case.size:18} {t:3} {impl:9} {s['median']:9.3f} "
                      f"{s['q1']:9.3f} {s['q3']:9.3f} {s['min']:9.3f} {s['max']:9.3f} {vs:>7}")
        for t, ok, text in checks:
            print(f"  check, polymage at {t} thread(s): {'ok' if ok else 'FAIL'}: {text}")
            if not ok:
                failed.append(f"{name} at {t} thread(s): {text}")
        print(f"  OpenCV: {case.differs}")
        del case
    print("vs PM: the median of that implementation / polymage's at the same threads "
          "(above 1: polymage is faster)")

    cost = None
    if not a.no_call_cost:
        most, batches = (2000, 3) if a.quick else (20000, 5)
        cost = call_cost(threads, 2 if a.quick else 3, most, batches, a.build)
        print(f"\ncall cost: blur_rgb at 8x8x3 u8, ns per call (median [min-max] over {batches} "
              f"batches x rounds)")
        for t in threads:
            py, c, n = cost[t]
            print(f"  {t} thread(s), {n} calls a batch: Python Kernel(..., out=) "
                  f"{statistics.median(py):8.0f} "
                  f"[{min(py):.0f}-{max(py):.0f}]   C pm_kernel_run {statistics.median(c):8.0f} "
                  f"[{min(c):.0f}-{max(c):.0f}]   Python - C "
                  f"{(statistics.median(py) - statistics.median(c)) / 1e3:.2f} us")

    dask_ok, dask_ratios = True, {}
    if not a.no_dask:
        import dask_bench
        n = 1024 if a.quick else 16384
        # row bands of half the picture: one a worker; of the chunkings measured
        # (4096^2, 8192^2, 4096 x 16384, 8192 x 16384) the fastest on 2 workers
        dask_ok, dask_ratios = dask_bench.run(n, (n // 2, n), 1 if a.quick else 3,
                                              2 if a.quick else 3)
        if not dask_ok:
            failed.append("dask: an output block differs from the kernel's")

    print(f"\nload average at the end: {_load()} (other processes on the cores; a kernel on 2 "
          f"threads waits at its end for both)")
    print("\ntargets (at 2 threads):")
    for name, want in TARGETS.items():
        if (name, 2) in ratios:
            got = ratios[(name, 2)]
            print(f"  {name:14} OpenCV/polymage >= {want:.1f}x: {got:.2f}x "
                  f"{'met' if got >= want else 'MISSED'}")
    if cost and 2 in cost:
        py, c, _ = cost[2]
        extra = (statistics.median(py) - statistics.median(c)) / 1e3
        print(f"  call cost      Python - C <= {CALL_COST_TARGET_US:.0f} us: {extra:.2f} us "
              f"{'met' if extra <= CALL_COST_TARGET_US else 'MISSED'}")
    if not a.no_dask:
        dask_bench.report_targets(dask_ratios)
    if failed:
        print("\nchecks failed:\n  " + "\n  ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
