"""CUDA kernels on numba-cuda's simulator (tests/conftest.py turns it on before numba.cuda
is imported: asked for by path, or in the simulated child process of a whole-suite run) or
on a GPU with GRAPHC_TEST_CUDA=real. Launches stay tiny: the simulator runs every thread
as a Python thread."""
import pytest

pytest.importorskip("numba_cuda")


def pytest_collection_modifyitems(items):
    # numpy scalars warn on float overflow and integer wrap-around, which the kernels
    # compute on purpose (simulated threads run outside any np.errstate)
    for item in items:
        if "tests/cuda_kernels" in str(item.fspath):
            item.add_marker(pytest.mark.filterwarnings("ignore::RuntimeWarning"))
