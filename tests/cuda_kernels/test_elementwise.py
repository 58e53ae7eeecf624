"""Elementwise groups as grid-stride kernels under the simulator, against the numpy rules
on the same inputs: broadcasting (hypothesis over shapes), every dtype, edge values."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import graphc as gc
from graphc.errors import InvalidArgumentError
from graphc.kernels.cuda import codegen
from graphc.kernels.cuda.scalar import SIMULATOR
from cuda_kernel_cases import B, F32, F64, I32, I64, bool_logic, float_math, int_math
from cuda_kernel_helpers import check, groups, run_group, trace, values

EDGE = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1e-30,
        -1e30, 3e38, 1e300, 7.0, -3.25, 100.0, 1e10, 2.0 ** 31, -2.0 ** 63, 0.1, 4.5]


def _edge(dtype, n, seed):
    vals = np.array(EDGE, dtype=np.float64)
    with np.errstate(over="ignore"):
        vals = vals.astype(dtype)
    return np.random.default_rng(seed).permutation(np.resize(vals, n)).astype(dtype)


@pytest.mark.parametrize("dt", [F32, F64])
def test_float_templates_on_edge_values(dt):
    x = _edge(dt.np, 24, 0).reshape(4, 6)
    y = _edge(dt.np, 6, 1)
    kernels = check(float_math, [gc.TensorSpec([4, 6], dt), gc.TensorSpec([6], dt)], [x, y])
    assert {k.last.kind for k in kernels} == {"elementwise"}


@pytest.mark.parametrize("dt", [F32, F64])
@pytest.mark.parametrize("op", ["exp", "log", "log1p", "sqrt", "sin", "cos", "tan", "tanh",
                                "erf", "floor", "ceil", "round", "sign", "abs", "negative"])
def test_each_unary_math_op_on_edge_values(dt, op):
    """Bit for bit on the simulator (numpy's math); on a GPU libdevice's transcendental
    functions are within 4 ulp of numpy's, special values and zeros exact."""
    x = _edge(dt.np, 24, 2)
    libdevice = op in ("exp", "log", "log1p", "sin", "cos", "tan", "tanh", "erf")
    check(getattr(gc, op), [gc.TensorSpec([24], dt)], [x],
          ulps=4 if libdevice and not SIMULATOR else 0)


@pytest.mark.parametrize("dt", [F32, F64])
def test_math_within_4_ulp_of_float64_reference(dt):
    """Under the simulator the math is numpy's; on a GPU it is libdevice (<= 4 ulp by
    NVIDIA's tables): the bound is checked against float64 references either way."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(40) * 3).astype(dt.np)
    for op, ref in (("exp", np.exp), ("sin", np.sin), ("cos", np.cos), ("tanh", np.tanh),
                    ("log1p", lambda v: np.log1p(np.abs(v))), ("erf", None)):
        fn = (lambda v: gc.log1p(gc.abs(v))) if op == "log1p" else getattr(gc, op)
        graph = trace(fn, gc.TensorSpec([40], dt))
        env = values(graph, [x])
        for grp in groups(graph):
            got, _, _ = run_group(grp, env)
        if ref is None:
            import math
            ref = np.vectorize(math.erf)
        want = ref(x.astype(np.float64))
        ulp = np.spacing(np.abs(want).astype(dt.np)).astype(np.float64)
        assert (np.abs(got[0].astype(np.float64) - want) <= 4 * ulp).all(), op


@pytest.mark.parametrize("dt", [I32, I64])
def test_integer_templates_wrap_as_numpy(dt):
    info = np.iinfo(dt.np)
    x = np.array([info.max, info.min, info.min + 1, -1, 0, 1, 7, -7, info.max // 2,
                  info.min // 3, 12345, -2], dtype=dt.np).reshape(3, 4)
    for y in (info.max, info.min, -1, 3):
        check(int_math, [gc.TensorSpec([3, 4], dt), gc.TensorSpec([], dt)],
              [x, dt.np.type(y)], kinds=["elementwise"] * 2)


@pytest.mark.parametrize("src", [F32, F64])
@pytest.mark.parametrize("dst", [I32, I64, B])
def test_float_to_int_and_bool_casts_give_numpys_answers(src, dst):
    x = _edge(src.np, 24, 4)
    check(lambda v: gc.cast(v, dst), [gc.TensorSpec([24], src)], [x])


def test_bool_logic_runs_flat():
    rng = np.random.default_rng(5)
    a, b = rng.random((3, 5)) > 0.5, rng.random((3, 5)) > 0.5
    (kern,) = check(bool_logic, [gc.TensorSpec([3, 5], B)] * 2, [a, b])
    assert kern.last.flat


@st.composite
def _broadcast_case(draw):
    rank = draw(st.integers(0, 3))
    domain = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    shapes = []
    for _ in range(3):
        keep = draw(st.integers(0, rank))
        shape = [d if draw(st.booleans()) else 1 for d in domain[rank - keep:]]
        shapes.append(shape)
    shapes[draw(st.integers(0, 2))] = list(domain)   # the domain is some input's shape
    dt = draw(st.sampled_from([F32, F64, I32, I64]))
    return dt, shapes, draw(st.integers(0, 2 ** 16))


def _mixed(x, y, z):
    return gc.where(x > y, x * y + z, gc.maximum(x, z) - y) * gc.minimum(y, z)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(_broadcast_case())
def test_broadcasting_matches_numpy(case):
    dt, shapes, seed = case
    rng = np.random.default_rng(seed)
    args = [(rng.standard_normal(s) * 50).astype(dt.np) for s in shapes]
    specs = [gc.TensorSpec(s, dt) for s in shapes]
    check(_mixed, specs, args)


def test_input_broadcast_along_every_dim_is_read_once():
    (kern,) = check(lambda x, a: x * a + a, [gc.TensorSpec([3, 4], F32),
                                             gc.TensorSpec([1, 1], F32)],
                    [np.ones((3, 4), np.float32), np.full((1, 1), 2.5, np.float32)])
    assert "read once: broadcast along every dim" in kern.describe()


def test_scalar_domain():
    (kern,) = check(lambda x, y: gc.exp(x) * y, [gc.TensorSpec([], F32)] * 2,
                    [np.float32(0.5), np.float32(-3)])
    assert kern.last.domain == ()


def test_describe_shows_kind_launch_and_source_with_user_lines():
    (kern,) = check(lambda x: gc.tanh(x) * 2.0, [gc.TensorSpec([3, 5], F32)],
                    [np.ones((3, 5), np.float32)])
    text = kern.describe()
    assert "cuda elementwise kernel over [3, 5]" in text
    assert f"elementwise[1, {codegen.THREADS}]" in text
    assert "for t in range(cuda.grid(1), n, cuda.gridsize(1)):" in text
    assert "# tanh" in text and "test_elementwise.py:" in text


def test_same_group_shares_one_compiled_module():
    a = check(lambda x: x * 3.0 + 1.0, [gc.TensorSpec([4], F32)], [np.ones(4, np.float32)])
    b = check(lambda x: x * 3.0 + 1.0, [gc.TensorSpec([4], F32)], [np.ones(4, np.float32)])
    assert a[0].last.key == b[0].last.key and a[0].last.module() is b[0].last.module()


def test_bad_shapes_raise_the_numpy_rules_located_error():
    from numba import cuda
    graph = trace(lambda x, y: x + y, gc.TensorSpec([None, 4], F32),
                  gc.TensorSpec([None, 4], F32))
    (grp,) = groups(graph)
    from graphc.kernels.cuda.lowering import lower_group
    kern = lower_group(grp)
    with pytest.raises((InvalidArgumentError, ValueError)) as err:
        kern(cuda.to_device(np.ones((3, 4), np.float32)),
             cuda.to_device(np.ones((2, 4), np.float32)))
    assert "add" in str(err.value) and "test_elementwise.py" in str(err.value)
    assert "numpy rules" in kern.describe()


def test_empty_domain_gives_numpys_empty_result():
    (kern,) = check(lambda x: x * 2.0, [gc.TensorSpec([None, 3], F32)],
                    [np.ones((0, 3), np.float32)], numpy_ok=True)
    assert kern.last.kind is None


def test_groups_with_raising_integer_ops_are_not_lowered():
    from graphc.kernels.cuda.lowering import lower_group
    from graphc.kernels.fusion import Group
    graph = trace(lambda x, y: gc.floordiv(x, y), gc.TensorSpec([3], I32),
                  gc.TensorSpec([3], I32))
    grp = Group(0, 1, (3,))
    grp.ops = [op for op in graph.operations if op.type == "floordiv"]
    assert lower_group(grp) is None


def test_strided_inputs_take_the_indexed_kernel():
    from numba import cuda
    from graphc.kernels.cuda.lowering import lower_group
    graph = trace(lambda x, y: x * y - y, gc.TensorSpec([3, 4], F32),
                  gc.TensorSpec([3, 4], F32))
    (grp,) = groups(graph)
    kern = lower_group(grp)
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    y = np.ones((3, 4), np.float32) * 2
    dx = cuda.to_device(x)[:, ::2]
    assert not dx.flags["C_CONTIGUOUS"]
    (out,) = kern(dx, cuda.to_device(y))
    np.testing.assert_array_equal(out.copy_to_host(), x[:, ::2] * y - y)
    assert not kern.last.flat
    (out,) = kern(cuda.to_device(x[:, ::2].copy()), cuda.to_device(y))
    assert kern.last.flat


def test_kernel_takes_a_list_as_the_backend_passes_it():
    from numba import cuda
    from graphc.kernels.cuda.lowering import lower_group
    (grp,) = groups(trace(lambda x, y: x - y, gc.TensorSpec([3], F64),
                          gc.TensorSpec([3], F64)))
    x, y = np.array([1.0, -0.0, np.inf]), np.array([2.0, 0.0, np.inf])
    (out,) = lower_group(grp)([cuda.to_device(x), cuda.to_device(y)])
    np.testing.assert_array_equal(out.copy_to_host(), x - y)


def test_launches_from_several_threads():
    from concurrent.futures import ThreadPoolExecutor
    from numba import cuda
    from graphc.kernels.cuda.lowering import lower_group
    (grp,) = groups(trace(lambda x, y: x * y + y, gc.TensorSpec([8], F64),
                          gc.TensorSpec([8], F64)))
    kern = lower_group(grp)

    def one(seed):
        x, y = np.random.default_rng(seed).standard_normal((2, 8))
        (out,) = kern([cuda.to_device(x), cuda.to_device(y)])
        return np.array_equal(out.copy_to_host(), x * y + y)
    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(one, range(8)))
