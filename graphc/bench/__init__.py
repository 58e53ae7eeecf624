"""`graphc bench`: built-in workloads timed eagerly, on each graphc backend and beside peers.

`run(names, backends, ...)` returns a BenchReport; `report.format_table(report)` prints it.
The workloads live in `graphc.bench.workloads.WORKLOADS`, each written once with the public
API; see `graphc bench --help` for the command line.
"""
from .runner import BenchError, BenchReport, backend_status, run
from .workloads import WORKLOADS

__all__ = ["BenchError", "BenchReport", "WORKLOADS", "backend_status", "run"]
