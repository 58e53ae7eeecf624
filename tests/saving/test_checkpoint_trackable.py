"""graphc/train/trackable.py: the object graph that checkpoints and SavedModels walk."""
import numpy as np
import pytest

import graphc as gc
from graphc.train import trackable


class Dense(gc.Module):
    def __init__(self, n):
        super().__init__()
        self.w = gc.Variable(np.ones((n, n), np.float32))
        self.b = gc.Variable(np.zeros(n, np.float32))
        self.units = n                    # not trackable: not a child


class Net(gc.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(2), Dense(3)]
        self.sizes = [2, 3]               # a list of plain values: not part of the graph
        self.heads = {"z": Dense(1), 7: (Dense(1),)}
        self.tied = self.layers[0].w      # shared: keeps its first path
        self.again = self                 # a cycle


def _keys(root):
    return [(trackable.path_key(p), type(o).__name__) for p, o in trackable.walk(root)]


def test_walk_is_depth_first_named_by_attribute_index_and_key():
    net = Net()
    assert _keys(net) == [
        ("", "Net"),
        ("heads", "dict"), ("heads/7", "tuple"), ("heads/7/0", "Dense"),
        ("heads/7/0/b", "Variable"), ("heads/7/0/w", "Variable"),
        ("heads/z", "Dense"), ("heads/z/b", "Variable"), ("heads/z/w", "Variable"),
        ("layers", "list"), ("layers/0", "Dense"), ("layers/0/b", "Variable"),
        ("layers/0/w", "Variable"), ("layers/1", "Dense"), ("layers/1/b", "Variable"),
        ("layers/1/w", "Variable")]
    assert [n for n, _ in trackable.children(net)] == ["again", "heads", "layers", "tied"]
    assert trackable.children(net.layers[0].w) == []
    # the same graph built again walks the same way (deterministic, no ids involved)
    assert _keys(Net()) == _keys(net)


def test_is_trackable():
    assert trackable.is_trackable(gc.Variable(1.0))
    assert trackable.is_trackable(Dense(1)) and trackable.is_trackable(gc.optimizers.SGD())
    assert trackable.is_trackable([{"a": (gc.Variable(1.0),)}])
    assert not trackable.is_trackable([1, "a", {"b": np.zeros(2)}])
    loop = []
    loop.append(loop)
    assert not trackable.is_trackable(loop)


def test_optimizer_children_and_slot_paths():
    net, opt = Dense(2), gc.optimizers.Adam(0.1)
    holder = gc.Module()
    holder.net, holder.opt = net, opt
    # the learning rate Variable is made with the optimizer, the counter on the first update
    assert trackable.children(opt) == [("learning_rate", opt.learning_rate)]
    opt.apply_gradients([(np.ones((2, 2), np.float32), net.w)])
    assert [n for n, _ in trackable.children(opt)] == ["iterations", "learning_rate"]
    keys = dict((trackable.path_key(p), o) for p, o in trackable.walk(holder))
    assert keys["opt/iterations"] is opt.iterations
    assert keys["opt/learning_rate"] is opt.learning_rate
    assert keys["net/w/.OPTIMIZER_SLOT/opt/m"] is opt.get_slot(net.w, "m")
    assert keys["net/w/.OPTIMIZER_SLOT/opt/v"] is opt.get_slot(net.w, "v")
    # a slot of a variable outside the graph is not part of it
    assert not any(".OPTIMIZER_SLOT" in k for k in _walk_keys(opt))
    lr = gc.Variable(0.5)
    assert trackable.children(gc.optimizers.SGD(lr)) == [("learning_rate", lr)]


def _walk_keys(root):
    return [trackable.path_key(p) for p, _ in trackable.walk(root)]


def test_path_keys_escape_separators_and_the_slot_marker():
    m = gc.Module()
    m.d = {"a/b": gc.Variable(1.0), ".x": gc.Variable(2.0), "50%": gc.Variable(3.0)}
    assert _walk_keys(m)[2:] == ["d/%2Ex", "d/50%25", "d/a%2Fb"]
    m.d = {".OPTIMIZER_SLOT": gc.Variable(1.0)}
    with pytest.raises(ValueError, match="reserve"):
        list(trackable.walk(m))
    m.d = {1: gc.Variable(1.0), "1": gc.Variable(2.0)}
    with pytest.raises(ValueError, match="both read '1'"):
        list(trackable.walk(m))
