"""`graphc graph TARGET --arg SPEC ...`: trace a function and print its graph, optimized.

TARGET is `path/to/file.py::FUNC` or `package.module:FUNC` (FUNC may be dotted, e.g.
`Model.step`); each `--arg` is a TensorSpec written `dtype[d0,d1,...]` (`?` or `None` for
an unknown dimension, `[]` for a scalar), or a Python literal passed as is.
"""
import ast
import importlib
import importlib.util
import os
import re
import sys

from . import UsageError

# The compiling backend reports fusion groups, kernels, kernel-vs-numpy choices, cache
# hits and fallbacks through this hook: if module `graphc.kernels.cpu.backend` defines
# `describe(graph) -> str`, it is called with the traced (unoptimized) graph, exactly what
# the backend itself is handed, and its text is printed after the optimized graph.
BACKEND_REPORT_HOOK = ("graphc.kernels.cpu.backend", "describe")
# --backend NAME: whose report to print (numba: the hook above; cuda: where each op ran on
# the device; numpy: none, every op runs its numpy rule)
REPORTS = {"numba": BACKEND_REPORT_HOOK, "cuda": ("graphc.kernels.cuda.backend", "describe")}

_SPEC = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\[\]]*)\]\s*$")

_EPILOG = """\
examples:
  graphc graph model.py::predict --arg 'float32[1000,64]' --arg 'float32[64]'
  graphc graph mypkg.layers:softmax --arg 'float64[?,10]'
  graphc graph loop.py::count --arg 'int32[]' --dump all
  graphc graph model.py::predict --arg 'float32[8,64]' --backend cuda

specs: dtype[d0,d1,...] with dtype one of float32, float64, int32, int64, bool;
a dimension is an int, or ? / None when unknown; [] is a scalar. A Python literal
(3, 0.5, True, 'relu', None) is passed as that Python value, baked into the trace.
Bad paths, missing functions and bad specs print one line and exit with status 2."""


def add_parser(subparsers):
    """Register the `graph` subcommand."""
    import argparse
    p = subparsers.add_parser(
        "graph", help="trace a function and print its traced and optimized graphs",
        description="Trace FUNC with the given argument specs and print the traced graph,\n"
                    "the graph after the optimizing passes and, when the numba backend is\n"
                    "available, its fusion groups, kernels, cache use and fallbacks.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="TARGET",
                   help="PATH.py::FUNC or module.sub:FUNC (FUNC may be dotted: Class.method)")
    p.add_argument("--arg", dest="args", action="append", default=[], metavar="SPEC",
                   help="one positional argument: a spec such as 'float32[1000,64]', or a "
                        "Python literal such as 3 or True (repeat in argument order)")
    from ..runtime.passes import PASS_NAMES
    p.add_argument("--dump", metavar="PASS",
                   help="also print the graph after pass PASS (or 'all') to stderr, like "
                        f"GRAPHC_DUMP; passes in order: {', '.join(PASS_NAMES)}")
    p.add_argument("--backend", choices=["numba", "cuda", "numpy"], default="numba",
                   help="whose plan to show: numba (default: fusion groups, kernels, "
                        "fallbacks), cuda (each op or group and where it runs: kernel, device "
                        "view, or fallback with the reason), numpy (the graphs only)")
    p.add_argument("--logdir", metavar="DIR",
                   help="also write the graph as TensorBoard graph data under DIR (as the "
                        "numba backend runs it when available: fusion groups and compiled "
                        "loops as scopes); view with `tensorboard --logdir DIR`")
    return p


def run(args):
    """Load, trace, optimize and print. Raises UsageError for anything the user must fix."""
    from ..runtime.passes import PASS_NAMES, optimize
    if args.dump and args.dump != "all" and args.dump not in PASS_NAMES:
        raise UsageError(f"--dump {args.dump!r}: no such pass; use 'all' or one of "
                         f"{', '.join(PASS_NAMES)}")
    backend = getattr(args, "backend", "numba")
    if backend == "cuda":
        from ..kernels.cuda.availability import missing
        why = missing()
        if why is not None:
            raise UsageError(why)
    specs = [parse_spec(s) for s in args.args]
    fn = load_function(args.target)
    graph = trace(fn, specs, args.target)
    print(f"// traced graph ({len(graph.operations)} ops)")
    print(graph)
    optimized = optimize(graph, dump=args.dump or "")
    print()
    print(f"// optimized graph ({len(optimized.operations)} ops)")
    print(optimized)
    report = backend_report(graph, backend)
    if report:
        print()
        print(report.rstrip("\n"))
    if args.logdir:
        write_logdir(graph, args.logdir)
    return 0


