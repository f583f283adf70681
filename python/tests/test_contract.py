"""The package's contract with bad input and its resources. Each item is tested
once; those tested elsewhere first:

- a wrong dtype: test_errors.py test_wrong_dtype; a wrong rank: test_wrong_rank; a
  read-only output: test_read_only_output; a closed kernel: test_closed_kernel; a stride 0
  (a broadcast array): test_broadcast_input_cannot_be_described;
- zero copy into a caller's strided view: test_run.py test_zero_copy_into_strided_view;
  the GIL released while a kernel runs: test_gil_released_while_running; pipelines and
  kernels pickled: test_pickle_round_trip, test_kernel_pickles_as_text_estimates_and_options;
- docs/python.md's fragments run: test_docs.py (and below, that none is skipped).

Here: contiguity (nowhere required: any strides the library can describe are read and
written in place; what it cannot describe and what is no array are refused by name),
parameter values and compile options checked by name, the library's own message
carried verbatim, and the RSS bound.
"""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import polymage as pm
from pipelines import blur3

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def kernel():
    return pm.compile(blur3(), {"R": 12, "C": 14}, threads=1)


@pytest.fixture(scope="module")
def image():
    return np.random.default_rng(1).random((12, 14), dtype=np.float32)


# ---- Contiguity -----------------------------------------------------------------------------

def test_no_contiguity_required(kernel, image):
    """Reversed, Fortran-ordered and every-third-column inputs, a memoryview, and an
    output with negative strides: all used in place, all the same result."""
    ref = kernel(image, R=12, C=14)
    views = {"reversed": np.ascontiguousarray(image[::-1, ::-1])[::-1, ::-1],
             "fortran": np.asfortranarray(image),
             "every third column": np.repeat(image, 3, axis=1)[:, ::3],
             "memoryview": memoryview(image)}
    for name, v in views.items():
        np.testing.assert_array_equal(kernel(v, R=12, C=14), ref, err_msg=name)
    assert not views["reversed"].flags.c_contiguous and views["fortran"].flags.f_contiguous
    big = np.zeros((10, 12), np.float32)
    res = kernel(image, R=12, C=14, out=big[::-1, ::-1])
    assert res.base is big
    np.testing.assert_array_equal(big[::-1, ::-1], ref)


def test_not_an_array_is_refused_by_name(kernel, image):
    with pytest.raises(pm.DTypeError, match=r"^input 0 \(I\): expected an array \(buffer "
                                            r"protocol\), got list$"):
        kernel(image.tolist(), R=12, C=14)
    with pytest.raises(pm.DTypeError, match=r"^output 0 \(blury\): expected an array.*got int"):
        kernel(image, R=12, C=14, out=3)


def test_stride_not_a_multiple_of_the_element_size(kernel):
    """A field of a packed record array: 5-byte records hold a 4-byte float, which no
    element stride of a pm_buffer can describe."""
    rec = np.zeros((12, 14), dtype=[("v", "<f4"), ("tag", "u1")])
    with pytest.raises(pm.ArgumentError, match=r"input 0 \(I\): stride 70 bytes in dimension 0 "
                                               r"is not a non-zero multiple of the element "
                                               r"size 4 \(copy it with numpy"):
        kernel(rec["v"], R=12, C=14)
    kernel(np.ascontiguousarray(rec["v"]), R=12, C=14)     # as the message says


def test_byte_order_is_part_of_the_element_type(kernel, image):
    with pytest.raises(pm.DTypeError, match=r"input 0 \(I\): element type '>f' \(4 bytes\), "
                                            r"expected f32"):
        kernel(image.astype(">f4"), R=12, C=14)


# ---- Parameters and options -------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    (12.5, r"^blur3: parameter R \(i32\) must be an integer, got float 12\.5$"),
    ("12", r"^blur3: parameter R \(i32\) must be an integer, got str '12'$"),
    (None, r"^blur3: parameter R \(i32\) must be an integer, got NoneType None$"),
    (2**31, r"^blur3: parameter R = 2147483648 does not fit its type i32$"),
    (-2**70, r"^blur3: parameter R = -1180591620717411303424 does not fit its type i32$"),
])
def test_bad_parameter_value_is_named(kernel, image, value, message):
    """Checked before any output is allocated (an out-of-range size would otherwise ask
    NumPy for terabytes), as pm_kernel_run checks it."""
    with pytest.raises(pm.ArgumentError, match=message):
        kernel(image, R=value, C=14)


def test_parameter_checks_match_the_library(kernel, image):
    """With out= given, the library checks the value too: the same words."""
    with pytest.raises(pm.ArgumentError) as ours:
        kernel(image, R=2**31, C=14)
    with pytest.raises(pm.ArgumentError) as lib:
        kernel._k.run([2**31, 14], [image], [np.zeros((10, 12), np.float32)])
    assert lib.value.status == "PM_ERR_ARGUMENT" and str(lib.value) == str(ours.value)


