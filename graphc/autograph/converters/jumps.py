"""Shared lowering of jumps (`return`, `break`, `continue`) to a flag plus guards.

A jump statement becomes an assignment to a flag; every statement after something that may
have jumped is wrapped in `if not flag:`. When one branch of an `if` always jumps, the rest
of the block moves into the other branch instead of being guarded (fewer conditionals, and
both branches then set the same variables).
"""
import gast

from ..pyct import nodes as n
from ..pyct.analysis import LOOPS, SCOPES

NEVER, MAYBE, ALWAYS = 0, 1, 2


def _combine(a, b):
    if a == b:
        return a
    return MAYBE


class JumpLowering:
    """Lower jumps of one kind in a block.

    is_jump(stmt): the statement is such a jump; replace(stmt): its replacement statements;
    flag: the flag name to guard on; into_loops: whether jumps inside nested loops belong to
    this lowering (returns do; a break belongs to its own loop); on_loop(loop): called for
    each nested loop that may jump (so it can stop when the flag is set).
    """

    def __init__(self, is_jump, replace, flag, into_loops, on_loop=None):
        self.is_jump, self.replace, self.flag = is_jump, replace, flag
        self.into_loops, self.on_loop = into_loops, on_loop

    def contains(self, node):
        stack = [node]
        while stack:
            x = stack.pop()
            if self.is_jump(x):
                return True
            if isinstance(x, SCOPES) or (isinstance(x, LOOPS) and not self.into_loops):
                continue
            stack.extend(c for c in gast.iter_child_nodes(x) if isinstance(c, gast.stmt)
                         or isinstance(c, gast.excepthandler))
        return False

    def block(self, stmts):
        """(new statements, NEVER/MAYBE/ALWAYS jumped at the end)."""
        out = []
        for i, s in enumerate(stmts):
            if self.is_jump(s):
                out.extend(n.copy_location(r, s) for r in self.replace(s))
                return out, ALWAYS
            if not self.contains(s):
                out.append(s)
                continue
            rest = stmts[i + 1:]
            if isinstance(s, gast.If):
                kb, ko = self.kind(s.body), self.kind(s.orelse)
                if rest and kb == ALWAYS and ko != ALWAYS:
                    s.orelse, rest = s.orelse + rest, []
                elif rest and ko == ALWAYS and kb != ALWAYS:
                    s.body, rest = s.body + rest, []
                s.body, kb = self.block(s.body)
                s.orelse, ko = self.block(s.orelse)
                kind = _combine(kb, ko)
            elif isinstance(s, LOOPS):
                s.body, kb = self.block(s.body)
                s.orelse, ko = self.block(s.orelse)
                if self.on_loop is not None and kb != NEVER:
                    self.on_loop(s)
                kind = MAYBE if (kb != NEVER or ko != NEVER) else NEVER
            elif isinstance(s, (gast.With, gast.AsyncWith)):
                s.body, kind = self.block(s.body)
            elif isinstance(s, gast.Try):
                s.body, k1 = self.block(s.body)
                s.orelse, k2 = self.block(s.orelse)
                s.finalbody, k3 = self.block(s.finalbody)
                ks = [k1, k2, k3]
                for h in s.handlers:
                    h.body, kh = self.block(h.body)
                    ks.append(kh)
                kind = ALWAYS if k3 == ALWAYS else (MAYBE if any(ks) else NEVER)
            else:
                kind = NEVER
            out.append(s)
            if kind == ALWAYS:
                return out, ALWAYS
            if kind == MAYBE:
                if not rest:
                    return out, MAYBE
                rest_stmts, kr = self.block(rest)
                out.append(n.copy_location(self.guard(rest_stmts), rest[0]))
                return out, (ALWAYS if kr == ALWAYS else MAYBE)
        return out, NEVER

    def kind(self, stmts):
        """NEVER/MAYBE/ALWAYS for `stmts` as they are (no rewriting)."""
        for i, s in enumerate(stmts):
            if self.is_jump(s):
                return ALWAYS
            if not self.contains(s):
                continue
            if isinstance(s, gast.If):
                k = _combine(self.kind(s.body), self.kind(s.orelse))
            elif isinstance(s, (gast.With, gast.AsyncWith)):
                k = self.kind(s.body)
            elif isinstance(s, gast.Try) and self.kind(s.finalbody) == ALWAYS:
                k = ALWAYS
            else:
                k = MAYBE
            if k == ALWAYS:
                return ALWAYS
            return ALWAYS if self.kind(stmts[i + 1:]) == ALWAYS else MAYBE
        return NEVER

    def guard(self, stmts):
        test = gast.UnaryOp(op=gast.Not(), operand=n.load(self.flag))
        return gast.If(test=test, body=stmts, orelse=[])


def scope_statements(body):
    """Every loop in a scope's body (not inside nested scopes), innermost first."""
    found = []

    def visit(stmts):
        for s in stmts:
            if isinstance(s, SCOPES):
                continue
            for field in ("body", "orelse", "finalbody"):
                visit(getattr(s, field, []) or [])
            for h in getattr(s, "handlers", []) or []:
                visit(h.body)
            if isinstance(s, LOOPS):
                found.append(s)
    visit(body)
    return found
