"""gc.map_fn, gc.scan, gc.foldl, gc.foldr: TF 2's higher-order functions.

Each is one gc.while_loop over the elements (unstacked into gc.TensorArrays along axis 0),
as in TF: eagerly a Python loop, while tracing one `while` node whatever the number of
elements (never unrolled), and differentiable through the loop's and the TensorArrays'
gradient rules. Results are stacked into TensorArrays written by the loop.
"""
import functools

from . import dtypes as _dt
from .debugging import assert_equal, assert_greater
from .errors import DtypeChangeError, InvalidArgumentError, StructureError
from .runtime import nest
from .runtime.autodiff.tape import stop_gradient
from .runtime.context import current_graph, located_errors
from .runtime.control_flow import while_loop
from .runtime.dispatch import convert_to_tensor, is_number
from .runtime.loop_vars import describe, where
from .runtime.ops.creation import zeros
from .runtime.ops.shape import shape as _shape
from .runtime.signature import TensorSpec
from .runtime.tensor import Tensor
from .runtime.tensor_array import TensorArray
from .runtime.tensor_list import dims_text


# -- shared pieces -------------------------------------------------------------------------

def _check_fn(op, fn):
    if not callable(fn):
        raise TypeError(f"{op}: fn must be callable, got {fn!r}")


def _elems(op, elems):
    """The leaves of `elems` as tensors of rank >= 1 with one first dimension; returns
    (tensors, n) with n an int when it is known while tracing, else an int32 tensor."""
    flat = nest.flatten(elems)
    if not flat:
        raise ValueError(f"{op}: elems must be a tensor or a nest of tensors; {elems!r} "
                         "holds no tensor")
    ts = [convert_to_tensor(x) for x in flat]          # a Variable: its value, as TF
    paths = nest.paths(elems, "elems")
    for t, p in zip(ts, paths):
        if not t.shape:
            raise ValueError(f"{op}: elems are unstacked along axis 0 and must have rank >= "
                             f"1, but {p} is a scalar ({t.dtype.name}[])")
    dims = [t.shape[0] for t in ts]
    known = [(d, p) for d, p in zip(dims, paths) if d is not None]
    for d, p in known[1:]:
        if d != known[0][0]:
            raise ValueError(f"{op}: every tensor in elems must have the same first dimension "
                             f"(the number of elements), but {known[0][1]} has {known[0][0]} "
                             f"and {p} has {d}")
    n, source = known[0] if known else (_shape(ts[0])[0], paths[0])
    for t, d, p in zip(ts, dims, paths):     # dims known only at run time: checked then
        if d is None and p != source:
            assert_equal(_shape(t)[0], n, message=f"{op}: every tensor in elems must have "
                         f"the same first dimension, but {p} differs from {source}.")
    return ts, n


def _need_an_element(op, n):
    """Without an initializer the first element starts the accumulator: none is an error
    (TF: OutOfRangeError eagerly, InvalidArgumentError in a graph), at once when n is known."""
    text = (f"{op}: elems is empty and there is no initializer; the first element would "
            "start the accumulator. Pass initializer= for elems that may be empty.")
    if isinstance(n, int):
        if n == 0:
            raise InvalidArgumentError(text)
    else:
        assert_greater(n, 0, message=text)


def _unstacked(ts, n):
    return [TensorArray(t.dtype, size=n, element_shape=t.shape[1:]).unstack(t) for t in ts]


def _read(structure, tas, i):
    return nest.pack_as(structure, [ta.read(i) for ta in tas])


def _same_structure(a, b):
    """TF's nest.assert_same_structure: a different nesting is a ValueError, sequences of
    other types (a list for a tuple) a TypeError; StructureError is both."""
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) and \
            all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same_structure, a, b))
    return True


def _check_result(op, got, expected, what):
    if not _same_structure(expected, got):
        raise StructureError(f"{op}: fn must return the structure of {what}, "
                             f"{describe(expected)}, but it returned {describe(got)}{where()}")


def _check_leaves(op, values, types, paths, what, fix):
    """fn's results against the dtypes (and static shapes) they must have."""
    for v, (dtype, shp), p in zip(values, types, paths):
        if is_number(v) or not (type(v) is Tensor or hasattr(v, "_as_tensor")):
            continue                       # Python numbers take the dtype, as TF writes them
        v = convert_to_tensor(v)
        if v.dtype is not dtype:
            raise DtypeChangeError(f"{op}: fn returned {v.dtype.name} for {p} but {what} "
                                   f"is {dtype.name}{where()}; {fix}")
        if shp is not None and (len(v.shape) != len(shp) or any(
                a is not None and b is not None and a != b for a, b in zip(v.shape, shp))):
            raise ValueError(f"{op}: fn returned shape {list(v.shape)} for {p} but {what} "
                             f"has shape {list(shp)}; {fix}")


