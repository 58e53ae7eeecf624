"""Fusion decisions and generated kernel source; the few tests that also run the numba
backend force kernels (numba_forced) and assert that every group ran its kernel."""
import numpy as np
import pytest

import graphc as gc
from graphc.kernels.cpu import codegen
from graphc.kernels.fusion import fuse
from graphc.runtime.passes import optimize
from agreement_helpers import agree


def _graph(fn, *specs):
    f = gc.function(fn, input_signature=list(specs), backend="numpy")
    return optimize(f.get_concrete_function().graph)


def _groups(graph):
    return [item for kind, item in fuse(graph) if kind == "group"]


def _types(group):
    return [op.type for op in group.ops]


F32 = gc.float32


def test_elementwise_chain_is_one_group_reading_inputs_once():
    g = _graph(lambda x, a, b: gc.tanh(a * x + b) * gc.exp(-x * x) + 0.5 * gc.sin(x),
               gc.TensorSpec([100], F32), gc.TensorSpec([], F32), gc.TensorSpec([], F32))
    (grp,) = _groups(g)
    assert {"tanh", "exp", "sin", "multiply", "add"} <= set(_types(grp))
    assert [v.name for v in grp.inputs].count("x") == 1
    assert len(grp.outputs) == 1 and grp.outputs[0] is g.outputs[0]


def test_softmax_is_one_group_with_two_reductions_over_last_axis():
    def softmax(x):
        e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
        return e / gc.reduce_sum(e, axis=-1, keepdims=True)
    (grp,) = _groups(_graph(softmax, gc.TensorSpec([8, 16], F32)))
    assert grp.axes == (1,)
    assert _types(grp).count("reduce_max") == 1 and _types(grp).count("reduce_sum") == 1
    assert len(grp.outputs) == 1


def test_layernorm_with_gamma_beta_is_one_group():
    def ln(x, g, b):
        mean = gc.reduce_mean(x, axis=-1, keepdims=True)
        xc = x - mean
        var = gc.reduce_mean(xc * xc, axis=-1, keepdims=True)
        return xc * gc.rsqrt(var + 1e-5) * g + b
    groups = _groups(_graph(ln, gc.TensorSpec([8, 16], F32), gc.TensorSpec([16], F32),
                            gc.TensorSpec([16], F32)))
    assert len(groups) == 1 and _types(groups[0]).count("reduce_sum") == 2


def test_reductions_over_different_axes_go_to_different_groups():
    g = _graph(lambda x: gc.reduce_sum(x * 2, axis=0, keepdims=True) +
               gc.reduce_sum(x * 3, axis=1, keepdims=True), gc.TensorSpec([4, 5], F32))
    groups = _groups(g)
    assert sorted(grp.axes for grp in groups if grp.axes) == [(0,), (1,)]


def test_dropped_axis_reduction_is_not_consumed_inside_its_group():
    g = _graph(lambda x: gc.reduce_sum(x * 2, axis=1) * 3.0, gc.TensorSpec([4, 4], F32))
    for grp in _groups(g):
        internal = {id(v) for op in grp.ops for v in op.outputs}
        for op in grp.ops:
            for v in op.inputs:
                assert id(v) not in internal or len(v.type.shape) == grp.rank


def test_path_through_an_unfused_op_prevents_a_cycle(numba_forced):
    # y feeds matmul (not fusible) and the final add; the add may not join y's group
    def f(x, w):
        y = gc.exp(x * 2.0)
        return y + gc.matmul(y, w)
    g = _graph(f, gc.TensorSpec([4, 4], F32), gc.TensorSpec([4, 4], F32))
    plan = fuse(g)
    seen = set()
    for kind, item in plan:       # every step's inputs exist before it runs
        ops = item.ops if kind == "group" else [item]
        produced = {id(v) for op in ops for v in op.outputs}
        for op in ops:
            for v in op.inputs:
                assert id(v) in seen or id(v) in produced or v in g.all_inputs
        seen |= produced
    x = np.linspace(-1, 1, 16, dtype=np.float32).reshape(4, 4)
    w = np.linspace(0, 2, 16, dtype=np.float32).reshape(4, 4)
    with numba_forced.expect(kernels=True):
        agree(f, x, w)          # eager, numpy and numba; every numba group ran its kernel


