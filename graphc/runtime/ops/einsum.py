"""einsum, as TF 2.21's tf.einsum: a composite of gather (diagonals), reduce_sum, transpose,
reshape and matmul, so it differentiates, fuses and serializes as those do.

The equation is parsed while tracing. Each operand first takes the diagonal of a repeated
label ('ii->i') and sums the labels no other operand and not the output has; the operands
are then contracted left to right, each pair as one batched matmul of [batch, kept-left,
summed] by [batch, summed, kept-right]; the last result is summed and transposed into the
output's order. '...' stands for broadcast dims (right-aligned, size 1 broadcasts). Without
'->', the output is the ellipsis dims, then the labels that appear once, alphabetically.
"""
from ..context import composite_errors, current_graph
from ..dispatch import convert_to_tensor
from ..tensor import OPS as P
from ._rules import NUMERIC, _dims, check_kind


def _parse_term(eq, term):
    """A term's labels: letters, with '...' as the one token Ellipsis."""
    out, rest = [], term
    while rest:
        if rest.startswith("..."):
            if Ellipsis in out:
                raise ValueError(f"einsum: more than one ellipsis in a term of {eq!r}")
            out.append(Ellipsis)
            rest = rest[3:]
        elif rest[0].isalpha() and rest[0].isascii():
            out.append(rest[0])
            rest = rest[1:]
        else:
            raise ValueError(f"einsum: invalid subscript {rest[0]!r} in equation {eq!r} "
                             "(labels are letters a-z, A-Z, and '...')")
    return out


def _expand(labels, ndim, eq, k):
    """Replace Ellipsis by ints naming broadcast dims, right-aligned (int j is the j-th from
    the end): ('...', 'i') on rank 3 gives [1, 0, 'i']."""
    n = ndim - (len(labels) - (Ellipsis in labels))
    if n < 0 or (n > 0 and Ellipsis not in labels):
        raise ValueError(f"einsum: input {k} has rank {ndim}, but its subscripts "
                         f"{''.join('...' if s is Ellipsis else s for s in labels)!r} in "
                         f"{eq!r} name {len(labels) - (Ellipsis in labels)} dims")
    if Ellipsis not in labels:
        return list(labels)
    i = labels.index(Ellipsis)
    return labels[:i] + list(range(n - 1, -1, -1)) + labels[i + 1:]


def _dim(x, i):
    d = x.shape[i]
    return d if d is not None else P["shape"](x)[i]


def _prod(ds):
    out = 1
    for d in ds:
        out = out * d
    return out


def _sum_out(x, labels, drop):
    axes = [i for i, s in enumerate(labels) if s in drop]
    if not axes:
        return x, labels
    return P["reduce_sum"](x, axes), [s for s in labels if s not in drop]


def _diagonal(x, labels):
    """Take the diagonal over every label repeated in one operand."""
    while len(set(labels)) != len(labels):
        s = next(s for s in labels if labels.count(s) > 1)
        pos = [i for i, t in enumerate(labels) if t == s]
        rest = [i for i in range(len(labels)) if i not in pos]
        x = P["transpose"](x, rest + pos)
        n = _dim(x, x.ndim - 1)
        k = len(pos)
        x = P["reshape"](x, [_dim(x, i) for i in range(len(rest))] + [_prod([n] * k)])
        stride = sum(_prod([n] * j) for j in range(k))       # 1 + n + n^2 ...
        x = P["gather"](x, P["multiply"](P["range"](n), stride), axis=x.ndim - 1)
        labels = [labels[i] for i in rest] + [s]
    return x, labels


def _contract(a, la, b, lb, needed):
    """a (labels la) times b (labels lb), summed over their shared labels not `needed`."""
    # an ellipsis dim of size 1 against a larger one: summing it out of its side is exact
    for s in [s for s in la if s in lb and isinstance(s, int)]:
        da, db = a.shape[la.index(s)], b.shape[lb.index(s)]
        if da == 1 and db != 1:
            a, la = _sum_out(a, la, {s})
        elif db == 1 and da != 1:
            b, lb = _sum_out(b, lb, {s})
    batch = [s for s in la if s in lb and s in needed]
    summed = [s for s in la if s in lb and s not in needed]
    left = [s for s in la if s not in lb]
    right = [s for s in lb if s not in la]
    a = P["transpose"](a, [la.index(s) for s in batch + left + summed])
    b = P["transpose"](b, [lb.index(s) for s in batch + summed + right])
    if not summed:      # an outer or elementwise product: a broadcast multiply (fuses)
        a = P["reshape"](a, [_dim(a, i) for i in range(a.ndim)] + [1] * len(right))
        b = P["reshape"](b, [_dim(b, i) for i in range(len(batch))] + [1] * len(left)
                         + [_dim(b, len(batch) + i) for i in range(len(right))])
        return P["multiply"](a, b), batch + left + right
    nb = len(batch)
    ld = [_dim(a, nb + i) for i in range(len(left))]
    sd = [_dim(a, nb + len(left) + i) for i in range(len(summed))]
    rd = [_dim(b, nb + len(summed) + i) for i in range(len(right))]
    # each side keeps its own batch dims: an ellipsis dim known only at run time may be 1
    # on one side, which matmul broadcasts (letters' dims are equal: _check_run_time_sizes)
    a = P["reshape"](a, [_dim(a, i) for i in range(nb)] + [_prod(ld), _prod(sd)])
    b = P["reshape"](b, [_dim(b, i) for i in range(nb)] + [_prod(sd), _prod(rd)])
    out = P["matmul"](a, b)
    out = P["reshape"](out, [_dim(out, i) for i in range(nb)] + ld + rd)
    return out, batch + left + right


