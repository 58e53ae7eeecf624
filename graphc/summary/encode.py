"""Summary protos for TensorBoard's plugins (scalars, histograms, images, text), built with
the tensorboard package's protos and plugin metadata helpers (imported only when a writer
exists, so only then is `tensorboard` needed)."""
import struct
import zlib

import numpy as np

DEFAULT_BUCKETS = 30


def scalar(tag, value, description):
    from tensorboard.plugins.scalar import metadata
    from tensorboard.util import tensor_util
    return _summary(tag, metadata.create_summary_metadata(None, description),
                    tensor_util.make_tensor_proto(np.asarray(value, np.float32)))


def histogram(tag, data, buckets, description):
    """TensorBoard's [buckets, 3] (left edge, right edge, count) layout over the finite
    values; NaN and inf are left out (they have no bucket)."""
    from tensorboard.plugins.histogram import metadata
    from tensorboard.util import tensor_util
    data = np.asarray(data, np.float64).ravel()
    data = data[np.isfinite(data)]
    out = np.zeros((buckets, 3))
    if buckets and data.size:
        lo, hi = data.min(), data.max()
        if lo == hi:
            out[:, 0] = out[:, 1] = lo
            out[-1, 2] = data.size
        else:
            idx = np.minimum(((data - lo) / ((hi - lo) / buckets)).astype(np.int64), buckets - 1)
            edges = np.linspace(lo, hi, buckets + 1)
            out[:, 0], out[:, 1] = edges[:-1], edges[1:]
            out[:, 2] = np.bincount(idx, minlength=buckets)
    return _summary(tag, metadata.create_summary_metadata(None, description),
                    tensor_util.make_tensor_proto(out, dtype=np.float64))


def image(tag, images, max_outputs, description):
    """[N, H, W, C] (C = 1, 3 or 4): uint8 as is, floats in [0, 1] scaled to 0..255 as TF's
    convert_image_dtype(saturate=True) does (x * 255.5 in the data's float type, truncated,
    clipped, NaN as 0). Stored as TensorBoard's [width, height, png...] string tensor."""
    from tensorboard.plugins.image import metadata
    from tensorboard.util import tensor_util
    a = np.asarray(images)
    if a.dtype != np.uint8:
        if a.dtype.kind != "f":
            a = a.astype(np.float32)
        a = np.clip(np.nan_to_num(a * a.dtype.type(255.5), nan=0.0), 0, 255).astype(np.uint8)
    pngs = [png(x) for x in a[:max_outputs]]
    header = [str(a.shape[2]).encode(), str(a.shape[1]).encode()]
    tensor = tensor_util.make_tensor_proto(np.array(header + pngs, dtype=object))
    return _summary(tag, metadata.create_summary_metadata(None, description), tensor)


def text(tag, value, description):
    from tensorboard.plugins.text import metadata
    from tensorboard.util import tensor_util
    def encoded(v):
        return v.encode() if isinstance(v, str) else [encoded(x) for x in v]
    data = np.empty(np.shape(encoded(value)) if not isinstance(value, str) else (), object)
    data[...] = encoded(value) if isinstance(value, str) else np.array(encoded(value), object)
    return _summary(tag, metadata.create_summary_metadata(None, description),
                    tensor_util.make_tensor_proto(data))


def png(pixels):
    """PNG bytes of an [H, W, C] uint8 array (C = 1 gray, 3 RGB, 4 RGBA), no filtering."""
    h, w, c = pixels.shape
    rows = np.concatenate([np.zeros((h, 1), np.uint8), pixels.reshape(h, w * c)], axis=1)

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    color = {1: 0, 3: 2, 4: 6}[c]
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6)) + chunk(b"IEND", b""))


def _summary(tag, meta, tensor):
    from tensorboard.compat.proto import summary_pb2
    s = summary_pb2.Summary()
    s.value.add(tag=tag, metadata=meta, tensor=tensor)
    return s