def _no_backprop(result, back_prop):
    if back_prop:
        return result
    return nest.pack_as(result, [stop_gradient(x) if type(x) is Tensor else x
                                 for x in nest.flatten(result)])


def _accumulator(initializer):
    return [x if hasattr(x, "_to_flow") else convert_to_tensor(x)
            for x in nest.flatten(initializer)]


# -- map_fn --------------------------------------------------------------------------------

def _output_spec(s):
    if isinstance(s, TensorSpec):
        return s.dtype, s.shape
    try:
        return _dt.as_dtype(s), None
    except (TypeError, ValueError):
        raise TypeError(f"map_fn: fn_output_signature must be a dtype, a gc.TensorSpec or a "
                        f"nest of them, got {s!r}") from None


def map_fn(fn, elems, dtype=None, parallel_iterations=None, back_prop=True, swap_memory=False,
           infer_shape=True, name=None, fn_output_signature=None):
    """`fn` applied to each element of `elems` (unstacked along axis 0), results stacked.

    `elems` is a tensor or a nest of tensors with one first dimension; `fn` gets one element
    with that structure. It must return the structure and dtypes of `elems` unless
    `fn_output_signature` (or TF's older `dtype`) says what it returns: a dtype, a
    gc.TensorSpec (its shape also gives the element shape of an empty result) or a nest of
    them. `parallel_iterations`, `swap_memory` and `infer_shape` are TF's scheduling and
    shape hints (accepted, no effect); `back_prop=False` stops gradients.
    """
    _check_fn("map_fn", fn)
    if fn_output_signature is None:
        fn_output_signature = dtype
    ts, n = _elems("map_fn", elems)
    if fn_output_signature is None:
        out_struct, specs, what = elems, [(t.dtype, None) for t in ts], "elems"
        fix = "pass fn_output_signature= to say what fn returns"
    else:
        out_struct, what = fn_output_signature, "fn_output_signature"
        specs = [_output_spec(s) for s in nest.flatten(fn_output_signature)]
        fix = "fix fn or fn_output_signature"
    paths = nest.paths(out_struct, "output")
    in_tas = _unstacked(ts, n)
    out_tas = [TensorArray(dt, size=n, element_shape=shp) for dt, shp in specs]

    def body(i, tas):
        result = fn(_read(elems, in_tas, i))
        _check_result("map_fn", result, out_struct, what)
        values = nest.flatten(result)
        _check_leaves("map_fn", values, specs, paths, what, fix)
        return i + 1, [ta.write(i, v) for ta, v in zip(tas, values)]

    _, tas = while_loop(lambda i, tas: i < n, body, (0, out_tas), _names=["i", "outputs"])
    outs = [_stack_mapped(ta, n, shp, p) for ta, (_, shp), p in zip(tas, specs, paths)]
    return _no_backprop(nest.pack_as(out_struct, outs), back_prop)


def _stack_mapped(ta, n, declared, path):
    """The stacked results. With no element shape declared, an empty map gives TF's eager
    result, an empty vector (fn never ran); a traced map whose fn gives non-scalars gives it
    when n is known to be 0 and raises when it is 0 at run time (a [None, 3] result cannot
    have shape [0]) rather than return what eager does not (TF's tf.function: [0, 3])."""
    es = ta.element_shape
    if current_graph() is None or declared is not None or es == ():
        return ta.stack()
    if isinstance(n, int):
        return zeros([0], ta.dtype) if n == 0 else ta.stack()
    dims = ", ".join("None" if d is None else str(d) for d in es)
    assert_greater(n, 0, message=(
        f"map_fn: elems is empty, so fn never ran and {path} is an empty vector (shape [0]) "
        f"eagerly, as TF's eager map_fn gives, but here fn gives elements of shape "
        f"{dims_text(es)}. Pass fn_output_signature=gc.TensorSpec([{dims}], "
        f"gc.{ta.dtype.name}) to give an empty result the shape [0, {dims}]."))
    return ta.stack()


# -- scan ----------------------------------------------------------------------------------

