"""The op registry: every primitive is complete, and numpy impls give exactly the inferred dtype."""
import itertools
import re

import numpy as np
import pytest

import graphc as gc  # noqa: F401  (importing graphc registers every op family)
from graphc.runtime.registry import REGISTRY, register, ELEMENTWISE
from graphc.runtime.types import TensorType

DTYPES = [gc.float32, gc.float64, gc.int32, gc.int64, gc.bool]
SAMPLE = {"f": [-1.5, 0.0, 0.25, 2.0], "i": [-3, 0, 1, 7], "b": [True, False, True, False]}


def _sample(dtype):
    return np.array(SAMPLE[dtype.np.kind], dtype=dtype.np)


def test_every_op_has_type_rule_and_numpy_impl():
    assert len(REGISTRY) > 40
    for name, opdef in REGISTRY.items():
        assert opdef.type == name
        assert callable(opdef.infer), name
        assert callable(opdef.numpy), name


def test_registering_twice_is_refused():
    with pytest.raises(ValueError, match="'add' registered twice"):
        register("add", lambda types: types, np.add)


SCALAR_OPS = sorted(n for n, d in REGISTRY.items()
                    if d.scalar is not None and d.kind == ELEMENTWISE)


def _arity(template):
    return len(set(re.findall(r"\{(\d+)\}", template)))


def _attrs(name, dtype):
    return {"cast": {"dtype": dtype}, "fill": {"shape": (2, 3)}}.get(name, {})


@pytest.mark.parametrize("name", SCALAR_OPS)
def test_impl_dtype_equals_inferred_dtype(name):
    opdef = REGISTRY[name]
    n = _arity(opdef.scalar)
    tried = 0
    for dtypes in itertools.product(DTYPES, repeat=n):
        for attr_dtype in (DTYPES if name == "cast" else [None]):
            attrs = _attrs(name, attr_dtype)
            shape = () if name == "fill" else (4,)
            types = [TensorType(d, shape) for d in dtypes]
            try:
                out = opdef.infer(types, **attrs)
            except (TypeError, ValueError):
                continue   # this dtype mix is rejected by the type rule
            args = [_sample(d) if shape else _sample(d)[1] for d in dtypes]
            if name == "pow":   # ints to negative powers are an error, in TF as in numpy
                args[1] = np.abs(args[1])
            if name in ("floordiv", "mod") and dtypes[1].is_integer:   # x // 0 raises (TF)
                args[1] = np.where(args[1] == 0, 2, args[1]).astype(args[1].dtype)
            with np.errstate(all="ignore"):
                got = np.asarray(opdef.numpy(*args, **attrs))
            assert got.dtype == out[0].dtype.np, (name, dtypes, attrs, got.dtype, out[0])
            assert got.shape == out[0].shape, (name, dtypes, got.shape, out[0])
            tried += 1
    assert tried, f"{name}: no dtype combination was accepted"


def test_scalar_templates_are_well_formed():
    for name in SCALAR_OPS:
        template = REGISTRY[name].scalar
        n = _arity(template)
        assert sorted(set(int(i) for i in re.findall(r"\{(\d+)\}", template))) == list(range(n))
