"""Round trips of traced graphs through graphc.saved_model.serialize (JSON text and back)."""
import json

import numpy as np

from graphc.runtime.concrete import ConcreteFunction
from graphc.saved_model.serialize import Reader, Writer, check_graph


def roundtrip_graph(graph):
    """(copy of `graph` rebuilt from its JSON text, writer): captures come back as the same
    objects, big constants through the writer's array table."""
    sources = []
    writer = Writer()

    def capture_ref(src):
        sources.append(src)
        return {"index": len(sources) - 1}

    text = json.dumps(writer.graph(graph, capture_ref), allow_nan=False)
    arrays = dict(writer.arrays)

    def array_ref(key, dtype, shape):
        a = arrays[key]
        assert a.dtype == dtype and a.shape == shape
        return a

    reader = Reader("<test>", array_ref=array_ref,
                    capture=lambda ref, t: sources[ref["index"]])
    return check_graph(reader.graph(json.loads(text)), "<test>"), writer


def roundtrip(cf, backend):
    """A ConcreteFunction over the round-tripped graph of `cf`, on `backend`."""
    g, _ = roundtrip_graph(cf.graph)
    assert str(g) == str(cf.graph)
    return ConcreteFunction(g, cf._structure, cf.structured_input_signature, backend)


def assert_same(a, b):
    """Equal values, dtypes and shapes, NaN where NaN and -0.0 where -0.0."""
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
        return
    x, y = np.asarray(a), np.asarray(b)
    assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, x.shape, y.dtype, y.shape)
    if x.dtype.kind == "f":
        assert np.array_equal(x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}")), (x, y)
    else:
        assert np.array_equal(x, y), (x, y)
