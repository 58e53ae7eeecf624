"""`assert cond, msg` becomes `ag__.assert_(cond, lambda: msg)`: Python's assert on Python
values, a graph assertion (InvalidArgumentError at run time) on tensors."""
import gast

from ..pyct import nodes as n


class _Asserts(gast.NodeTransformer):
    def visit_ClassDef(self, node):
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        args = [node.test] + ([n.thunk(node.msg)] if node.msg is not None else [])
        return n.copy_location(gast.Expr(value=n.ag_call("assert_", *args)), node)


def transform(fn):
    _Asserts().visit(fn)
