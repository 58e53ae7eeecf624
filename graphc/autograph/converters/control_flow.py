"""`if`, `while` and `for` become calls of ag__.if_stmt / while_stmt / for_stmt.

Each branch or loop body becomes a local function that works on the enclosing scope's
variables directly (`nonlocal`), and the statement's state is read and written through
`get_state` / `set_state` functions (state_functions.py):

    def if_true():            # the branch, on the enclosing variables
        nonlocal y
        y = y + 1
    def if_false():
        pass
    ag__.if_stmt(x > 0, if_true, if_false, get_state, set_state, ('y',), 1)

On a Python condition the runtime just calls one branch; on a tensor it traces both into
one `cond` node, setting the state before each branch and collecting it after. State is
what the statement modifies (names and composites such as `d['k']` or `self.a`) and is
read later: live after an `if` (or read in a branch before it is written), live at a
loop's head, or read by a closure defined outside the statement.
"""
import gast

from ..pyct import nodes as n
from ..pyct.activity import Activity, deleted_names
from ..pyct.analysis import SCOPES, annotate_liveness, assigned, kills, live_in, reads
from . import directives
from .state_functions import Bound, State


class ControlFlowConverter:
    def __init__(self, namer):
        self.namer = namer
        self.globals, self.nonlocals = set(), set()   # declared in the function converted
        self.closures = []          # (nested scope, names it reads) of that function
        self.maybe_undefined = set()                   # names initialized as ag__.Undefined
        self.locals = set()     # locals of the converted function and those enclosing it

    def function(self, fn):
        """Convert the control flow of FunctionDef `fn` (and of functions nested in it)."""
        a = fn.args
        params = [p.id for p in a.posonlyargs + a.args + a.kwonlyargs]
        params += [p.id for p in (a.vararg, a.kwarg) if p is not None]
        outer = self.globals, self.nonlocals, self.closures, self.locals
        g, nl = _declarations(fn.body)
        self.globals, self.nonlocals = g, nl - g
        self.locals = (self.locals | set(params) | assigned(fn.body)) - g
        self.closures = _closures(fn.body)
        annotate_liveness(fn.body)
        fn.body = self.block(fn.body, Bound(params))
        self.globals, self.nonlocals, self.closures, self.locals = outer

    def block(self, stmts, bound):
        """Convert a statement list; `bound` (names bound so far in the current generated
        scope) is updated as statements are passed."""
        out = []
        for s in stmts:
            if isinstance(s, gast.If):
                out.extend(self.if_(s, bound))
            elif isinstance(s, gast.While):
                out.extend(self.while_(s, bound))
            elif isinstance(s, gast.For):
                out.extend(self.for_(s, bound))
            else:
                if isinstance(s, gast.Return):
                    self._checked_return(s)
                if isinstance(s, (gast.FunctionDef, gast.AsyncFunctionDef)):
                    self.function(s)
                elif not isinstance(s, SCOPES):
                    self._inner_blocks(s, bound)
                out.append(s)
                _passed(s, bound)
        return out

    def _inner_blocks(self, s, bound):
        inner = bound.copy()
        for field in ("body", "orelse", "finalbody"):
            if getattr(s, field, None):
                setattr(s, field, self.block(getattr(s, field), inner))
        for h in getattr(s, "handlers", []) or []:
            h.body = self.block(h.body, bound.copy())
        bound.maybe |= inner.maybe
        if isinstance(s, (gast.With, gast.AsyncWith)):
            bound.definite |= inner.definite

    def _checked_return(self, s):
        """`return v` of a variable that may still be undefined: `return ag__.ld(v)`, so it
        raises UnboundLocalError as Python would instead of returning a placeholder."""
        if isinstance(s.value, gast.Name) and s.value.id in self.maybe_undefined:
            s.value = n.copy_location(n.ag_call("ld", s.value), s.value)

    # -- what a statement carries ----------------------------------------------------------
    def _escaping(self, s):
        """Names read by closures defined outside `s`: they must see the values `s` sets,
        at times liveness cannot see."""
        inside = {id(x) for x in gast.walk(s) if isinstance(x, SCOPES)}
        out = set()
        for scope, names in self.closures:
            if id(scope) not in inside:
                out |= names
        return out

    def _state(self, act, live):
        """State of a block from its activity. Names declared `global`/`nonlocal` are never
        state (a tensor stored there would outlive the trace); assigning one in a graph
        statement is an error the runtime raises, with its line (`untracked`)."""
        declared = self.globals | self.nonlocals
        names = sorted(v for v in act.names if v in live and v not in declared)
        for v in sorted(act.names & declared):
            kind = "global" if v in self.globals else "nonlocal"
            act.untracked.append((act.lines.get(v, 0), v, f"it is declared {kind}"))
        return State(names, [act.composites[k] for k in sorted(act.composites)],
                     [act.mutated[k] for k in sorted(act.mutated)],
                     globals_=act.names & self.globals, nonlocals=act.names & self.nonlocals,
                     deleted=act.deleted)

    def _emit(self, s, state, bound, defs, call, args, untracked=()):
        """Statements for one converted statement: inits, state functions, body defs, call."""
        get_name, set_name, state_defs, inits = state.functions(self.namer, bound, self.locals)
        self.maybe_undefined |= {v for v in state.plain if v not in bound.maybe}
        args = args + state.call_args(get_name, set_name)
        if call == "if_stmt" and get_name is not None:
            args.append(n.const(state.n_outputs))
        opts = state.options(untracked)
        if getattr(s, "ag_loop_options", None):      # lifted set_loop_options
            keys, values = directives.options_dict_items(s)
            if opts is None:
                opts = gast.Dict(keys=[], values=[])
            opts.keys += [n.const(k) for k in keys]
            opts.values += values
        stmt = gast.Expr(value=n.ag_call(call, *args, **({} if opts is None else {"opts": opts})))
        bound.add(state.plain)
        return [n.copy_location(x, s) for x in inits + state_defs + defs + [stmt]]

    def _body(self, name, params, state, stmts, bound):
        inner = Bound(set(params) | set(state.plain), outer=bound.maybe | bound.outer)
        # `del y` of a variable bound before the statement: without `nonlocal` the generated
        # function would make `y` its own (unbound) local: UnboundLocalError where Python
        # has none
        deleted = (deleted_names(stmts) & (bound.maybe | bound.outer) & self.locals) - \
            set(params) - state.globals
        body = state.declarations(deleted) + self.block(stmts, inner)
        return n.function(name, params, body)

    # -- if ------------------------------------------------------------------------------
    def if_(self, s, bound):
        act = Activity(s.body + s.orelse)
        live = s.ag_live_out | self._escaping(s)
        state = self._state(act, live)
        # read in a branch before being written there (dead after): restored between the
        # traced branches, not an output
        read = live_in(s.body, set(state.names)) | live_in(s.orelse, set(state.names))
        state.extra = sorted(v for v in act.names if v in read and v not in live)
        t_name, f_name = self.namer.new("if_true"), self.namer.new("if_false")
        t_def = self._body(t_name, [], state, s.body, bound)
        f_def = self._body(f_name, [], state, s.orelse, bound)
        return self._emit(s, state, bound, [t_def, f_def], "if_stmt",
                          [s.test, n.load(t_name), n.load(f_name)], act.untracked)

    # -- while ---------------------------------------------------------------------------
    def while_(self, s, bound):
        act = Activity(s.body)
        state = self._state(act, s.ag_head_live | self._escaping(s))
        test_name, body_name = self.namer.new("loop_test"), self.namer.new("loop_body")
        test = _with_exit_flags(s.test, getattr(s, "ag_exit_flags", []))
        test_def = n.function(test_name, [], [gast.Return(value=test)])
        body_def = self._body(body_name, [], state, s.body, bound)
        return self._emit(s, state, bound, [test_def, body_def], "while_stmt",
                          [n.load(test_name), n.load(body_name)], act.untracked)

    # -- for -----------------------------------------------------------------------------
    def for_(self, s, bound):
        target = gast.Assign(targets=[s.target], value=n.const(None), type_comment=None)
        n.copy_location(target, s)
        act = Activity([target] + s.body)  # the loop assigns its target too
        state = self._state(act, s.ag_head_live | self._escaping(s))
        body_name = self.namer.new("loop_body")
        if isinstance(s.target, gast.Name) and s.target.id not in state.plain:
            item, unpack = s.target.id, []
        else:
            item = self.namer.new("itr")
            unpack = [gast.Assign(targets=[s.target], value=n.load(item), type_comment=None)]
        body_def = self._body(body_name, [item], state, unpack + s.body, bound)
        defs = [body_def]
        flags = getattr(s, "ag_exit_flags", [])
        extra = n.const(None)
        if flags:
            extra_name = self.namer.new("extra_test")
            defs.insert(0, n.function(extra_name, [],
                                      [gast.Return(value=_with_exit_flags(None, flags))]))
            extra = n.load(extra_name)
        return self._emit(s, state, bound, defs, "for_stmt",
                          [s.iter, extra, n.load(body_name)], act.untracked)


def _passed(s, bound):
    """Update `bound` past a statement that is not converted control flow."""
    bound.maybe |= assigned([s])
    if isinstance(s, gast.Delete):
        bound.definite -= {t.id for t in s.targets if isinstance(t, gast.Name)}
    else:
        bound.definite |= kills(s)


def _with_exit_flags(test, flags):
    """`not flag1 and not flag2 and test`, in converted (ag__) form."""
    parts = [n.ag_call("not_", n.load(f)) for f in flags]
    if test is not None:
        parts.append(test)
    if len(parts) == 1:
        return parts[0]
    return n.ag_call("and_", parts[0], *[n.thunk(p) for p in parts[1:]])


def _closures(body):
    """(scope node, names read inside it) for every def/lambda nested in a function body,
    except the thunks the converters made (called at once, never kept)."""
    out = []
    stack = list(body)
    while stack:
        x = stack.pop()
        if isinstance(x, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda)) and \
                not getattr(x, "ag_thunk", False):
            out.append((x, reads(x)))
        stack.extend(gast.iter_child_nodes(x))
    return out


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
