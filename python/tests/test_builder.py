"""The builder: Python pipelines are the C pipelines (same canonical text), and what they
compute equals NumPy and the reference interpreter."""
import numpy as np
import pytest

import polymage as pm
from pipelines import blur3
from polymage.apps import harris


def test_same_canonical_text_as_c(c_text):
    p = blur3()
    assert p.text == c_text(p.name)


def test_blur_equals_numpy_and_interpreter():
    p = blur3()
    a = np.random.default_rng(1).random((37, 53), dtype=np.float32)
    k = pm.compile(p, {"R": 37, "C": 53})
    out = k(a, R=37, C=53)
    bx = (a[:-2, :] + a[1:-1, :] + a[2:, :]) * np.float32(1 / 3)
    ref = (bx[:, :-2] + bx[:, 1:-1] + bx[:, 2:]) * np.float32(1 / 3)
    assert out.shape == (35, 51) and out.dtype == np.float32
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, p.interpret(a, R=37, C=53), rtol=1e-5, atol=1e-6)


def test_harris_equals_interpreter():
    p = harris()
    rows, cols = 70, 91
    a = np.random.default_rng(2).random((rows + 2, cols + 2), dtype=np.float32)
    out = np.zeros((rows + 2, cols + 2), np.float32)   # the frame is never written
    ref = np.zeros_like(out)
    pm.compile(p, {"R": rows, "C": cols})(a, R=rows, C=cols, out=out)
    p.interpret(a, R=rows, C=cols, out=ref)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)
    assert np.any(out != 0)


def ops_pipeline():
    """Integer operators, select, min/max, casts and the helpers, exact everywhere."""
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.i32, "I", [R, C])
        E = pm.pad(I, "E", pm.Boundary.clamp, [0, 1], 1)
        x, y = pm.Variable("x"), pm.Variable("y")
        f = pm.Function(([x, y], [pm.Interval(0, R - 1), pm.Interval(0, C - 1)]), pm.i32, "f")
        v = E(x - 1, y) + 2 * E[x, y] - E(x + 1, y - 1)
        w = pm.select((v > 3) & ~(v == 7) | (x < 1), v // 3 - v % 5, -v)
        g = pm.max(pm.min(w, 40), -40) ^ (x << 1)
        f.defn = [pm.Case(pm.between(y, 0, C - 1), g + pm.cast(pm.u8, v).astype(pm.i32))]
        return pm.Pipeline("ops", [R, C], [I], [f])


def ops_numpy(a):
    e = np.pad(a, 1, mode="edge").astype(np.int64)
    R, C = a.shape
    xs, ys = np.meshgrid(np.arange(R), np.arange(C), indexing="ij")
    v = e[xs, ys + 1] + 2 * e[xs + 1, ys + 1] - e[xs + 2, ys]
    w = np.where(((v > 3) & ~(v == 7)) | (xs < 1), v // 3 - v % 5, -v)
    g = np.maximum(np.minimum(w, 40), -40) ^ (xs << 1)
    return (g + (v & 0xFF)).astype(np.int32)


def test_integer_operators_exact():
    p = ops_pipeline()
    a = np.random.default_rng(3).integers(-50, 50, (23, 17), dtype=np.int32)
    out = pm.compile(p, {"R": 23, "C": 17})(a, R=23, C=17)
    assert np.array_equal(out, ops_numpy(a))
    assert np.array_equal(out, p.interpret(a, R=23, C=17))


def test_histogram_reduction():
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.u8, "I", [R, C])
        x, y, b = pm.Variable("x"), pm.Variable("y"), pm.Variable("b")
        hist = pm.Reduction(([b], [pm.Interval(0, 255)]),
                            ([x, y], [pm.Interval(0, R - 1), pm.Interval(0, C - 1)]),
                            pm.i32, "hist")
        hist.define([I(x, y)], 1)
        p = pm.Pipeline("hist", [R, C], [I], [hist])
    a = np.random.default_rng(4).integers(0, 256, (31, 29), dtype=np.uint8)
    out = pm.compile(p, {"R": 31, "C": 29})(a, R=31, C=29)
    assert np.array_equal(out, np.bincount(a.ravel(), minlength=256))


def test_stencil_and_sampling_helpers():
    with pm.Context():
        R, C = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.i32, "C")
        I = pm.Image(pm.f32, "I", [3, R, C])
        E = pm.pad(I, "E", pm.Boundary.clamp, [1, 2], 2)
        blur = pm.stencil_func(E, "blur", pm.f32, np.ones((5, 5)) / 25, [1, 2])
        down = pm.downsample(blur, "down", pm.f32, [1, 2])
        up = pm.upsample(pm.pad(blur, "D", pm.Boundary.clamp, [1, 2], 1), "up", pm.f32, [1, 2])
        p = pm.Pipeline("samp", [R, C], [I], [blur, down, up])
    a = np.random.default_rng(5).random((3, 40, 36), dtype=np.float32)
    k = pm.compile(p, {"R": 40, "C": 36})
    blur_out, down_out, up_out = k(a, R=40, C=36)
    e = np.pad(a, ((0, 0), (2, 2), (2, 2)), mode="edge")
    ref = sum(e[:, i:i + 40, j:j + 36] for i in range(5) for j in range(5)) / 25
    np.testing.assert_allclose(blur_out, ref, rtol=1e-5, atol=1e-6)
    _, d2, u2 = p.interpret(a, R=40, C=36)
    assert up_out.shape == (3, 82, 74)   # [2 lb - 1, 2 ub + 2] after a pad of 1
    np.testing.assert_allclose(down_out, d2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(up_out, u2, rtol=1e-5, atol=1e-6)


def test_literal_is_the_weak_literal_as_a_node():
    with pm.Context():
        R = pm.Parameter(pm.i32, "R")
        I, x = pm.Image(pm.f32, "I", [R]), pm.Variable("x")
        zero = pm.literal(0)   # one node, named by both domains
        f = pm.Function(([x], [pm.Interval(zero, R - 1)]), pm.f32, "f")
        f.define(I(x) - pm.literal(0.5))   # pm_sub(I(x), pm_float(0.5))
        g = pm.Function(([x], [pm.Interval(zero, R - 1)]), pm.f32, "g").define(I(x) - 0.5)
        p = pm.Pipeline("lit", [R], [I], [f, g])
        with pytest.raises(TypeError):
            pm.literal(True)
    lines = p.text.split("\n")
    assert sum(line.endswith(" int i32 w1 i0") for line in lines) == 1
    assert any(" binary f32 w0 sub " in line for line in lines)   # f
    assert any(" binary f32 w0 add " in line for line in lines)   # g: I(x) + -0.5
    a = np.arange(5, dtype=np.float32)
    out_f, out_g = pm.compile(p, {"R": 5})(a, R=5)
    assert np.array_equal(out_f, a - 0.5) and np.array_equal(out_g, a - 0.5)