def write_logdir(graph, logdir):
    """The graph as TensorBoard graph data in an event file under `logdir`."""
    try:
        from ..summary import create_file_writer
        from ..summary.graph_def import merged_graph_def
        writer = create_file_writer(logdir)
    except (ImportError, OSError) as e:
        raise UsageError(f"--logdir {logdir}: {e}") from None
    backend = "numba" if _has_numba() else "numpy"
    writer.add_event(step=0, graph_def=merged_graph_def([(graph, backend)]).SerializeToString())
    writer.close()
    print(f"// TensorBoard graph written to {logdir} (tensorboard --logdir {logdir})")


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def parse_spec(text):
    """'float32[3,?]' -> TensorSpec([3, None], gc.float32); '3' -> 3 (a Python literal is
    passed as is); a UsageError naming the problem otherwise."""
    from .. import dtypes
    from ..runtime.signature import TensorSpec
    m = _SPEC.match(text)
    if not m:
        literal = _python_literal(text)
        if literal is not _NOT_LITERAL:
            return literal
        raise UsageError(f"bad --arg spec {text!r}: expected dtype[d0,d1,...] such as "
                         "'float32[3,4]', 'int32[]' or 'float64[?,10]', or a Python literal "
                         "such as 3, 0.5, True or 'relu'")
    try:
        dtype = dtypes.as_dtype(m.group(1))
    except (TypeError, ValueError, KeyError):
        raise UsageError(f"bad --arg spec {text!r}: unknown dtype {m.group(1)!r} (use float32, "
                         "float64, int32, int64 or bool)") from None
    body = m.group(2).strip()
    dims = []
    for part in body.split(",") if body else []:
        part = part.strip()
        if part in ("?", "None"):
            dims.append(None)
        elif part.isdigit():
            dims.append(int(part))
        else:
            raise UsageError(f"bad --arg spec {text!r}: dimension {part!r} must be a "
                             "non-negative int, ? or None")
    return TensorSpec(dims, dtype)


_NOT_LITERAL = object()


def _python_literal(text):
    """A Python number, bool, string or None written on the command line (baked into the
    trace, as gc.function does with Python arguments); _NOT_LITERAL otherwise."""
    try:
        value = ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _NOT_LITERAL
    return value if isinstance(value, (bool, int, float, str, type(None))) else _NOT_LITERAL


def load_function(target):
    """The gc.Function named by `target` (a plain Python function is wrapped in gc.function)."""
    from ..runtime.function import Function, function
    if "::" in target:
        path, _, name = target.partition("::")
        module = _import_path(path)
    elif ":" in target:
        modname, _, name = target.partition(":")
        module = _import_module(modname)
    else:
        raise UsageError(f"bad target {target!r}: expected PATH.py::FUNC or module.sub:FUNC")
    if not name:
        raise UsageError(f"bad target {target!r}: no function name after the separator")
    obj = module
    for part in name.split("."):
        if not hasattr(obj, part):
            where = getattr(module, "__file__", None) or module.__name__
            raise UsageError(f"no function {name!r} in {where}")
        obj = getattr(obj, part)
    if isinstance(obj, Function):
        return obj
    if not callable(obj) or isinstance(obj, type):
        raise UsageError(f"{name!r} in {target.split(':')[0]} is a {type(obj).__name__}, "
                         "not a function")
    return function(obj)


def _import_path(path):
    if not path:
        raise UsageError("bad target: empty path before '::'")
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path}")
    path = os.path.abspath(path)
    modname = "__graphc_cli_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module
    sys.path.insert(0, os.path.dirname(path))   # so the file can import its neighbours
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - any failure of the user's file is one line
        sys.modules.pop(modname, None)
        raise UsageError(f"importing {path} failed: {type(e).__name__}: {e}") from None
    finally:
        sys.path.remove(os.path.dirname(path))
    return module


def _import_module(modname):
    if not modname:
        raise UsageError("bad target: empty module name before ':'")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())         # as `python -m` would
    try:
        return importlib.import_module(modname)
    except ModuleNotFoundError as e:
        raise UsageError(f"no module named {e.name!r} (importing {modname})") from None
    except Exception as e:  # noqa: BLE001
        raise UsageError(f"importing {modname} failed: {type(e).__name__}: {e}") from None


def trace(fn, specs, target):
    """The traced Graph of `fn` for `specs`; a failing trace is a one-line UsageError."""
    try:
        return fn.get_concrete_function(*specs).graph
    except Exception as e:  # noqa: BLE001 - user code errors are reported, not dumped
        shown = ", ".join(_spec_text(s) for s in specs)
        raise UsageError(f"tracing {target} with ({shown}) failed: {type(e).__name__}: "
                         f"{str(e).splitlines()[0] if str(e) else ''}") from None


def _spec_text(spec):
    if not hasattr(spec, "shape"):
        return repr(spec)
    dims = ",".join("?" if d is None else str(d) for d in spec.shape)
    return f"{spec.dtype.name}[{dims}]"


def backend_report(graph, backend="numba"):
    """The backend's description of `graph` (see BACKEND_REPORT_HOOK, REPORTS), or ''."""
    if backend not in REPORTS:
        return ""
    modname, attr = BACKEND_REPORT_HOOK if backend == "numba" else REPORTS[backend]
    try:
        module = importlib.import_module(modname)
    except ModuleNotFoundError as e:
        if e.name is not None and modname.startswith(e.name):
            return ""
        raise
    describe = getattr(module, attr, None)
    return describe(graph) if callable(describe) else ""
