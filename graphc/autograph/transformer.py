"""The conversion pipeline: one gast function node in, converted node (and its code) out.

Order matters: jumps are lowered first (they reshape blocks), then expressions are rewritten
(calls, assert, ternary, and/or/not), and control flow is converted last, from liveness of
the lowered code. Generated nodes carry the line of the statement they replace, and the
module is compiled under the user's file name, so tracebacks and graph op locations point
at the user's source.
"""
import ast
import re

import gast

from .converters import (asserts, break_statements, call_trees, chained_comparisons,
                         conditional_expressions, continue_statements, control_flow,
                         directives, lint, logical_expressions, return_statements)
from .pyct import nodes as n
from .pyct.analysis import SCOPES
from .pyct.names import Namer

FACTORY = "__graphc_factory"
_LINT_MARK = "__graphc_lint__"


class Converted:
    """The result of converting one function's source."""

    def __init__(self, node, code, lints, filename):
        self.node, self.code, self.lints, self.filename = node, code, lints, filename

    def source(self):
        """Readable converted source, with lint findings as comments above their lines."""
        return render(self.node, self.lints)


def _has_yield(fn):
    stack = list(gast.iter_child_nodes(fn))
    while stack:
        x = stack.pop()
        if isinstance(x, (gast.Yield, gast.YieldFrom, gast.Await)):
            return True
        if not isinstance(x, SCOPES):
            stack.extend(gast.iter_child_nodes(x))
    return False


def _function_scopes(node):
    """Every FunctionDef in `node` (itself included), outside class bodies."""
    out, stack = [], [node]
    while stack:
        x = stack.pop()
        if isinstance(x, gast.ClassDef):
            continue
        if isinstance(x, gast.FunctionDef):
            out.append(x)
        stack.extend(gast.iter_child_nodes(x))
    return out


def convert(node, filename, freevars, future_flags=0, resolve=None):
    """Convert FunctionDef or Lambda `node` (in place); compile it inside a factory taking
    `ag__` and the original free variables; return a Converted. `resolve(name)`: the value
    of a free name of the function (for directives), or directives._MISSING."""
    lints = lint.find(node)
    namer = Namer(node)
    if isinstance(node, gast.FunctionDef):
        node.decorator_list = []
        if resolve is not None:     # first: lowering jumps reshapes loop bodies
            found = directives.transform(node, resolve, filename)
            lints = sorted(lints + [(line, "directive", "set_loop_options has no effect "
                                     f"here: {why}") for line, why in found],
                           key=lambda f: f[0])
    for fn in _function_scopes(node):
        if _has_yield(fn):
            continue
        return_statements.transform(fn, namer)
        continue_statements.transform(fn, namer)
        break_statements.transform(fn, namer)
    for conv in (asserts, call_trees, chained_comparisons, conditional_expressions,
                 logical_expressions):
        conv.transform(node)
    if isinstance(node, gast.FunctionDef):
        converter = control_flow.ControlFlowConverter(namer)
        if not _has_yield(node):
            converter.function(node)
        else:
            for fn in _function_scopes(node)[1:]:
                if not _has_yield(fn):
                    converter.function(fn)
    code = _compile(node, filename, freevars, future_flags)
    return Converted(node, code, lints, filename)


_DEF_NAME = "ag__converted"


def _compile(node, filename, freevars, future_flags):
    if isinstance(node, gast.FunctionDef):
        # defined in the factory under another name: the function's own name inside its
        # body must still mean what it meant (a global or the caller's closure cell, e.g.
        # the gc.function of a recursive function), not the raw converted function
        name, node.name = node.name, _DEF_NAME
        body = [node, gast.Return(value=n.load(_DEF_NAME))]
    else:
        body = [gast.Return(value=node)]
        name = "<lambda>"
    factory = n.function(FACTORY, ["ag__"] + list(freevars), body)
    n.copy_location(factory, node)
    module = gast.Module(body=[factory], type_ignores=[])
    try:
        tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    finally:
        if isinstance(node, gast.FunctionDef):
            node.name = name                    # to_code shows the user's name
    module_code = compile(tree, filename, "exec", flags=future_flags, dont_inherit=True)
    factory_code = next(c for c in module_code.co_consts if getattr(c, "co_name", None) == FACTORY)
    inner = _DEF_NAME if isinstance(node, gast.FunctionDef) else name
    code = next(c for c in factory_code.co_consts if getattr(c, "co_name", None) == inner)
    if hasattr(code, "co_qualname"):          # Python 3.11+
        return code.replace(co_name=name, co_qualname=f"{FACTORY}.<locals>.{name}")
    return code.replace(co_name=name)


def render(node, lints):
    """Source text of a converted node with lint comments."""
    import copy
    node = copy.deepcopy(node)
    messages = {}
    header = []
    for i, (line, kind, msg) in enumerate(lints):
        text = f"# graphc lint (line {line}): {msg}"
        if isinstance(node, gast.FunctionDef) and _mark_before(node, line, f"{_LINT_MARK}{i}"):
            messages[str(i)] = text
        else:
            header.append(text)
    src = ast.unparse(ast.fix_missing_locations(gast.gast_to_ast(node)))
    src = re.sub(rf"^(\s*){_LINT_MARK}(\d+)$", lambda m: m.group(1) + messages[m.group(2)],
                 src, flags=re.M)
    return "\n".join(header + [src]) + "\n"


def _mark_before(fn, line, mark):
    """Insert a marker statement before the first statement on `line`; False if none."""
    def visit(stmts):
        for i, s in enumerate(stmts):
            if getattr(s, "lineno", None) == line:
                stmts.insert(i, gast.Expr(value=n.load(mark)))
                return True
            for field in ("body", "orelse", "finalbody"):
                if not isinstance(s, gast.ClassDef) and visit(getattr(s, field, None) or []):
                    return True
            for h in getattr(s, "handlers", []) or []:
                if visit(h.body):
                    return True
        return False
    return visit(fn.body)
