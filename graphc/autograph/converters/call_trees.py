"""Calls become `ag__.call(f, *args, **kwargs)`, so user functions called from converted code
are converted too (once per function) while graphc, numpy and the standard library run as is."""
import gast

from ..pyct import nodes as n

# calls that must stay direct: they read the calling frame
_FRAME_SENSITIVE = {"super", "locals", "globals", "vars", "eval", "exec"}


def is_ag(func):
    return isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and \
        func.value.id == "ag__"


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
        return n.copy_location(n.call(n.ag("call"), [f] + node.args, node.keywords), node)


def transform(fn):
    _Calls().visit(fn)
