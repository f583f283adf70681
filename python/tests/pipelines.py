"""Pipelines the tests build in Python, each mirroring a C one line for line: blur3 is
docs/canonical-text.md's blur (test/test_canon_text.c), harris samples/harris/harris.c."""
import polymage as pm


def blur3():
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.f32, "I", [R, C])
        x, y = pm.Variable("x"), pm.Variable("y")
        inner_x, all_y, inner_y = pm.Interval(1, R - 2), pm.Interval(0, C - 1), pm.Interval(1, C - 2)
        bx = pm.Function(([x, y], [inner_x, all_y]), pm.f32, "blurx")
        bx.defn = [(I(x - 1, y) + I(x, y) + I(x + 1, y)) * (1.0 / 3)]
        by = pm.Function(([x, y], [inner_x, inner_y]), pm.f32, "blury")
        by.defn = [(bx[x, y - 1] + bx[x, y] + bx[x, y + 1]) * (1.0 / 3)]
        return pm.Pipeline("blur3", [R, C], [I], [by])


def harris():
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.f32, "I", [R + 2, C + 2])
        x, y = pm.Variable("x"), pm.Variable("y")
        row, col = pm.Interval(0, R + 1), pm.Interval(0, C + 1)
        dom = ([x, y], [row, col])
        c = pm.between(x, 1, R) & pm.between(y, 1, C)
        cb = pm.between(x, 2, R - 1) & pm.between(y, 2, C - 1)

        def stage(name, cond, value):
            f = pm.Function(dom, pm.f32, name)
            f.defn = [pm.Case(cond, value)]
            return f

        Iy = stage("Iy", c, pm.Stencil(I, (x, y), [[-1, -2, -1], [0, 0, 0], [1, 2, 1]], 1.0 / 12))
        Ix = stage("Ix", c, pm.Stencil(I, (x, y), [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], 1.0 / 12))
        Ixx = stage("Ixx", c, Ix(x, y) * Ix(x, y))
        Iyy = stage("Iyy", c, Iy(x, y) * Iy(x, y))
        Ixy = stage("Ixy", c, Ix(x, y) * Iy(x, y))
        Sxx, Syy, Sxy = (pm.Function(dom, pm.f32, n) for n in ("Sxx", "Syy", "Sxy"))
        for S, P in ((Sxx, Ixx), (Syy, Iyy), (Sxy, Ixy)):
            S.defn = [pm.Case(cb, pm.Stencil(P, (x, y), [[1] * 3] * 3, 1))]
        det = stage("det", cb, Sxx(x, y) * Syy(x, y) - Sxy(x, y) * Sxy(x, y))
        trace = stage("trace", cb, Sxx(x, y) + Syy(x, y))
        out = stage("harris", cb, det(x, y) - trace(x, y) * 0.04 * trace(x, y))
        return pm.Pipeline("harris", [R, C], [I], [out])
