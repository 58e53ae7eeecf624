"""matmul(a, b, transpose_a, transpose_b) on the device, batch dims broadcast as numpy does.

cuBLAS through CuPy when `cupy` imports and a real device is present; else a tiled
shared-memory kernel: a block of TILE x TILE threads computes one TILE x TILE tile of one
batch entry's output (grid-stride over (batch, tile row, tile column)), stepping over the
inner dimension a tile of each operand at a time, staged in shared memory. Operands are
viewed as (batch, rows, cols); the output's batch index maps to each operand's through
a small index vector (numpy's broadcasting of the batch dims). Integer products and sums
wrap as numpy's do; float ones accumulate in the dtype (as BLAS does).
"""
import threading

import numpy as np

from . import codegen
from .records import STATS
from .scalar import SIMULATOR

TILE = 4 if SIMULATOR else 16
DTYPES = {"float32", "float64", "int32", "int64"}


def _source(dtype, ta, tb):
    t = dtype             # a numpy scalar type's name: float32...
    floating = np.dtype(dtype).kind == "f"
    a_at = "a[ia, kk0 + tx, arow]" if ta else "a[ia, arow, kk0 + tx]"
    b_at = "b[ib, bcol, kk0 + ty]" if tb else "b[ib, kk0 + ty, bcol]"
    step = ("acc = acc + sa[ty, kk] * sb[kk, tx]" if floating else
            f"acc = {t}(wadd(acc, {t}(wmul(sa[ty, kk], sb[kk, tx]))))")
    lines = [
        f"def gemm(a, b, out, amap, bmap, m, n, kdim, nbatch, zero):",
        f'    """out[i] = a[amap[i]] @ b[bmap[i]] ({t}{", a transposed" if ta else ""}'
        f'{", b transposed" if tb else ""}), TILE x TILE tiles"""',
        f"    sa = cuda.shared.array(({TILE}, {TILE}), {t})",
        f"    sb = cuda.shared.array(({TILE}, {TILE}), {t})",
        "    tx = int64(cuda.threadIdx.x)",
        "    ty = int64(cuda.threadIdx.y)",
        f"    tiles_m = (m + {TILE - 1}) // {TILE}",
        f"    tiles_n = (n + {TILE - 1}) // {TILE}",
        "    per_batch = tiles_m * tiles_n",
        "    for tile in range(int64(cuda.blockIdx.x), nbatch * per_batch, "
        "int64(cuda.gridDim.x)):",
        "        bt = tile // per_batch",
        "        rem = tile - bt * per_batch",
        f"        arow = (rem // tiles_n) * {TILE} + ty  # this thread's output row",
        f"        bcol = (rem % tiles_n) * {TILE} + tx  # ... and column",
        "        ia = amap[bt]",
        "        ib = bmap[bt]",
        "        acc = zero",
        f"        for kk0 in range(0, kdim, {TILE}):",
        f"            if arow < m and kk0 + tx < kdim:",
        f"                sa[ty, tx] = {a_at}",
        f"            if bcol < n and kk0 + ty < kdim:",
        f"                sb[ty, tx] = {b_at}",
        "            cuda.syncthreads()",
        f"            for kk in range(min({TILE}, kdim - kk0)):  # no padded products",
        f"                {step}",
        "            cuda.syncthreads()",
        "        if arow < m and bcol < n:",
        "            out[bt, arow, bcol] = acc"]
    lines.append("gemm = cuda.jit(gemm)")
    return "\n".join(codegen.HEADER + lines + [""])


def module(dtype, transpose_a, transpose_b):
    """The compiled GEMM module for one dtype and pair of transpose flags."""
    key = codegen.module_key("gemm", f"{dtype} ta={transpose_a} tb={transpose_b} "
                                     f"tile={TILE}")
    return codegen.load(key, _source(dtype, transpose_a, transpose_b))


def arg_types(dtype):
    """numba types of `gemm`'s arguments (compiling ahead of a launch, e.g. to PTX)."""
    from numba import types
    from numba.np.numpy_support import from_dtype
    t = from_dtype(np.dtype(dtype))
    arr3, idx = types.Array(t, 3, "C"), types.Array(types.int64, 1, "C")
    return (arr3, arr3, arr3, idx, idx) + (types.int64,) * 4 + (t,)


def _host_rule(a, b, **attrs):
    from ...runtime.registry import REGISTRY
    return REGISTRY["matmul"].numpy(a, b, **attrs)


_CUPY = []


def _cupy():
    """cupy, when it imports and a real device is present (never under the simulator);
    asked once per process (a device query per product cost a driver call)."""
    if not _CUPY:
        _CUPY.append(None if SIMULATOR else _import_cupy())
    return _CUPY[0]


def _import_cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - any failure means: use the kernel
        return None
    return cupy


