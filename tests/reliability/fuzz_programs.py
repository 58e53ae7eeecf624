"""Random straight-line tensor programs for the differential fuzzer (tests/reliability/test_fuzz.py).

A program is a small DAG over 1-3 inputs of shapes that broadcast (0- and 1-sized dims
included): elementwise unary and binary ops, comparisons, logic, where, cast between the
five dtypes, reductions over random axes, softmax, transpose and matmul, drawn to respect
each op's dtype rules. A few programs start with a deliberately invalid op, which must raise
the same error type eagerly and while tracing. Inputs mix ordinary values with edge values
(-0.0, denormals, +-inf, NaN, +-1e30, float max, integer extremes).

This module holds the program model, its rendering to Python source (`Program.source`;
`Program.script()` is a whole runnable reproducer) and its scenario tags; the generator that
draws one from a seed is fuzz_generator.py.
"""
from dataclasses import dataclass, field

import numpy as np

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
DTYPES = FLOATS + INTS + ("bool",)

FLOAT_UNARY = ("negative", "abs", "sign", "square", "exp", "log", "log1p", "sqrt", "rsqrt",
               "sin", "cos", "tan", "tanh", "erf", "floor", "ceil", "round")
INT_UNARY = ("negative", "abs", "sign", "square")
ARITH = ("add", "subtract", "multiply", "divide", "floordiv", "mod", "pow", "maximum",
         "minimum")
COMPARE = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
OPERATORS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floordiv": "//",
             "mod": "%", "pow": "**", "less": "<", "less_equal": "<=", "greater": ">",
             "greater_equal": ">=", "logical_and": "&", "logical_or": "|"}
REDUCE = {"reduce_sum": "numeric", "reduce_prod": "numeric", "reduce_max": "numeric",
          "reduce_min": "numeric", "reduce_mean": "numeric", "reduce_any": "bool",
          "reduce_all": "bool", "reduce_logsumexp": "float"}


def _f32(x):
    return float(np.float32(x))


F32_MAX, F64_MAX = _f32(np.finfo(np.float32).max), float(np.finfo(np.float64).max)
EDGE = {
    "float32": [-0.0, 0.0, 1.0, -1.0, 2.5, -0.5, _f32(1e-45), _f32(-1e-40), _f32(1.1754944e-38),
                np.inf, -np.inf, np.nan, 1e30, -1e30, F32_MAX, -F32_MAX, 88.7, -103.9],
    "float64": [-0.0, 0.0, 1.0, -1.0, 2.5, -0.5, 5e-324, -1e-310, 2.2250738585072014e-308,
                np.inf, -np.inf, np.nan, 1e30, -1e30, F64_MAX, -F64_MAX, 1e300, 709.8],
    "int32": [-2**31, 2**31 - 1, -2**31 + 1, 0, 1, -1, 2**16],
    "int64": [-2**63, 2**63 - 1, -2**63 + 1, 0, 1, -1, 2**31, -2**31 - 1, 2**53 + 1],
}
# Python scalars an op may take beside a tensor (converted to the tensor's dtype)
LITERALS = {
    "float": ["0.5", "1.0", "2.0", "-1.0", "0.0", "-0.0", "3.0", "1e30", "float('inf')",
              "float('nan')", "1e-40"],
    "int": ["1", "-1", "0", "2", "3", "7"],
    "bool": ["True", "False"],
}


def kind_of(dtype):
    return "float" if dtype in FLOATS else "int" if dtype in INTS else "bool"


@dataclass
class Value:
    name: str
    dtype: str
    shape: tuple


@dataclass
class Node:
    """One statement `name = expr`; `op`/`args`/`attrs` describe it for the error model."""
    out: Value
    op: str
    args: list          # Value or Python literal text
    attrs: dict
    expr: str
    invalid: bool = False


