"""Which symbols a block modifies: the state a graph `if`/loop must carry through.

A symbol is a plain name (`x`) or a composite: an attribute chain or a subscript with a
static key, rooted at a name (`self.a.b`, `d["k"]`, `l[0]`, `d[key]` where `key` is a
name the block does not modify). As TF's activity analysis does, composites that a block
assigns or augments are carried like names and written back after the statement.

Three more kinds are recorded for the runtime, which decides once it knows the values:
- `mutated`: a symbol the block changes only through a method (`ta.write(i, v)`,
  `lst.append(v)`): a TensorArray is carried, a Python container is an error in a graph
  statement (it cannot change length per iteration), anything else is left alone;
- `untracked`: stores the block makes through a key that is not static (`l[i] = v` with `i`
  changing in the block, `d[f(x)] = v`): fine in Python, an error in a graph statement.
"""
import gast

from .analysis import SCOPES, assigned

# methods that change their receiver: TensorArray's, and Python containers'
TENSOR_ARRAY_MUTATORS = frozenset({"write", "scatter", "unstack"})
CONTAINER_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear",
                                "update", "setdefault", "popitem", "sort", "reverse", "add",
                                "discard"})
MUTATORS = TENSOR_ARRAY_MUTATORS | CONTAINER_MUTATORS


def symbol(expr):
    """(key, root name, key names) for a trackable expression, else None.

    `key` is the readable text of the symbol (`cfg['sign']`, `self.a.b`); `key names` are
    the names used as subscript keys, which must not change inside the block.
    """
    if isinstance(expr, gast.Name):
        return expr.id, expr.id, ()
    if isinstance(expr, gast.Attribute):
        inner = symbol(expr.value)
        return None if inner is None else (f"{inner[0]}.{expr.attr}", inner[1], inner[2])
    if isinstance(expr, gast.Subscript):
        inner = symbol(expr.value)
        key = _static_key(expr.slice)
        if inner is None or key is None:
            return None
        text, names = key
        return f"{inner[0]}[{text}]", inner[1], inner[2] + names
    return None


def _static_key(node):
    if isinstance(node, gast.Constant) and isinstance(node.value, (str, int, float, bool,
                                                                   type(None), bytes)):
        return repr(node.value), ()
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant) and isinstance(node.operand.value, int):
        return repr(-node.operand.value), ()
    if isinstance(node, gast.Name):
        return node.id, (node.id,)
    if isinstance(node, gast.Tuple) and node.elts:
        parts = [_static_key(e) for e in node.elts]
        if any(p is None for p in parts):
            return None
        return "(" + ", ".join(p[0] for p in parts) + ("," if len(parts) == 1 else "") + ")", \
            tuple(n for p in parts for n in p[1])
    return None


class Composite:
    """A composite symbol of a block: its text, a node that loads it, where it is stored."""

    def __init__(self, key, node, line):
        self.key, self.node, self.line = key, node, line


class Activity:
    """Names, composites, method-mutated symbols and untracked stores of one block."""

    def __init__(self, stmts):
        self.names = assigned(stmts)
        self.lines = _name_lines(stmts)   # name -> first line that assigns it
        self.composites = {}     # key -> Composite
        self.mutated = {}        # key -> (Composite, method, line)
        self.untracked = []      # (line, text): stores that cannot be state
        self.deleted = deleted_names(stmts)
        stores, calls = [], []
        _collect(stmts, stores, calls)
        for target, line, *deleted in stores:
            if deleted:     # a key or attribute that disappears cannot be a graph value
                self.untracked.append((line, "del " + _text(target), "it is deleted"))
            else:
                self._store(target, line)
        for receiver, method, line in calls:
            self._mutation(receiver, method, line)
        self._drop_nested()

    def _trackable(self, expr):
        sym = symbol(expr)
        if sym is None:
            return None, "its key is computed"
        key, root, key_names = sym
        if root in self.names:
            return None, None          # an object made inside the block: not state
        changing = [k for k in key_names if k in self.names]
        if changing:
            return None, f"'{changing[0]}' changes inside the block"
        return key, None

    def _store(self, target, line):
        key, why = self._trackable(target)
        if key is not None:
            self.composites.setdefault(key, Composite(key, _load(target), line))
        elif why is not None:
            self.untracked.append((line, _text(target), why))

    def _mutation(self, receiver, method, line):
        key, _ = self._trackable(receiver)
        if key is not None and key not in self.mutated:
            self.mutated[key] = (Composite(key, _load(receiver), line), method, line)

    def _drop_nested(self):
        """`d['a']['b']` is carried inside `d['a']` when that is carried too."""
        keys = set(self.composites) | set(self.names)
        for table in (self.composites, self.mutated):
            for key in list(table):
                if any(key != k and _extends(key, k) for k in keys):
                    del table[key]
        for key in list(self.mutated):
            if key in self.composites or key in self.names:
                del self.mutated[key]


def deleted_names(stmts):
    """Names a `del` statement in `stmts` unbinds (nested scopes excluded)."""
    out, stack = set(), list(stmts)
    while stack:
        x = stack.pop()
        if isinstance(x, SCOPES):
            continue
        if isinstance(x, gast.Delete):
            out |= {t.id for t in x.targets if isinstance(t, gast.Name)}
        stack.extend(gast.iter_child_nodes(x))
    return out


def _name_lines(stmts):
    out = {}
    for s in stmts:
        for x in gast.walk(s):
            if isinstance(x, gast.Name) and isinstance(x.ctx, (gast.Store, gast.Del)) and \
                    hasattr(x, "lineno"):
                out.setdefault(x.id, x.lineno)
    return out


def _extends(key, prefix):
    return key.startswith(prefix) and key[len(prefix)] in ".["


def _collect(stmts, stores, calls):
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        if isinstance(node, gast.Assign):
            for t in node.targets:
                _targets(t, node.lineno, stores)
        elif isinstance(node, (gast.AugAssign, gast.AnnAssign)):
            _targets(node.target, node.lineno, stores)
        elif isinstance(node, gast.For):
            _targets(node.target, node.lineno, stores)
        elif isinstance(node, gast.Delete):
            stores.extend((t, node.lineno, "del") for t in node.targets
                          if isinstance(t, (gast.Attribute, gast.Subscript)))
        elif isinstance(node, gast.Call):
            method = _called_method(node)
            if method is not None and method.attr in MUTATORS:
                calls.append((method.value, method.attr, node.lineno))
        stack.extend(gast.iter_child_nodes(node))


def _called_method(call):
    """`obj.m` of `obj.m(...)`, also in its converted form `ag__.call(obj.m, ...)`."""
    func = call.func
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
            func.value.id == "ag__" and func.attr == "call" and call.args:
        func = call.args[0]
    return func if isinstance(func, gast.Attribute) else None


def _targets(t, line, out):
    if isinstance(t, (gast.Tuple, gast.List)):
        for e in t.elts:
            _targets(e, line, out)
    elif isinstance(t, gast.Starred):
        _targets(t.value, line, out)
    elif isinstance(t, (gast.Attribute, gast.Subscript)):
        out.append((t, line))


def _load(expr):
    """A copy of `expr` in load context (a store target becomes a read of the same thing)."""
    import copy
    node = copy.deepcopy(expr)
    for x in gast.walk(node):
        if hasattr(x, "ctx"):
            x.ctx = gast.Load()
    return node


def _text(expr):
    import ast
    return ast.unparse(gast.gast_to_ast(_load(expr)))
