"""Reading event files back with TensorBoard's own loader (EventAccumulator)."""
import numpy as np
import pytest

pytest.importorskip("tensorboard")
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402


def load(logdir):
    ea = EventAccumulator(str(logdir), size_guidance={"tensors": 0, "images": 0})
    ea.Reload()
    return ea


def values(ea, tag):
    """[(step, ndarray)] of a tensor-valued summary tag."""
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in ea.Tensors(tag)]


def scalars(ea, tag):
    return [(s, float(v)) for s, v in values(ea, tag)]


def image_sizes(ea, tag):
    """[(step, width, height, number of PNGs)] with each PNG's header checked."""
    out = []
    for step, v in values(ea, tag):
        w, h = int(v[0]), int(v[1])
        for png in v[2:]:
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            assert (int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")) == (w, h)
        out.append((step, w, h, len(v) - 2))
    return out


def hist_counts(ea, tag):
    return [(s, v[:, 2].sum(), v.shape) for s, v in values(ea, tag)]


def node_names(ea):
    return [n.name for n in ea.Graph().node]


def decode_png(png):
    """[H, W, C] pixels of an unfiltered 8-bit PNG (what graphc writes)."""
    import struct
    import zlib
    pos, idat, ihdr = 8, b"", None
    while pos < len(png):
        n = struct.unpack(">I", png[pos:pos + 4])[0]
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
        pos += 12 + n
    w, h, _, color = ihdr[:4]
    c = {0: 1, 2: 3, 6: 4}[color]
    rows = np.frombuffer(zlib.decompress(idat), np.uint8).reshape(h, 1 + w * c)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(h, w, c)
