"""graphc/train/checkpoint_format.py: round trips, atomic writes, and damage of every kind."""
import json
import os
import pickle
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from graphc.errors import GraphcError
from graphc.train import checkpoint_format as fmt

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()     # bit for bit: NaN payloads, -0.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(DTYPES),
                          hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=5)),
                max_size=5),
       st.data())
def test_round_trip_any_dtype_and_shape(tmp_path_factory, specs, data):
    prefix = str(tmp_path_factory.mktemp("fmt") / "t")
    tensors = {f"k{i}/x": data.draw(hnp.arrays(np.dtype(d), shape)) for i, (d, shape)
               in enumerate(specs)}
    files = fmt.write_tensors(prefix, tensors, meta={"step": 3})
    assert sorted(files) == fmt.checkpoint_files(prefix)
    index = fmt.read_index(prefix)
    assert list(index.entries) == list(tensors) and index.meta == {"step": 3}
    back = fmt.read_tensors(prefix)
    for key, a in tensors.items():
        _same(back[key], a)
        _same(fmt.read_tensor(prefix, key, index), a)


def test_big_endian_and_strided_inputs_are_stored_little_endian(tmp_path):
    a = np.arange(12, dtype=">i4").reshape(3, 4)[:, ::2]
    fmt.write_tensors(tmp_path / "p", {"a": a})
    assert fmt.read_index(tmp_path / "p").entries["a"].dtype.str == "<i4"
    np.testing.assert_array_equal(fmt.read_tensor(tmp_path / "p", "a"), a)


@pytest.mark.parametrize("positional_io", [True, False])
def test_multi_chunk_tensors_on_threads_or_in_order(tmp_path, monkeypatch, positional_io):
    monkeypatch.setattr(fmt, "CHUNK_BYTES", 1 << 16)
    monkeypatch.setattr(fmt, "_PARALLEL_MIN", 1 << 18)
    monkeypatch.setattr(fmt, "_POSITIONAL_IO", positional_io and fmt._POSITIONAL_IO)
    a = np.random.default_rng(0).random(100_000)        # 800 kB: 13 chunks
    data, _ = fmt.write_tensors(tmp_path / "p", {"a": a, "b": a[:7]})
    assert len(fmt.read_index(tmp_path / "p").entries["a"].checksum) == 13
    _same(fmt.read_tensors(tmp_path / "p")["a"], a)
    raw = bytearray(open(data, "rb").read())
    raw[500_000] ^= 16                                     # in the 8th chunk of 'a'
    open(data, "wb").write(raw)
    with pytest.raises(GraphcError, match="'a' does not match its checksum"):
        fmt.read_tensors(tmp_path / "p")


def test_bad_arguments(tmp_path):
    with pytest.raises(TypeError, match="keys must be str"):
        fmt.write_tensors(tmp_path / "p", {1: np.zeros(2)})
    with pytest.raises(TypeError, match="'obj' has dtype object"):
        fmt.write_tensors(tmp_path / "p", {"obj": np.array([None])})
    with pytest.raises(TypeError, match="JSON-serializable"):
        fmt.write_tensors(tmp_path / "p", {}, meta={"f": object()})
    with pytest.raises(ValueError, match="names a directory"):
        fmt.write_tensors(str(tmp_path) + os.sep, {})
    with pytest.raises(FileNotFoundError, match="latest_checkpoint"):
        fmt.read_index(tmp_path / "missing")
    fmt.write_tensors(tmp_path / "p", {"a": np.zeros(2)})
    with pytest.raises(KeyError, match="no tensor 'b'"):
        fmt.read_tensor(tmp_path / "p", "b")
    assert not [f for f in os.listdir(tmp_path) if "tmp" in f]


def test_rewrite_replaces_data_and_leaves_no_litter(tmp_path):
    prefix = tmp_path / "p"
    first = fmt.write_tensors(prefix, {"a": np.zeros(3)})
    open(str(prefix) + ".data-deadbeef.tmp", "wb").close()       # a killed write's leftover
    second = fmt.write_tensors(prefix, {"a": np.ones(3)})
    assert first[0] != second[0] and not os.path.exists(first[0])
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(p) for p in second)
    np.testing.assert_array_equal(fmt.read_tensor(prefix, "a"), np.ones(3))
    fmt.delete_files(prefix)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("fail_at", ["write", "fsync", "replace"])
