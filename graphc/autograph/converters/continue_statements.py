"""`continue` lowered to a flag reset at the top of each iteration and guards on the rest."""
import gast

from ..pyct import nodes as n
from .jumps import JumpLowering, scope_statements


def transform(fn, namer):
    for loop in scope_statements(fn.body):
        lowering = JumpLowering(lambda s: isinstance(s, gast.Continue), None, None, False)
        if not any(lowering.contains(s) for s in loop.body):
            continue
        flag = namer.new("continue_")
        lowering.flag = flag
        lowering.replace = lambda s, flag=flag: [n.assign_value(flag, n.const(True))]
        body, _ = lowering.block(loop.body)
        reset = n.copy_location(n.assign_value(flag, n.const(False)), loop.body[0])
        loop.body = [reset] + body
