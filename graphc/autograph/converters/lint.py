"""Static half of the trace-time side-effect lint: lines that may run only while tracing.

Findings become `# graphc lint:` comments in to_code output; the runtime operators confirm
them with real values and warn once with the user's file:line (operators/lint.py).
"""
import gast

from ..operators.lint import UNROLL_WARN_AT
from ..pyct.analysis import LOOPS, SCOPES, assigned
from .call_trees import is_variable_constructor

_TRACE_ONLY_MODULES = {"np": "numpy", "numpy": "numpy", "random": "random", "time": "time"}


def _root_name(expr):
    while isinstance(expr, gast.Attribute):
        expr = expr.value
    return expr.id if isinstance(expr, gast.Name) else None


def _has_tensor_work(stmts):
    return any(isinstance(x, (gast.BinOp, gast.Call, gast.Compare, gast.Subscript))
               for s in stmts for x in gast.walk(s))


def find(fn):
    """[(line, kind, message)] for FunctionDef/Lambda `fn`, in source order."""
    found = []

    def visit(node, loops, initial=False):
        """initial: inside a Variable constructor's arguments (its initial value, computed
        once by design: numpy / random / time calls are not flagged there)."""
        if isinstance(node, SCOPES) and node is not fn:
            if isinstance(node, (gast.FunctionDef, gast.Lambda)):
                visit_children(node, [])
            return
        if isinstance(node, gast.Call):
            _call(node, loops, found, initial)
            if is_variable_constructor(node.func):
                visit(node.func, loops, initial)
                for a in node.args + [k.value for k in node.keywords]:
                    visit(a, loops, True)
                return
        if isinstance(node, gast.For):
            _unroll(node, found)
        if isinstance(node, LOOPS):
            visit(node.iter if isinstance(node, gast.For) else node.test, loops, initial)
            for s in node.body + node.orelse:
                visit(s, loops + [node], initial)
            return
        visit_children(node, loops, initial)

    def visit_children(node, loops, initial=False):
        for c in gast.iter_child_nodes(node):
            visit(c, loops, initial)

    visit_children(fn, [])
    found.sort(key=lambda f: f[0])
    return found


def _call(node, loops, found, initial=False):
    f = node.func
    line = node.lineno
    if isinstance(f, gast.Name) and f.id == "print" and any(
            not isinstance(a, gast.Constant) for a in node.args):
        found.append((line, "print", "print() runs only while tracing; if it prints tensors, "
                      "use gc.print(...) to print their values on every call"))
    root = _root_name(f)
    if isinstance(f, gast.Attribute) and root in _TRACE_ONLY_MODULES:
        mod = _TRACE_ONLY_MODULES[root]
        if initial:     # the initial value is computed once by design (numpy on a
            return      # tensor there is still confirmed at run time)
        what = "is called once while tracing and sees no tensor values" if mod == "numpy" \
            else "runs only while tracing; its result is baked into the graph"
        fix = "gc.random.*" if mod != "numpy" or ".random" in _dotted(f) else "the gc.* op"
        found.append((line, mod, f"{_dotted(f)}() {what}; use {fix}"))


def _dotted(expr):
    parts = []
    while isinstance(expr, gast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, gast.Name):
        parts.append(expr.id)
    return ".".join(reversed(parts))


def _unroll(node, found):
    it = node.iter
    if isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range" \
            and it.args and all(isinstance(a, gast.Constant) and isinstance(a.value, int)
                                for a in it.args):
        n = len(range(*[a.value for a in it.args]))
        if n >= UNROLL_WARN_AT and _has_tensor_work(node.body):
            found.append((node.lineno, "unroll", f"this Python loop over range({n}) unrolls "
                          f"{n} times while tracing if its body has tensor ops; use "
                          f"gc.range({n}) for one graph loop"))
