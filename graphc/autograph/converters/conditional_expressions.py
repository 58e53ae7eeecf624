"""`a if cond else b` becomes `ag__.if_exp(cond, lambda: a, lambda: b)`: a `cond` on tensors,
the usual lazy choice on Python values."""
import gast

from ..pyct import nodes as n


class _IfExp(gast.NodeTransformer):
    def visit_ClassDef(self, node):
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return n.copy_location(n.ag_call("if_exp", node.test, n.thunk(node.body),
                                         n.thunk(node.orelse)), node)


def transform(fn):
    _IfExp().visit(fn)
