"""A gc.function called inside another trace (or under an eager tape) is inlined, but as a
TF nested call it must honour its input_signature and count its traces. The expected
values are what TF 2.21 gives for the same programs (tf. spelling, checked by hand)."""
import numpy as np
import pytest

import graphc as gc


def _pair(signature=None):
    @gc.function(input_signature=signature)
    def inner(x):
        return x * 2.0

    @gc.function
    def outer(x):
        return inner(x) + 1.0
    return inner, outer


def test_nested_call_checks_input_signature():
    inner, outer = _pair([gc.TensorSpec([None], gc.float32)])
    assert outer(np.ones(3, np.float32)).numpy().tolist() == [3.0, 3.0, 3.0]
    # TF 2.21: TypeError for both (was silently accepted here)
    with pytest.raises(TypeError, match=r"inner\(\).*shape \[2, 2\]"):
        outer(np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match=r"inner\(\).*float64"):
        outer(np.ones(3, np.float64))
    assert inner.tracing_count == 1          # TF: one trace serves every nested call


def test_nested_call_converts_python_values_to_the_signature_dtype():
    @gc.function(input_signature=[gc.TensorSpec([], gc.int32)])
    def half(n):
        return n / 2                          # int32 tensor / 2: float64, as TF's truediv

    @gc.function
    def outer(x):
        return half(3)

    out = outer(gc.constant(1.0))
    assert out.dtype == gc.float64 and float(out) == 1.5     # TF 2.21: 1.5, float64


def test_nested_call_under_eager_tape_checks_signature():
    inner, _ = _pair([gc.TensorSpec([None], gc.float32)])
    x = gc.constant(np.ones((2, 2), np.float32))
    with gc.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="input_signature"):
            inner(x)


def test_nested_trace_count_per_signature_as_tf():
    inner, outer = _pair()
    outer(gc.constant([1.0]))
    outer(gc.constant([1.0, 2.0]))
    outer(gc.constant([3.0]))                 # a cached outer trace: nothing new
    assert (inner.tracing_count, outer.tracing_count) == (2, 2)     # TF 2.21: (2, 2)
    inner(gc.constant([5.0]))                 # the eager call traces a key already counted
    assert inner.tracing_count == 2 and len(inner.concrete_functions()) == 1
    inner(gc.constant([5.0, 6.0, 7.0]))
    assert inner.tracing_count == 3


def test_nested_method_with_signature_in_train_step():
    """The RNN of TF's guides: __call__ with an input_signature, called from a train step."""
    class Model(gc.Module):
        def __init__(self):
            super().__init__()
            self.w = gc.Variable(np.float32(0.5))

        @gc.function(input_signature=[gc.TensorSpec([None, None], gc.float32)])
        def __call__(self, x):
            return gc.reduce_sum(x * self.w, axis=1)

    m = Model()

    @gc.function
    def step(x):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean(m(x) ** 2)
        return loss, tape.gradient(loss, m.w)

    loss, g = step(np.ones((2, 3), np.float32))
    assert (float(loss), float(g)) == (2.25, 9.0)
    assert m.__call__.tracing_count == 1                     # TF 2.21: 1 (was 0)
    with pytest.raises(TypeError, match="input_signature"):
        step(np.ones(3, np.float32))


def test_nested_trace_count_never_goes_down():
    """A nested call's count is replaced, not undone, by later traces: an eager call that a
    general (reduce_retracing) trace serves left the count one lower than before it."""
    inner, outer = _pair()
    inner._reduce_retracing = True
    seen = []
    outer(gc.constant([1.0]))
    for n in (2, 3, 1, 4):
        seen.append(inner.tracing_count)
        inner(gc.constant(np.ones(n, np.float32)))
    seen.append(inner.tracing_count)
    assert seen == sorted(seen) and seen[0] == 1 and seen[-1] == 3    # [None] serves 1 and 4


def test_inlined_keys_are_bounded(monkeypatch):
    """Under an eager tape every new shape is inlined and counted (TF traces each); the keys
    kept to tell them apart are bounded, and the count still only grows."""
    import graphc.runtime.function as function_module
    monkeypatch.setattr(function_module, "INLINED_KEYS_MAX", 8)
    inner, _ = _pair()
    counts = []
    for n in range(1, 21):
        with gc.GradientTape() as tape:
            x = gc.constant(np.ones(n, np.float32))
            tape.watch(x)
            y = inner(x)
        assert tape.gradient(y, x).numpy().tolist() == [2.0] * n
        counts.append(inner.tracing_count)
    assert counts == list(range(1, 21)) and len(inner._inlined) <= 8
    inner(gc.constant(np.ones(20, np.float32)))        # a real trace of a counted key
    assert inner.tracing_count == 20


def test_nested_calls_from_threads_count_one_trace():
    from concurrent.futures import ThreadPoolExecutor
    inner, _ = _pair()

    def run(_):
        @gc.function
        def outer(x):
            return inner(x) + 1.0
        return outer(gc.constant([1.0, 2.0])).numpy().tolist()
    with ThreadPoolExecutor(4) as pool:           # an error in a thread is raised here
        assert list(pool.map(run, range(4))) == [[3.0, 5.0]] * 4
    assert inner.tracing_count == 1                   # TF: one trace of inner's signature
    inner(gc.constant([3.0, 4.0]))
    assert inner.tracing_count == 1
