"""`if`, `while` and `for` become calls of ag__.if_stmt / while_stmt / for_stmt.

Each branch or loop body becomes a local function that takes the statement's carried
variables as parameters and returns them:

    def if_true(y):           # parameters: variables the branch reads before assigning
        y = y + 1
        return y
    def if_false(y):
        return y
    y = ag__.if_stmt(x > 0, if_true, if_false, ('y',), (y,))

Outputs are the variables the statement assigns that are live after it; loop variables
are those the loop assigns that are live at its head. A carried variable that may not have
a value yet is passed as ag__.Undefined('name').
"""
import gast

from ..pyct import nodes as n
from ..pyct.analysis import SCOPES, annotate_liveness, assigned, live_in, ordered


class ControlFlowConverter:
    def __init__(self, namer):
        self.namer = namer
        self.globals, self.nonlocals = set(), set()   # declared names: never carried
        self.maybe_undefined = set()                   # passed as ag__.Undefined somewhere

    def function(self, fn):
        """Convert the control flow of FunctionDef `fn` (and of functions nested in it)."""
        a = fn.args
        params = [p.id for p in a.posonlyargs + a.args + a.kwonlyargs]
        params += [p.id for p in (a.vararg, a.kwarg) if p is not None]
        outer = self.globals, self.nonlocals
        g, nl = _declarations(fn.body)
        self.globals, self.nonlocals = g, nl - g
        annotate_liveness(fn.body)
        fn.body = self.block(fn.body, set(params))
        self.globals, self.nonlocals = outer

    def block(self, stmts, maybe):
        """Convert a statement list; `maybe` is the set of names possibly bound so far in
        the current (generated) scope and is updated as statements are passed."""
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                out.extend(self.if_(s, maybe))
            elif isinstance(s, gast.While):
                out.extend(self.while_(s, maybe))
            elif isinstance(s, gast.For):
                out.extend(self.for_(s, maybe))
            else:
                if isinstance(s, gast.Return):
                    self._checked_return(s)
                if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef)):
                    self.function(s)
                elif not isinstance(s, SCOPES):
                    self._inner_blocks(s, maybe)
                out.append(s)
            maybe |= assigned([s])
        return out

    def _inner_blocks(self, s, maybe):
        for field in ("body", "orelse", "finalbody"):
            if getattr(s, field, None):
                setattr(s, field, self.block(getattr(s, field), maybe))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body, maybe)

    def _carried(self, names):
        return ordered(set(names) - self.globals - self.nonlocals)

    def _values(self, names, maybe):
        self.maybe_undefined |= {v for v in names if v not in maybe}
        return n.expr_tuple(n.load(v) if v in maybe else n.ag_call("Undefined", n.const(v))
                            for v in names)

    def _checked_return(self, s):
        """`return v` of a variable that may still be undefined: `return ag__.ld(v)`, so it
        raises UnboundLocalError as Python would instead of returning a placeholder."""
        if isinstance(s.value, gast.Name) and s.value.id in self.maybe_undefined:
            s.value = n.copy_location(n.ag_call("ld", s.value), s.value)

    def _decls(self, stmts):
        bound = assigned(stmts)
        out = []
        if bound & self.globals:
            out.append(gast.Global(names=sorted(bound & self.globals)))
        if bound & self.nonlocals:
            out.append(gast.Nonlocal(names=sorted(bound & self.nonlocals)))
        return out

    # -- if ------------------------------------------------------------------------------
    def if_(self, s, maybe):
        live_out = s.ag_live_out
        modified = self._carried(assigned(s.body) | assigned(s.orelse))
        outs = [v for v in modified if v in live_out]
        reads = live_in(s.body, set(outs)) | live_in(s.orelse, set(outs))
        ins = [v for v in modified if v in reads]
        t_name, f_name = self.namer.new("if_true"), self.namer.new("if_false")
        t_def = n.function(t_name, ins, self._decls(s.body) + self.block(s.body, set(ins)) +
                           n.returns(outs))
        f_def = n.function(f_name, ins, self._decls(s.orelse) + self.block(s.orelse, set(ins))
                           + n.returns(outs))
        args = [s.test, n.load(t_name), n.load(f_name)]
        if outs or ins:
            args.append(n.str_tuple(outs))
        if ins:
            args.append(self._values(ins, maybe))
        stmt = n.assign(outs, n.ag_call("if_stmt", *args))
        return [n.copy_location(x, s) for x in (t_def, f_def, stmt)]

    # -- while ---------------------------------------------------------------------------
    def while_(self, s, maybe):
        loop_vars = self._carried(assigned(s.body) & s.ag_head_live)
        test_name, body_name = self.namer.new("loop_test"), self.namer.new("loop_body")
        test = _with_exit_flags(s.test, getattr(s, "ag_exit_flags", []))
        test_def = n.function(test_name, loop_vars, [gast.Return(value=test)])
        body_def = n.function(body_name, loop_vars, self._decls(s.body) +
                              self.block(s.body, set(loop_vars)) + n.returns(loop_vars))
        args = [n.load(test_name), n.load(body_name)]
        if loop_vars:
            args += [n.str_tuple(loop_vars), self._values(loop_vars, maybe)]
        stmt = n.assign(loop_vars, n.ag_call("while_stmt", *args))
        return [n.copy_location(x, s) for x in (test_def, body_def, stmt)]

    # -- for -----------------------------------------------------------------------------
    def for_(self, s, maybe):
        target_names = assigned([s.target])
        loop_vars = self._carried((assigned(s.body) | target_names) & s.ag_head_live)
        body_name = self.namer.new("loop_body")
        if isinstance(s.target, gast.Name) and s.target.id not in loop_vars:
            item, unpack = s.target.id, []
        else:
            item = self.namer.new("itr")
            unpack = [gast.Assign(targets=[s.target], value=n.load(item), type_comment=None)]
        scope = set(loop_vars) | {item} | target_names
        body = unpack + self.block(s.body, scope)
        body_def = n.function(body_name, [item] + loop_vars,
                              self._decls(s.body) + body + n.returns(loop_vars))
        defs = [body_def]
        flags = getattr(s, "ag_exit_flags", [])
        extra = n.const(None)
        if flags:
            extra_name = self.namer.new("extra_test")
            defs.insert(0, n.function(extra_name, loop_vars,
                                      [gast.Return(value=_with_exit_flags(None, flags))]))
            extra = n.load(extra_name)
        args = [s.iter, extra, n.load(body_name)]
        if loop_vars:
            args += [n.str_tuple(loop_vars), self._values(loop_vars, maybe)]
        stmt = n.assign(loop_vars, n.ag_call("for_stmt", *args))
        return [n.copy_location(x, s) for x in defs + [stmt]]


def _with_exit_flags(test, flags):
    """`not flag1 and not flag2 and test`, in converted (ag__) form."""
    parts = [n.ag_call("not_", n.load(f)) for f in flags]
    if test is not None:
        parts.append(test)
    if len(parts) == 1:
        return parts[0]
    return n.ag_call("and_", *[n.thunk(p) for p in parts])


def _declarations(body):
    """(global names, nonlocal names) a function body declares (not in nested scopes)."""
    g, nl = set(), set()
    stack = list(body)
    while stack:
        s = stack.pop()
        if isinstance(s, gast.Global):
            g |= set(s.names)
        elif isinstance(s, gast.Nonlocal):
            nl |= set(s.names)
        elif not isinstance(s, SCOPES):
            stack.extend(c for c in gast.iter_child_nodes(s) if isinstance(c, gast.stmt))
    return g, nl
