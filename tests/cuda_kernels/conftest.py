"""CUDA kernels under numba-cuda's simulator: NUMBA_ENABLE_CUDASIM must be set before
numba.cuda is first imported (the root conftest sets it too once the CUDA backend is
merged). Launches stay tiny: the simulator runs every thread as a Python thread."""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import pytest  # noqa: E402


def pytest_collection_modifyitems(items):
    # numpy scalars warn on float overflow and integer wrap-around, which the kernels
    # compute on purpose (simulated threads run outside any np.errstate)
    for item in items:
        if "tests/cuda_kernels" in str(item.fspath):
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning"))


@pytest.fixture(autouse=True)
def _simulator_or_device():
    from graphc.kernels.cuda.scalar import SIMULATOR
    if not SIMULATOR:
        from numba import cuda
        if not cuda.is_available():
            pytest.skip("numba.cuda was imported without the simulator and no GPU is present")
