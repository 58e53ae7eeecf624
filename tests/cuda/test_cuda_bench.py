"""`graphc bench` leaves cuda out without a real GPU (the simulator included) and its header
says why."""
import pytest

from graphc.bench import backend_status
from graphc.cli import main
from graphc.kernels.cuda import availability


@pytest.mark.skipif(not availability.simulator_on(), reason="a real GPU: cuda is benchmarked")
def test_simulator_is_left_out_with_the_reason_in_the_header(capsys):
    why = backend_status()["cuda"]
    assert why is not None and "simulator" in why
    rc = main(["bench", "--quick", "--min-time", "0.005", "--no-peers", "--workload",
               "dispatch"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert f"cuda: left out: {why}" in out
    table = out[out.index("workload "):]
    assert " cuda " not in table


def test_no_driver_reason_names_the_fix(monkeypatch):
    monkeypatch.setattr(availability, "simulator_on", lambda: False)
    monkeypatch.setattr(availability, "driver_error", lambda: "libcuda.so not found")
    why = backend_status()["cuda"]
    assert "no NVIDIA CUDA driver" in why and "libcuda.so not found" in why
