"""gc.print of lists, tuples, dicts and namedtuples holding tensors prints the tensors by
value (as tf.print prints a nest), eagerly, on every backend and from a SavedModel."""
import collections
import contextlib
import io

import pytest

import graphc as gc

Pair = collections.namedtuple("Pair", "a b")
WANT = "v:;[[5 6], 1, 's'];([5 6],);{'k': ([5 6], 2.5)};Pair(a=[5 6], b=None);[1, 2]\n"


def show(x):
    gc.print("v:", [x, 1, "s"], (x,), {"k": (x, 2.5)}, Pair(x, None), [1, 2], sep=";")
    return gc.exp(gc.cast(x, gc.float32)) * 2.0   # a fused kernel beside the print


def printed(fn, *args):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue()


def test_eager_nested_print():
    assert printed(show, gc.constant([5, 6])) == WANT


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_compiled_nested_print_every_call(backend, numba_forced):
    f = gc.function(show, backend=backend)
    ran = numba_forced.expect() if backend == "numba" else contextlib.nullcontext()
    with ran:
        assert printed(f, gc.constant([5, 6])) == WANT
        assert printed(f, gc.constant([7, 8])) == WANT.replace("5 6", "7 8")


def test_nested_print_survives_saving(tmp_path):
    m = gc.Module()
    m.f = gc.function(show, input_signature=[gc.TensorSpec([2], gc.int32)])
    gc.saved_model.save(m, str(tmp_path))
    loaded = gc.saved_model.load(str(tmp_path))
    assert printed(loaded.f, gc.constant([5, 6])) == WANT


def test_print_rejects_a_stream_without_write():
    with pytest.raises(TypeError, match="output_stream must be a file-like object"):
        gc.print("x", output_stream="file:///tmp/out.txt")
    with pytest.raises(TypeError, match=r"output_stream .* \(while tracing .*test_print_nested"):
        gc.function(lambda x: gc.print(x, output_stream=42))(gc.constant(1))


@pytest.mark.parametrize("backend", ["eager", "numpy"])
def test_summarize_shows_that_many_elements_at_each_end(backend):
    def show(x):
        gc.print(x, summarize=3)
        gc.print(x)                                     # numpy's format when not given
        gc.print(gc.range(1200), summarize=-1)          # -1: every element
    f = show if backend == "eager" else gc.function(show, backend=backend)
    lines = printed(f, gc.range(10)).splitlines()
    assert lines[0] == "[0 1 2 ... 7 8 9]"
    assert lines[1] == "[0 1 2 3 4 5 6 7 8 9]"
    assert "..." not in "".join(lines[2:]) and "1199]" in lines[-1]
    with pytest.raises(TypeError, match="summarize must be an int"):
        gc.print(gc.range(3), summarize="all")
