"""Static types of graph values: tensors (dtype + shape with None dims), variables, tensor lists."""
from ..dtypes import DType


def _dims(shape):
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


class TensorType:
    """dtype and shape of a tensor; `None` in shape marks a dimension known only at run time."""

    __slots__ = ("dtype", "shape")
    kind = "tensor"

    def __init__(self, dtype: DType, shape: tuple):
        self.dtype = dtype
        self.shape = tuple(shape)

    @property
    def ndim(self):
        return len(self.shape)

    def __eq__(self, other):
        return (type(other) is TensorType and other.dtype is self.dtype
                and other.shape == self.shape)

    def __hash__(self):
        return hash((self.dtype, self.shape))

    def __str__(self):
        return f"{self.dtype.name}{_dims(self.shape)}"

    __repr__ = __str__


class ResourceType:
    """A gc.Variable fed by reference: reads and writes act on its live value."""

    __slots__ = ("dtype", "shape")
    kind = "resource"

    def __init__(self, dtype, shape):
        self.dtype = dtype
        self.shape = tuple(shape)

    def __eq__(self, other):
        return (type(other) is ResourceType and other.dtype is self.dtype
                and other.shape == self.shape)

    def __hash__(self):
        return hash(("resource", self.dtype, self.shape))

    def __str__(self):
        return f"resource<{self.dtype.name}{_dims(self.shape)}>"

    __repr__ = __str__


class ListType:
    """A TensorArray's contents: a list of tensors of one dtype (element shape may be unknown)."""

    __slots__ = ("dtype", "element_shape")
    kind = "list"

    def __init__(self, dtype, element_shape=None):
        self.dtype = dtype
        self.element_shape = None if element_shape is None else tuple(element_shape)

    def __eq__(self, other):
        return (type(other) is ListType and other.dtype is self.dtype
                and other.element_shape == self.element_shape)

    def __hash__(self):
        return hash(("list", self.dtype, self.element_shape))

    def __str__(self):
        es = "?" if self.element_shape is None else _dims(self.element_shape)
        return f"list<{self.dtype.name}{es}>"

    __repr__ = __str__


def shapes_compatible(a, b):
    """True when two shapes can describe the same tensor (None matches any size)."""
    if len(a) != len(b):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a, b))


def most_specific_common_shape(a, b):
    """Shape that covers both `a` and `b`: equal dims kept, differing dims become None."""
    return tuple(x if x == y else None for x, y in zip(a, b))
