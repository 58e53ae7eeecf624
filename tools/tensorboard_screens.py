"""Browser check (not a test): TensorBoard shows graphc's logs in a real browser.

Trains examples/train_mlp.py for a few epochs with --logdir, starts `tensorboard` on
127.0.0.1 (port chosen by the OS), opens the Scalars and Graphs tabs in headless Chromium
(Debian package `chromium`, driven over the DevTools protocol by tools/cdp.py) and saves
screenshots into docs/ (tensorboard_scalars.png, tensorboard_graphs.png, and
tensorboard_profile.png: the Graphs tab on the `train_step` run metadata coloured by
compute time). Then it checks that the pictures show something: the scalar chart's orange
curve pixels, the graph's pastel node boxes and the profile's red-coloured nodes, against
screenshots of the same tabs for an empty log directory (the profile: against the graph
coloured by structure). Usage: python tools/tensorboard_screens.py
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


_FIND = """(function find(root, sel) { const el = root.querySelector(sel); if (el) return el;
  for (const n of root.querySelectorAll('*')) { if (n.shadowRoot) {
    const r = find(n.shadowRoot, sel); if (r) return r; } } return null; })"""


class Browser:
    """Headless Chromium driven over the DevTools protocol (tools/cdp.py)."""

    def __init__(self, executable):
        from cdp import CDP
        self.profile = tempfile.mkdtemp(prefix="graphc-chromium-")
        self.proc = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-port=0", f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = pathlib.Path(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline:
                self.close()
                raise SystemExit("chromium did not start")
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as r:
            page = next(p for p in json.loads(r.read()) if p["type"] == "page")
        self.cdp = CDP(page["webSocketDebuggerUrl"])
        self.cdp.call("Page.enable")
        self.cdp.call("Emulation.setDeviceMetricsOverride", width=1400, height=900,
                      deviceScaleFactor=1, mobile=False)

    def open(self, url, settle=8):
        self.cdp.call("Page.navigate", url=url)
        time.sleep(settle)

    def graph_controls(self, js):
        """Run `js` with `e` bound to the Graphs tab's control panel (inside shadow roots)."""
        return self.cdp.evaluate(f"(() => {{ const e = {_FIND}(document, 'tf-graph-controls');"
                                 f" if (!e) return null; {js} }})()")

    def close(self):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


def drawn_pixels(path, tab):
    """In the dashboard's content area (below the header bar, right of the side panel):
    the scalars tab's orange curve pixels, or the graphs tab's pastel node fills."""
    from PIL import Image
    a = np.asarray(Image.open(path).convert("RGB")).astype(int)[80:, 370:]
    r, g, b = a[..., 0], a[..., 1], a[..., 2]
    if tab == "profile":            # nodes coloured by compute time: white to red
        return int(((r > 200) & (r - g > 25) & (np.abs(g - b) < 25)).sum())
    if tab == "scalars":
        return int(((r > 220) & (g > 80) & (g < 150) & (b < 110)).sum())
    spread = a.max(axis=2) - a.min(axis=2)
    return int(((spread > 20) & (spread < 90) & (a.min(axis=2) > 150)).sum())


def shoot(browser, logdir, prefix, outdir):
    """Screenshots of the Scalars tab, the Graphs tab, and the Graphs tab showing the
    profile (the run metadata tag `train_step`, coloured by compute time)."""
    err = open(tempfile.mktemp(suffix=".log"), "w")
    proc, port = start_tensorboard(logdir, err)
    try:
        shots = {}
        for tab in ("scalars", "graphs"):
            shots[tab] = outdir / f"{prefix}{tab}.png"
            browser.open(f"http://127.0.0.1:{port}/?darkMode=false#{tab}")
            browser.cdp.screenshot(shots[tab])
        tag = browser.graph_controls(
            "const i = e.datasets.length ? e.datasets[0].tags.findIndex(t => t.tag === "
            "'train_step') : -1; if (i >= 0) e._selectedTagIndex = i; return i;")
        if tag is not None and tag >= 0:
            time.sleep(8)
            browser.graph_controls("e.colorBy = 'compute_time'; return e.colorBy;")
            time.sleep(4)
        shots["profile"] = outdir / f"{prefix}profile.png"
        browser.cdp.screenshot(shots["profile"])
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
    sys.path.insert(0, str(ROOT / "tools"))
    chromium = Browser(browser)
    try:
        shots = shoot(chromium, work / "logs", "tensorboard_", ROOT / "docs")
        blank = shoot(chromium, work / "empty", "blank_", work)
    finally:
        chromium.close()
    blank["profile"] = shots["graphs"]  # the same graph, coloured by structure
    for tab, path in shots.items():
        got, base = drawn_pixels(path, tab), drawn_pixels(blank[tab], tab)
        print(f"{tab}: {path.relative_to(ROOT)}: {got} curve/node pixels (baseline: {base})")
        if got < base + 300:
            raise SystemExit(f"the {tab} screenshot shows no more than an empty TensorBoard")
    print("ok: the screenshots show the logged curve, the graph and its profile")


if __name__ == "__main__":
    main()