def test_parameter_values_of_numpy_types(kernel, image):
    out = kernel(image, R=np.int64(12), C=np.uint16(14))
    np.testing.assert_array_equal(out, kernel(image, R=12, C=14))
    with pm.Context():
        R, t = pm.Parameter(pm.i32, "R"), pm.Parameter(pm.f32, "t")
        I = pm.Image(pm.f32, "I", [R])
        x = pm.Variable("x")
        f = pm.Function(([x], [pm.Interval(0, R - 1)]), pm.f32, "f").define(I(x) * t)
        p = pm.Pipeline("scale", [R, t], [I], [f])
    k = pm.compile(p, {"R": 4, "t": np.float32(2)}, threads=1)
    np.testing.assert_array_equal(k(np.ones(4, np.float32), R=4, t=np.float64(0.5)), [0.5] * 4)
    with pytest.raises(pm.ArgumentError, match=r"^scale: parameter t \(f32\) must be a number, "
                                               r"got str '2'$"):
        k(np.ones(4, np.float32), R=4, t="2")
    with pytest.raises(pm.ArgumentError, match=r"^scale: estimate t \(f32\) must be a number"):
        pm.compile(p, {"R": 4, "t": "2"})


def test_bad_compile_arguments_are_named():
    p = blur3()
    with pytest.raises(TypeError, match=r"^compile: expected a polymage Pipeline, got str$"):
        pm.compile("blur3")
    with pytest.raises(TypeError, match=r"^compile: estimates must be a dict.*got list$"):
        pm.compile(p, [12, 14])
    with pytest.raises(TypeError, match=r"^unknown compile option 'thread'$"):
        pm.compile(p, thread=1)
    with pytest.raises(TypeError, match=r"^compile option threads: expected an int, got str$"):
        pm.compile(p, threads="2")
    with pytest.raises(pm.ArgumentError, match=r"^compile option threads: 4294967297 does not "
                                               r"fit an int$"):
        pm.compile(p, threads=2**32 + 1)          # once silently truncated to 1
    with pytest.raises(pm.ArgumentError, match=r"^compile option tile_size: 9 sizes, at most 8$"):
        pm.compile(p, tile_size=[8] * 9)
    with pytest.raises(TypeError, match=r"^compile option overlap_threshold: expected a number"):
        pm.compile(p, overlap_threshold="0.4")
    with pytest.raises(TypeError, match=r"^run: expected a polymage Pipeline, got NoneType$"):
        pm.Jit(threads=1).run(None, np.zeros((3, 3), np.float32), R=3, C=3)
    with pytest.raises(TypeError, match=r"^Pipeline.from_text: expected the canonical text "
                                        r"\(str\), got bytes$"):
        pm.Pipeline.from_text(p.text.encode())


def test_closed_kernel_names_its_pipeline():
    k = pm.compile(blur3(), {"R": 12, "C": 14}, threads=1)
    k.close()
    with pytest.raises(pm.ClosedError, match=r"^blur3: the kernel is closed"):
        k.compile_ms


# ---- The library's messages -------------------------------------------------------------------

def test_run_errors_are_the_librarys_message(kernel, image):
    """The compiled kernel and the interpreter check buffers with the library's one
    routine: a wrong shape gets the same message from both, status PM_ERR_ARGUMENT, and the
    message names the buffer, the shapes and why."""
    bad = np.zeros((11, 14), np.float32)
    errors = []
    for run in (kernel, blur3().interpret):
        with pytest.raises(pm.ArgumentError) as e:
            run(bad, R=12, C=14, out=np.zeros((10, 12), np.float32))
        errors.append(e.value)
    assert str(errors[0]) == str(errors[1])
    assert all(e.status == "PM_ERR_ARGUMENT" for e in errors)
    assert re.match(r"blur3: input buffer I is f32\[11\]\[14\]; expected f32\[12\]\[14\]",
                    str(errors[0]))


# ---- Resources --------------------------------------------------------------------------------

def test_rss_bound():
    """After 10,000 compile+run calls on one pipeline (cache hits) plus 100 distinct sizes,
    RSS is at most RSS after the first 1,000 calls + 5 MB (rss_loop.py, in a process of its
    own so no other test's memory counts)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, os.path.join(HERE, "rss_loop.py"), "10000"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split("\n")
    compiles, evictions = map(int, next(x for x in lines if x.startswith("stats ")).split()[1:])
    base, end = map(float, next(x for x in lines if x.startswith("rss_mb ")).split()[1:])
    assert compiles >= 8 and evictions >= 1, r.stdout          # the loop did compile and evict
    assert end <= base + 5, r.stdout


# ---- The docs ---------------------------------------------------------------------------------

def test_every_python_fragment_of_the_docs_is_run():
    """test_docs.py runs the ```python fragments; a fragment fenced otherwise (```py,
    ```pycon, or Python under ```sh) would be skipped silently: none is."""
    root = os.path.join(HERE, "..", "..")
    for doc in ("docs/python.md", "README.md"):
        with open(os.path.join(root, doc)) as f:
            fences = re.findall(r"^```(\S*)\n(.*?)^```", f.read(), re.S | re.M)
        for lang, body in fences:
            assert lang not in ("py", "pycon", "python3", "ipython"), (doc, body[:60])
            if lang != "python":
                assert not re.search(r"^\s*(import polymage|from polymage|pm\.)", body, re.M), \
                    (doc, lang, body[:60])
