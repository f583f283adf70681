"""The seven PolyMage benchmark apps built with polymage, each the pipeline of its C sample
(samples/<name>/<name>.c, docs/apps.md): the same builder calls, so the same canonical
text and the same kernel. NAMES lists them in the paper's order; build(name) builds one,
params(name, rows, cols) gives its parameter values for a rows x cols picture and
inputs(name, rows, cols) its inputs made from the generated photo, both exactly as the C
registry (samples/samples.h) gives them."""
import ctypes as _ctypes
import ctypes.util as _ctypes_util
import operator as _operator

import numpy as _np

import polymage as pm

NAMES = ("unsharp_mask", "bilateral_grid", "harris", "camera_pipe", "pyramid_blend",
         "interpolate", "local_laplacian")

# What samples/<name>/<name>.c registers: the smallest picture the app is served for, a
# small size for tests, the paper's size (rows, cols), and the largest difference from the
# interpreter allowed for its output (0: an integer output, exact).
MIN_SIZE = {"unsharp_mask": (8, 8), "bilateral_grid": (8, 8), "harris": (8, 8),
            "camera_pipe": (16, 16), "pyramid_blend": (16, 16), "interpolate": (1, 1),
            "local_laplacian": (128, 128)}
QUICK_SIZE = {"unsharp_mask": (200, 256), "bilateral_grid": (64, 96), "harris": (256, 320),
              "camera_pipe": (64, 96), "pyramid_blend": (96, 128), "interpolate": (512, 512),
              "local_laplacian": (128, 256)}
PAPER_SIZE = {"unsharp_mask": (2048, 2048), "bilateral_grid": (2560, 1536),
              "harris": (6400, 6400), "camera_pipe": (1920, 2528),
              "pyramid_blend": (2048, 2048), "interpolate": (2560, 1536),
              "local_laplacian": (2560, 1536)}
TOLERANCE = {"unsharp_mask": 1e-4, "bilateral_grid": 1e-4, "harris": 1e-4, "camera_pipe": 0,
             "pyramid_blend": 1e-4, "interpolate": 1e-4, "local_laplacian": 0}


def _rows_cols():
    """The parameters R and C (rows, columns) every app takes first."""
    return pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")


# ---- 1. Unsharp Mask -------------------------------------------------------------------------

def _binomial5(f, c, x, y, along):
    """(f(x-2) + 4 f(x-1) + 6 f(x) + 4 f(x+1) + f(x+2)) / 16 along dimension `along`, as
    the sum of f times 0.0625, 0.25, 0.375, 0.25, 0.0625."""
    total = None
    for k, w in zip(range(-2, 3), (0.0625, 0.25, 0.375, 0.25, 0.0625)):
        term = f(c, x + k if along == 0 else x, y + k if along == 1 else y) * w
        total = term if total is None else total + term
    return total


def unsharp_mask():
    """img f32 [3][R+4][C+4] (the picture inside a zero border of 2) to mask f32 [3][R][C]:
    the picture sharpened by weight times its detail where the detail reaches threshold."""
    with pm.Context():
        R, C = _rows_cols()
        threshold, weight = pm.Parameter(pm.f32, "threshold"), pm.Parameter(pm.f32, "weight")
        img = pm.Image(pm.f32, "img", [3, R + 4, C + 4])
        c, x, y = map(pm.Variable, "cxy")
        channels, rows, cols = pm.Interval(0, 2), pm.Interval(2, R + 1), pm.Interval(2, C + 1)
        blurx = pm.Function(([c, x, y], [channels, rows, pm.Interval(0, C + 3)]), pm.f32, "blurx")
        blurx.define(_binomial5(img, c, x, y, 0))
        dom = ([c, x, y], [channels, rows, cols])
        blury = pm.Function(dom, pm.f32, "blury").define(_binomial5(blurx, c, x, y, 1))
        sharpen = pm.Function(dom, pm.f32, "sharpen")
        sharpen.define(img(c, x, y) * (weight + 1.0) - blury(c, x, y) * weight)
        detail = abs(img(c, x, y) - blury(c, x, y))
        mask = pm.Function(dom, pm.f32, "mask")
        mask.define(pm.select(detail < threshold, img(c, x, y), sharpen(c, x, y)))
        return pm.Pipeline("unsharp_mask", [R, C, threshold, weight], [img], [mask])


# ---- 2. Bilateral Grid -----------------------------------------------------------------------

def _binomial5_4d(g, at, along):
    """The unnormalised 1 4 6 4 1 filter along dimension `along` of a 4-D function."""
    total = None
    for k, w in zip(range(-2, 3), (1, 4, 6, 4, 1)):
        args = list(at)
        args[along] = at[along] + k
        term = g(*args)
        if w != 1:
            term = float(w) * term
        total = term if total is None else total + term
    return total


def _lerp(u, v, w):
    return u + w * (v - u)


