"""Browser check (not a test): TensorBoard shows graphc's logs in a real browser.

Trains examples/train_mlp.py for a few epochs with --logdir, starts `tensorboard` on
127.0.0.1 (port chosen by the OS), opens the Scalars and Graphs tabs in headless Chromium
(Debian package `chromium`) and saves screenshots into docs/ (tensorboard_scalars.png,
tensorboard_graphs.png). Then it checks that the pictures show something: the scalar
chart's orange curve pixels, and the graph's pastel node boxes, against a screenshot of the
same tabs for an empty log directory. Usage: python tools/tensorboard_screens.py
"""
import importlib.util
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def start_tensorboard(logdir, errfile):
    proc = subprocess.Popen([sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir),
                             "--port", "0", "--host", "127.0.0.1", "--load_fast", "false"],
                            stdout=subprocess.DEVNULL, stderr=errfile)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        time.sleep(0.3)
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", pathlib.Path(errfile.name).read_text())
        if m:
            port = int(m.group(1))
            while time.monotonic() < deadline:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/data/runs") as r:
                    if json.loads(r.read()) or "empty" in str(logdir):
                        return proc, port
                time.sleep(0.5)
    proc.kill()
    raise SystemExit("tensorboard did not start: " + pathlib.Path(errfile.name).read_text())


def screenshot(browser, url, path, budget_ms=25000):
    subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1400,900",
                    f"--virtual-time-budget={budget_ms}", f"--screenshot={path}", url],
                   check=True, timeout=180, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def drawn_pixels(path, tab):
    """In the dashboard's content area (below the header bar, right of the side panel):
    the scalars tab's orange curve pixels, or the graphs tab's pastel node fills."""
    from PIL import Image
    a = np.asarray(Image.open(path).convert("RGB")).astype(int)[80:, 370:]
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    if tab == "scalars":
        return int(((r > 220) & (g > 80) & (g < 150) & (b < 110)).sum())
    spread = a.max(axis=2) - a.min(axis=2)
    return int(((spread > 20) & (spread < 90) & (a.min(axis=2) > 150)).sum())


def shoot(browser, logdir, prefix, outdir):
    err = open(tempfile.mktemp(suffix=".log"), "w")
    proc, port = start_tensorboard(logdir, err)
    try:
        shots = {}
        for tab in ("scalars", "graphs"):
            path = outdir / f"{prefix}{tab}.png"
            screenshot(browser, f"http://127.0.0.1:{port}/?darkMode=false#{tab}", path)
            shots[tab] = path
        return shots
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        err.close()


def main():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium: apt-get install -y chromium")
    work = pathlib.Path(tempfile.mkdtemp(prefix="graphc-tb-"))
    spec = importlib.util.spec_from_file_location("train_mlp", ROOT / "examples" / "train_mlp.py")
    mlp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mlp)
    mlp.train(epochs=4, logdir=str(work / "logs" / "train_mlp"))
    (work / "empty").mkdir()
    shots = shoot(browser, work / "logs", "tensorboard_", ROOT / "docs")
    blank = shoot(browser, work / "empty", "blank_", work)
    for tab, path in shots.items():
        got, base = drawn_pixels(path, tab), drawn_pixels(blank[tab], tab)
        print(f"{tab}: {path.relative_to(ROOT)}: {got} curve/node pixels (empty logdir: {base})")
        if got < base + 300:
            raise SystemExit(f"the {tab} screenshot shows no more than an empty TensorBoard")
    print("ok: the screenshots show the logged curve and the graph")


if __name__ == "__main__":
    main()
