"""`break` lowered to a flag: `break_ = True`, the rest of the iteration guarded, and the
loop stops once the flag is set. A loop's `else:` runs after it when it did not break."""
import gast

from ..pyct import nodes as n
from ..pyct.analysis import SCOPES, LOOPS
from .jumps import JumpLowering, scope_statements


def transform(fn, namer):
    for loop in scope_statements(fn.body):
        lowering = JumpLowering(lambda s: isinstance(s, gast.Break), None, None, False)
        has_break = any(lowering.contains(s) for s in loop.body)
        before, after = [], []
        if has_break:
            flag = namer.new("break_")
            lowering.flag = flag
            lowering.replace = lambda s, flag=flag: [n.assign_value(flag, n.const(True))]
            loop.body, _ = lowering.block(loop.body)
            loop.ag_exit_flags = getattr(loop, "ag_exit_flags", []) + [flag]
            before = [n.copy_location(n.assign_value(flag, n.const(False)), loop)]
        if loop.orelse:
            after = loop.orelse if not has_break else [lowering.guard(loop.orelse)]
            after = [n.copy_location(s, loop.orelse[0]) for s in after]
            loop.orelse = []
        loop.ag_before, loop.ag_after = before, after
    fn.body = _splice(fn.body)


def _splice(stmts):
    """Put each loop's `ag_before` / `ag_after` statements around it, at every depth."""
    out = []
    for s in stmts:
        if not isinstance(s, SCOPES):
            for field in ("body", "orelse", "finalbody"):
                if getattr(s, field, None):
                    setattr(s, field, _splice(getattr(s, field)))
            for h in getattr(s, "handlers", []) or []:
                h.body = _splice(h.body)
        if isinstance(s, LOOPS):
            out.extend(getattr(s, "ag_before", []))
            out.append(s)
            out.extend(getattr(s, "ag_after", []))
            s.ag_before, s.ag_after = [], []
        else:
            out.append(s)
    return out
