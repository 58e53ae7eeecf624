"""Activity and liveness analysis of one function scope, on gast statements.

`assigned` gives the names a block binds (its activity); `annotate_liveness` records on every
`if`/`while`/`for` the variables live after it (`ag_live_out`) and, for loops, at the loop
head (`ag_head_live`). Control-flow conversion turns these into branch outputs and loop
variables: a variable is carried only if the statement modifies it and it is read later.
Nested functions and lambdas count as reading every name they mention (conservative).
"""
import gast

SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
COMPREHENSIONS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
LOOPS = (gast.While, gast.For)


def _children(node):
    for field in node._fields:
        v = getattr(node, field, None)
        if isinstance(v, list):
            for x in v:
                if isinstance(x, gast.AST):
                    yield x
        elif isinstance(v, gast.AST):
            yield v


def assigned(nodes):
    """Names bound by `nodes` in the current scope (nested defs bind only their own name)."""
    out = set()
    stack = list(nodes)
    while stack:
        n = stack.pop()
        if isinstance(n, gast.Name):
            if isinstance(n.ctx, (gast.Store, gast.Del)):
                out.add(n.id)
            continue
        if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            out.add(n.name)
            stack.extend(n.decorator_list)
            continue
        if isinstance(n, (gast.Lambda,) + COMPREHENSIONS):
            continue
        if isinstance(n, (gast.Import, gast.ImportFrom)):
            for a in n.names:
                out.add(a.asname or a.name.split(".")[0])
            continue
        stack.extend(_children(n))
    return out


def reads(node):
    """Every name read in `node`, including inside nested functions and comprehensions."""
    out = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            out.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            out.add(n.target.id)
    return out


def _reads_all(nodes):
    out = set()
    for n in nodes:
        out |= reads(n)
    return out


def kills(stmt):
    """Names a simple statement always rebinds (plain names, not `a[i] = ...`)."""
    if isinstance(stmt, (gast.Assign, gast.AnnAssign, gast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
        out = set()
        for t in targets:
            out |= {n.id for n in gast.walk(t) if isinstance(n, gast.Name)
                    and isinstance(n.ctx, gast.Store) and _is_direct_target(t, n)}
        return out
    if isinstance(stmt, (gast.FunctionDef, gast.ClassDef, gast.Import, gast.ImportFrom)):
        return assigned([stmt])
    return set()


def _is_direct_target(target, name):
    if target is name:
        return True
    if isinstance(target, (gast.Tuple, gast.List)):
        return any(_is_direct_target(e, name) for e in target.elts)
    if isinstance(target, gast.Starred):
        return _is_direct_target(target.value, name)
    return False


def live_in(stmts, live_out, annotate=False):
    """Variables live before `stmts` given those live after."""
    live = set(live_out)
    for s in reversed(stmts):
        live = _live_in_stmt(s, live, annotate)
    return live


def _live_in_stmt(s, out, annotate):
    if annotate and isinstance(s, (gast.If,) + LOOPS):
        s.ag_live_out = set(out)
    if isinstance(s, gast.If):
        return reads(s.test) | live_in(s.body, out, annotate) | live_in(s.orelse, out, annotate)
    if isinstance(s, LOOPS):
        after = out | live_in(s.orelse, out, annotate)
        head = set(after) | _head_reads(s)
        while True:
            body_in = live_in(s.body, head, annotate)
            if isinstance(s, gast.For):
                body_in = (body_in - kills(gast.Assign(targets=[s.target], value=None,
                                                        type_comment=None))) | _target_reads(s)
            new = head | body_in
            if new == head:
                break
            head = new
        if annotate:
            s.ag_head_live = set(head)
        # lifted set_loop_options arguments are read once, before the loop
        before = getattr(s, "ag_loop_options_reads", set())
        return head | before | (reads(s.iter) if isinstance(s, gast.For) else set())
    if isinstance(s, (gast.With, gast.AsyncWith)):
        inner = live_in(s.body, out, annotate)
        bound = assigned([i.optional_vars for i in s.items if i.optional_vars is not None])
        return (inner - bound) | _reads_all(i.context_expr for i in s.items)
    if isinstance(s, gast.Try):
        fin = live_in(s.finalbody, out, annotate)
        handlers = set()
        for h in s.handlers:
            handlers |= live_in(h.body, fin, annotate) | (reads(h.type) if h.type else set())
        body = live_in(s.body + s.orelse, fin | handlers, annotate)
        return body | handlers | fin
    if isinstance(s, (gast.Return, gast.Raise)):
        return reads(s)
    return (out - kills(s)) | reads(s)


def _head_reads(loop):
    """Names the loop reads at its head on every iteration (test, lowered exit flags)."""
    names = set(getattr(loop, "ag_exit_flags", ()))
    if isinstance(loop, gast.While):
        names |= reads(loop.test)
    return names


def _target_reads(loop):
    return {n.id for n in gast.walk(loop.target)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def annotate_liveness(body):
    """Record liveness on the compound statements of a function body (nothing is live after)."""
    live_in(body, set(), annotate=True)


def ordered(names):
    return sorted(names)