@dataclass
class Program:
    seed: int
    inputs: list                      # Value
    arrays: list                      # numpy arrays, one per input
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)   # Value

    @property
    def source(self):
        args = ", ".join(v.name for v in self.inputs)
        lines = [f"def program({args}):"]
        lines += [f"    {n.out.name} = {n.expr}" for n in self.nodes]
        lines.append(f"    return [{', '.join(v.name for v in self.outputs)}]")
        return "\n".join(lines) + "\n"

    def scenarios(self):
        """Tags naming the edge cases this program exercises (for a long run's figures)."""
        tags = set()
        shapes = [v.shape for v in self.inputs] + [n.out.shape for n in self.nodes]
        if any(0 in s for s in shapes):
            tags.add("0-sized dim")
        if any(1 in v.shape for v in self.inputs) and len(set(shapes)) > 1:
            tags.add("broadcast of 1-sized dims")
        if any(int(np.prod(s, dtype=np.int64)) >= 1 << 16 for s in shapes):
            tags.add("64k+ elements (parallel kernels)")
        for a in self.arrays:
            if a.dtype.kind == "f":
                fin = np.isfinite(a)
                big = np.abs(np.where(fin, a, 0)) >= 1e30
                tiny = (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny)
                for tag, hit in (("NaN", np.isnan(a)), ("+-inf", np.isinf(a)),
                                 ("-0.0", (a == 0) & np.signbit(a)), ("denormals", tiny),
                                 ("1e30 / float max", big)):
                    if hit.any():
                        tags.add(tag + " input")
            elif a.dtype.kind == "i":
                info = np.iinfo(a.dtype)
                if ((a == info.min) | (a == info.max)).any():
                    tags.add("integer extremes input")
        ops = {n.op for n in self.nodes}
        families = {"matmul": {"matmul"}, "reduction": set(REDUCE), "softmax": {"softmax"},
                    "cast": {"cast"}, "where": {"where"}, "transpose": {"transpose"},
                    "constant folding": {"constant"},
                    "transcendental": {"exp", "log", "log1p", "sin", "cos", "tan", "tanh",
                                       "erf", "pow"}}
        tags.update(name for name, members in families.items() if ops & members)
        if any(n.op in ("floordiv", "mod") and n.out.dtype in INTS for n in self.nodes):
            tags.add("integer // and %")
        if any(n.invalid for n in self.nodes):
            tags.add("invalid op (trace-time error)")
        return tags

    def inputs_source(self):
        return "\n".join(f"{v.name} = {array_source(a)}"
                         for v, a in zip(self.inputs, self.arrays))

    def script(self):
        """A runnable reproducer: the program, its inputs, and the ways it runs."""
        names = ", ".join(f"gc.constant({v.name})" for v in self.inputs)
        sig = ", ".join(f"gc.TensorSpec({[None] * len(v.shape)}, gc.{v.dtype})"
                        for v in self.inputs)
        return (f"# graphc differential fuzzer, seed {self.seed}\n"
                "import os\nimport numpy as np\nimport graphc as gc\n\n"
                f"{self.inputs_source()}\n\n{self.source}\n"
                f"eager = program({names})\n"
                f"on_numpy = gc.function(program, backend='numpy', autograph=False)({names})\n"
                "os.environ.update(GRAPHC_NUMBA_MIN_SIZE='0', GRAPHC_KERNEL_CHOICE='kernel')\n"
                f"on_numba = gc.function(program, backend='numba', autograph=False)({names})\n"
                "# shapes known only at run time (every dim None)\n"
                f"dynamic = gc.function(program, backend='numba', autograph=False,\n"
                f"                      input_signature=[{sig}])({names})\n"
                "for outs in zip(eager, on_numpy, on_numba, dynamic):\n"
                "    print(*(repr(t.numpy()) for t in outs), sep='\\n')\n")


def array_source(a):
    """Exact Python source for array `a` (floats by repr, which round-trips every bit)."""
    def item(x):
        if a.dtype.kind == "f":
            x = float(x)
            return "nan" if x != x else ("inf" if x == np.inf else "-inf" if x == -np.inf
                                         else repr(x))
        return repr(bool(x)) if a.dtype.kind == "b" else repr(int(x))
    body = "[" + ", ".join(item(x) for x in a.reshape(-1)) + "]"
    body = body.replace("nan", "np.nan").replace("inf", "np.inf")
    return f"np.array({body}, np.{a.dtype.name}).reshape({a.shape!r})"
