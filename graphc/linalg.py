"""gc.linalg: the tf.linalg functions graphc has (matmul, tensordot, eye, norm, global_norm,
matrix_transpose), with TF 2.21's signatures."""
from . import dtypes as _dt
from .runtime.context import composite_errors as _composite, located_errors as _located
from .runtime.dispatch import convert_to_tensor as _convert
from .runtime.ops import PUBLIC as _OPS
from .runtime.ops.math_extras import LINALG as _LINALG

matmul = _OPS["matmul"]
tensordot = _OPS["tensordot"]
globals().update({_n: _located(_f) for _n, _f in _LINALG.items()})


@_composite("eye")
def _eye(num_rows, num_columns=None, batch_shape=None, dtype=_dt.float32, name=None):
    """An identity matrix [num_rows, num_columns] (square when num_columns is None), repeated
    over `batch_shape` leading dims when given, as tf.linalg.eye."""
    m = _OPS["eye"](num_rows, num_columns, dtype=dtype)
    if batch_shape is None:
        return m
    from .runtime.ops.reduce import static_ints
    batch = static_ints("eye", batch_shape, "batch_shape")
    return _OPS["broadcast_to"](m, list(batch) + list(m.shape))


@_composite("matrix_transpose")
def _matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """`a` with its last two axes swapped (rank >= 2), as tf.linalg.matrix_transpose."""
    x = _convert(a)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: a must have rank >= 2, got shape {list(x.shape)}")
    perm = list(range(x.ndim - 2)) + [x.ndim - 1, x.ndim - 2]
    return _OPS["transpose"](x, perm)


eye = _located(_eye)
matrix_transpose = _located(_matrix_transpose)

__all__ = ["matmul", "tensordot", "eye", "matrix_transpose"] + list(_LINALG)
