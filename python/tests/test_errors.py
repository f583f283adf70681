"""Bad input gets a clear exception carrying the library's message."""
import numpy as np
import pytest

import polymage as pm
from pipelines import blur3


@pytest.fixture(scope="module")
def kernel():
    return pm.compile(blur3(), {"R": 12, "C": 14})


def test_wrong_dtype(kernel):
    with pytest.raises(pm.DTypeError, match=r"input 0 \(I\): element type 'd'.*expected f32"):
        kernel(np.zeros((12, 14)), R=12, C=14)
    with pytest.raises(TypeError):           # a DTypeError is a TypeError too
        kernel([[0.0] * 14] * 12, R=12, C=14)


def test_wrong_rank(kernel):
    with pytest.raises(pm.ArgumentError, match=r"input 0 \(I\): 3 dimensions, expected 2"):
        kernel(np.zeros((1, 12, 14), np.float32), R=12, C=14)


def test_wrong_shape_is_the_librarys_message(kernel):
    with pytest.raises(pm.ArgumentError) as e:
        kernel(np.zeros((11, 14), np.float32), R=12, C=14)
    assert e.value.status == "PM_ERR_ARGUMENT" and "I" in str(e.value)
    assert isinstance(e.value, ValueError)


def test_read_only_output(kernel):
    out = np.zeros((10, 12), np.float32)
    out.flags.writeable = False
    with pytest.raises(pm.ArgumentError, match=r"output 0 \(blury\): the array is read-only"):
        kernel(np.zeros((12, 14), np.float32), R=12, C=14, out=out)


def test_broadcast_input_cannot_be_described(kernel):
    a = np.broadcast_to(np.float32(1), (12, 14))   # stride 0: pm_buffer cannot say it
    with pytest.raises(pm.ArgumentError, match="stride 0 bytes in dimension 0"):
        kernel(a, R=12, C=14)
    kernel(np.ascontiguousarray(a), R=12, C=14)    # what the message suggests works


def test_missing_parameter(kernel):
    with pytest.raises(pm.ArgumentError, match="parameter C is missing"):
        kernel(np.zeros((12, 14), np.float32), R=12)


def test_closed_kernel():
    k = pm.compile(blur3(), {"R": 12, "C": 14})
    k.close()
    with pytest.raises(pm.ClosedError, match="closed"):
        k(np.zeros((12, 14), np.float32), R=12, C=14)
    with pytest.raises(pm.ClosedError):
        k._k.run([12, 14], [np.zeros((12, 14), np.float32)], [np.zeros((10, 12), np.float32)])


def test_out_of_domain_access_names_the_access():
    with pm.Context():
        R = pm.Parameter(pm.i32, "R")
        I = pm.Image(pm.f32, "I", [R])
        x = pm.Variable("x")
        f = pm.Function(([x], [pm.Interval(0, R - 1)]), pm.f32, "f")
        f.defn = [I(x + 1)]
        with pytest.raises(pm.InvalidPipelineError, match=r"f: .*I\(x \+ 1\).*outside") as e:
            pm.Pipeline("bad", [R], [I], [f])
    assert e.value.status == "PM_ERR_INVALID"


def test_builder_misuse():
    with pm.Context():
        x = pm.Variable("x")
        f = pm.Function(([x], [pm.Interval(0, 9)]), pm.f32, "f")
        f.defn = [x * 1.0]
        with pytest.raises(pm.Error, match="f"):
            f.defn = [x * 2.0]                 # defined twice
    with pm.Context():
        y = pm.Variable("y")
    with pytest.raises(pm.MisuseError, match="two different"):
        x + y
    with pytest.raises(TypeError, match="truth value"):
        bool(x < 1)


def test_bad_compile_option_and_text():
    with pytest.raises(pm.ArgumentError, match="threads"):
        pm.compile(blur3(), threads=100000)
    with pytest.raises(pm.ArgumentError, match="canonical text line"):
        pm.Pipeline.from_text("pm-canon 2\nnonsense\n")
