"""`a < b <= c` becomes ag__.compare(a, b, ("le", lambda: c)): Python evaluates each
operand once and stops at the first false comparison, so the operands after the second are
thunks; on tensors the comparisons join with a lazy logical and (like `and`)."""
import gast

from ..pyct import nodes as n

OP_NAMES = {gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge", gast.Eq: "eq",
            gast.NotEq: "ne", gast.Is: "is_", gast.IsNot: "is_not", gast.In: "in_",
            gast.NotIn: "not_in"}


class _Chains(gast.NodeTransformer):
    def visit_ClassDef(self, node):
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        ops = [OP_NAMES[type(op)] for op in node.ops]
        rest = []
        for op, operand in zip(ops[1:], node.comparators[1:]):
            n.check_lazy_operand(operand, "a chained comparison")
            rest.append(n.expr_tuple([n.const(op), n.thunk(operand)]))
        call = n.ag_call("compare", node.left, n.const(ops[0]), node.comparators[0], *rest)
        return n.copy_location(call, node)


def transform(fn):
    _Chains().visit(fn)