def bilateral_grid():
    """input f32 [R][C] (grey, padded by 24 before and 32 after) to filtered f32
    [R-56][C-56]: splat into a grid of 8 x 8 cells and 15 intensities, blur it, read it
    back trilinearly."""
    with pm.Context():
        R, C = _rows_cols()
        inp = pm.Image(pm.f32, "input", [R, C])
        GX, GY = (R - 33) // 8 + 3, (C - 33) // 8 + 3
        c, gx, gy, z = cell = [pm.Variable(n) for n in ("c", "gx", "gy", "z")]
        channels, all_gx, all_gy = pm.Interval(0, 1), pm.Interval(1, GX), pm.Interval(1, GY)
        inner_gx, inner_gy = pm.Interval(3, GX - 2), pm.Interval(3, GY - 2)
        blur_z = pm.Interval(2, 12)

        rc, rgx, rgy, ri, rj = (pm.Variable(n) for n in ("rc", "rgx", "rgy", "ri", "rj"))
        window = pm.Interval(0, 8)
        grid = pm.Reduction((cell, [channels, all_gx, all_gy, pm.Interval(0, 14)]),
                            ([rc, rgx, rgy, ri, rj], [channels, all_gx, all_gy, window, window]),
                            pm.f32, "grid")
        p = inp(rgx * 8 - 4 + ri, rgy * 8 - 4 + rj)
        zb = pm.cast(pm.i32, p * 10.0 + 0.5) + 2
        grid.define([rc, rgx, rgy, zb], pm.select(rc == 0, p, 1.0))

        blurz = pm.Function((cell, [channels, all_gx, all_gy, blur_z]), pm.f32, "blurz")
        blurz.define(_binomial5_4d(grid, cell, 3))
        blurx = pm.Function((cell, [channels, inner_gx, all_gy, blur_z]), pm.f32, "blurx")
        blurx.define(_binomial5_4d(blurz, cell, 1))
        blury = pm.Function((cell, [channels, inner_gx, inner_gy, blur_z]), pm.f32, "blury")
        blury.define(_binomial5_4d(blurx, cell, 2))

        x, y = pm.Variable("x"), pm.Variable("y")
        interpolated = pm.Function(([c, x, y], [channels, pm.Interval(24, R - 33),
                                                pm.Interval(24, C - 33)]),
                                   pm.f32, "interpolated")
        p = inp(x, y)
        zv = p * 10.0
        zi = pm.cast(pm.i32, zv)
        zf = zv - pm.cast(pm.f32, zi)
        xi, yi = x // 8, y // 8
        xf, yf = pm.cast(pm.f32, x % 8) / 8.0, pm.cast(pm.f32, y % 8) / 8.0
        # z clamped to blury's domain: a pixel of 1.0 reads z = 13 with weight 0
        # (bilateral_grid.c's header)
        v = [[[blury(c, xi + a, yi + b, pm.clamp(zi + (2 + d), 2, 12)) for d in range(2)]
              for b in range(2)] for a in range(2)]
        near_z = _lerp(_lerp(v[0][0][0], v[1][0][0], xf), _lerp(v[0][1][0], v[1][1][0], xf), yf)
        far_z = _lerp(_lerp(v[0][0][1], v[1][0][1], xf), _lerp(v[0][1][1], v[1][1][1], xf), yf)
        interpolated.define(_lerp(near_z, far_z, zf))

        filtered = pm.Function(([x, y], [pm.Interval(0, R - 57), pm.Interval(0, C - 57)]),
                               pm.f32, "filtered")
        px, py = x + 24, y + 24
        weight = interpolated(1, px, py)
        filtered.define(pm.select(weight > 0.0, interpolated(0, px, py) / weight, inp(px, py)))
        return pm.Pipeline("bilateral_grid", [R, C], [inp], [filtered])


# ---- 3. Harris Corner ------------------------------------------------------------------------

def harris():
    """I f32 [R+2][C+2] to the corner response harris f32 [R+2][C+2], written where
    2 <= x <= R-1, 2 <= y <= C-1 (the frame is never written)."""
    with pm.Context():
        R, C = _rows_cols()
        I = pm.Image(pm.f32, "I", [R + 2, C + 2])
        x, y = pm.Variable("x"), pm.Variable("y")
        dom = ([x, y], [pm.Interval(0, R + 1), pm.Interval(0, C + 1)])
        c = pm.between(x, 1, R) & pm.between(y, 1, C)
        cb = pm.between(x, 2, R - 1) & pm.between(y, 2, C - 1)

        def stage(name, cond, value):
            return pm.Function(dom, pm.f32, name).define(pm.Case(cond, value))

        Iy = stage("Iy", c, pm.Stencil(I, (x, y), [[-1, -2, -1], [0, 0, 0], [1, 2, 1]], 1.0 / 12))
        Ix = stage("Ix", c, pm.Stencil(I, (x, y), [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], 1.0 / 12))
        Ixx = stage("Ixx", c, Ix(x, y) * Ix(x, y))
        Iyy = stage("Iyy", c, Iy(x, y) * Iy(x, y))
        Ixy = stage("Ixy", c, Ix(x, y) * Iy(x, y))
        Sxx, Syy, Sxy = (pm.Function(dom, pm.f32, n) for n in ("Sxx", "Syy", "Sxy"))
        for S, P in ((Sxx, Ixx), (Syy, Iyy), (Sxy, Ixy)):
            S.define(pm.Case(cb, pm.Stencil(P, (x, y), [[1] * 3] * 3, 1)))
        det = stage("det", cb, Sxx(x, y) * Syy(x, y) - Sxy(x, y) * Sxy(x, y))
        trace = stage("trace", cb, Sxx(x, y) + Syy(x, y))
        out = stage("harris", cb, det(x, y) - trace(x, y) * 0.04 * trace(x, y))
        return pm.Pipeline("harris", [R, C], [I], [out])


# ---- 4. Camera Pipeline ----------------------------------------------------------------------

