"""Calls become `ag__.call(f, *args, **kwargs)`, so user functions called from converted code
are converted too (once per function) while graphc, numpy and the standard library run as is."""
import gast

from ..pyct import nodes as n

# calls that must stay direct: they read the calling frame
_FRAME_SENSITIVE = {"super", "locals", "globals", "vars", "eval", "exec"}


def is_ag(func):
    return isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
        func.value.id == "ag__"


def is_variable_constructor(func):
    """`Variable(...)` / `gc.Variable(...)` / `tf.Variable(...)`, by name."""
    return isinstance(func, gast.Name) and func.id == "Variable" or \
        isinstance(func, gast.Attribute) and func.attr == "Variable"


def _mark_initial_values(call):
    """Calls in a Variable constructor's arguments compute its initial value, once by
    design (TF's `if self.w is None: self.w = tf.Variable(np.random...)` lazy build): they
    run through ag__.call_initial_value, which does not flag np.random / random / time.
    Not inside a lambda, whose calls may run later."""
    stack = list(call.args) + [k.value for k in call.keywords]
    while stack:
        x = stack.pop()
        if isinstance(x, gast.Lambda):
            continue
        if isinstance(x, gast.Call) and is_ag(x.func) and x.func.attr == "call":
            x.func = n.ag("call_initial_value")
        stack.extend(gast.iter_child_nodes(x))


class _Calls(gast.NodeTransformer):
    def __init__(self):
        self.first_params = []

    def visit_ClassDef(self, node):
        return node

    def visit_FunctionDef(self, node):
        a = node.args
        params = a.posonlyargs + a.args
        self.first_params.append(params[0].id if params else None)
        self.generic_visit(node)
        self.first_params.pop()
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, gast.Name) and f.id == "super" and not node.args and \
                self.first_params and self.first_params[-1]:
            # zero-argument super() reads the calling frame, which becomes a generated
            # branch or loop function: name its class and instance explicitly
            node.args = [n.load("__class__"), n.load(self.first_params[-1])]
            return node
        if is_ag(f) or (isinstance(f, gast.Name) and f.id in _FRAME_SENSITIVE):
            return node
        if is_variable_constructor(f):
            _mark_initial_values(node)
        return n.copy_location(n.call(n.ag("call"), [f] + node.args, node.keywords), node)


def transform(fn):
    _Calls().visit(fn)