def _check_sizes(eq, xs, labels):
    seen = {}
    for k, (x, ls) in enumerate(zip(xs, labels)):
        for i, s in enumerate(ls):
            d = x.shape[i]
            if d is None:
                continue
            if s in seen and seen[s][0] != d and not (isinstance(s, int) and 1 in (d, seen[s][0])):
                what = "the ellipsis" if isinstance(s, int) else f"label {s!r}"
                raise ValueError(f"einsum: {what} has size {seen[s][0]} in input {seen[s][1]} "
                                 f"but {d} in input {k} of shape {_dims(x.shape)} ({eq!r}; "
                                 f"TF: Expected dimension {seen[s][0]} at axis {i} of the input "
                                 f"shaped {_dims(x.shape)} but got dimension {d})")
            if s not in seen or seen[s][0] == 1:
                seen[s] = (d, k)


def _check_run_time_sizes(eq, xs, labels):
    """While tracing, a letter whose dims are not all known gets a run-time check that they
    are equal (eagerly `_check_sizes` saw them all): the reshapes and matmuls alone would
    broadcast a 1 or accept equal products of unequal dims, a silently different answer."""
    if current_graph() is None:
        return
    from ...debugging import assert_equal
    places = {}
    for k, (x, ls) in enumerate(zip(xs, labels)):
        for i, s in enumerate(ls):
            if isinstance(s, str):
                places.setdefault(s, []).append((k, i))
    for s, at in places.items():
        if len(at) < 2 or all(xs[k].shape[i] is not None for k, i in at):
            continue
        k0, i0 = at[0]
        for k, i in at[1:]:
            assert_equal(P["shape"](xs[k0])[i0], P["shape"](xs[k])[i],
                         message=f"einsum {eq!r}: label {s!r} must have one size, but it is "
                                 f"axis {i0} of input {k0} and axis {i} of input {k} (TF: "
                                 "Expected dimension ... but got dimension ...).")


@composite_errors("einsum")
def einsum(equation, *inputs, **kwargs):
    """Sum of products over the labels of `equation`, as tf.einsum ('ij,jk->ik' is matmul,
    'ii->i' a diagonal, 'bij->bji' a transpose, '...ij,...jk->...ik' batched matmul)."""
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {equation!r}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs):          # TF's words
        raise ValueError(f'Got {len(inputs)} inputs for equation "{eq}", expecting '
                         f"{len(terms)}")
    xs = [convert_to_tensor(x) for x in inputs]
    for x in xs:
        check_kind("einsum", x.type, NUMERIC)
        if x.dtype is not xs[0].dtype:
            raise TypeError(f"einsum: inputs have different dtypes {xs[0].dtype.name} and "
                            f"{x.dtype.name}; cast one first")
    labels = [_expand(_parse_term(eq, t), x.ndim, eq, k)
              for k, (t, x) in enumerate(zip(terms, xs))]
    n_ell = max([s + 1 for ls in labels for s in ls if isinstance(s, int)], default=0)
    if arrow:
        out_terms = _parse_term(eq, rhs)
        if Ellipsis in out_terms:
            i = out_terms.index(Ellipsis)
            out = out_terms[:i] + list(range(n_ell - 1, -1, -1)) + out_terms[i + 1:]
        else:
            out = out_terms
    else:
        letters = [s for ls in labels for s in ls if isinstance(s, str)]
        out = list(range(n_ell - 1, -1, -1)) + sorted(s for s in set(letters)
                                                      if letters.count(s) == 1)
    if len(set(out)) != len(out):          # TF's words
        raise ValueError(f"Output subscripts contain a label appearing more than once: {eq}")
    for s in out:
        if not any(s in ls for ls in labels):
            raise ValueError(f"Output subscripts contain the label {s} not present in the "
                             "input subscripts.")
    _check_sizes(eq, xs, labels)
    _check_run_time_sizes(eq, xs, labels)
    ops = []
    for k, (x, ls) in enumerate(zip(xs, labels)):
        x, ls = _diagonal(x, ls)
        others = set(out).union(*[set(m) for j, m in enumerate(labels) if j != k])
        ops.append(_sum_out(x, ls, set(ls) - others))
    x, ls = ops[0]
    for k in range(1, len(ops)):
        needed = set(out).union(*[set(m) for _, m in ops[k + 1:]])
        x, ls = _contract(x, ls, ops[k][0], ops[k][1], needed)
    x, ls = _sum_out(x, ls, set(ls) - set(out))
    # an ellipsis dim that only size-1 operands had, if any, is already there as size 1
    perm = [ls.index(s) for s in out]
    return P["transpose"](x, perm) if perm != list(range(len(perm))) else x


PUBLIC = {"einsum": einsum}
