"""Writes tests/saving/data/optimizer_before_lr/: a checkpoint of a model and its Adam and
momentum-SGD optimizers from graphc before an optimizer's learning rate became a Variable
(so it holds `iterations` and slots but no `learning_rate`).

The committed copy was written by graphc at commit e9326f8, run as
    python tests/saving/data/make_optimizer_before_lr.py <dir>
from a checkout of that commit. test_optimizer_learning_rate_checkpoint.py restores it with
today's graphc.
"""
import os
import sys

import numpy as np

import graphc as gc


class Model(gc.Module):
    def __init__(self):
        super().__init__()
        self.w = gc.Variable(np.array([0.5, -1.0], np.float32))
        self.b = gc.Variable(np.float32(0.25))


def grads(step):
    """A fixed gradient per step (what the optimizers see is all that matters here)."""
    return [np.array([0.5, -0.25], np.float32) * (step + 1), np.float32(0.125 * (step + 1))]


def build():
    """The objects the checkpoint is made of, as the test builds them again."""
    return Model(), Model(), gc.optimizers.Adam(0.1), gc.optimizers.SGD(0.05, momentum=0.9)


def main(directory):
    m1, m2, adam, sgd = build()
    for step in range(3):
        adam.apply_gradients(zip(grads(step), [m1.w, m1.b]))
        sgd.apply_gradients(zip(grads(step), [m2.w, m2.b]))
    ckpt = gc.train.Checkpoint(m1=m1, m2=m2, adam=adam, sgd=sgd)
    return ckpt.write(os.path.join(directory, "ckpt"))


if __name__ == "__main__":
    print(main(sys.argv[1]))
