"""Every registered op either has a gradient rule or is explicitly non-differentiable, and
every op with a rule is exercised by a gradient test in this directory."""
import pathlib

import graphc  # noqa: F401  (registers every op, including the autodiff ones)
from graphc.runtime.registry import REGISTRY

HERE = pathlib.Path(__file__).parent

# differentiable ops reached through a public function of another name in the tests
EXERCISED_AS = {
    "getitem": "t[", "read_variable": "gc.Variable", "fill": "gc.fill",
    "getitem_grad": "test_second_derivative_through_indexing", "while": "while_loop", "cond": "gc.cond",
    "tensor_list_write": ".write(", "tensor_list_read": ".read(",
    "tensor_list_stack": ".stack(", "tensor_list_gather": ".gather(",
    "tensor_list_unstack": ".unstack(", "tensor_list_concat": ".concat(",
}


def test_every_op_has_a_rule_or_is_marked_nondiff():
    missing = sorted(name for name, op in REGISTRY.items() if op.vjp is None and not op.nondiff)
    assert not missing, f"ops with neither a vjp nor nondiff=True: {missing}"


def test_marked_ops_are_the_expected_kinds():
    nondiff = {name for name, op in REGISTRY.items() if op.nondiff}
    for must in ["equal", "less", "logical_and", "argmax", "shape", "range", "constant",
                 "random_normal", "print", "assign_variable", "stop_gradient", "reduce_all"]:
        assert must in nondiff, must
    for must in ["add", "matmul", "reduce_sum", "gather", "getitem", "cond", "while",
                 "read_variable", "tensor_list_write", "cumsum", "tile"]:
        assert must not in nondiff and REGISTRY[must].vjp is not None, must


def test_every_differentiable_op_is_exercised_by_a_gradient_test():
    text = "".join(p.read_text() for p in HERE.glob("test_*.py"))
    untested = []
    for name, op in REGISTRY.items():
        if op.nondiff or op.vjp is None:
            continue
        probe = EXERCISED_AS.get(name, f"gc.{name}(")
        if probe not in text and f'"{name}"' not in text:
            untested.append(name)
    assert not untested, f"differentiable ops without a gradient test: {untested}"