def camera_pipe():
    """A raw i16 Bayer mosaic img [R][C] (G R / B G) and the colour matrices matrix_3200,
    matrix_7000 f32 [3][4] to process u8 [3][R-48][C-64], channels B, G, R: hot-pixel
    suppression, edge-aware demosaicking, the colour matrix for colour_temp and a tone
    curve (contrast, gamma)."""
    with pm.Context():
        R, C = _rows_cols()
        colour_temp, contrast, gamma = (pm.Parameter(pm.f32, n)
                                        for n in ("colour_temp", "contrast", "gamma"))
        img = pm.Image(pm.i16, "img", [R, C])
        m3200 = pm.Image(pm.f32, "matrix_3200", [3, 4])
        m7000 = pm.Image(pm.f32, "matrix_7000", [3, 4])
        x, y = pm.Variable("x"), pm.Variable("y")
        R2, C2 = R // 2, C // 2

        def plane(name, x0, x1, y0, y1):
            return pm.Function(([x, y], [pm.Interval(x0, x1), pm.Interval(y0, y1)]), pm.i16, name)

        def at(f, dx, dy):
            return pm.cast(pm.i32, f(x + dx, y + dy))

        def half_sum(u, v):
            return pm.cdiv(u + v, 2)

        def colour_from_pair(own, g, col, px, py, qx, qy):
            green = half_sum(at(g, px, py), at(g, qx, qy))
            colour = half_sum(at(col, px, py), at(col, qx, qy))
            return own - green + colour

        def diagonal_colour(own, g, col, p, n):
            pos = colour_from_pair(own, g, col, *p)
            pos_d = pm.absd(at(col, p[0], p[1]), at(col, p[2], p[3]))
            neg = colour_from_pair(own, g, col, *n)
            neg_d = pm.absd(at(col, n[0], n[1]), at(col, n[2], n[3]))
            return pm.select(pos_d < neg_d, pos, neg)

        def interleave(name, even, odd, x0, x1, y0, y1, along_x):
            half = (x if along_x else y) // 2
            at_half = (half, y) if along_x else (x, half)
            return plane(name, x0, x1, y0, y1).define(
                pm.select((x if along_x else y) % 2 == 0, even(*at_half), odd(*at_half)))

        denoised = plane("denoised", 8, R - 31, 12, C - 43)
        n = [img(x - 2, y), img(x + 2, y), img(x, y - 2), img(x, y + 2)]
        lo = pm.min(pm.min(n[0], n[1]), pm.min(n[2], n[3]))
        hi = pm.max(pm.max(n[0], n[1]), pm.max(n[2], n[3]))
        denoised.define(pm.max(lo, pm.min(hi, img(x, y))))

        c = pm.Variable("c")
        deinterleaved = pm.Function(([c, x, y], [pm.Interval(0, 3), pm.Interval(4, R2 - 16),
                                                 pm.Interval(6, C2 - 22)]),
                                    pm.i16, "deinterleaved")
        deinterleaved.define(*(pm.Case(c == k, denoised(x * 2 + k // 2, y * 2 + k % 2))
                               for k in range(4)))
        g_gr, r_r, b_b, g_gb = (plane(name, 4, R2 - 16, 6, C2 - 22).define(deinterleaved(k, x, y))
                                for k, name in enumerate(("g_gr", "r_r", "b_b", "g_gb")))

        g_r = plane("g_r", 5, R2 - 17, 7, C2 - 23).define(pm.select(
            pm.absd(at(g_gr, 0, 1), at(g_gr, 0, 0)) < pm.absd(at(g_gb, -1, 0), at(g_gb, 0, 0)),
            half_sum(at(g_gr, 0, 1), at(g_gr, 0, 0)), half_sum(at(g_gb, -1, 0), at(g_gb, 0, 0))))
        g_b = plane("g_b", 5, R2 - 17, 7, C2 - 23).define(pm.select(
            pm.absd(at(g_gb, 0, -1), at(g_gb, 0, 0)) < pm.absd(at(g_gr, 1, 0), at(g_gr, 0, 0)),
            half_sum(at(g_gb, 0, -1), at(g_gb, 0, 0)), half_sum(at(g_gr, 1, 0), at(g_gr, 0, 0))))

        # one literal node each, shared by every domain that uses it (as in the C code)
        h0 = (pm.literal(6), R2 - 18, pm.literal(8), C2 - 24)
        r_gr = plane("r_gr", *h0).define(colour_from_pair(at(g_gr, 0, 0), g_r, r_r, 0, 0, 0, -1))
        b_gr = plane("b_gr", *h0).define(colour_from_pair(at(g_gr, 0, 0), g_b, b_b, 0, 0, -1, 0))
        r_gb = plane("r_gb", *h0).define(colour_from_pair(at(g_gb, 0, 0), g_r, r_r, 0, 0, 1, 0))
        b_gb = plane("b_gb", *h0).define(colour_from_pair(at(g_gb, 0, 0), g_b, b_b, 0, 0, 0, 1))
        r_b = plane("r_b", *h0).define(
            diagonal_colour(at(g_b, 0, 0), g_r, r_r, (0, 0, 1, -1), (0, -1, 1, 0)))
        b_r = plane("b_r", *h0).define(
            diagonal_colour(at(g_r, 0, 0), g_b, b_b, (0, 0, -1, 1), (0, 1, -1, 0)))

        fy0, fy1, fx0, fx1 = pm.literal(16), C - 49, pm.literal(12), R - 37
        half_rows = (h0[0], h0[1], fy0, fy1)
        redX1 = interleave("redX1", r_gr, r_r, *half_rows, False)
        redX2 = interleave("redX2", r_b, r_gb, *half_rows, False)
        greenX1 = interleave("greenX1", g_gr, g_r, *half_rows, False)
        greenX2 = interleave("greenX2", g_b, g_gb, *half_rows, False)
        blueX1 = interleave("blueX1", b_gr, b_r, *half_rows, False)
        blueX2 = interleave("blueX2", b_b, b_gb, *half_rows, False)
        red = interleave("red", redX1, redX2, fx0, fx1, fy0, fy1, True)
        green = interleave("green", greenX1, greenX2, fx0, fx1, fy0, fy1, True)
        blue = interleave("blue", blueX1, blueX2, fx0, fx1, fy0, fy1, True)

        i, j = pm.Variable("i"), pm.Variable("j")
        matrix = pm.Function(([i, j], [pm.Interval(0, 2), pm.Interval(0, 3)]), pm.i32, "matrix")
        alpha = ((1.0 / colour_temp - pm.literal(1.0 / 3200))
                 / (pm.const(pm.f32, 1.0 / 7000) - pm.const(pm.f32, 1.0 / 3200)))
        mixed = m3200(i, j) * alpha + m7000(i, j) * (1.0 - alpha)
        matrix.define(pm.cast(pm.i32, mixed * 256.0))

        channels = pm.Interval(0, 2)
        out_dom = ([c, x, y], [channels, pm.Interval(fx0, fx1), pm.Interval(fy0, fy1)])
        corrected = pm.Function(out_dom, pm.i16, "corrected")
        row = 2 - c
        total = matrix(row, 3)
        for k, f in enumerate((red, green, blue)):
            total = total + matrix(row, k) * pm.cast(pm.i32, f(x, y))
        corrected.define(pm.cdiv(total, 256))

        v = pm.Variable("v")
        curve = pm.Function(([v], [pm.Interval(-32768, 32767)]), pm.u8, "curveLUT")
        xf = pm.clamp(pm.cast(pm.f32, v) / 1024.0, 0.0, 1.0)
        g = xf ** (1.0 / gamma)
        bb = 2.0 - pm.const(pm.f32, 2) ** (contrast / 100.0)
        aa = 2.0 - 2.0 * bb
        ng = 1.0 - g
        upper = 1.0 - (aa * ng * ng + bb * ng)
        lower = aa * g * g + bb * g
        z = pm.select(g > 0.5, upper, lower)
        curve.define(pm.cast(pm.u8, pm.min(pm.max(z * 256.0, 0.0), 255.0)))

        process = pm.Function(out_dom, pm.u8, "process").define(curve(corrected(c, x, y)))
        return pm.Pipeline("camera_pipe", [R, C, colour_temp, contrast, gamma],
                           [img, m3200, m7000], [process])


# ---- 5. Pyramid Blending ---------------------------------------------------------------------

def pyramid_blend():
    """img1, img2 f32 [3][R][C] and mask f32 [R][C] (padded by 31 before and 29 after) to
    blend f32 [3][R-60][C-60]: the two pictures' Laplacian pyramids (4 levels) blended by
    the mask's Gaussian pyramid, then collapsed."""
    levels = 4
    with pm.Context():
        R, C = _rows_cols()
        c, x, y = map(pm.Variable, "cxy")

        def scaled(n, level):
            return n if level == 0 else n // (1 << level)

        def stage(name, colour, rows, cols):
            if colour:
                return pm.Function(([c, x, y], [pm.Interval(0, 2), rows, cols]), pm.f32, name)
            return pm.Function(([x, y], [rows, cols]), pm.f32, name)

        def at(f, u, v):
            return f(c, u, v) if f.ndims == 3 else f(u, v)

        def down5(f, along_x):
            t2 = (x if along_x else y) * 2
            total = None
            for k, w in zip(range(-2, 3), (1, 4, 6, 4, 1)):
                term = at(f, t2 + k, y) if along_x else at(f, x, t2 + k)
                if w != 1:
                    term = float(w) * term
                total = term if total is None else total + term
            return total * 0.0625

        def pyr_down(what, f, level):
            colour = f.ndims == 3
            rows = pm.Interval(level, scaled(R, level) - 2)
            dx = stage(f"Dx_{what}_L{level}", colour, rows,
                       pm.Interval(level - 1, scaled(C, level - 1) - 2))
            dx.define(down5(f, True))
            dy = stage(f"Dy_{what}_L{level}", colour, rows,
                       pm.Interval(level, scaled(C, level) - 2))
            return dy.define(down5(dx, False))

        def up_span(n, level):
            k = 1 << (levels - level)
            return pm.Interval(2 * k - 1, scaled(n, level) + (-2 * k + 2))

        def up3(f, along_x, odd):
            t = x if along_x else y

            def call(u):
                return at(f, u, y) if along_x else at(f, x, u)
            if not odd:
                half = t // 2
                total = call(half - 1) + 6.0 * call(half) + call(half + 1)
            else:
                total = 4.0 * call((t - 1) // 2) + 4.0 * call((t + 1) // 2)
            return total * 0.125

        def parity_is(t, parity):
            return t % 2 == parity

        def up_x(name, fd, level):
            ux = stage(name, True, up_span(R, level), up_span(C, level + 1))
            return ux.define(pm.Case(parity_is(x, 0), up3(fd, True, False)),
                             pm.Case(parity_is(x, 1), up3(fd, True, True)))

        def up_y_combined(name, base, sign, ux, level):
            f = stage(name, True, up_span(R, level), up_span(C, level))
            own = at(base, x, y)
            even, odd = up3(ux, False, False), up3(ux, False, True)
            return f.define(
                pm.Case(parity_is(y, 0), own + even if sign > 0 else own - even),
                pm.Case(parity_is(y, 1), own + odd if sign > 0 else own - odd))

        img1 = pm.Image(pm.f32, "img1", [3, R, C])
        img2 = pm.Image(pm.f32, "img2", [3, R, C])
        mask = pm.Image(pm.f32, "mask", [R, C])
        names = ("img1", "img2", "mask")
        gauss = []
        for name, image in zip(names, (img1, img2, mask)):
            g = [image]
            for level in range(1, levels):
                g.append(pyr_down(name, g[-1], level))
            gauss.append(g)

        lap = []
        for name, g in zip(names[:2], gauss[:2]):
            lap.append([up_y_combined(f"Uy_{name}_L{level}", g[level], -1,
                                      up_x(f"Ux_{name}_L{level}", g[level + 1], level), level)
                        for level in range(levels - 1)] + [g[levels - 1]])

        res = []
        for level in range(levels):
            r = stage(f"Res_{level}", True, up_span(R, level), up_span(C, level))
            m = at(gauss[2][level], x, y)
            res.append(r.define(at(lap[0][level], x, y) * m + at(lap[1][level], x, y) * (1.0 - m)))

        col_names = (("blend_x", "blend"), ("Col_1_x", "Col_1"), ("Col_2_x", "Col_2"))
        collapsed = res[levels - 1]
        for level in range(levels - 2, -1, -1):
            ux = up_x(col_names[level][0], collapsed, level)
            collapsed = up_y_combined(col_names[level][1], res[level], +1, ux, level)
        return pm.Pipeline("pyramid_blend", [R, C], [img1, img2, mask], [collapsed])


# ---- 6. Multiscale Interpolation -------------------------------------------------------------

def interpolate():
    """img f32 [4][R+2][C+2] (RGBA / 255 inside a zero border of 1; alpha 0 marks the
    holes) to interpolate f32 [3][R][C]: the holes filled from the opaque pixels across
    10 scales."""
    levels = 10
    with pm.Context():
        R, C = _rows_cols()
        c, x, y = map(pm.Variable, "cxy")
        channels = pm.Interval(0, 3)

        def scaled(n, level):
            step = 1 << level
            return n if level == 0 else (n + (step - 1)) // step

        def level_stage(name, rows, cols):
            return pm.Function(([c, x, y], [channels, pm.Interval(0, rows + 1),
                                            pm.Interval(0, cols + 1)]), pm.f32, name)

        def define_body(f, rows, cols, value):
            body = pm.between(x, 1, rows) & pm.between(y, 1, cols)
            return f.define(pm.Case(body, value), pm.Case(~body, 0.0))

        def down3(f, along_x):
            t2 = (x if along_x else y) * 2
            v = [f(c, t2 + (k - 2), y) if along_x else f(c, x, t2 + (k - 2)) for k in range(3)]
            return (v[0] + 2.0 * v[1] + v[2]) * 0.25

        def up2(f, along_x):
            t = x if along_x else y
            lo, hi = (t + 1) // 2, (t + 2) // 2
            if along_x:
                return (f(c, lo, y) + f(c, hi, y)) / 2.0
            return (f(c, x, lo) + f(c, x, hi)) / 2.0

        img = pm.Image(pm.f32, "img", [4, R + 2, C + 2])
        down = [level_stage("downsampled_L0", R, C).define(img(c, x, y) * img(3, x, y))]
        for level in range(1, levels):
            rows, cols, prev_cols = scaled(R, level), scaled(C, level), scaled(C, level - 1)
            dx = define_body(level_stage(f"Dx_L{level}", rows, prev_cols), rows, prev_cols,
                             down3(down[level - 1], True))
            down.append(define_body(level_stage(f"downsampled_L{level}", rows, cols), rows, cols,
                                    down3(dx, False)))

        interp = down[levels - 1]
        for level in range(levels - 2, -1, -1):
            rows, cols, coarse_cols = scaled(R, level), scaled(C, level), scaled(C, level + 1)
            ux = define_body(level_stage(f"Ux_L{level}", rows, coarse_cols), rows, coarse_cols,
                             up2(interp, True))
            transparency = 1.0 - down[level](3, x, y)
            interp = define_body(level_stage(f"interpolated_L{level}", rows, cols), rows, cols,
                                 down[level](c, x, y) + transparency * up2(ux, False))

        out = pm.Function(([c, x, y], [pm.Interval(0, 2), pm.Interval(0, R - 1),
                                       pm.Interval(0, C - 1)]), pm.f32, "interpolate")
        x1, y1 = x + 1, y + 1
        out.define(interp(c, x1, y1) / interp(3, x1, y1))
        return pm.Pipeline("interpolate", [R, C], [img], [out])


# ---- 7. Local Laplacian ----------------------------------------------------------------------

def local_laplacian():
    """img_colour u16 [3][R+4][C+4] (BGR, 8-bit values * 256 inside a zero border of 2) to
    laplacian u16 [3][R][C]: local Laplacian filtering over 8 pyramid levels and 8
    intensity levels, alpha scaling the detail and beta the base."""
    levels, intensities = 8, 8
    with pm.Context():
        R, C = _rows_cols()
        k, x, y = map(pm.Variable, "kxy")
        per_k_dim = pm.Interval(0, intensities - 1)
        alpha, beta = pm.Parameter(pm.f32, "alpha"), pm.Parameter(pm.f32, "beta")

        def scaled(n, level):
            return n if level == 0 else n // (1 << level)

        def level_stage(name, per_k, rows, cols):
            xr, yr = pm.Interval(0, rows + 3), pm.Interval(0, cols + 3)
            if per_k:
                return pm.Function(([k, x, y], [per_k_dim, xr, yr]), pm.f32, name)
            return pm.Function(([x, y], [xr, yr]), pm.f32, name)

        def at(f, u, v):
            return f(k, u, v) if f.ndims == 3 else f(u, v)

        def body(rows, cols):
            return pm.between(x, 2, rows + 1) & pm.between(y, 2, cols + 1)

        def parity_is(t, parity):
            return t % 2 == parity

        def down4(f, along_x):
            t2 = (x if along_x else y) * 2
            total = None
            for i, w in enumerate((1, 3, 3, 1)):
                term = at(f, t2 + (i - 3), y) if along_x else at(f, x, t2 + (i - 3))
                if w != 1:
                    term = float(w) * term
                total = term if total is None else total + term
            return total * 0.125

        def pyr_down(what, f, level):
            per_k = f.ndims == 3
            rows, cols, prev_cols = scaled(R, level), scaled(C, level), scaled(C, level - 1)
            dx = level_stage(f"Dx_{what}_L{level}", per_k, rows, prev_cols)
            in_dx = body(rows, prev_cols)
            dx.define(pm.Case(in_dx, down4(f, True)), pm.Case(~in_dx, 0.0))
            d = level_stage(f"D_{what}_L{level}", per_k, rows, cols)
            in_d = body(rows, cols)
            return d.define(pm.Case(in_d, down4(dx, False)), pm.Case(~in_d, 0.0))

        def up2(f, along_x, odd):
            half = (x if along_x else y) // 2
            far, near = half + (2 if odd else 0), half + 1
            if along_x:
                return 0.25 * at(f, far, y) + 0.75 * at(f, near, y)
            return 0.25 * at(f, x, far) + 0.75 * at(f, x, near)

        def up_x(name, f, level):
            rows, cols = scaled(R, level), scaled(C, level + 1)
            ux = level_stage(name, f.ndims == 3, rows, cols)
            inside = body(rows, cols)
            return ux.define(pm.Case(inside & parity_is(x, 0), up2(f, True, False)),
                             pm.Case(inside & parity_is(x, 1), up2(f, True, True)),
                             pm.Case(~inside, 0.0))

        def up_y_combined(name, own, sign, ux, level):
            rows, cols = scaled(R, level), scaled(C, level)
            f = level_stage(name, own.ndims == 3, rows, cols)
            inside, v = body(rows, cols), at(own, x, y)
            even, odd = up2(ux, False, False), up2(ux, False, True)
            # gPyramid - U for the Laplacian, U + outLPyramid for the collapse
            with_even = v - even if sign < 0 else even + v
            with_odd = v - odd if sign < 0 else odd + v
            return f.define(pm.Case(inside & parity_is(y, 0), with_even),
                            pm.Case(inside & parity_is(y, 1), with_odd),
                            pm.Case(~inside, v))

        ic = pm.Image(pm.u16, "img_colour", [3, R + 4, C + 4])
        img = level_stage("img", False, R, C).define(
            (0.299 * ic(2, x, y) + 0.587 * ic(1, x, y) + 0.114 * ic(0, x, y)) / 65535.0)
        in_g = [img]
        for level in range(1, levels):
            in_g.append(pyr_down("inGPyramid", in_g[-1], level))

        r = pm.Variable("r")
        remap = pm.Function(([r], [pm.Interval(-1792, 1792)]), pm.f32, "remapLUT")
        t = pm.cast(pm.f32, r) / 256.0
        remap.define(alpha * t * pm.exp(-(t * t) / 2.0))

        g = [level_stage("gPyramid_L0", True, R, C)]
        v = img(x, y)
        idx = pm.clamp(pm.cast(pm.i32, v * 1792.0), 0, 1792)
        level_k = pm.cast(pm.f32, k) / float(intensities - 1)
        g[0].define(beta * (v - level_k) + level_k + remap(idx - k * 256))
        for level in range(1, levels):
            g.append(pyr_down("gPyramid", g[-1], level))

        lap = [up_y_combined(f"lPyramid_L{level}", g[level], -1,
                             up_x(f"Ux_lPyramid_L{level}", g[level + 1], level), level)
               for level in range(levels - 1)] + [g[levels - 1]]

        out_l = []
        for level in range(levels):
            f = level_stage(f"outLPyramid_L{level}", False, scaled(R, level), scaled(C, level))
            lev = in_g[level](x, y) * float(intensities - 1)
            li = pm.clamp(pm.cast(pm.i32, lev), 0, intensities - 2)
            lf = lev - pm.cast(pm.f32, li)
            out_l.append(f.define((1.0 - lf) * lap[level](li, x, y)
                                  + lf * lap[level](li + 1, x, y)))

        out_g = out_l[levels - 1]
        for level in range(levels - 2, -1, -1):
            ux = up_x(f"Ux_outGPyramid_L{level}", out_g, level)
            out_g = up_y_combined(f"outGPyramid_L{level}", out_l[level], +1, ux, level)

        c = pm.Variable("c")
        out = pm.Function(([c, x, y], [pm.Interval(0, 2), pm.Interval(0, R - 1),
                                       pm.Interval(0, C - 1)]), pm.u16, "laplacian")
        x2, y2 = x + 2, y + 2
        colour = ic(c, x2, y2) / 65535.0 + 0.01
        ratio = out_g(x2, y2) * colour / (img(x2, y2) + 0.01)
        out.define(pm.cast(pm.u16, pm.clamp(ratio, 0.0, 1.0) * 65535.0))
        return pm.Pipeline("local_laplacian", [R, C, alpha, beta], [ic], [out])


# ---- The registry ----------------------------------------------------------------------------

def _known(name):
    if name not in NAMES:
        raise pm.ArgumentError(f"polymage.apps: no app {name!r} (one of {', '.join(NAMES)})")


def build(name):
    """The Pipeline of the app called name (one of NAMES)."""
    _known(name)
    return globals()[name]()


_PARAMS = {
    "unsharp_mask": lambda r, c: {"R": r, "C": c, "threshold": 0.001, "weight": 3.0},
    "bilateral_grid": lambda r, c: {"R": r + 56, "C": c + 56},
    "harris": lambda r, c: {"R": r - 2, "C": c - 2},
    "camera_pipe": lambda r, c: {"R": r + 48, "C": c + 64, "colour_temp": 3700.0,
                                 "contrast": 50.0, "gamma": 2.0},
    "pyramid_blend": lambda r, c: {"R": r + 60, "C": c + 60},
    "interpolate": lambda r, c: {"R": r, "C": c},
    "local_laplacian": lambda r, c: {"R": r, "C": c, "alpha": 1.0 / 7, "beta": 1.0},
}


def _check(name, rows, cols):
    _known(name)
    rows, cols = _operator.index(rows), _operator.index(cols)
    if rows < 1 or cols < 1:
        raise pm.ArgumentError(f"polymage.apps: {name}: no picture of {rows} x {cols}")
    return rows, cols


def params(name, rows, cols):
    """The parameter values of app `name` for a picture of rows x cols pixels, by name, as
    its C sample's params() gives them (the sizes of any padding added: R = rows + 56 for
    bilateral_grid, ...): kernel(*inputs(name, rows, cols), **params(name, rows, cols))."""
    rows, cols = _check(name, rows, cols)
    return _PARAMS[name](rows, cols)


# ---- The generated photo (samples/image_io.c), in NumPy --------------------------------------
#
# Every step is the C code's float (f32) or double operation, in its order, so the arrays
# equal the C samples' bit for bit. sinf and expf are libm's: NumPy's own float32 sin and
# exp are other approximations (see _sinf, _expf).

_F = _np.float32
_libm = None


def _libm_f32(name):
    """libm's float function `name` (sinf, expf) through ctypes."""
    global _libm
    if _libm is None:
        try:
            _libm = _ctypes.CDLL("libm.so.6")
        except OSError:
            _libm = _ctypes.CDLL(_ctypes_util.find_library("m"))
    f = getattr(_libm, name)
    f.restype, f.argtypes = _ctypes.c_float, [_ctypes.c_float]
    return f


def _sinf(x):
    """C's sinf of each element (a row of column values: one call each)."""
    sinf = _libm_f32("sinf")
    return _np.array([sinf(float(a)) for a in x.ravel()], _F).reshape(x.shape)


def _expf(x):
    """C's expf of each element. glibc's expf rounds to float a double within 2^-33
    (relative) of exp(x), so it gives exp(x) in double rounded to float except where
    exp(x) lies that close to a point halfway between two floats, where it may round the
    other way (about 1 in 1,600 of the values here). Those within 2^-30 of such a point
    (about 2 in 100) get libm's expf itself."""
    z = _np.exp(x.astype(_np.float64))
    out = z.astype(_F)
    near = (z * (1 - 2.0 ** -30)).astype(_F) != (z * (1 + 2.0 ** -30)).astype(_F)
    if near.any():
        expf = _libm_f32("expf")
        out[near] = [expf(float(a)) for a in x[near]]
    return out


def _hash2(x, y):
    h = ((x * 374761393 + y * 668265263) & 0xFFFFFFFF).astype(_np.uint32)
    h = (h ^ (h >> _np.uint32(13))) * _np.uint32(1274126177)
    return h ^ (h >> _np.uint32(16))


def _value_noise(u, v, cell):
    """Value noise in [0, 1] with cells of `cell` pixels at u (a column of rows) and v (a
    row of columns)."""
    fu, fv = u / _F(cell), v / _F(cell)
    iu, iv = _np.floor(fu).astype(_np.int64), _np.floor(fv).astype(_np.int64)
    tu, tv = fu - iu.astype(_F), fv - iv.astype(_F)
    tu = tu * tu * (_F(3) - _F(2) * tu)
    tv = tv * tv * (_F(3) - _F(2) * tv)

    def corner(du, dv):
        return (_hash2(iu + du, iv + dv) & 0xFFFF).astype(_F) / _F(65535)
    a, b, c, d = corner(0, 0), corner(1, 0), corner(0, 1), corner(1, 1)
    return (a + (b - a) * tu) + ((c + (d - c) * tu) - (a + (b - a) * tu)) * tv


def _unit(n, t):
    """t / (n - 1) as a float (0.5 when n is 1): u down the rows, v across the columns."""
    return t.astype(_F) / _F(n - 1) if n > 1 else _np.full(t.shape, _F(0.5))


def _photo_rows(rows, cols, x, hills):
    """pm_photo_pixel of channels 0, 1, 2 at rows x (a column of row indices) and every
    column: float32 [3][len(x)][cols]."""
    y = _np.arange(cols, dtype=_np.int64)[None, :]
    u, v = _unit(rows, x), _unit(cols, y)
    scale = _F(min(rows, cols)) / _F(512)
    scale = max(scale, _F(1.0 / 64))
    px, py = x.astype(_F) / scale, y.astype(_F) / scale
    where = _np.where

    # sky with clouds
    cloud = _value_noise(px, py, 48) * _F(0.6) + _value_noise(px, py, 17) * _F(0.4)
    cloud = _np.clip((cloud - _F(0.55)) * _F(3), _F(0), _F(1))
    rgb = [_F(0.35) + _F(0.4) * u + _F(0.45) * cloud,
           _F(0.55) + _F(0.3) * u + _F(0.35) * cloud,
           _F(0.95) - _F(0.1) * u + _F(0.05) * cloud]

    # sun
    du, dv = u - _F(0.22), (v - _F(0.78)) * _F(cols) / _F(rows)
    r = _np.sqrt(du * du + dv * dv)
    far = r >= _F(0.06)
    sun = _np.ones(r.shape, _F)
    sun[far] = _expf(-(r[far] - _F(0.06)) * _F(18)) * _F(0.6)
    rgb = [rgb[k] * (_F(1) - sun) + (_F(0.8) if k == 2 else _F(1)) * sun for k in range(3)]

    # hills
    hill1, hill2 = hills
    grass = _value_noise(px, py, 3) * _F(0.5) + _value_noise(px, py, 9) * _F(0.5)
    for hill, base, texture, colour in ((hill1, 0.75, 0.25, (0.20, 0.42, 0.18)),
                                        (hill2, 0.6, 0.4, (0.30, 0.55, 0.20))):
        shade = _F(base) + _F(texture) * grass
        rgb = [where(u > hill, _F(colour[k]) * shade, rgb[k]) for k in range(3)]

    # house: brick wall, windows, door, roof
    top, bottom, left, right = _F(0.55), _F(0.82), _F(0.18), _F(0.46)
    wall = (u >= top) & (u <= bottom) & (v >= left) & (v <= right)
    brick_row = _np.floor(px / _F(9))
    mortar_h = _np.fmod(px, _F(9)) < _F(1.2)
    mortar_v = _np.fmod(py + _np.fmod(brick_row, _F(2)) * _F(10), _F(20)) < _F(1.2)
    tone = _F(0.85) + _F(0.15) * _value_noise(px, py, 5)
    mortar = mortar_h | mortar_v
    rgb = [where(wall, where(mortar, _F(0.78), _F(k) * tone), rgb[i])
           for i, k in enumerate((0.62, 0.30, 0.22))]
    for w in range(2):
        wl = left + _F(0.04) + _F(0.13) * _F(w)
        wr = wl + _F(0.08)
        window = wall & (u > _F(0.62)) & (u < _F(0.72)) & (v > wl) & (v < wr)
        frame = ((u < _F(0.63)) | (u > _F(0.71)) | (v < wl + _F(0.006)) | (v > wr - _F(0.006))
                 | (_np.abs(v - (wl + wr) / _F(2)) < _F(0.003)))
        glow = _F(0.15) + _F(0.1) * (u - _F(0.62)) * _F(10)
        inside = (_F(0.12) + glow, _F(0.14) + glow, _F(0.22))
        rgb = [where(window, where(frame, _F(f), inside[k]), rgb[k])
               for k, f in enumerate((0.95, 0.95, 0.92))]
    door = wall & (u > _F(0.70)) & (v > _F(0.30)) & (v < _F(0.35))
    rgb = [where(door, _F(k), rgb[i]) for i, k in enumerate((0.35, 0.2, 0.1))]
    peak = _F(0.42)
    centre, half_width = (left + right) / _F(2), (right - left) / _F(2) + _F(0.03)
    reach = half_width * (u - peak) / (top - peak)
    roof = (u >= peak) & (u < top) & (_np.abs(v - centre) <= reach)
    tile = where(_np.fmod(px, _F(6)) < _F(1), _F(0.6), _F(1))
    rgb = [where(roof, _F(k) * tile, rgb[i]) for i, k in enumerate((0.45, 0.12, 0.10))]

    # vignette and sensor noise
    du, dv = u - _F(0.5), v - _F(0.5)
    vig = _F(1) - _F(0.25) * (du * du + dv * dv) * _F(2)
    out = _np.empty((3, len(x), cols), _F)
    for c in range(3):
        noise = ((_hash2(x * 3 + c, y) & 0xFF).astype(_F) / _F(255) - _F(0.5)) * _F(0.02)
        out[c] = _np.clip(rgb[c] * vig + noise, _F(0), _F(1))
    return out


def _photo(rows, cols, kind):
    """The generated photo at rows x cols, made a band of rows at a time: kind "pixel" is
    pm_photo_pixel, float32 [3][rows][cols]; "level" pm_photo_level of R, G, B, uint8
    [3][rows][cols]; "grey" pm_photo_level of the grey level, uint8 [rows][cols]."""
    v = _unit(cols, _np.arange(cols, dtype=_np.int64)[None, :])
    hill1 = _F(0.58) + _F(0.06) * _sinf(v * _F(7)) + _F(0.03) * _sinf(v * _F(19) + _F(1))
    hill2 = _F(0.70) + _F(0.05) * _sinf(v * _F(4) + _F(2))
    shape = (rows, cols) if kind == "grey" else (3, rows, cols)
    out = _np.empty(shape, _F if kind == "pixel" else _np.uint8)
    band = max(1, (1 << 18) // cols)
    for x0 in range(0, rows, band):
        x = _np.arange(x0, min(rows, x0 + band), dtype=_np.int64)[:, None]
        pix = _photo_rows(rows, cols, x, (hill1, hill2))
        if kind == "grey":
            pix = _F(0.299) * pix[0] + _F(0.587) * pix[1] + _F(0.114) * pix[2]
        if kind != "pixel":
            pix = (pix * _F(255) + _F(0.5)).astype(_np.uint8)  # (int), of a value >= 0
        out[..., x0:x0 + len(x), :] = pix
    return out


def _unit_levels(levels):
    """8-bit levels as float32 (float)level / 255.0f."""
    return levels.astype(_F) / _F(255)


# ---- Each app's inputs (its fill_input) ------------------------------------------------------

def _pad_edge(a, before, after):
    """a repeated at the edge: `before` and `after` more rows and columns."""
    spatial = [(before, after)] * 2
    return _np.pad(a, [(0, 0)] * (a.ndim - 2) + spatial, mode="edge")


def _unsharp_inputs(rows, cols, p):
    img = _np.zeros((3, rows + 4, cols + 4), _F)
    img[:, 2:rows + 2, 2:cols + 2] = _unit_levels(_photo(rows, cols, "level"))
    return [img]


def _bilateral_inputs(rows, cols, p):
    return [_unit_levels(_pad_edge(_photo(rows, cols, "grey"), 24, 32))]


def _harris_inputs(rows, cols, p):
    return [_unit_levels(_photo(rows, cols, "grey"))]


_MATRIX_3200 = _np.array([[1.6697, -0.2693, -0.4004, -42.4346],
                          [-0.3576, 1.0615, 1.5949, -37.1158],
                          [-0.2175, -1.8751, 6.9640, -26.6970]], _F)
_MATRIX_7000 = _np.array([[2.2997, -0.4478, 0.1706, -39.0923],
                          [-0.3826, 1.5906, -0.2080, -25.4311],
                          [-0.0888, -0.7344, 2.2832, -20.0826]], _F)


def _camera_inputs(rows, cols, p):
    """The raw mosaic the pipeline develops back into the photo (camera_pipe.c): each
    site's linear colour taken through the inverse colour matrix, the site's own colour
    kept, as a 10-bit value; all in double, as the C code computes it."""
    R, C, T, gamma = p["R"], p["C"], p["colour_temp"], p["gamma"]
    alpha = (1.0 / T - 1.0 / 3200) / (1.0 / 7000 - 1.0 / 3200)
    m = [[(float(_MATRIX_3200[r, k]) * alpha + float(_MATRIX_7000[r, k]) * (1 - alpha)) * 256
          for k in range(4)] for r in range(3)]
    det = (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
           - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
           + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]))
    inv = [[(m[(k + 1) % 3][(r + 1) % 3] * m[(k + 2) % 3][(r + 2) % 3]
             - m[(k + 1) % 3][(r + 2) % 3] * m[(k + 2) % 3][(r + 1) % 3]) / det
            for k in range(3)] for r in range(3)]
    # the photo at the mosaic's own size; gamma is 2 (params), and an array ** 2.0 is
    # NumPy's square: exact in double, as C's pow(pixel, 2.0) is
    pix = _photo(R, C, "pixel").astype(_np.float64)
    want = [pix[ch] ** gamma * 0.9 * 1024 * 256 - m[ch][3] for ch in range(3)]
    x, y = _np.arange(R)[:, None] % 2, _np.arange(C)[None, :] % 2
    site = _np.where(x == 0, _np.where(y == 0, 1, 0), _np.where(y == 0, 2, 1))
    raw = _np.empty((R, C))
    for s in range(3):
        at = site == s
        raw[at] = (inv[s][0] * want[0][at] + inv[s][1] * want[1][at]) + inv[s][2] * want[2][at]
    raw = _np.clip(raw, 0, 1023)
    whole = _np.floor(raw)
    mosaic = (whole + (raw - whole >= 0.5)).astype(_np.int16)  # lround of a value >= 0
    return [mosaic, _MATRIX_3200.copy(), _MATRIX_7000.copy()]


def _blend_inputs(rows, cols, p):
    levels = _photo(rows, cols, "level")
    split = 31 + (789 * rows) // 2048
    mask = _np.ones((p["R"], p["C"]), _F)
    mask[:split] = 0
    return [_unit_levels(_pad_edge(levels, 31, 29)),
            _unit_levels(_pad_edge(levels[:, :, ::-1], 31, 29)), mask]


def _pixel_hash(x, y):
    h = ((x * 2654435761) & 0xFFFFFFFF) ^ ((y * 40503 + 0x9E3779B9) & 0xFFFFFFFF)
    h = h.astype(_np.uint32)
    h = (h ^ (h >> _np.uint32(15))) * _np.uint32(2246822519)
    return h ^ (h >> _np.uint32(13))


def _interpolate_inputs(rows, cols, p):
    img = _np.zeros((4, rows + 2, cols + 2), _F)
    img[:3, 1:rows + 1, 1:cols + 1] = _unit_levels(_photo(rows, cols, "level"))
    x, y = _np.arange(1, rows + 1)[:, None], _np.arange(1, cols + 1)[None, :]
    img[3, 1:rows + 1, 1:cols + 1] = (_pixel_hash(x, y) & 3) == 0   # opaque about 1 in 4
    return [img]


def _laplacian_inputs(rows, cols, p):
    img = _np.zeros((3, rows + 4, cols + 4), _np.uint16)
    img[:, 2:rows + 2, 2:cols + 2] = _photo(rows, cols, "level")[::-1].astype(_np.uint16) * 256
    return [img]


_INPUTS = {"unsharp_mask": _unsharp_inputs, "bilateral_grid": _bilateral_inputs,
           "harris": _harris_inputs, "camera_pipe": _camera_inputs,
           "pyramid_blend": _blend_inputs, "interpolate": _interpolate_inputs,
           "local_laplacian": _laplacian_inputs}


def inputs(name, rows, cols):
    """The inputs of app `name` for a picture of rows x cols pixels, in the pipeline's
    order: NumPy arrays made from the generated photo (samples/image_io.c) as the C
    sample's fill_input makes them, equal bit for bit."""
    rows, cols = _check(name, rows, cols)
    return _INPUTS[name](rows, cols, _PARAMS[name](rows, cols))