def scan(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
         swap_memory=False, infer_shape=True, reverse=False, name=None):
    """Every accumulated value of `a = fn(a, x)` over the elements `x` of `elems`, stacked.

    Without `initializer` the first element (the last with `reverse=True`) is the first
    accumulator and also the first output, and `fn` must return the structure of `elems`;
    with it, `fn` returns the structure, dtypes and shapes of `initializer`.
    `reverse=True` runs from the last element to the first (outputs stay in element order).
    """
    _check_fn("scan", fn)
    ts, n = _elems("scan", elems)
    in_tas = _unstacked(ts, n)
    if initializer is None:
        _need_an_element("scan", n)
        struct, first, start = elems, (n - 1 if reverse else 0), 1
        acc = [ta.read(first) for ta in in_tas]
        what = "elems (scan has no initializer)"
    else:
        struct, start, what = initializer, 0, "the initializer"
        acc = [convert_to_tensor(x) for x in nest.flatten(initializer)]   # as TF's scan
    specs = [(a.dtype, tuple(a.shape)) for a in acc]
    paths = nest.paths(struct, "accumulator")
    out_tas = [TensorArray(a.dtype, size=n, element_shape=shp) for a, (_, shp) in
               zip(acc, specs)]
    if initializer is None:
        out_tas = [ta.write(first, a) for ta, a in zip(out_tas, acc)]

    def body(i, acc, tas):
        result = fn(nest.pack_as(struct, acc), _read(elems, in_tas, i))
        _check_result("scan", result, struct, what)
        values = nest.flatten(result)
        _check_leaves("scan", values, specs, paths, what,
                      "the accumulator must keep its dtype and shape")
        tas = [ta.write(i, v) for ta, v in zip(tas, values)]
        return (i - 1 if reverse else i + 1), values, tas

    if reverse:
        i0, cond = n - 1 - start, (lambda i, acc, tas: i >= 0)
    else:
        i0, cond = start, (lambda i, acc, tas: i < n)
    _, _, tas = while_loop(cond, body, (i0, acc, out_tas), _names=["i", "acc", "outputs"])
    return _no_backprop(nest.pack_as(struct, [ta.stack() for ta in tas]), back_prop)


# -- foldl / foldr -------------------------------------------------------------------------

def _fold(op, fn, elems, initializer, back_prop, reverse):
    _check_fn(op, fn)
    ts, n = _elems(op, elems)
    tas = _unstacked(ts, n)
    if initializer is None:
        _need_an_element(op, n)
        struct, what = elems, f"elems ({op} has no initializer)"
        acc = [ta.read(n - 1 if reverse else 0) for ta in tas]
        i0 = n - 1 if reverse else 1        # foldr: i counts down, decremented first
    else:
        struct, what = initializer, "the initializer"
        acc = _accumulator(initializer)
        i0 = n if reverse else 0
    specs = [(a.dtype, tuple(a.shape)) if not hasattr(a, "_to_flow") else (a.dtype, None)
             for a in acc]
    paths = nest.paths(struct, "accumulator")

    def body(i, acc):
        j = i - 1 if reverse else i
        result = fn(nest.pack_as(struct, acc), _read(elems, tas, j))
        _check_result(op, result, struct, what)
        values = nest.flatten(result)
        _check_leaves(op, values, specs, paths, what,
                      "the accumulator must keep its dtype and shape")
        return (i - 1 if reverse else i + 1), values

    cond = (lambda i, acc: i > 0) if reverse else (lambda i, acc: i < n)
    _, acc = while_loop(cond, body, (i0, acc), _names=["i", "acc"])
    return _no_backprop(nest.pack_as(struct, acc), back_prop)


def foldl(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """`a = fn(a, x)` over the elements of `elems` from first to last; returns the final `a`
    (the first element is the initial `a` when `initializer` is None)."""
    return _fold("foldl", fn, elems, initializer, back_prop, reverse=False)


def foldr(fn, elems, initializer=None, parallel_iterations=10, back_prop=True,
          swap_memory=False, name=None):
    """`a = fn(a, x)` over the elements of `elems` from last to first; returns the final `a`
    (the last element is the initial `a` when `initializer` is None)."""
    return _fold("foldr", fn, elems, initializer, back_prop, reverse=True)


# -- public versions: located errors, and `fn` converted when called from converted code ----

def _public(f):
    public = located_errors(f)

    @functools.wraps(f)
    def converting(*args, **kwargs):
        # called from AutoGraph-converted code, `fn` is converted too (as TF converts
        # map_fn's fn), so a tensor `if` in a module-level fn works
        from .autograph.conversion import converted_callable
        if args:
            args = (converted_callable(args[0]),) + args[1:]
        elif "fn" in kwargs:
            kwargs["fn"] = converted_callable(kwargs["fn"])
        return public(*args, **kwargs)
    public.__graphc_convert__ = lambda: converting
    return public


map_fn, scan, foldl, foldr = (_public(f) for f in (map_fn, scan, foldl, foldr))
__all__ = ["map_fn", "scan", "foldl", "foldr"]
