"""The op families. Importing this registers every primitive and publishes the public functions."""
from ..context import located_errors
from ..tensor import OPS
from . import creation, elementwise, io, random  # noqa: F401

PUBLIC = {}
for _family in (creation, elementwise, io):
    PUBLIC.update(_family.PUBLIC)

for _extra in ("reduce", "shape", "linalg"):
    try:
        _mod = __import__(f"{__name__}.{_extra}", fromlist=["PUBLIC"])
        PUBLIC.update(_mod.PUBLIC)
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_extra}":
            raise

from . import compat  # noqa: E402  (identity, rank, add_n: composites of the above)
PUBLIC.update(compat.PUBLIC)
from . import math_extras  # noqa: E402  (norm, clip_by_norm, clip_by_global_norm; gc.math's)
PUBLIC.update(math_extras.PUBLIC)
from . import scatter  # noqa: E402  (gather_nd, scatter_nd, tensor_scatter_nd_update/add)
PUBLIC.update(scatter.PUBLIC)
from . import einsum  # noqa: E402  (einsum: a composite of matmul, transpose, reduce_sum)
PUBLIC.update(einsum.PUBLIC)
from . import sorting  # noqa: E402  (sort, argsort; top_k in gc.math and gc.nn)
PUBLIC.update(sorting.PUBLIC)
from . import array_extras  # noqa: E402  (linspace, roll, repeat, sequence_mask, ensure_shape)
PUBLIC.update(array_extras.PUBLIC)
# errors of an op's own argument checks name the user's line while tracing
PUBLIC = {name: located_errors(fn) for name, fn in PUBLIC.items()}
OPS.update(PUBLIC)
