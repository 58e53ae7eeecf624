"""The random program generator of the differential fuzzer: `generate(seed)` draws a
`Program` (fuzz_programs.py) from `random.Random(seed)`, so a seed is a reproducer.

Ops are drawn to respect each op's dtype and broadcasting rules (a pool of earlier values,
later ones likelier, so chains grow deep and fuse); integer divisors and exponents are
mostly guarded; one program in 25 starts with an op its rules refuse.
"""
import random

import numpy as np

from .fuzz_programs import (ARITH, COMPARE, DTYPES, EDGE, FLOAT_UNARY, FLOATS, INT_UNARY, INTS,
                            LITERALS, OPERATORS, REDUCE, Node, Program, Value, array_source,
                            kind_of)

_DTYPE_WEIGHTS = (35, 25, 15, 10, 15)


def _text(v):
    return v if isinstance(v, str) else v.name


def _shape(v):
    return () if isinstance(v, str) else v.shape


def _broadcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class Generator:
    """Draws one program from `random.Random(seed)`."""

    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        self.pool = []
        self.nodes = []
        self.big = False

    # -- inputs --------------------------------------------------------------------------
    def domain(self):
        r = self.r
        rank = r.choices([0, 1, 2, 3], [1, 3, 4, 2])[0]
        dims = [r.choice([1, 2, 3, 4, 5, 5, 7, 9, 17]) for _ in range(rank)]
        if rank and r.random() < 0.15:
            dims[r.randrange(rank)] = 0
        elif rank and r.random() < self.BIG:
            # past the kernels' prange threshold (64k elements): the parallel variant runs
            dims = [1] * (rank - 2) + [257, 260] if rank >= 2 else [70001]
            self.big = True
        return tuple(dims)

    def input_shape(self, domain):
        r = self.r
        rank = r.randint(0, len(domain)) if r.random() < 0.3 else len(domain)
        return tuple(1 if r.random() < 0.25 else d for d in domain[len(domain) - rank:])

    def array(self, dtype, shape):
        r = self.r
        n = int(np.prod(shape, dtype=np.int64))
        p_edge = r.choice([0.1, 0.3, 0.6])
        if dtype == "bool":
            return np.array([r.random() < 0.5 for _ in range(n)], np.bool_).reshape(shape)
        scale = r.choice([1.0, 10.0, 1000.0])
        out = []
        for _ in range(n):
            if r.random() < p_edge:
                out.append(r.choice(EDGE[dtype]))
            elif dtype in FLOATS:
                x = r.gauss(0.0, scale)
                out.append(round(x * 2) / 2 if r.random() < 0.3 else x)   # ties for round()
            else:
                out.append(r.randint(-int(scale), int(scale)))
        return np.array(out, dtype=dtype).reshape(shape)

    # -- values --------------------------------------------------------------------------
    def pick(self, pred=lambda v: True):
        """A pool value, later ones likelier (so chains grow deep and fuse)."""
        cands = [v for v in self.pool if pred(v)]
        if not cands:
            return None
        return self.r.choices(cands, [1 + i for i in range(len(cands))])[0]

    def partner(self, x, pred=lambda v: True):
        """A pool value of x's dtype broadcasting with x, or a Python literal (text)."""
        cands = [v for v in self.pool if v.dtype == x.dtype and pred(v)
                 and _broadcast(v.shape, x.shape) is not None]
        if cands and self.r.random() < 0.75:
            return self.r.choice(cands)
        return self.r.choice(LITERALS[kind_of(x.dtype)])

    def emit(self, op, args, attrs, expr, dtype, shape, invalid=False):
        out = Value(f"v{len(self.nodes)}", dtype, tuple(shape))
        self.nodes.append(Node(out, op, args, attrs, expr, invalid))
        self.pool.append(out)
        return out

    # -- op builders (each returns False when the pool has nothing suitable) -------------
    def unary(self):
        x = self.pick(lambda v: v.dtype != "bool")
        if x is None:
            return False
        op = self.r.choice(FLOAT_UNARY if x.dtype in FLOATS else INT_UNARY)
        expr = f"gc.{op}({x.name})"
        if op in ("negative", "abs") and self.r.random() < 0.3:
            expr = f"(-{x.name})" if op == "negative" else f"abs({x.name})"
        self.emit(op, [x], {}, expr, x.dtype, x.shape)
        return True

    def arith(self):
        x = self.pick(lambda v: v.dtype != "bool")
        if x is None:
            return False
        op = self.r.choice(ARITH)
        y = self.partner(x)
        a, b = (y, x) if self.r.random() < 0.3 else (x, y)
        is_int = x.dtype in INTS
        if is_int and op in ("floordiv", "mod") and self.r.random() < 0.9:
            b = self.guard(b, "nonzero")    # keep most integer divisions defined
        elif is_int and op == "pow" and self.r.random() < 0.9:
            b = self.guard(b, "small")      # exponents in 0..3; integers wrap as in numpy
        dtype = "float64" if op == "divide" and is_int else x.dtype
        self.emit(op, [a, b], {}, self.call(op, a, b), dtype, _broadcast(_shape(a), _shape(b)))
        return True

    def call(self, op, a, b):
        """`gc.op(a, b)`, or the operator (`a + b`, `2.0 * a`: Tensor's dunder methods)."""
        sym = OPERATORS.get(op)
        if sym and self.r.random() < 0.3:
            return f"({_text(a)} {sym} {_text(b)})"
        return f"gc.{op}({_text(a)}, {_text(b)})"

    def guard(self, b, how):
        if isinstance(b, str):
            return self.r.choice(["1", "2", "-1", "7"] if how == "nonzero" else ["0", "1", "3"])
        if how == "small":
            return self.emit("clip_by_value", [b], {}, f"gc.clip_by_value({b.name}, 0, 3)",
                             b.dtype, b.shape)
        c = self.emit("equal", [b, "0"], {}, f"gc.equal({b.name}, 0)", "bool", b.shape)
        return self.emit("where", [c, "1", b], {}, f"gc.where({c.name}, 1, {b.name})",
                         b.dtype, b.shape)

    def compare(self):
        op = self.r.choice(COMPARE)
        x = self.pick(lambda v: v.dtype != "bool" or op in ("equal", "not_equal"))
        if x is None:
            return False
        y = self.partner(x)
        y_text, y_shape = (y, ()) if isinstance(y, str) else (y.name, y.shape)
        self.emit(op, [x, y], {}, self.call(op, x, y), "bool", _broadcast(x.shape, y_shape))
        return True

    def logical(self):
        x = self.pick(lambda v: v.dtype == "bool")
        if x is None:
            return False
        if self.r.random() < 0.3:
            self.emit("logical_not", [x], {}, f"gc.logical_not({x.name})", "bool", x.shape)
            return True
        op = self.r.choice(["logical_and", "logical_or"])
        y = self.partner(x)
        self.emit(op, [x, y], {}, self.call(op, x, y), "bool", _broadcast(x.shape, _shape(y)))
        return True

    def where(self):
        c = self.pick(lambda v: v.dtype == "bool")
        if c is None:
            return False
        x = self.pick(lambda v: _broadcast(v.shape, c.shape) is not None)
        y = self.partner(x, lambda v: _broadcast(v.shape, x.shape, c.shape) is not None)
        y_text, y_shape = (y, ()) if isinstance(y, str) else (y.name, y.shape)
        args, texts = [c, x, y], [x.name, y_text]
        if self.r.random() < 0.5:
            args, texts = [c, y, x], texts[::-1]
        self.emit("where", args, {}, f"gc.where({c.name}, {texts[0]}, {texts[1]})", x.dtype,
                  _broadcast(c.shape, x.shape, y_shape))
        return True

    def cast(self):
        x = self.pick()
        to = self.r.choice([d for d in DTYPES if d != x.dtype])
        name = "bool" if to == "bool" else to
        self.emit("cast", [x], {"dtype": to}, f"gc.cast({x.name}, gc.{name})", to, x.shape)
        return True

    def reduce(self):
        x = self.pick()
        ops = [op for op, k in REDUCE.items()
               if (k == "bool") == (x.dtype == "bool") and (k != "float" or x.dtype in FLOATS)]
        if not ops:
            return False
        op = self.r.choice(ops)
        rank = len(x.shape)
        keep = self.r.random() < 0.4
        form = self.r.random()
        if rank == 0 or form < 0.25:
            axis, axes = None, tuple(range(rank))
        elif form < 0.7:
            a = self.r.randrange(rank)
            axes = (a,)
            axis = a - rank if self.r.random() < 0.3 else a
        else:
            axes = tuple(sorted(self.r.sample(range(rank), self.r.randint(1, rank))))
            axis = axes
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keep else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
        kw = f", keepdims={keep}" if keep else ""
        self.emit(op, [x], {"axes": axes, "keepdims": keep},
                  f"gc.{op}({x.name}, axis={axis!r}{kw})", x.dtype, shape)
        return True

    def softmax(self):
        x = self.pick(lambda v: v.dtype in FLOATS and len(v.shape) >= 1)
        if x is None:
            return False
        a = self.r.randrange(len(x.shape))
        self.emit("softmax", [x], {"axis": a}, f"gc.nn.softmax({x.name}, axis={a})", x.dtype,
                  x.shape)
        return True

    def transpose(self):
        x = self.pick(lambda v: len(v.shape) >= 2)
        if x is None:
            return False
        perm = list(range(len(x.shape)))
        self.r.shuffle(perm)
        self.emit("transpose", [x], {"perm": tuple(perm)},
                  f"gc.transpose({x.name}, perm={perm!r})", x.dtype,
                  tuple(x.shape[p] for p in perm))
        return True

    def matmul(self):
        """A product that fits: two pool values, x with itself transposed, or an outer one."""
        mats = [v for v in self.pool if len(v.shape) >= 2 and v.dtype != "bool"
                and (v.dtype in FLOATS or self.r.random() < 0.3)]
        pairs = []
        for a in mats:
            for b in mats:
                if a.dtype != b.dtype:
                    continue
                for ta in (False, True):
                    for tb in (False, True):
                        sa, sb = a.shape[-2:][::-1] if ta else a.shape[-2:], \
                            b.shape[-2:][::-1] if tb else b.shape[-2:]
                        batch = _broadcast(a.shape[:-2], b.shape[:-2])
                        if sa[1] == sb[0] and batch is not None:
                            pairs.append((a, b, ta, tb, batch + (sa[0], sb[1])))
        if pairs:
            a, b, ta, tb, shape = self.r.choice(pairs)
            flags = (", transpose_a=True" if ta else "") + (", transpose_b=True" if tb else "")
            self.emit("matmul", [a, b], {"ta": ta, "tb": tb},
                      f"gc.matmul({a.name}, {b.name}{flags})", a.dtype, shape)
            return True
        x = self.pick(lambda v: len(v.shape) >= 1 and v.dtype in FLOATS)
        if x is None:
            return False
        # outer product: [..., n, 1] @ [..., 1, n]
        self.emit("matmul", [x, x], {"outer": True},
                  f"gc.matmul(gc.expand_dims({x.name}, -1), gc.expand_dims({x.name}, -2))",
                  x.dtype, x.shape + (x.shape[-1],))
        return True

    def constant(self):
        """A constant array (edge values too): ops on constants alone are folded at trace time,
        so constant folding runs the same numpy rules on them."""
        like = self.pick()
        dtype = self.r.choices(DTYPES, _DTYPE_WEIGHTS)[0]
        shape = tuple(1 if self.r.random() < 0.3 else d for d in like.shape)
        shape = shape[self.r.randint(0, len(shape)):] if self.r.random() < 0.3 else shape
        if int(np.prod(shape, dtype=np.int64)) > 64:
            shape = ()
        arr = self.array(dtype, shape)
        self.emit("constant", [], {}, f"gc.constant({array_source(arr)})", dtype, shape)
        return True

    def invalid(self):
        """An op the dtype or shape rules refuse: TypeError/ValueError eagerly and traced."""
        r = self.r
        x = self.pick()
        other = [v for v in self.pool if v.dtype != x.dtype]
        bad_shape = [v for v in self.pool if _broadcast(v.shape, x.shape) is None
                     and v.dtype == x.dtype]
        choices = [f"gc.exp(gc.cast({x.name}, gc.int32))", f"gc.logical_not({x.name})"
                   if x.dtype != "bool" else f"gc.negative({x.name})",
                   f"gc.reduce_sum({x.name}, axis={len(x.shape)})"]
        if other:
            choices.append(f"gc.add({x.name}, {r.choice(other).name})")
        if bad_shape:
            choices.append(f"gc.multiply({x.name}, {r.choice(bad_shape).name})")
        self.emit("invalid", [x], {}, r.choice(choices), x.dtype, x.shape, invalid=True)
        return True

    # -- the program ---------------------------------------------------------------------
    BIG = 0.02
    BUILDERS = (("unary", 18), ("arith", 22), ("compare", 9), ("logical", 5), ("where", 8),
                ("cast", 10), ("reduce", 14), ("softmax", 3), ("transpose", 3), ("matmul", 8),
                ("constant", 4))

    def program(self):
        r = self.r
        domain = self.domain()
        inputs, arrays = [], []
        for i in range(r.choice([1, 2, 2, 3])):
            dtype = r.choices(DTYPES, _DTYPE_WEIGHTS)[0]
            v = Value(f"x{i}", dtype, self.input_shape(domain))
            inputs.append(v)
            arrays.append(self.array(dtype, v.shape))
        self.pool = list(inputs)
        if r.random() < 0.04:
            self.invalid()      # first: its trace-time error comes before any run-time one
        names, weights = zip(*self.BUILDERS)
        target = r.randint(2, 12)
        while len(self.nodes) < target:
            build = r.choices(names, weights)[0]
            if not (self.big and build == "matmul"):    # a big matmul bound costs seconds
                getattr(self, build)()
        used = {id(a) for n in self.nodes for a in n.args if isinstance(a, Value)}
        outs = [n.out for n in self.nodes if id(n.out) not in used or r.random() < 0.15]
        return Program(self.seed, inputs, arrays, self.nodes, outs)


def generate(seed):
    return Generator(seed).program()