def test_effectful_ops_keep_their_order(numba_forced):
    v = gc.Variable(np.zeros(3, np.float32))

    def f(x):
        a = x * 2.0
        v.assign(a)
        b = v.read_value() + a * a
        return b
    x = np.arange(3, dtype=np.float32)
    fast = gc.function(f, backend="numba")
    with numba_forced.expect(kernels=True):
        got = fast(x)
    np.testing.assert_allclose(got.numpy(), 2 * x + 4 * x * x)
    runners = fast.get_concrete_function(x).graph._numba_plan.groups
    assert runners and all(r.used and not r.fallbacks for r in runners)
    np.testing.assert_allclose(v.numpy(), 2 * x)


def test_fill_and_non_elementwise_ops_are_not_fused():
    g = _graph(lambda x: gc.reshape(x * 2.0, [2, 2]) + gc.ones([2, 2]),
               gc.TensorSpec([4], F32))
    for grp in _groups(g):
        assert "reshape" not in _types(grp) and "fill" not in _types(grp)


def _spec(group):
    flags = tuple(tuple(False for _ in v.type.shape) for v in group.inputs)
    return codegen.KernelSpec(group, flags, group.rank,
                              [len(v.type.shape) for v in group.inputs], group.axes or ())


def test_kernel_source_is_a_readable_loop_nest_naming_user_lines():
    def softmax(x):
        e = gc.exp(x - gc.reduce_max(x, axis=-1, keepdims=True))
        return e / gc.reduce_sum(e, axis=-1, keepdims=True)
    (grp,) = _groups(_graph(softmax, gc.TensorSpec([8, 16], F32)))
    src = codegen.generate(_spec(grp), "k")
    compile(src, "<kernel>", "exec")
    # exp(x - max) is kept in the output's own row until the last pass divides it there
    assert "for i0 in range(outer_lo, imin(outer_hi, d0)):" in src and "for i1 in range(d1):" in src
    assert "return run_blocks(serial, (in0, ), (out0, ), (d0, d1, ), np.int64(d0))" in src
    assert "buf_v2 = out0[i0]" in src and "row_maximum(" in src and "np.empty" not in src
    exp_line = next(ln for ln in src.splitlines() if "exp(" in ln)
    assert "test_fusion.py:" in exp_line and "# exp" in exp_line
    assert "out0[i0, i1]" in src


def test_row_buffer_without_a_full_output_is_allocated_per_chunk_of_rows():
    def two_sums(x):
        e = gc.exp(x)
        return [gc.reduce_sum(e, axis=-1), gc.reduce_sum(e * x, axis=-1)]
    (grp,) = _groups(_graph(two_sums, gc.TensorSpec([8, 16], F32)))
    src = codegen.generate(_spec(grp), "k")
    compile(src, "<kernel>", "exec")
    assert "for c0 in range(outer_lo, imin(outer_hi, (d0 + 63) // 64)):" in src
    assert "i0 = c0 * 64 + r0" in src and "np.int64((d0 + 63) // 64))" in src   # the blocks
    assert "np.empty(d1, float32)  # row buffer" in src


def test_canonical_text_has_no_concrete_sizes():
    fn = lambda x: gc.exp(x) * 2.0   # noqa: E731
    a = _groups(_graph(fn, gc.TensorSpec([3, 7], F32)))[0]
    b = _groups(_graph(fn, gc.TensorSpec([5, 11], F32)))[0]
    assert _spec(a).canonical() == _spec(b).canonical()
    c = _groups(_graph(fn, gc.TensorSpec([5, 11], gc.float64)))[0]
    assert _spec(c).canonical() != _spec(a).canonical()


