"""python/polymage/filters.py: each filter is its C example's pipeline (same canonical
text) and equals a NumPy reference exactly, compiled and interpreted, on odd sizes."""
import numpy as np
import pytest

import polymage as pm
from polymage import filters

SIZES = [(1, 1), (7, 9), (33, 65)]


def blur_rgb_ref(a):
    e = np.pad(a, ((0, 0), (2, 2), (2, 2)), mode="edge").astype(np.int64)
    g = [1, 4, 6, 4, 1]
    rows, cols = a.shape[1], a.shape[2]
    bx = sum(w * e[:, i:i + rows, :] for i, w in enumerate(g))
    by = sum(w * bx[:, :, j:j + cols] for j, w in enumerate(g))
    return (by // 256).astype(np.uint8)


def sobel_ref(a):
    e = np.pad(a, 1, mode="edge").astype(np.float32)
    rows, cols = a.shape

    def conv(k):
        return sum(np.float32(k[i][j]) * e[i:i + rows, j:j + cols]
                   for i in range(3) for j in range(3))
    gx = conv([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]])
    gy = conv([[-1, -2, -1], [0, 0, 0], [1, 2, 1]])
    return np.minimum(np.sqrt(gx * gx + gy * gy), 255).astype(np.uint8)


def hist_eq_ref(a):
    cdf = np.cumsum(np.bincount(a.ravel(), minlength=256)).astype(np.int64)
    lo, n = cdf[a].min(), a.size
    return ((cdf[a] - lo) * 255 // max(n - lo, 1)).astype(np.uint8)


CASES = [(filters.blur_rgb, blur_rgb_ref, 3), (filters.sobel, sobel_ref, 0),
         (filters.hist_eq, hist_eq_ref, 0)]


@pytest.mark.parametrize("build", [c[0] for c in CASES], ids=lambda b: b.__name__)
def test_same_canonical_text_as_c_example(build, c_text):
    p = build()
    assert p.text == c_text(p.name)


@pytest.mark.parametrize("build,ref,channels", CASES, ids=lambda c: getattr(c, "__name__", ""))
@pytest.mark.parametrize("rows,cols", SIZES)
def test_equals_numpy(build, ref, channels, rows, cols):
    p = build()
    rng = np.random.default_rng(rows * 1000 + cols)
    shape = (channels, rows, cols) if channels else (rows, cols)
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    if p.name == "hist_eq":
        a = a // 3 + 40   # 40..125: the darkest pixel is not 0, the top bins are empty
    want = ref(a)
    k = pm.compile(p, {"R": rows, "C": cols})
    got = k(a, R=rows, C=cols)
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(p.interpret(a, R=rows, C=cols), want)
