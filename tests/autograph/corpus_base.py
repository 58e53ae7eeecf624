"""The differential corpus registry: `case` records a function with its argument sets.

Every function runs in plain Python on numpy values and through @gc.function on tensors
(numpy arguments become tensors, Python arguments stay Python); results must match.
"""
import numpy as np

CORPUS = []


def case(*arg_sets):
    def deco(fn):
        CORPUS.append((fn, arg_sets))
        return fn
    return deco


f32 = np.float32
i32 = np.int32
V3 = np.array([1.5, -2.0, 3.0], np.float32)
V5 = np.array([0.5, 2.0, -1.0, 4.0, -3.0], np.float32)
M23 = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]], np.float32)
I4 = np.array([3, -1, 4, -5], np.int32)