def matmul(a, b, transpose_a=False, transpose_b=False, alloc=None):
    """`alloc(0, shape, dtype)`: the result's buffer (the backend's pool), else a new one."""
    from . import device
    sa, sb = tuple(a.shape), tuple(b.shape)
    key = (sa, sb, a.dtype, b.dtype, transpose_a, transpose_b)
    p = _PRODUCTS.get(key)
    if p is None:
        p = _product(a, b, sa, sb, transpose_a, transpose_b)
        with _MAPS_LOCK:
            if len(_PRODUCTS) >= 256:      # many shapes: start over
                _PRODUCTS.clear()
            _PRODUCTS[key] = p
    if not p.kernel or not (a.flags["C_CONTIGUOUS"] and b.flags["C_CONTIGUOUS"]):
        return device.to_device(_host_rule(device.to_host_array(a), device.to_host_array(b),
                                           transpose_a=transpose_a,
                                           transpose_b=transpose_b), alloc)
    out = device.alloc(p.out_shape, p.dtype) if alloc is None else \
        alloc(0, p.out_shape, p.dtype)
    if p.empty:
        return out
    STATS.add("launches")       # one cuBLAS product or one tiled kernel
    cp = _cupy()
    if cp is not None:
        # cuBLAS writes into our buffer: it comes from the plan's pool and block cache
        # (CuPy's own pool would hold memory outside GRAPHC_CUDA_POOL_BYTES), and no
        # CuPy array is imported back (numba would synchronize on the stream it names).
        # Operands and launches share the legacy default stream, as our kernels do.
        x, y = cp.asarray(a), cp.asarray(b)
        x = cp.swapaxes(x, -1, -2) if transpose_a else x
        y = cp.swapaxes(y, -1, -2) if transpose_b else y
        cp.matmul(x, y, out=cp.asarray(out))
        return out
    with codegen.launching():
        p.launch(a.reshape(p.a3), b.reshape(p.b3), out.reshape(p.out3), *p.args)
    return out


# (shapes, dtypes, transposes) -> _Product: a cached call redoes no shape arithmetic,
# source lookup or launch configuration
_PRODUCTS = {}


class _Product:
    """One matmul's shapes: `kernel` False runs the numpy rule (a dtype without a kernel);
    else the result's shape and dtype, `empty`, and the tiled kernel's launch: operand and
    output (batch, rows, cols) views, the configured kernel and its trailing arguments."""

    def __init__(self, out_shape, dtype, kernel):
        self.out_shape, self.dtype, self.kernel = out_shape, dtype, kernel
        self.empty = int(np.prod(out_shape, dtype=np.int64)) == 0


def _product(a, b, sa, sb, transpose_a, transpose_b):
    """The _Product of these operands; the numpy rule's own error for bad shapes."""
    from . import device
    try:
        if len(sa) < 2 or len(sb) < 2 or a.dtype != b.dtype:
            raise ValueError
        m, ka = (sa[-1], sa[-2]) if transpose_a else sa[-2:]
        kb, n = (sb[-1], sb[-2]) if transpose_b else sb[-2:]
        if ka != kb:
            raise ValueError
        batch = np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:      # the numpy rule's own error for these shapes
        _host_rule(device.to_host_array(a), device.to_host_array(b),
                   transpose_a=transpose_a, transpose_b=transpose_b)
        raise AssertionError("matmul: the numpy rule accepted shapes the kernel refused")
    dtype = np.dtype(a.dtype)
    p = _Product(batch + (m, n), dtype, dtype.name in DTYPES)
    if not p.kernel or p.empty or _cupy() is not None:
        return p
    maps = _batch_maps(sa[:-2], sb[:-2], batch)
    nbatch = maps[0].shape[0]
    p.a3, p.b3, p.out3 = _as3(sa), _as3(sb), (nbatch, m, n)
    tiles = nbatch * -(-m // TILE) * -(-n // TILE)
    blocks = int(max(1, min(tiles, codegen.max_blocks())))
    p.launch = module(dtype.name, transpose_a, transpose_b)["gemm"][blocks, (TILE, TILE)]
    p.args = (*maps, m, n, ka, nbatch, dtype.type(0))
    return p


def _as3(shape):
    """`shape` as (batch, rows, cols)."""
    return (int(np.prod(shape[:-2], dtype=np.int64)), *shape[-2:])


_MAPS, _MAPS_LOCK = {}, threading.Lock()


def _batch_maps(batch_a, batch_b, batch):
    """Device index vectors: output batch entry -> a's and b's (numpy's broadcasting),
    uploaded once per pair of batch shapes and only read after (safe to share)."""
    key = (batch_a, batch_b)
    maps = _MAPS.get(key)
    if maps is None:
        from . import device
        na, nb = (int(np.prod(s, dtype=np.int64)) for s in key)
        host = [np.ascontiguousarray(np.broadcast_to(np.arange(k).reshape(s), batch).reshape(-1))
                for k, s in ((na, batch_a), (nb, batch_b))]
        maps = tuple(device.to_device(h) for h in host)
        with _MAPS_LOCK:
            if len(_MAPS) >= 256:      # many batch shapes: start over (they are small)
                _MAPS.clear()
            maps = _MAPS.setdefault(key, maps)
    return maps
