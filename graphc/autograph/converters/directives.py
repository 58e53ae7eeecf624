"""`gc.autograph.experimental.set_loop_options(...)` as the first statement of a loop body
is lifted onto the loop, as TF's directives converter does: the call leaves the body and
its arguments become the loop's options (`ag__.for_stmt(..., opts={'maximum_iterations':
10, 'shape_invariants': [(acc, [None])], ...})`), evaluated once, before the loop.

A call is the directive when its function resolves statically -- through the function's
globals, closure and modules' attributes -- to graphc's `set_loop_options`. One anywhere
else (outside loops, or not first in the body) keeps running as the no-op it is, with an
AutoGraphWarning at conversion (TF refuses to convert such a function and runs it
unconverted, with a warning).
"""
import ast
import inspect
import warnings

import gast

from ..pyct import nodes as n
from ..pyct.analysis import LOOPS, SCOPES, assigned, reads

OPTION_NAMES = ("parallel_iterations", "swap_memory", "maximum_iterations", "shape_invariants")
_MISSING = object()


def transform(fn, resolve, filename):
    """Lift the directives of FunctionDef `fn` (nested defs included) onto their loops.
    `resolve(name)`: the value a free name has in the function's namespace, or _MISSING.
    Returns [(line, message)] for the calls left in place."""
    from ..experimental import set_loop_options
    found = []

    def is_directive(call, local):
        return isinstance(call, gast.Call) and \
            _static_value(call.func, resolve, local) is set_loop_options

    def scope(node, local):
        if isinstance(node, gast.FunctionDef):
            a = node.args
            params = [p.id for p in a.posonlyargs + a.args + a.kwonlyargs]
            params += [p.id for p in (a.vararg, a.kwarg) if p is not None]
            local = local | set(params) | assigned(node.body)
            for s in node.body:
                visit(s, local)
        elif isinstance(node, gast.Lambda):
            visit(node.body, local | {a.id for a in node.args.args})

    def visit(node, local):
        if isinstance(node, SCOPES):
            if not isinstance(node, gast.ClassDef):
                for d in getattr(node, "decorator_list", []):
                    visit(d, local)
                scope(node, local)
            return
        if isinstance(node, LOOPS) and node.body and isinstance(node.body[0], gast.Expr) \
                and is_directive(node.body[0].value, local):
            if _lift(node, node.body[0].value, found):
                node.body = node.body[1:] or [gast.Pass()]
        if isinstance(node, gast.Call) and is_directive(node, local) and \
                not any(f[0] == node.lineno for f in found):
            found.append((node.lineno, "it must be the first statement in the body of a "
                          "`for` or `while` loop, whose options it sets"))
        for c in gast.iter_child_nodes(node):
            visit(c, local)

    scope(fn, set())
    for line, why in found:
        warnings.warn_explicit(
            f"gc.autograph.experimental.set_loop_options has no effect here: {why} "
            "(TensorFlow does not convert a function with such a call)",
            _warning_category(), filename, line)
    return found


def _lift(loop, call, found):
    """Set `loop.ag_loop_options` from the directive `call`; False (and a finding) when
    its arguments cannot be mapped statically."""
    from ..experimental import set_loop_options
    if any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        found.append((call.lineno, "its arguments must be written out (no * or **)"))
        return False
    try:
        bound = inspect.signature(set_loop_options).bind(
            *call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError as e:
        found.append((call.lineno, f"{e}"))
        return False
    options = dict(bound.arguments)
    names = None
    inv = options.get("shape_invariants")
    if isinstance(inv, (gast.List, gast.Tuple)) and all(
            isinstance(p, (gast.List, gast.Tuple)) and len(p.elts) == 2 for p in inv.elts):
        names = tuple(ast.unparse(gast.gast_to_ast(p.elts[0])) for p in inv.elts)
    loop.ag_loop_options = (call.lineno, options, names)
    loop.ag_loop_options_reads = set().union(*(reads(v) for v in options.values()))
    return True


def options_dict_items(loop):
    """(keys, values) the lifted options add to the loop's `opts` dict literal."""
    line, options, names = loop.ag_loop_options
    keys = [k for k in OPTION_NAMES if k in options]
    values = [options[k] for k in keys]
    keys.append("options_line")
    values.append(n.const(line))
    if names is not None:
        keys.append("invariant_names")
        values.append(n.str_tuple(names))
    return keys, values


def _static_value(expr, resolve, local):
    """The value of a dotted name (`gc.autograph.experimental.set_loop_options`) resolved
    through the namespace and modules only; _MISSING when it is not static."""
    attrs = []
    while isinstance(expr, gast.Attribute):
        attrs.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, gast.Name) or expr.id in local:
        return _MISSING
    value = resolve(expr.id)
    for a in reversed(attrs):
        if not inspect.ismodule(value):
            return _MISSING
        value = getattr(value, a, _MISSING)
    return value


def _warning_category():
    from ..conversion import AutoGraphWarning
    return AutoGraphWarning
