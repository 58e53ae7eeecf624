"""Train a small classifier, export it as a SavedModel, and serve it from a fresh process
that never imports this file: the server has only graphc and the exported directory.

Run: `python examples/export_and_serve.py [EXPORT_DIR]` (default: a temporary directory).
The server reads one JSON list of feature rows per line on stdin and answers one JSON
object per line ({"class_ids": [...], "probabilities": [[...]]}); this script starts it,
sends it a few requests and checks its answers against the model it trained.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import graphc as gc

N_FEATURES, N_CLASSES = 4, 3


class Classifier(gc.Module):
    """A two-layer MLP with a compiled training step and a serving function."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(0)
        self.w1 = gc.Variable(rng.normal(0, 0.5, (N_FEATURES, 16)).astype(np.float32))
        self.b1 = gc.Variable(np.zeros(16, np.float32))
        self.w2 = gc.Variable(rng.normal(0, 0.5, (16, N_CLASSES)).astype(np.float32))
        self.b2 = gc.Variable(np.zeros(N_CLASSES, np.float32))
        self.optimizer = gc.optimizers.SGD(learning_rate=0.5)

    def logits(self, x):
        return gc.nn.relu(x @ self.w1 + self.b1) @ self.w2 + self.b2

    @gc.function
    def train_step(self, x, y):
        with gc.GradientTape() as tape:
            loss = gc.reduce_mean(gc.nn.sparse_softmax_cross_entropy_with_logits(
                y, self.logits(x)))
        variables = [self.w1, self.b1, self.w2, self.b2]
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    @gc.function(input_signature=[gc.TensorSpec([None, N_FEATURES], gc.float32, name="x")])
    def serve(self, x):
        p = gc.nn.softmax(self.logits(x))
        return {"probabilities": p, "class_ids": gc.argmax(p, axis=1)}


def make_data(n=300, seed=1):
    """Three Gaussian blobs in 4-D, float32 features and int32 labels."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 2, (N_CLASSES, N_FEATURES))
    y = rng.integers(0, N_CLASSES, n)
    x = centres[y] + rng.normal(0, 0.5, (n, N_FEATURES))
    return x.astype(np.float32), y.astype(np.int32)


# The server: imports graphc and numpy only, loads the directory, answers requests.
SERVER = r"""
import json, sys
import numpy as np
import graphc as gc

model = gc.saved_model.load(sys.argv[1])
predict = model.signatures["serving_default"]
print("ready", flush=True)
for line in sys.stdin:
    rows = np.asarray(json.loads(line), np.float32)
    out = predict(x=rows)
    print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}), flush=True)
"""


def main(export_dir=None):
    export_dir = export_dir or os.path.join(tempfile.mkdtemp(), "classifier")
    x, y = make_data()
    model = Classifier()
    for _ in range(60):
        loss = model.train_step(x, y)
    print(f"trained: loss {float(loss):.4f}")
    gc.saved_model.save(model, export_dir, signatures={"serving_default": model.serve})
    print(f"exported to {export_dir}")

    server = subprocess.Popen([sys.executable, "-c", SERVER, export_dir], text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              cwd=tempfile.gettempdir())     # far from this file's folder
    assert server.stdout.readline().strip() == "ready"
    correct = 0
    for start in range(0, 30, 10):
        rows = x[start:start + 10]
        server.stdin.write(json.dumps(rows.tolist()) + "\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        want = model.serve(rows)
        assert answer["class_ids"] == want["class_ids"].numpy().tolist()
        np.testing.assert_allclose(answer["probabilities"], want["probabilities"].numpy(),
                                   rtol=1e-6)
        correct += int(np.sum(np.asarray(answer["class_ids"]) == y[start:start + 10]))
        print(f"served rows {start}-{start + 9}: classes {answer['class_ids']}")
    server.stdin.close()
    server.wait()
    print(f"served predictions match the trained model; {correct}/30 correct")
    return correct


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
