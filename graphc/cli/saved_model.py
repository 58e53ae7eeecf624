"""`graphc saved-model show DIR [--all]` and `graphc saved-model run DIR --signature NAME
--input NAME=FILE.npy ... [--output DIR]`: inspect and run a SavedModel from the shell (the
counterpart of TensorFlow's saved_model_cli). Input files are read with
`numpy.load(allow_pickle=False)`; nothing in the model directory is executed."""
import os

import numpy as np

from . import UsageError

_EPILOG = """\
examples:
  graphc saved-model show ./exported
  graphc saved-model show ./exported --all
  graphc saved-model run ./exported --signature serving_default --input x=batch.npy
  graphc saved-model run ./exported --signature serving_default --input x=batch.npy \\
      --output ./predictions        (writes one NAME.npy per output)

Bad directories, signatures and inputs print one line and exit with status 2."""


def add_parser(subparsers):
    import argparse
    p = subparsers.add_parser(
        "saved-model", help="show or run a SavedModel written by gc.saved_model.save",
        description="Inspect (show) or run (run) a SavedModel directory.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="objects, functions, signatures and variables",
                          description="Summarize a SavedModel; --all lists every function's "
                                      "traces with input and output specs and every variable.")
    show.add_argument("dir", metavar="DIR")
    show.add_argument("--all", action="store_true", help="show everything")
    run_p = sub.add_parser("run", help="run a signature on .npy inputs",
                           description="Run signature NAME on inputs read from .npy files; "
                                       "print the outputs, or write them with --output.")
    run_p.add_argument("dir", metavar="DIR")
    run_p.add_argument("--signature", required=True, metavar="NAME")
    run_p.add_argument("--input", dest="inputs", action="append", default=[],
                       metavar="NAME=FILE.npy", help="one input (repeat for each)")
    run_p.add_argument("--output", metavar="DIR", help="write NAME.npy files here")
    run_p.add_argument("--backend", default="auto", choices=["auto", "numpy", "numba"])
    return p


def run(args):
    if args.action == "show":
        print(show_text(_load(args.dir, "numpy"), args.all))
        return 0
    return _run_signature(args)


def _load(path, backend):
    from ..errors import GraphcError
    from ..saved_model import load
    try:
        return load(path, backend=backend)
    except GraphcError as e:
        raise UsageError(str(e)) from None


# -- show ----------------------------------------------------------------------------------

def show_text(root, everything):
    """The text `show` prints for a loaded model."""
    from ..runtime.variables import Variable
    from ..saved_model import LoadedFunction, LoadedObject
    lines, seen = [], set()
    objects, functions, variables = [], [], []

    def visit(path, o):
        if id(o) in seen:
            return
        seen.add(id(o))
        if isinstance(o, Variable):
            variables.append((path, o))
        elif isinstance(o, LoadedFunction):
            functions.append((path, o))
        elif isinstance(o, LoadedObject):
            objects.append((path, o))
            for name, v in sorted(vars(o).items()):
                if not name.startswith("_") and name != "signatures" or name == "__call__":
                    visit(f"{path}.{name}", v)
        elif isinstance(o, (list, tuple)):
            for i, v in enumerate(o):
                visit(f"{path}[{i}]", v)
        elif isinstance(o, dict):
            for k, v in o.items():
                visit(f"{path}[{k!r}]", v)
    visit("root", root)
    lines.append(f"SavedModel: {len(objects)} objects, {len(functions)} functions, "
                 f"{len(variables)} variables, {len(root.signatures)} signatures")
    lines.append("signatures:")
    for name, s in sorted(root.signatures.items()):
        lines.append(f"  {name}")
        if everything:
            for n, spec in s.input_specs.items():
                lines.append(f"    input  {n}: {_spec(spec.dtype, spec.shape)}")
            for n, i in s.output_names.items():
                t = s._cf.graph.outputs[i].type
                lines.append(f"    output {n}: {_spec(t.dtype, t.shape)}")
    lines.append("objects:")
    for path, o in objects:
        lines.append(f"  {path}: {o._saved_class}")
    lines.append("functions:")
    for path, f in functions:
        lines.append(f"  {path}: {len(f._traces)} trace(s)")
        if everything:
            for key, cf in f._traces:
                args = ", ".join(f"{p.name}={_describe(k)}" for p, k in zip(f._params, key))
                outs = ", ".join(_spec(v.type.dtype, v.type.shape) for v in cf.graph.outputs)
                lines.append(f"    ({args}) -> ({outs})")
    lines.append("variables:")
    for path, v in variables:
        if everything or len(variables) <= 20:
            lines.append(f"  {path}: {_spec(v.dtype, v.shape)}"
                         + ("" if v.trainable else " (not trainable)"))
    if not everything and len(variables) > 20:
        lines.append(f"  ({len(variables)} variables; --all lists them)")
    return "\n".join(lines)


def _describe(key):
    """A signature key as `show` writes it: tensors as float32[?,3], variables marked."""
    from ..runtime import signature as sig
    tag = key[0]
    if tag in (sig.TENSOR, sig.RESOURCE):
        return ("Variable " if tag == sig.RESOURCE else "") + _spec(key[1], key[2])
    if tag in (sig.LIST, sig.TUPLE):
        inner = ", ".join(_describe(k) for k in key[1])
        return f"[{inner}]" if tag == sig.LIST else f"({inner})"
    if tag == sig.DICT:
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in key[1]) + "}"
    if tag == sig.NAMED:
        return f"{key[1].__name__}(" + ", ".join(_describe(k) for k in key[2]) + ")"
    return sig.describe(key)


def _spec(dtype, shape):
    return f"{dtype.name}[{','.join('?' if d is None else str(d) for d in shape)}]"


# -- run -----------------------------------------------------------------------------------

def _run_signature(args):
    inputs = {}
    for item in args.inputs:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--input {item!r}: write NAME=FILE.npy")
        if name in inputs:
            raise UsageError(f"--input {name!r} given twice")
        try:
            inputs[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError) as e:
            raise UsageError(f"--input {name}={path}: cannot read it as a .npy file without "
                             f"pickle ({type(e).__name__}: {e})") from None
        if not isinstance(inputs[name], np.ndarray):
            raise UsageError(f"--input {name}={path}: is an .npz archive, not one .npy array")
    root = _load(args.dir, args.backend)
    fn = root.signatures.get(args.signature)
    if fn is None:
        have = ", ".join(sorted(root.signatures)) or "none"
        raise UsageError(f"{args.dir} has no signature {args.signature!r} (it has: {have})")
    try:
        outs = fn(**inputs)
    except (TypeError, ValueError) as e:
        raise UsageError(f"signature {args.signature!r}: {e}") from None
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        for name, t in outs.items():
            np.save(os.path.join(args.output, f"{name}.npy"), t.numpy(), allow_pickle=False)
            print(f"wrote {os.path.join(args.output, name + '.npy')}")
        return 0
    for name, t in outs.items():
        a = t.numpy()
        print(f"{name}: {_spec_np(a)}")
        print(np.array2string(a, threshold=1000))
    return 0


def _spec_np(a):
    from ..dtypes import from_numpy
    return _spec(from_numpy(a.dtype), a.shape)
