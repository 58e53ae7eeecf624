"""A small RNN, unrolled with a Python `for` over time steps inside @gc.function, learns to
sum a sequence. AutoGraph turns the loop over `gc.range(steps)` into a while loop whose trip
count is known only at run time; the GradientTape differentiates through it.
Run: `python examples/rnn_sequence.py [--epochs N]`.
"""
import argparse
import sys

import numpy as np

import graphc as gc

HIDDEN = 16


class RNN(gc.Module):
    """h_t = tanh(x_t Wx + h_{t-1} Wh + b); prediction = h_T Wo + bo."""

    def __init__(self, hidden=HIDDEN, seed=0, dtype=np.float32):
        super().__init__()
        rng = np.random.default_rng(seed)
        self.hidden, self.dtype = hidden, dtype
        self.wx = gc.Variable(rng.normal(0, 0.5, (1, hidden)).astype(dtype))
        self.wh = gc.Variable(rng.normal(0, 0.3 / np.sqrt(hidden), (hidden, hidden))
                              .astype(dtype))
        self.b = gc.Variable(np.zeros(hidden, dtype))
        self.wo = gc.Variable(rng.normal(0, 0.3, (hidden, 1)).astype(dtype))
        self.bo = gc.Variable(np.zeros(1, dtype))

    def __call__(self, x):
        """x: (batch, steps, 1) -> (batch,)."""
        steps = gc.shape(x)[1]
        h = gc.zeros([x.shape[0], self.hidden], self.dtype)
        for t in gc.range(steps):
            h = gc.tanh(x[:, t, :] @ self.wx + h @ self.wh + self.b)
        return (h @ self.wo + self.bo)[:, 0]


def make_batch(rng, batch, steps):
    x = rng.uniform(-0.5, 0.5, (batch, steps, 1)).astype(np.float32)
    return x, x.sum(axis=(1, 2)).astype(np.float32)


def train(epochs=30, steps_per_epoch=20, batch=32, seq_len=6, out=sys.stdout):
    """Train on fresh random sequences; returns (first epoch loss, last epoch loss)."""
    model = RNN()
    optimizer = gc.optimizers.Adam(0.01)

    @gc.function
    def train_step(x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean((model(x) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    rng = np.random.default_rng(1)
    history = []
    for epoch in range(1, epochs + 1):
        losses = [float(train_step(*make_batch(rng, batch, seq_len)))
                  for _ in range(steps_per_epoch)]
        history.append(float(np.mean(losses)))
        if epoch == 1 or epoch % 5 == 0:
            print(f"epoch {epoch:3d}  mse {history[-1]:.5f}", file=out)
    x, y = make_batch(rng, 4, seq_len + 2)     # longer sequences: the same trace runs them
    print("sums      ", np.round(y, 3), file=out)
    print("predicted ", np.round(np.asarray(model(gc.constant(x))), 3), file=out)
    print(f"train_step traced {train_step.tracing_count} time(s)", file=out)
    return history[0], history[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    first, last = train(args.epochs)
    if last > 0.1 * first:
        sys.exit(f"the loss only went from {first:.4f} to {last:.4f}")


if __name__ == "__main__":
    main()