@pytest.mark.parametrize("dtype", [gc.float32, gc.int32])
def test_reduction_identities_in_source(dtype):
    g = _graph(lambda x: [gc.reduce_max(x * x, axis=0), gc.reduce_min(x * x, axis=0)],
               gc.TensorSpec([4, 3], dtype))
    (grp,) = _groups(g)
    src = codegen.generate(_spec(grp), "k")
    if dtype == gc.float32:
        assert "-np.inf" in src and "_nan" in src
    else:
        assert str(np.iinfo(np.int32).min) in src and "_nan" not in src


def _chain(x):
    return gc.tanh(x * 1.5 + 0.5) * gc.exp(-x * x)


@pytest.mark.parametrize("width", ["512", "0"])
def test_vector_width_hint_sits_at_the_top_of_the_serial_variant(monkeypatch, width):
    """It sets function attributes: the serial function holds every loop (the parallel
    variant runs its machine code on blocks)."""
    monkeypatch.setenv("GRAPHC_VECTOR_WIDTH", width)
    (grp,) = _groups(_graph(_chain, gc.TensorSpec([8, 16], F32)))
    src = codegen.generate(_spec(grp), "k")
    compile(src, "<kernel>", "exec")
    lines = src.splitlines()
    hints = [n for n, ln in enumerate(lines) if "prefer_vector_width(" in ln]
    if width == "0":
        assert not hints
        return
    assert all("prefer_vector_width(512)" in lines[n] for n in hints)
    serial = lines.index(next(ln for ln in lines if ln.startswith("def k(")))
    assert hints == [serial + 1]


def test_kernels_use_512_bit_vectors_on_avx512_cpus(tmp_path, monkeypatch, numba_forced):
    import llvmlite.binding as llb
    if "+avx512f" not in llb.get_host_cpu_features().flatten().split(","):
        pytest.skip("this CPU has no AVX-512F")
    monkeypatch.setenv("GRAPHC_CACHE_DIR", str(tmp_path))
    x = np.linspace(-3, 3, 64, dtype=np.float32).reshape(8, 8)
    fn = gc.function(_chain, backend="numba")
    with numba_forced.expect(kernels=True):
        got = fn(x)
    np.testing.assert_allclose(got.numpy(), _chain(gc.constant(x)).numpy(), rtol=2e-6,
                               atol=1e-6)     # a*x + b as one FMA in the kernel
    (kern,) = [k for r in fn.get_concrete_function(x).graph._numba_plan.groups
               for k in r.used.values()]
    ir = "".join(kern.serial.inspect_llvm().values())
    assert "<16 x float>" in ir and '"prefer-vector-width"="512"' in ir


def test_no_cycle_through_a_group_that_grew_after_its_value_was_made(numba_forced):
    # fuzz seed 1140: the gradient of where(x0 < x1, x1, where(0.5 < x1, x1, 0.5)) over
    # [N, 1] x [N] -> [N, N]. A value a group made before it took an op reading another group
    # G kept its old ancestor set, so an op reading that value joined G: "fusion produced a
    # dependency cycle" at trace time (default settings from N = 400; forced kernels, N = 1)
    x0 = gc.constant(np.linspace(-1, 1, 5, dtype=np.float32).reshape(5, 1))
    x1 = gc.constant(np.linspace(-2, 2, 5, dtype=np.float32))

    def program(x0, x1):
        with gc.GradientTape() as tape:
            tape.watch(x1)
            v5 = gc.where(x0 < x1, x1, gc.where(0.5 < x1, x1, 0.5))
            loss = gc.reduce_mean(v5)
        return v5, tape.gradient(loss, x1)
    want = program(x0, x1)
    with numba_forced.expect(kernels=True):
        got = gc.function(program, backend="numba", autograph=False)(x0, x1)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
