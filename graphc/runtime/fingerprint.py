"""The parts of gc.function's cached-call fingerprint (see Function.__call__, which builds
it inline for speed): markers that start each kind of part, and lists/tuples.

A fingerprint is a flat list of parts, one run per argument: a tensor or numpy array gives
(dtype, shape); a gc.Variable (VAR, dtype, shape); a Python int, bool, str, bytes or None
(PY, type, value); a float (PY, float, its bits); a list or tuple (SEQ, type, length) and
then its items the same way. Each run starts with a dtype or a marker, and the markers are
equal only to themselves, so two fingerprints are equal only when their arguments match
part for part, as the signature keys of signature.py would.
"""
import struct

from numpy import ndarray

from .tensor import Tensor
from .variables import Variable


class _Marker:
    """Starts a fingerprint's Variable, Python-value or list/tuple part. Equal only to
    itself, so parts of different kinds never compare equal (a numpy dtype can equal a
    Python type: np.dtype('int64') == int)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


# SLOW: the value of a fingerprint whose calls always take the general path
PY, VAR, SEQ, SLOW = _Marker("PY"), _Marker("VAR"), _Marker("SEQ"), _Marker("SLOW")
PY_KEYED = frozenset((int, bool, str, bytes, type(None)))   # keyed by value, as in signature
float_bits = struct.Struct("<d").pack                        # by bits, as in signature


def sequence_fingerprint(seq, fp, leaves, device=False):
    """The fingerprint of a list or tuple argument (type and length, then its items as in
    __call__; Python floats in it are never passed as tensors, so always keyed by bits).
    False when an item needs the general path (a nested sequence, a dict, an object)."""
    fp += (SEQ, type(seq), len(seq))
    for a in seq:
        t = type(a)
        if t is Tensor:
            v = a._np if not device or a._dev is None else a._dev
            if v is None:
                return False
            leaves.append(v)
            fp += (v.dtype, v.shape)
        elif t is ndarray:
            leaves.append(a)
            fp += (a.dtype, a.shape)
        elif t in PY_KEYED:
            fp += (PY, t, a)
        elif t is float:
            fp += (PY, float, float_bits(a))
        elif t is Variable:
            leaves.append(a)
            v = a._meta()
            fp += (VAR, v.dtype, v.shape)
        else:
            return False
    return True
