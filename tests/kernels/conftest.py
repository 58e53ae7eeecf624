import os

import pytest


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory):
    """One kernel cache per test run; kernels forced on for tiny test shapes."""
    cache_dir = tmp_path_factory.getbasetemp() / "graphc-kernel-cache"
    cache_dir.mkdir(mode=0o700, exist_ok=True)
    saved = {k: os.environ.get(k) for k in ("GRAPHC_CACHE_DIR", "GRAPHC_NUMBA_MIN_SIZE",
                                            "GRAPHC_KERNEL_CHOICE")}
    os.environ.update(GRAPHC_CACHE_DIR=str(cache_dir), GRAPHC_NUMBA_MIN_SIZE="0",
                      GRAPHC_KERNEL_CHOICE="kernel")
    yield cache_dir
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture
def all_cores_free(monkeypatch):
    """Parallel regions run whatever the machine's load (kernels/cores.py says 2 free), on
    numba's own thread count, even on a 1-core machine."""
    from graphc.kernels.cpu import cores, kernel, launch
    monkeypatch.setattr(cores, "free_cores", lambda: 2)
    monkeypatch.setattr(launch.numba.config, "NUMBA_NUM_THREADS",
                        max(2, launch.numba.config.NUMBA_NUM_THREADS))
    monkeypatch.setattr(launch, "enter", lambda threads: None)
    monkeypatch.setattr(kernel, "enter", lambda threads: None)
