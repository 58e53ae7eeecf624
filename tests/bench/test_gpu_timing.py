"""What graphc bench does for a GPU backend, tested without one: the device synchronization
closing every timed batch is inside the measured time (asynchronous launches count as
done), and the report sets the cuda rows against the device copy bandwidth."""
from graphc.bench import report, timing
from graphc.bench.runner import BenchReport, ModeResult, WorkloadResult
from test_workloads import MS, fake_clock  # noqa: F401 - the fixture


def test_finish_runs_inside_each_timed_batch(fake_clock):
    events = []
    call = fake_clock.taking(MS, lambda: events.append("call"))

    def finish():                   # the device catches up: 3 ms more per batch
        events.append("sync")
        fake_clock.now += 3 * MS

    (t,) = timing.measure_interleaved([(call, lambda o: o)], min_time=0.01, finish=finish)
    assert events[:4] == ["call", "sync", "call", "sync"]      # first call, warm-up
    assert t.first_s == 4 * MS
    # each batch: untimed call + sync, then `batch` calls + one sync, all in the median
    assert t.median_s == (t.calls // t.repeats * MS + 3 * MS) / (t.calls // t.repeats)
    assert events.count("sync") == 2 + 2 * t.repeats


def test_cuda_rows_are_set_against_the_device_copy_bandwidth():
    w = WorkloadResult("softmax", "s", "4x4 float32", {}, bytes_moved=8 * 10**9)
    w.results = [ModeResult("eager", "eager", 1.0, 4.0, 1, 3, gbps=2.0),
                 ModeResult("cuda", "graphc", 1.0, 4.0, 1, 3, gbps=1500.0)]
    machine = {"date": "d", "cores": 16, "cpu": "c", "os": "o", "python": "3.12",
               "numba-cuda": "0.30.4", "cupy": "14.2.0", "cuda": "NVIDIA H100"}
    rep = BenchReport(machine, False, 0.5, ["eager", "cuda"], 10.0, 1000, {}, [w], None,
                      2000.0)
    head = "\n".join(report.header_lines(rep))
    assert "cuda device-to-device copy on 1,000 float32: 2000.0 GB/s" in head
    assert "numba-cuda 0.30.4, cupy 14.2.0" in head
    notes = "\n".join(report.note_lines(rep))
    assert "- softmax: cuda at 75% of the device copy bandwidth (1500.0 of 2000.0 GB/s)" in notes
    assert "each timed batch ends with a device synchronization" in notes
    rep.device_copy_gbps = None
    assert "device copy" not in "\n".join(report.note_lines(rep))
