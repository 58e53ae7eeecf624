"""Corpus: attributes as state of tensor if/while/for (item 1 of issue 11).

`obj.a`, `obj.a.b`, `self.a.b`, on objects made inside the program, on `self` in a
method, and on objects passed in (made anew for every run, see harness.Fresh); also
mixed chains like `d["box"].v`.
"""
from .corpus_base import case, f32, i32, V3, V5
from .harness import Fresh


class Box:
    """A plain object whose attributes programs change."""

    def __init__(self, **attrs):
        self.__dict__.update(attrs)


class Stats:
    def __init__(self):
        self.inner = Box(total=0.0, count=0)
        self.calls = 0

    def feed(self, x):
        self.calls += 1
        for v in x:
            if v > 0:
                self.inner.total += v
                self.inner.count += 1
        return self.inner.total, self.inner.count, self.calls


def _limits_and_state():
    return Box(cfg=Box(limit=f32(0.0)), state=Box(total=f32(1.0), seen=0))


@case((f32(1.0),), (f32(150.0),))
def attr_state_while(x):
    b = Box(v=x, steps=0)
    while b.v < 100.0:
        b.v = b.v * 2.0
        b.steps += 1
    return b.v, b.steps


@case((f32(2.0),), (f32(-2.0),))
def attr_state_in_if(x):
    b = Box(lo=x, hi=x)
    if x > 0:
        b.hi = x * 2.0
    else:
        b.lo = x * 2.0
    return b.lo, b.hi


@case((V5,), (V3,))
def attr_chain_in_for(x):
    o = Box(inner=Box(total=0.0, count=0))
    for v in x:
        if v > 0:
            o.inner.total += v
            o.inner.count += 1
    return o.inner.total, o.inner.count


@case((V5,), (V3,))
def method_mutates_self_chain(x):
    s = Stats()
    return s.feed(x)


@case((Fresh(_limits_and_state), V5), (Fresh(_limits_and_state), V3))
def passed_object_chain(obj, x):
    for v in x:
        if v > obj.cfg.limit:
            obj.state.total += v
            obj.state.seen += 1
        else:
            obj.state.total -= 0.5
    return obj.state.total, obj.state.seen


@case((Fresh(Stats), V5), (Fresh(Stats), V3))
def passed_object_method(stats, x):
    first = stats.feed(x)
    second = stats.feed(x)
    return first, second


@case((V5, f32(2.0)), (V5, f32(100.0)), (V3, f32(0.0)))
def attr_state_return_in_loop(x, t):
    b = Box(v=0.0)
    for v in x:
        b.v += v
        if b.v > t:
            return b.v, 1
    return b.v, 0


@case((i32(7),), (i32(0),))
def attr_while_condition_and_continue(n):
    o = Box(i=0, odd=0)
    while o.i < n:
        o.i += 1
        if o.i % 2 == 0:
            continue
        o.odd += o.i
    return o.i, o.odd


@case((V5,), (V3,))
def attr_of_dict_value(x):
    d = {"box": Box(v=0.0, n=0)}
    for v in x:
        if v < 0:
            d["box"].v -= v
            d["box"].n += 1
    return d["box"].v, d["box"].n


@case((V5,), (V3,))
def dict_in_attribute(x):
    o = Box(hist={"pos": 0.0, "neg": 0.0})
    for v in x:
        if v > 0:
            o.hist["pos"] += v
        else:
            o.hist["neg"] += v
    return o.hist["pos"], o.hist["neg"]


@case((V5, i32(5)), (V3, i32(2)))
def attr_state_break_in_while(x, n):
    o = Box(i=0, s=0.0)
    while o.i < n:
        if x[o.i] < 0:
            break
        o.s += x[o.i]
        o.i += 1
    return o.i, o.s


@case((f32(3.0), i32(4)), (f32(-1.0), i32(2)))
def two_objects_swap_roles(x, n):
    a = Box(v=x)
    b = Box(v=x * 0.0)
    for i in range(n):
        a.v, b.v = b.v + 1.0, a.v
    return a.v, b.v


@case((V5, i32(3)), (V3, i32(0)))
def attr_in_nested_loops(x, n):
    o = Box(acc=0.0, inner=Box(steps=0))
    for i in range(n):
        for v in x:
            if v > 0:
                o.acc += v * 0.5
            o.inner.steps += 1
    return o.acc, o.inner.steps
