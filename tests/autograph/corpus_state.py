"""Corpus: dict and list elements as state of tensor if/while/for (item 1 of issue 11).

Subscripts with constant keys (or names the block does not change) that a converted body
assigns or augments are written back after it, like local names: `d["k"]`, `l[0]`,
`d["a"]["b"]`, `l[1][0]`, `d["k"][0]`.
"""
from .corpus_base import case, f32, i32, V3, V5


@case((V5, i32(5)), (V3, i32(3)), (V5, i32(0)))
def dict_accumulate_in_for(x, n):
    acc = {"pos": 0.0, "neg": 0.0}
    for i in range(n):
        if x[i] > 0:
            acc["pos"] += x[i]
        else:
            acc["neg"] = acc["neg"] + x[i]
    return acc["pos"], acc["neg"]


@case((i32(5),), (i32(0),))
def dict_counter_while(n):
    st = {"i": 0, "s": 0}
    while st["i"] < n:
        st["s"] += st["i"] * st["i"]
        st["i"] += 1
    return st["s"], st["i"]


@case((V5,), (V3,))
def list_elements_in_for_over_tensor(x):
    acc = [0.0, 0.0, 0]
    for v in x:
        acc[0] += v
        acc[1] = acc[1] + v * v
        if v > 0:
            acc[2] += 1
    return acc[0], acc[1], acc[2]


@case((V5, i32(4)), (V3, i32(0)))
def list_returned_whole(x, n):
    acc = [0.0, 0]
    for i in range(n):
        acc[0] += x[i]
        acc[1] += i
    return acc


@case((V5, i32(5)), (V3, i32(2)))
def dict_name_keys_returned_whole(x, n):
    key = "total"
    other = "count"
    d = {key: 0.0, other: 0}
    for i in range(n):
        d[key] += x[i]
        d[other] += 1
    return d


@case((f32(4.0), i32(3)), (f32(-2.0), i32(1)), (f32(1.5), i32(0)))
def nested_dict_in_for(x, n):
    st = {"a": {"b": x * 0.0, "c": 0}, "d": x}
    for i in range(n):
        st["a"]["b"] += st["d"]
        st["a"]["c"] += 1
        st["d"] = st["d"] * 0.5
    return st["a"]["b"], st["a"]["c"], st["d"]


@case((f32(2.0),), (f32(-2.0),))
def nested_dict_in_if(x):
    d = {"a": {"b": x, "c": 0.0}}
    if x > 0:
        d["a"]["b"] = d["a"]["b"] * 3.0
    else:
        d["a"]["b"] -= 1.0
        d["a"]["c"] = x
    return d["a"]["b"], d["a"]["c"]


@case((i32(4),), (i32(1),))
def list_of_lists_in_while(n):
    m = [[0, 0], [0, 0]]
    i = 0
    while i < n:
        m[0][1] += i
        m[1][0] = m[1][0] * 2 + 1
        i += 1
    return m[0][1], m[1][0], m[0][0]


@case((V5,), (V3,))
def dict_state_break(x):
    st = {"s": 0.0, "k": 0}
    for v in x:
        if v < 0:
            break
        st["s"] += v
        st["k"] += 1
    return st["s"], st["k"]


@case((V5,), (V3,))
def list_state_continue(x):
    acc = [0.0, 0]
    for v in x:
        if v < 0:
            acc[1] += 1
            continue
        acc[0] += v
    return acc[0], acc[1]


@case((i32(3),), (i32(10),))
def dict_state_return_in_while(n):
    d = {"i": 0, "acc": 1}
    while d["i"] < n:
        d["acc"] *= 2
        d["i"] += 1
        if d["acc"] > 20:
            return d["i"], d["acc"]
    return -1, d["acc"]


@case((f32(3.0), f32(1.0)), (f32(1.0), f32(3.0)))
def list_swap_in_if(x, y):
    pair = [x, y]
    if pair[0] > pair[1]:
        pair[0], pair[1] = pair[1], pair[0]
    return pair[0], pair[1]


@case((f32(8.0),), (f32(0.25),))
def dict_while_tensor_condition(x):
    d = {"err": x, "n": 0}
    while d["err"] > 0.5:
        d["err"] *= 0.5
        d["n"] += 1
    return d["err"], d["n"]


@case((V3, i32(3)), (V3, i32(0)))
def vector_slots_in_list(x, n):
    rows = [x * 0.0, x * 0.0]
    for i in range(n):
        if i % 2 == 0:
            rows[0] += x
        else:
            rows[1] -= x
    return rows[0], rows[1]


@case((i32(4), i32(3)), (i32(2), i32(5)))
def dict_in_nested_loops(n, m):
    d = {"s": 0, "c": 0}
    for i in range(n):
        for j in range(m):
            if j > i:
                break
            d["s"] += i * j
            d["c"] += 1
    return d["s"], d["c"]


@case((V5,), (V3,))
def list_inside_dict_state(x):
    h = {"neg": 0, "pos": [0.0, 0]}
    for v in x:
        if v > 0:
            h["pos"][0] += v
            h["pos"][1] += 1
        else:
            h["neg"] += 1
    return h["pos"][0], h["pos"][1], h["neg"]


@case((V5, i32(5), True), (V5, i32(5), False), (V3, i32(3), True))
def dict_key_chosen_before_loop(x, n, flag):
    key = "a" if flag else "b"
    d = {"a": 0.0, "b": 0.0}
    for i in range(n):
        d[key] += x[i] * 2.0
    return d["a"], d["b"]


@case((V5,), (V3,))
def dict_in_python_loop_tensor_if(x):
    d = {"pos": 0.0, "neg": 0.0}
    for k in range(3):
        if x[k] > 0:
            d["pos"] += x[k]
        else:
            d["neg"] += x[k]
    return d["pos"], d["neg"]


@case((f32(2.0),), (f32(-1.0),), (f32(0.0),))
def list_element_elif_chain(x):
    out = [0.0, 0.0, 0.0]
    if x > 1.0:
        out[0] = x
    elif x < 0.0:
        out[1] = -x
    else:
        out[2] += 1.0
    return out[0], out[1], out[2]


@case((V5, i32(5)), (V3, i32(3)))
def dict_augmented_operators(x, n):
    d = {"p": 1.0, "m": 0.0, "q": 1000}
    for i in range(n):
        d["p"] *= x[i]
        d["m"] -= x[i]
        d["q"] //= 2
    return d["p"], d["m"], d["q"]


@case((V5,), (V3,))
def dict_nested_ifs_in_while_with_break(x):
    d = {"big": 0.0, "small": 0.0, "i": 0}
    while d["i"] < 3:
        v = x[d["i"]]
        if v > 0:
            if v > 1.0:
                d["big"] += v
            else:
                d["small"] += v
        else:
            if v < -2.5:
                break
            d["small"] -= v
        d["i"] += 1
    return d["big"], d["small"], d["i"]


@case((V5, i32(5)), (V3, i32(3)))
def tuple_in_dict_state(x, n):
    d = {"pair": (x[0], x[0])}
    for i in range(n):
        lo, hi = d["pair"]
        if x[i] < lo:
            d["pair"] = (x[i], hi)
        elif x[i] > hi:
            d["pair"] = (lo, x[i])
    return d["pair"]
