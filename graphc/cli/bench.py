"""`graphc bench`: time the built-in workloads eagerly and compiled on each backend."""
import argparse
import os
import sys

from . import UsageError

DEFAULT_MIN_TIME = 0.5
QUICK_MIN_TIME = 0.05

_EPILOG = """\
examples:
  graphc bench --quick                         small sizes, the whole run in under 30 s
  graphc bench --workload softmax --workload layernorm --backend numba
  graphc bench --json results.json --plot speedups.png
  graphc bench --contended                     the same, with every core but one kept busy
  graphc bench --blas-threads 1                numpy's BLAS pinned to one thread

Every mode is checked against eager execution first; a disagreement stops the run with
exit status 1. Bad options print one line and exit with status 2."""


def add_parser(subparsers):
    """Register the `bench` subcommand."""
    from ..bench import WORKLOADS
    p = subparsers.add_parser(
        "bench", help="benchmark eager vs compiled graphc on the built-in workloads",
        description="Run the built-in workloads eagerly and compiled with each available\n"
                    "backend (beside hand-written numba kernels, and TensorFlow and JAX when\n"
                    "importable); print first-call times, steady-state medians, speedups\n"
                    "over eager and GB/s.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", action="append", default=[], metavar="NAME",
                   help=f"run only this workload (repeatable): {', '.join(WORKLOADS)}")
    p.add_argument("--backend", action="append", default=[], metavar="NAME",
                   help="compile with this backend (repeatable): numpy, numba, cuda; "
                        "default: every backend available here")
    p.add_argument("--quick", action="store_true",
                   help="small sizes and short repeats (the whole run takes under 30 s)")
    p.add_argument("--min-time", type=float, metavar="SECONDS",
                   help=f"steady-state repeats last at least this long per mode (default "
                        f"{DEFAULT_MIN_TIME}, or {QUICK_MIN_TIME} with --quick)")
    p.add_argument("--no-peers", action="store_true",
                   help="leave out the TensorFlow, JAX and hand-written numba columns")
    p.add_argument("--contended", action="store_true",
                   help="run a busy-loop process on every core but one while each workload "
                        "is timed (they stop by themselves), for reproducible figures of a "
                        "busy machine")
    p.add_argument("--blas-threads", type=int, metavar="N",
                   help="pin numpy's BLAS to N threads for the run (default: leave it as "
                        "numpy and your environment set it; the header says how many)")
    p.add_argument("--json", metavar="FILE", help="also write every figure to FILE as JSON")
    p.add_argument("--plot", metavar="FILE.png",
                   help="also draw a bar chart of speedups (needs matplotlib)")
    p.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    return p


def run(args):
    """Validate the options, run the benchmark, print the table; 1 if a mode disagrees."""
    from ..bench import BenchError, WORKLOADS, report, run as run_bench
    from ..bench.blas_threads import BlasThreadsError
    from ..bench.contention import HogError
    if args.list:
        for w in WORKLOADS.values():
            print(f"{w.name:<16} {w.summary}")
        return 0
    names = _workloads(args.workload, WORKLOADS)
    backends = _backends(args.backend)
    min_time = args.min_time
    if min_time is None:
        min_time = QUICK_MIN_TIME if args.quick else DEFAULT_MIN_TIME
    if not min_time > 0:
        raise UsageError(f"--min-time must be a positive number of seconds, got {min_time}")
    if args.blas_threads is not None and args.blas_threads < 1:
        raise UsageError(f"--blas-threads must be at least 1, got {args.blas_threads}")
    if args.plot:
        missing = report.plot_available()
        if missing:
            raise UsageError(missing)
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UsageError(f"{option} {path}: directory "
                             f"{os.path.dirname(os.path.abspath(path))} does not exist")
    try:
        result = run_bench(names, backends, quick=args.quick, min_time=min_time,
                           peers=not args.no_peers, blas_threads=args.blas_threads,
                           contended=args.contended)
    except BlasThreadsError as e:
        raise UsageError(str(e)) from e
    except (BenchError, HogError) as e:
        print(f"graphc bench: error: {e}", file=sys.stderr)
        return 1
    print()
    print("\n".join(report.header_lines(result)))
    print()
    print(report.format_table(result, markdown=args.markdown), end="")
    if args.json:
        report.write_json(result, args.json)
        print(f"wrote {args.json}")
    if args.plot:
        report.write_plot(result, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _workloads(requested, known):
    names = [n.strip() for item in requested for n in item.split(",") if n.strip()]
    for name in names:
        if name not in known:
            raise UsageError(f"unknown workload {name!r}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names)) or list(known)


def _backends(requested):
    from ..bench import backend_status
    status = backend_status()
    names = [n.strip() for item in requested for n in item.split(",") if n.strip()]
    for name in names:
        if name not in status:
            raise UsageError(f"unknown backend {name!r}; choose from {', '.join(status)}")
        if status[name]:
            raise UsageError(f"--backend {name}: {status[name]}")
    return list(dict.fromkeys(names)) or [n for n, why in status.items() if why is None]
