"""Train an MLP classifier with a compiled train step (GradientTape + Adam inside @gc.function).

The data set is a deterministic 10-class Gaussian mixture made here (nothing downloaded).
Each epoch ends with a checkpoint (gc.train.CheckpointManager, the newest 3 kept); run it
again and it resumes from the latest one, continuing exactly where it stopped.
With --logdir it writes TensorBoard logs: the loss of every step (a summary op inside the
compiled step), accuracy and weight histograms per epoch, and the step's graph with a
per-op profile of one step (`tensorboard --logdir DIR`).
Run: `python examples/train_mlp.py [--epochs N] [--backend numpy|numba|auto]
[--checkpoint-dir DIR | --no-checkpoints] [--logdir DIR]`.
"""
import argparse
import contextlib
import os
import sys
import time

import numpy as np

import graphc as gc


def make_data(n_per_class=200, n_classes=10, dim=16, seed=0):
    """Points around 10 random centres; float32 features and int32 labels, shuffled."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 1.0, (n_classes, dim))
    x = np.concatenate([c + rng.normal(0.0, 1.0, (n_per_class, dim)) for c in centres])
    y = np.repeat(np.arange(n_classes), n_per_class)
    order = rng.permutation(len(y))
    return x[order].astype(np.float32), y[order].astype(np.int32)


class Dense(gc.Module):
    """y = activation(x @ w + b), with He-initialized weights."""

    def __init__(self, n_in, n_out, activation=None, seed=0):
        super().__init__()
        scale = np.sqrt(2.0 / n_in)
        w = np.random.default_rng(seed).normal(0.0, scale, (n_in, n_out))
        self.w = gc.Variable(w.astype(np.float32), name=f"w{seed}")
        self.b = gc.Variable(np.zeros(n_out, np.float32), name=f"b{seed}")
        self.activation = activation

    def __call__(self, x):
        h = x @ self.w + self.b
        return self.activation(h) if self.activation else h


class MLP(gc.Module):
    """A stack of Dense layers: relu hidden layers, linear logits."""

    def __init__(self, sizes):
        super().__init__()
        self.layers = [Dense(a, b, gc.nn.relu if i < len(sizes) - 2 else None, seed=i)
                       for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))]

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def train(epochs=8, batch=100, backend="auto", out=sys.stdout, checkpoint_dir=None,
          logdir=None):
    """Train up to `epochs` epochs and return the final training accuracy. With a
    `checkpoint_dir`, resume from its latest checkpoint and save one after each epoch; with
    a `logdir`, write TensorBoard summaries there."""
    x, y = make_data()
    model = MLP([x.shape[1], 64, 64, 10])
    optimizer = gc.optimizers.Adam(0.01)
    epoch_done = gc.Variable(np.int64(0), trainable=False)
    manager = None
    if checkpoint_dir is not None:
        ckpt = gc.train.Checkpoint(model=model, optimizer=optimizer, epoch=epoch_done)
        manager = gc.train.CheckpointManager(ckpt, checkpoint_dir, max_to_keep=3)
        if manager.latest_checkpoint:
            # Adam's slots are made by the first step and take their saved values then
            ckpt.restore(manager.latest_checkpoint).assert_existing_objects_matched()
            print(f"resumed from {manager.latest_checkpoint} (epoch {int(epoch_done)})",
                  file=out)

    @gc.function(backend=backend)
    def train_step(xb, yb):
        with gc.GradientTape() as tape:
            logits = model(xb)
            loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(yb, logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        # a no-op without a default writer; the step is read after the update
        gc.summary.scalar("loss", loss, step=optimizer.iterations)
        return loss

    @gc.function(backend=backend)
    def accuracy(xs, ys):
        predicted = gc.cast(gc.argmax(model(xs), axis=1), gc.int32)
        return gc.reduce_mean(gc.cast(gc.equal(predicted, ys), gc.float32))

    steps = len(y) // batch
    acc = float(accuracy(x, y))
    writer = gc.summary.create_file_writer(logdir) if logdir else None
    start = time.perf_counter()
    for epoch in range(int(epoch_done) + 1, epochs + 1):
        losses = []
        for s in range(steps):
            with writer.as_default() if writer else contextlib.nullcontext():
                # the graph and a per-op profile of the second step (the first compiles)
                tracing = writer is not None and epoch == int(epoch_done) + 1 and s == 1
                if tracing:
                    gc.summary.trace_on(graph=True, profiler=True)
                losses.append(float(train_step(x[s * batch:(s + 1) * batch],
                                               y[s * batch:(s + 1) * batch])))
                if tracing:
                    gc.summary.trace_export("train_step", step=0)
            if s % 5 == 4 or s == steps - 1:
                print(f"\repoch {epoch}/{epochs} [{'=' * (20 * (s + 1) // steps):<20}] "
                      f"loss {np.mean(losses):.4f}", end="", file=out, flush=True)
        acc = float(accuracy(x, y))
        if writer is not None:
            with writer.as_default():
                gc.summary.scalar("accuracy", acc, step=epoch)
                for v in model.trainable_variables:
                    gc.summary.histogram(v.name, v, step=epoch)
        print(f"\repoch {epoch}/{epochs}  loss {np.mean(losses):.4f}  accuracy {acc:.3f}  "
              f"({time.perf_counter() - start:.1f}s)", file=out)
        epoch_done.assign(epoch)
        if manager is not None:
            manager.save(checkpoint_number=epoch)
    if writer is not None:
        writer.close()
    # 2: the first trace made the optimizer's slots, so it was traced again (as in TF)
    print(f"train_step traced {train_step.tracing_count} time(s); final training accuracy "
          f"{acc:.3f}", file=out)
    return acc


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--checkpoint-dir", default=os.path.join(".", "train_mlp_checkpoints"))
    parser.add_argument("--no-checkpoints", action="store_true")
    parser.add_argument("--logdir", help="write TensorBoard logs here (needs graphc[tensorboard])")
    args = parser.parse_args()
    acc = train(args.epochs, backend=args.backend,
                checkpoint_dir=None if args.no_checkpoints else args.checkpoint_dir,
                logdir=args.logdir)
    if acc < 0.95:
        sys.exit(f"accuracy {acc:.3f} is below 0.95")


if __name__ == "__main__":
    main()
