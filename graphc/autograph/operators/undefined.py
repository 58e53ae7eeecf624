"""Placeholders for variables that have no value yet where converted code must name them."""


class UndefinedUse(UnboundLocalError):
    """Python's error for reading a variable that has no value yet."""

    def __init__(self, name):
        super().__init__(f"local variable '{name}' is used before it is assigned (it is not "
                         "defined on every path that reaches here)")
        self.name = name


class Undefined:
    """The value of a local variable that is not assigned yet.

    Converted code passes it where Python would still have an unbound name (a variable first
    assigned inside a branch or loop). Any use of it raises the error Python would raise.
    """

    __slots__ = ("symbol_name",)
    fillable = False

    def __init__(self, symbol_name):
        self.symbol_name = symbol_name

    def __repr__(self):
        return f"<undefined {self.symbol_name}>"

    def _raise(self, *args, **kwargs):
        raise UndefinedUse(self.symbol_name)

    def __getattr__(self, name):
        if name.startswith("_"):
            # protocol probes (hasattr(v, "_to_flow"), copy, numpy) see a plain object
            raise AttributeError(name)
        self._raise()


# every operator a value can take part in raises the UnboundLocalError of plain Python
for _op in ("bool", "call", "iter", "len", "getitem", "setitem", "index", "float", "int",
            "neg", "pos", "abs", "invert", "add", "radd", "sub", "rsub", "mul", "rmul",
            "truediv", "rtruediv", "floordiv", "rfloordiv", "mod", "rmod", "pow", "rpow",
            "matmul", "rmatmul", "and", "rand", "or", "ror", "xor", "lt", "le", "gt", "ge",
            "array"):
    setattr(Undefined, f"__{_op}__", Undefined._raise)


class UndefinedReturnValue(Undefined):
    """The return value before a `return` has run (lowered returns keep it in `retval_`).

    Unlike a user variable it may be undefined on one side of a tensor branch or at the
    entry of a tensor loop: the value is never read on that path, so graph control flow
    fills it with zeros of the other path's dtype and shape.
    """

    __slots__ = ()
    fillable = True

    def __init__(self, symbol_name="retval_"):
        super().__init__(symbol_name)


def ld(value):
    """A variable read where it may be unassigned: the value, or Python's UnboundLocalError
    (a value first assigned in a graph loop is checked to exist at run time)."""
    if isinstance(value, Undefined) and not value.fillable:
        value._raise()
    if type(value) is MaybeUndefined:
        return value._as_tensor()
    return value


def ldu(read, name):
    """Read a state symbol that may not exist yet (a name bound on some paths only, an
    attribute or key a branch creates): its value, or Undefined(name)."""
    try:
        return read()
    except (NameError, AttributeError, KeyError, IndexError):
        return Undefined(name)


class MaybeUndefined:
    """A variable first assigned inside a graph loop, after the loop: the loop's value for
    it, which exists only if the loop ran at least once (`defined`, a bool tensor).

    Every use checks that at run time: an `assert` op naming the variable, the line of the
    use and the loop raises InvalidArgumentError if the loop ran zero times (where Python
    raises UnboundLocalError). Used as a tensor anywhere, it is that checked tensor.
    """

    __slots__ = ("value", "defined", "name", "loop", "_checked")

    def __init__(self, value, defined, name, loop):
        self.value, self.defined, self.name, self.loop = value, defined, name, loop
        self._checked = set()      # ids of graphs that already hold the check

    def _is_symbolic_like(self):
        return True

    def _as_tensor(self):
        from ...runtime.context import current_graph
        from ...runtime.dispatch import bind
        g = current_graph()
        if g is not None and id(g) not in self._checked:
            self._checked.add(id(g))
            # the runner ends the message with the op's line: this use
            bind("assert", self.defined, message=(
                f"'{self.name}' is used before it has a value: it is assigned only inside the "
                f"loop at {self.loop}, which ran zero times (Python raises UnboundLocalError "
                f"here). Fix: give '{self.name}' a value before the loop."))
        return self.value

    def __getattr__(self, name):
        if name.startswith("_"):      # protocol probes must not insert the check
            raise AttributeError(name)
        return getattr(self._as_tensor(), name)

    def __repr__(self):
        return f"<{self.name}: assigned in the loop at {self.loop}, if it ran>"


def forward_to_tensor(cls, ops):
    """Give proxy class `cls` the operators `ops`, each applied to `self._as_tensor()`."""
    def forward(op):
        def method(self, *args):
            return getattr(self._as_tensor(), op)(*args)
        method.__name__ = op
        return method
    for op in ops:
        setattr(cls, f"__{op}__", forward(f"__{op}__"))


forward_to_tensor(MaybeUndefined, (
    "add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv",
    "rfloordiv", "mod", "rmod", "pow", "rpow", "matmul", "rmatmul", "neg", "pos", "abs",
    "invert", "and", "rand", "or", "ror", "xor", "rxor", "lt", "le", "gt", "ge", "eq", "ne",
    "getitem", "bool", "index", "int", "float", "iter", "len", "array"))
