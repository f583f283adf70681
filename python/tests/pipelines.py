"""Pipelines the tests build in Python, each mirroring a C one line for line: blur3 is
docs/canonical-text.md's blur (test/test_canon_text.c). The sample apps are in
polymage.apps (test_apps.py)."""
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

