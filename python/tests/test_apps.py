"""polymage.apps against the C samples (python/tests/canon_text.c asks the C registry):
each app's pipeline has the C app's canonical text, its params() and inputs() are the C
app's params() and fill_input bytes, and its compiled output equals the C kernel's output
byte for byte and the interpreter's (exactly for integer outputs, within the C app's
tolerance for floats), at each app's smallest size and a small odd one."""
import os
import struct
import subprocess

import numpy as np
import pytest

import polymage as pm
from polymage import apps


@pytest.fixture
def c_tool():
    """pm_py_canon_text with arguments; its stdout as bytes."""
    tool = os.environ.get("PM_CANON_TEXT")
    if not tool:
        pytest.skip("PM_CANON_TEXT (build/python/pm_py_canon_text) not set: run through ctest")
    return lambda *args: subprocess.run([tool, *map(str, args)], check=True,
                                        capture_output=True).stdout


def sizes(name):
    """The app's smallest size and a small odd one it accepts."""
    low = apps.MIN_SIZE[name]
    odd = (67, 93) if low[0] <= 67 and low[1] <= 93 else (low[0] + 1, low[1] + 3)
    return [low, odd]


CASES = [(name, r, c) for name in apps.NAMES for r, c in sizes(name)]


def test_names_in_the_c_registrys_order(c_tool):
    assert apps.NAMES == tuple(c_tool("apps").decode().split())
    assert set(apps.MIN_SIZE) == set(apps.QUICK_SIZE) == set(apps.PAPER_SIZE) == \
        set(apps.TOLERANCE) == set(apps.NAMES)


@pytest.mark.parametrize("name", apps.NAMES)
def test_same_canonical_text_as_c(name, c_text):
    p = apps.build(name)
    assert p.name == name
    assert p.text == c_text(name)
    assert getattr(apps, name)().text == p.text


@pytest.mark.parametrize("name,rows,cols", CASES)
def test_params_and_sizes_as_c(name, rows, cols, c_tool):
    report = c_tool("app", name, rows, cols).decode()
    lines = dict(line.split(" ", 1) for line in report.splitlines())
    values = apps.params(name, rows, cols)
    p = apps.build(name)
    assert list(values) == [n for n, _ in p.params]
    for (pname, t), bits in zip(p.params, lines["params"].split()):
        raw = struct.pack("<Q", int(bits, 16))
        want = struct.unpack("<d" if t in (pm.f32, pm.f64) else "<q", raw)[0]
        assert values[pname] == want and type(values[pname]) is type(want), pname
    assert apps.MIN_SIZE[name] == tuple(map(int, lines["min"].split()))
    assert apps.QUICK_SIZE[name] == tuple(map(int, lines["quick"].split()))
    assert apps.PAPER_SIZE[name] == tuple(map(int, lines["paper"].split()))
    assert apps.TOLERANCE[name] == float.fromhex(lines["tolerance"])


@pytest.mark.parametrize("name,rows,cols", CASES)
def test_inputs_equal_c_fill_input(name, rows, cols, c_tool):
    p, got = apps.build(name), apps.inputs(name, rows, cols)
    want = c_tool("inputs", name, rows, cols)
    assert len(got) == len(p.inputs)
    offset = 0
    for a, (_, t, ndims) in zip(got, p.inputs):
        assert a.dtype == pm.dtype(t) and a.ndim == ndims and a.flags.c_contiguous
        assert a.tobytes() == want[offset:offset + a.nbytes]
        offset += a.nbytes
    assert offset == len(want)


def maxdiff(a, b):
    """The largest absolute difference, NaN equal to NaN (pm_sample_buffer_maxdiff)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    d = np.where(both_nan, 0, np.abs(a - b))
    return float(np.max(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0


@pytest.mark.parametrize("name,rows,cols", CASES)
def test_outputs_equal_c_and_interpreter(name, rows, cols, c_tool):
    p, values = apps.build(name), apps.params(name, rows, cols)
    ins = apps.inputs(name, rows, cols)
    (shape,) = p.output_shapes(**values)
    dt = pm.dtype(p.outputs[0][1])
    # zeroed outputs, as C's pm_sample_buffer: harris never writes its frame
    got = pm.compile(p, values)(*ins, out=np.zeros(shape, dt), **values)
    assert got.tobytes() == c_tool("outputs", name, rows, cols)
    ref = p.interpret(*ins, out=np.zeros(shape, dt), **values)
    if np.issubdtype(dt, np.integer):
        np.testing.assert_array_equal(got, ref)
    else:
        assert maxdiff(got, ref) <= apps.TOLERANCE[name]
    assert np.any(got)


def test_errors():
    for call in (lambda: apps.build("sharpen"), lambda: apps.params("blur", 8, 8),
                 lambda: apps.inputs("harris", 0, 8)):
        with pytest.raises(pm.ArgumentError):
            call()
    with pytest.raises(TypeError):
        apps.params("harris", 8.5, 8)
