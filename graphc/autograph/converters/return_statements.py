"""`return` anywhere (inside branches and loops) lowered to one exit at the end.

    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    ...  `return x` becomes `do_return = True; retval_ = x`, later code is guarded
    return retval_

Loops that may return stop once `do_return` is set (it joins their exit flags).
"""
import gast

from ..pyct import nodes as n
from ..pyct.analysis import SCOPES
from .jumps import ALWAYS, JumpLowering


def _returns_inside(body):
    """True if a `return` appears anywhere but as the last top-level statement."""
    for i, s in enumerate(body):
        if isinstance(s, gast.Return):
            if i != len(body) - 1:
                return True
            continue
        stack = [s]
        while stack:
            x = stack.pop()
            if isinstance(x, gast.Return):
                return True
            if isinstance(x, SCOPES):
                continue
            stack.extend(c for c in gast.iter_child_nodes(x)
                         if isinstance(c, (gast.stmt, gast.excepthandler)))
    return False


def transform(fn, namer):
    """Lower the returns of FunctionDef `fn` in place (no-op if it returns only at the end)."""
    if not _returns_inside(fn.body):
        return
    flag, value = namer.new("do_return"), namer.new("retval_")

    def replace(s):
        v = s.value if s.value is not None else n.const(None)
        return [n.assign_value(flag, n.const(True)), n.assign_value(value, v)]

    def on_loop(loop):
        loop.ag_exit_flags = getattr(loop, "ag_exit_flags", []) + [flag]

    lowering = JumpLowering(lambda s: isinstance(s, gast.Return), replace, flag, True, on_loop)
    body = fn.body
    doc = []
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant) \
            and isinstance(body[0].value.value, str):
        doc, body = [body[0]], body[1:]
    if body and lowering.kind(body) != ALWAYS:
        # falling off the end returns None, as in Python
        body = body + [n.copy_location(gast.Return(value=None), body[-1])]
    new_body, _ = lowering.block(body)
    first = body[0] if body else fn
    init = [n.assign_value(flag, n.const(False)),
            n.assign_value(value, n.ag_call("UndefinedReturnValue"))]
    fin = [gast.Return(value=n.load(value))]
    for s in init:
        n.copy_location(s, first)
    for s in fin:
        n.copy_location(s, body[-1] if body else fn)
    fn.body = doc + init + new_body + fin
    if not _flag_read(fn, flag):
        fn.body = _drop_assignments(fn.body, flag)


def _flag_read(fn, flag):
    """Whether anything tests `do_return` (a guard or a loop's exit flags)."""
    for x in gast.walk(fn):
        if isinstance(x, gast.Name) and x.id == flag and isinstance(x.ctx, gast.Load):
            return True
        if flag in getattr(x, "ag_exit_flags", ()):
            return True
    return False


def _drop_assignments(stmts, flag):
    """Remove `flag = ...` statements (the flag is never read: every return moved into
    branches that end the function)."""
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and \
                isinstance(s.targets[0], gast.Name) and s.targets[0].id == flag:
            continue
        if not isinstance(s, SCOPES):
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, _drop_assignments(getattr(s, field), flag) or
                            [gast.Pass()])
            for h in getattr(s, "handlers", []) or []:
                h.body = _drop_assignments(h.body, flag) or [gast.Pass()]
        out.append(s)
    return out