def test_failed_write_keeps_the_old_checkpoint(tmp_path, monkeypatch, fail_at):
    prefix = tmp_path / "p"
    fmt.write_tensors(prefix, {"a": np.arange(4.0)})
    before = sorted(os.listdir(tmp_path))

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")
    if fail_at == "write":
        monkeypatch.setattr(fmt, "_write_at", disk_full)
    else:
        monkeypatch.setattr(fmt.os, fail_at, disk_full)
    with pytest.raises(OSError, match="No space"):
        fmt.write_tensors(prefix, {"a": np.zeros(4)})
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == before
    np.testing.assert_array_equal(fmt.read_tensor(prefix, "a"), np.arange(4.0))


# -- damage ------------------------------------------------------------------------------------
def _saved(tmp_path):
    prefix = str(tmp_path / "p")
    data, index = fmt.write_tensors(prefix, {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
                                             "n": np.int64(7), "e": np.zeros((0, 2))})
    return prefix, data, index


def _damage_raises(prefix, path):
    with pytest.raises(GraphcError) as info:
        fmt.read_tensors(prefix)
    assert path in str(info.value)


@pytest.mark.parametrize("which", ["data", "index"])
def test_every_truncation_is_detected(tmp_path, which):
    prefix, data, index = _saved(tmp_path)
    path = data if which == "data" else index
    original = open(path, "rb").read()
    for n in range(len(original.rstrip(b"\n"))):     # (less a trailing newline is no damage)
        with open(path, "wb") as f:
            f.write(original[:n])
        _damage_raises(prefix, path)


@pytest.mark.parametrize("which", ["data", "index"])
def test_every_bit_flip_is_detected(tmp_path, which):
    prefix, data, index = _saved(tmp_path)
    path = data if which == "data" else index
    original = open(path, "rb").read()
    for i in range(len(original)):
        for bit in (0, 3, 7) if which == "data" else (i % 8,):
            damaged = bytearray(original)
            damaged[i] ^= 1 << bit
            with open(path, "wb") as f:
                f.write(damaged)
            if which == "index" and damaged.rstrip(b"\n \t\r") == original.rstrip(b"\n"):
                continue        # the flip only changed the trailing newline's whitespace
            _damage_raises(prefix, path)


@pytest.mark.parametrize("which", ["data", "index"])
def test_pickle_payload_is_rejected_and_never_unpickled(tmp_path, which, monkeypatch):
    prefix, data, index = _saved(tmp_path)
    path = data if which == "data" else index
    with open(path, "wb") as f:
        f.write(pickle.dumps({"w": np.ones(3)}))
    monkeypatch.setattr(pickle, "loads", lambda *a, **k: pytest.fail("unpickled"))
    _damage_raises(prefix, path)


def test_missing_data_file_names_it(tmp_path):
    prefix, data, index = _saved(tmp_path)
    os.remove(data)
    _damage_raises(prefix, data)


def _forge(index, **changes):
    """Rewrite the index with `changes` applied to the document and a valid checksum, so the
    field checks (not the checksum) must catch it."""
    doc = json.loads(open(index).read())
    for key, edit in changes.items():
        edit(doc) if callable(edit) else doc.__setitem__(key, edit)
    doc["index_crc32"] = zlib.crc32(fmt._canonical(doc))
    with open(index, "w") as f:
        json.dump(doc, f)


@pytest.mark.parametrize("change, message", [
    ({"version": 2}, "version 2"),
    ({"format": "npz"}, "format"),
    ({"data": "../../etc/passwd"}, "data token"),
    ({"t": lambda d: d["tensors"][0].update(dtype="|O8")}, "dtype"),
    ({"t": lambda d: d["tensors"][0].update(dtype="<U4", nbytes=16 * 6)}, "dtype"),
    ({"t": lambda d: d["tensors"][0].update(shape=[2 ** 40, 2 ** 40])}, "not 24 bytes"),
    ({"t": lambda d: d["tensors"][0].update(shape=[-2, -3])}, "non-negative"),
    ({"t": lambda d: d["tensors"][1].update(offset=0)}, "offset"),
    ({"t": lambda d: d["tensors"][0].update(crc32=[])}, "crc32"),
    ({"t": lambda d: d["tensors"].append(dict(d["tensors"][1]))}, "repeats"),
    ({"data_nbytes": 10 ** 12}, "data_nbytes"),
    ({"meta": [1]}, "meta"),
])
def test_forged_index_fields_are_rejected(tmp_path, change, message):
    prefix, data, index = _saved(tmp_path)
    _forge(index, **change)
    with pytest.raises(GraphcError, match=message) as info:
        fmt.read_tensors(prefix)
    assert index in str(info.value)


def test_declared_size_is_checked_before_allocating(tmp_path, monkeypatch):
    prefix, data, index = _saved(tmp_path)
    with open(data, "ab") as f:
        f.write(b"\0" * 8)
    monkeypatch.setattr(fmt.np, "empty", lambda *a, **k: pytest.fail("allocated"))
    _damage_raises(prefix, data)
