"""Placeholders for variables that have no value yet where converted code must name them."""


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
        raise UnboundLocalError(f"local variable '{self.symbol_name}' is used before it is "
                                "assigned (it is not defined on every path that reaches here)")

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
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
    """A variable read where it may be unassigned: the value, or Python's UnboundLocalError."""
    if isinstance(value, Undefined) and not value.fillable:
        value._raise()
    return value
