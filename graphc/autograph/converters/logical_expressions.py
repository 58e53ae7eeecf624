"""`a and b`, `a or b` and `not a` become ag__.and_/or_/not_, lazy in their later operands,
so they work on tensors (graph logic) and keep Python semantics on Python values."""
import gast

from ..pyct import nodes as n


class _Logical(gast.NodeTransformer):
    def visit_ClassDef(self, node):
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = "and_" if isinstance(node.op, gast.And) else "or_"
        for later in node.values[1:]:
            n.check_lazy_operand(later, "`and` / `or`")
        return n.copy_location(n.ag_call(op, node.values[0], *[n.thunk(v) for v in node.values[1:]]), node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return n.copy_location(n.ag_call("not_", node.operand), node)
        return node


def transform(fn):
    _Logical().visit(fn)
