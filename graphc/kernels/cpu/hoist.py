"""Loop-invariant loads and statements moved out of the generated loop nests.

A value of an input broadcast along an inner axis (an [n, 1] input in an [n, m] domain, or
every value of a group over an [n, 1] domain) is the same for each iteration of the inner
loop, but the body generators recompute it there. LLVM cannot hoist the loads itself (the
output stores might alias them, as far as it knows), so its loop vectorizer versions the
loop with alias checks and treats the whole expression DAG as uniform -- and its
uniformity check walks that DAG as a tree, without memo: a 50-statement gradient
(sigmoid cross entropy of dropout(silu(x @ w)) over [8, 1]) kept LLVM 21 busy for more
than 10 minutes. Here each such line moves before the loop, so the loop only reads one
scalar (and the value is computed once per outer iteration: faster too).

Works on the generated lines themselves, so every body layout (rows, columns, chunks) gets
it. Only the generators' value names move (`x3 = in3[i0, 0]`, `v7 = float32(...)`): their
right-hand sides are pure (templates, loads of inputs, which a kernel never writes).
"""
import re

_FOR = re.compile(r"for (\w+) in ")
_VALUE = re.compile(r"([xv]\d+) = (.*)$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_TARGET = re.compile(r"^([A-Za-z_][\w, ]*?)(?:\[[^=]*\])? *(?:[-+*/|&%^]|//|\*\*)?=(?!=)")
_SUBSCRIPTED = re.compile(r"([A-Za-z_]\w*)\[")
_INPUT = re.compile(r"in\d+$")


def hoist_invariants(lines):
    """`lines` (one function body, four-space indents) with loop-invariant value lines
    moved in front of their loops, innermost loops first, so a value can move out of
    several levels."""
    return _block([(_indent(ln), ln.strip()) for ln in lines if ln.strip()])


def _indent(line):
    return (len(line) - len(line.lstrip(" "))) // 4


def _block(items):
    """Rendered lines of `items` (indent, text), loops processed recursively."""
    out, k = [], 0
    while k < len(items):
        ind, text = items[k]
        end = k + 1
        while end < len(items) and items[end][0] > ind:
            end += 1
        loop = _FOR.match(text)
        if loop and text.endswith(":"):
            body = _block(items[k + 1:end])
            moved, kept = _split(loop.group(1), body, ind + 1)
            out += ["    " * ind + ln for ln in moved]
            out.append("    " * ind + text)
            out += kept
        else:
            out.append("    " * ind + text)
            out += _block(items[k + 1:end])
        k = end
    return out


def _split(var, body, ind):
    """(statements of `body`'s top level that do not depend on the loop, the rest)."""
    assigned = {}       # name -> times assigned anywhere in the body
    for ln in body:
        text = ln.strip()
        m = _FOR.match(text) or _TARGET.match(text)
        for name in _NAME.findall(m.group(1)) if m else ():
            assigned[name] = assigned.get(name, 0) + 1
    variant = set(assigned) | {var}
    moved, kept, used = [], [], set()
    for ln in body:
        text = ln.strip()
        m = _VALUE.match(text)
        if (m and _indent(ln) == ind and assigned.get(m.group(1)) == 1
                and m.group(1) not in used and _invariant(m.group(2), variant)):
            moved.append(text)
            variant.discard(m.group(1))
            continue
        kept.append(ln)
        if not text.startswith("#"):
            used |= set(_NAME.findall(text.split("  #")[0]))
    if not kept:            # nothing left to loop over: leave the loop as written
        return [], body
    return moved, kept


def _invariant(rhs, variant):
    rhs = rhs.split("  #")[0]
    if any(not _INPUT.match(a) for a in _SUBSCRIPTED.findall(rhs)):
        return False        # a read of a buffer, an accumulator or an output
    return not set(_NAME.findall(rhs)) & variant
