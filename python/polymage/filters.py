"""Three filters built with polymage, each the pipeline of a C example of
samples/examples (same canonical text): docs/jit.md counts their lines against Halide's.
Each function returns a Pipeline with parameters R and C (rows, columns)."""
import polymage as pm


def blur_rgb():
    """Separable 5x5 Gaussian ([1 4 6 4 1] / 16 twice) of an RGB u8 image I(c, row, col),
    edges repeated; sums in u16, the result rounded down into u8 (blur_rgb.c)."""
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.u8, "I", [3, R, C])
        E = pm.pad(I, "E", pm.Boundary.clamp, [1, 2], 2)
        bx = pm.stencil_func(E, "bx", pm.u16, [1, 4, 6, 4, 1], [1])
        by = pm.stencil_func(bx, "by", pm.u8, [1, 4, 6, 4, 1], [2], 1 / 256)
        return pm.Pipeline("blur_rgb", [R, C], [I], [by])


def sobel():
    """Sobel gradient magnitude of a gray u8 image, edges repeated: sums in f32, the
    magnitude truncated and saturated into u8 (sobel.c)."""
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.u8, "I", [R, C])
        E = pm.pad(I, "E", pm.Boundary.clamp, [0, 1], 1)
        gx = pm.stencil_func(E, "gx", pm.f32, [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], [0, 1])
        gy = pm.stencil_func(E, "gy", pm.f32, [[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [0, 1])
        mag = pm.pointwise("mag", pm.u8, lambda dx, dy: pm.sqrt(dx * dx + dy * dy), gx, gy)
        return pm.Pipeline("sobel", [R, C], [I], [mag])


def hist_eq():
    """Histogram equalization of a gray u8 image: the histogram, its running sum cdf, the
    cdf of the darkest pixel present (cmin), and the pixel (cdf - cmin) * 255 / (R*C - cmin)
    in i64, rounded down (hist_eq.c)."""
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.u8, "I", [R, C])
        (x, y, v), bins, pixels = map(pm.Variable, "xyv"), pm.Interval(0, 255), I.intervals()
        hist = pm.Reduction(([v], [bins]), ([x, y], pixels), pm.i32, "hist").define([I(x, y)], 1)
        cdf = pm.Function(([v], [bins]), pm.i32, "cdf")
        cdf.define(pm.Case(v == 0, hist(v)), pm.Case(v >= 1, cdf(v - 1) + hist(v)))
        cmin = pm.Reduction(([], []), ([x, y], pixels), pm.i32, "cmin", pm.Op.min, 2**31 - 1)
        lo = cmin.define([], cdf(I(x, y)))().astype(pm.i64)
        n, num = R.astype(pm.i64) * C.astype(pm.i64), (cdf(I(x, y)).astype(pm.i64) - lo) * 255
        out = pm.Function(([x, y], pixels), pm.u8, "out").define(num // pm.max(n - lo, 1))
        return pm.Pipeline("hist_eq", [R, C], [I], [out])
