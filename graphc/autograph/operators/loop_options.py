"""`set_loop_options` on a graph loop: the options converters/directives.py lifted into the
loop's `opts`, checked as TF checks them and turned into gc.while_loop's arguments.

Only a loop that becomes a graph `while` uses them; a Python loop ignores them unchecked,
as TF does (the options configure a staged `tf.while_loop`).
"""
import numbers

from ...runtime import loop_vars as lv, nest
from ...runtime.dispatch import bind, convert_to_tensor
from ...runtime.tensor import Tensor
from .undefined import MaybeUndefined

KEYS = ("parallel_iterations", "swap_memory", "maximum_iterations", "shape_invariants")


class LoopOptions:
    """The lifted options of one loop (`opts` keys of the same names, plus the directive's
    line and the source text of each shape invariant's variable)."""

    def __init__(self, opts, loop_loc):
        self.given = {k: opts[k] for k in KEYS if k in opts}
        self.names = opts.get("invariant_names")
        file = loop_loc[0] if loop_loc else "<unknown>"
        self.at = f"set_loop_options at {file}:{opts.get('options_line', '?')}"

    @classmethod
    def of(cls, opts, loop_loc):
        """The options in `opts`, or None when the loop has none."""
        if not opts or not any(k in opts for k in KEYS):
            return None
        return cls(opts, loop_loc)

    # -- what gc.while_loop gets ---------------------------------------------------------
    def maximum_iterations(self, python_iterations=0):
        """maximum_iterations as an int32 tensor (None: no bound), less the iterations a
        `while` already ran in Python before its test became a tensor. Also checks
        parallel_iterations as TF's while_loop does; swap_memory TF takes as it is."""
        self._check_parallel()
        m = self.given.get("maximum_iterations")
        if m is None:
            return None
        try:
            m = lv.max_iterations_tensor(m)
        except TypeError:
            raise TypeError(f"{self.at}: maximum_iterations must be an int or a scalar integer "
                            f"tensor (or None), got {m!r}") from None
        if python_iterations:
            m = bind("subtract", m, convert_to_tensor(python_iterations))
        return m

    def _check_parallel(self):
        p = self.given.get("parallel_iterations")
        if "parallel_iterations" not in self.given:
            return
        # TF: `if parallel_iterations < 1: raise TypeError(...)` (2.5 and True pass)
        if not isinstance(p, numbers.Real) or type(p) is Tensor or p < 1:
            raise TypeError(f"{self.at}: parallel_iterations must be a positive integer, got "
                            f"{p!r} (it has no effect in graphc, but TF checks it)")

    def invariants(self, raw, init, keep, names, kind, loop_where):
        """{state index: one shape (or lv.EXACT) per leaf of its value} for the variables
        `shape_invariants` names, matched by identity with `raw`, the state as read before
        the loop (what the directive's arguments saw); `init`: the values the loop starts
        from (a variable first assigned in the loop has zeros there)."""
        pairs = self.given.get("shape_invariants")
        if pairs is None:
            return {}
        if not isinstance(pairs, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
            raise TypeError(f"{self.at}: shape_invariants must be a list of (variable, shape) "
                            f"pairs, got {pairs!r}")
        values = {k: _unwrap(init[k]) for k in keep}
        leaves = {k: nest.flatten(_unwrap(raw[k])) for k in keep}
        out = {}
        for j, (var, shape) in enumerate(pairs):
            name = self.names[j] if self.names and j < len(self.names) else f"#{j + 1}"
            whole = [k for k in keep if raw[k] is var or _unwrap(raw[k]) is var]
            parts = [(k, i) for k in keep for i, x in enumerate(leaves[k]) if x is var]
            if not whole and not parts:
                carried = ", ".join(f"'{names[k]}'" for k in keep) or "none"
                raise ValueError(
                    f"{self.at} gives a shape invariant for '{name}', which is not a variable "
                    f"of the `{kind}` at {loop_where} (the variables it carries: {carried}). "
                    "A shape invariant applies to a variable the loop assigns and uses "
                    "afterwards, named as it is just before the loop.")
            for k in whole:
                out[k] = self._per_leaf(values[k], shape, names[k])
            for k, i in parts:
                out.setdefault(k, [lv.EXACT] * len(leaves[k]))[i] = self._shape(shape, name)
        for k, shapes in out.items():
            v = values[k]
            for path, leaf, s in zip(nest.paths(v, names[k]) if nest.is_nest(v) else [names[k]],
                                     nest.flatten(v), shapes):
                _check_fits(leaf, s, path, kind, loop_where, self.at)
        return out

    def _per_leaf(self, value, shape, name):
        if not nest.is_nest(value):
            return [self._shape(shape, name)]
        try:
            return lv.flatten_invariants([shape], [value])
        except (TypeError, ValueError) as e:
            raise ValueError(f"{self.at}: the shape invariant {shape!r} for '{name}' must nest "
                             f"like its value ({lv.describe(value)}): {e}") from None

    def _shape(self, shape, name):
        try:
            return lv.as_shape(shape)
        except TypeError:
            raise TypeError(f"{self.at}: the shape invariant for '{name}' must be a list or "
                            f"tuple of ints and None (or None), got {shape!r}") from None


def _unwrap(v):
    return v.value if type(v) is MaybeUndefined else v


def _check_fits(leaf, shape, name, kind, loop_where, at):
    """The initial value must have the invariant's rank and its known sizes (TF: 'has shape
    (2,) before the loop, which does not conform with the shape invariant (None, None)')."""
    if shape is lv.EXACT or shape is None or leaf is None or hasattr(leaf, "_to_flow"):
        return      # no invariant, every dimension free, or not a tensor (a TensorArray)
    t = leaf if type(leaf) is Tensor else convert_to_tensor(leaf)
    have = list(t.shape)
    if len(have) != len(shape) or any(d is not None and d != h for d, h in zip(shape, have)):
        raise ValueError(
            f"loop variable '{name}' of the `{kind}` at {loop_where} has shape {have} before "
            f"the loop, which does not conform with its shape invariant {list(shape)} ({at}): "
            "an invariant has the variable's rank, with None for each dimension that may "
            "change and the initial size for the others.")
