"""The state of one converted statement: its symbols and the functions that read and write them.

A graph `if`/loop carries its state through `cond`/`while` nodes; the variables themselves
stay in the enclosing scope, so a closure defined outside the statement sees the value of
the current iteration, as in Python. Generated code for state `(k, cfg['n'])`:

    def get_state():
        return (k, ag__.ldu(lambda: cfg['n'], "cfg['n']"))
    def set_state(vars_):
        nonlocal k
        k, cfg['n'] = vars_

and every generated body function declares `nonlocal k` (`global` for globals).
"""
import gast

from ..pyct import nodes as n


class Bound:
    """Names bound in the scope being converted: `maybe` (on some path), `definite` (on
    every path). A state name bound on no path gets `x = ag__.Undefined('x')` first."""

    def __init__(self, names=(), outer=()):
        self.maybe, self.definite = set(names), set(names)
        self.outer = frozenset(outer)     # bound in an enclosing generated function

    def copy(self):
        b = Bound(outer=self.outer)
        b.maybe, b.definite = set(self.maybe), set(self.definite)
        return b

    def add(self, names):
        self.maybe |= set(names)
        self.definite |= set(names)


class State:
    """The symbols of one statement, outputs first: `names` (plain) then `composites`
    (Activity Composite objects), then `mutated`; `extra` are names only restored between
    the branches of a graph `if` (read before written in a branch, dead after it)."""

    def __init__(self, names, composites, mutated, extra=(), globals_=(), nonlocals=(),
                 deleted=()):
        self.names, self.composites, self.mutated = list(names), list(composites), mutated
        self.extra = list(extra)
        self.deleted = set(deleted)    # names a `del` in the block may unbind
        # names the user declared global/nonlocal that the block assigns: declared again
        # in the generated functions, never state
        self.globals, self.nonlocals = set(globals_), set(nonlocals)

    @property
    def plain(self):
        return self.names + self.extra

    @property
    def n_outputs(self):
        return len(self.names) + len(self.composites) + len(self.mutated)

    def symbol_names(self):
        return tuple(self.names + [c.key for c in self.composites] +
                     [c.key for c, _, _ in self.mutated] + self.extra)

    def declarations(self, more=()):
        """`global` / `nonlocal` lines for a function that assigns the plain names (and
        `more` names)."""
        out = []
        g = sorted(self.globals)
        nl = sorted(set(self.plain) | self.nonlocals | set(more))
        if g:
            out.append(gast.Global(names=g))
        if nl:
            out.append(gast.Nonlocal(names=nl))
        return out

    def functions(self, namer, bound, scope_locals=frozenset()):
        """(get_state name, set_state name, their defs, `x = Undefined` statements);
        `scope_locals` are the names local to the enclosing converted functions.

        A name bound on some paths only (in a try block, after a `del`) is read through
        `ag__.ldu`, so reading the state never raises where Python would not."""
        if not self.symbol_names():
            return None, None, [], []
        undefined = [v for v in self.plain if v not in bound.maybe]
        inits = [n.assign_value(v, n.ag_call("Undefined", n.const(v))) for v in undefined]
        known = (bound.definite - self.deleted) | set(undefined)
        reads = [n.load(v) if v in known else _ldu(n.load(v), v) for v in self.names]
        reads += [_ldu(c.node, c.key) for c in self.composites]
        reads += [_ldu(c.node, c.key) for c, _, _ in self.mutated]
        reads += [n.load(v) if v in known else _ldu(n.load(v), v) for v in self.extra]
        get_name, set_name = namer.new("get_state"), namer.new("set_state")
        get_def = n.function(get_name, [], [gast.Return(value=n.expr_tuple(reads))])
        targets = [n.store(v) for v in self.names] + [_store(c.node) for c in self.composites]
        targets += [_store(c.node) for c, _, _ in self.mutated]
        targets += [n.store(v) for v in self.extra]
        vars_ = namer.new("vars_")
        assign = gast.Assign(targets=[gast.Tuple(elts=targets, ctx=gast.Store())],
                             value=n.load(vars_), type_comment=None)
        # a local changed only through a method (`ta.write(i, v)`) is set back by name
        receivers = [c.key for c, _, _ in self.mutated
                     if isinstance(c.node, gast.Name) and c.key in scope_locals]
        set_def = n.function(set_name, [vars_], self.declarations(receivers) + [assign])
        return get_name, set_name, [get_def, set_def], inits

    def call_args(self, get_name, set_name):
        """The trailing arguments of the ag__ statement call."""
        if get_name is None:
            return []
        return [n.load(get_name), n.load(set_name), n.str_tuple(self.symbol_names())]

    def options(self, untracked):
        """The `opts` dict literal: method mutations and untracked stores, if any."""
        items = {}
        if self.mutated:
            items["mutated"] = gast.Dict(
                keys=[n.const(c.key) for c, _, _ in self.mutated],
                values=[n.expr_tuple([n.const(m), n.const(line)]) for _, m, line in self.mutated])
        if untracked:
            items["untracked"] = n.expr_tuple(
                n.expr_tuple([n.const(line), n.const(text), n.const(why)])
                for line, text, why in untracked)
        if not items:
            return None
        return gast.Dict(keys=[n.const(k) for k in items], values=list(items.values()))


def _ldu(node, name):
    return n.ag_call("ldu", n.thunk(node), n.const(name))


def _store(node):
    import copy
    target = copy.deepcopy(node)
    target.ctx = gast.Store()
    return target
