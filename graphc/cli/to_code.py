"""`graphc to-code TARGET`: print the AutoGraph-converted source of a function.

TARGET is `path/to/file.py::FUNC` or `package.module:FUNC` (FUNC may be dotted, e.g.
`Model.step`).
"""
from . import UsageError

_EPILOG = """\
examples:
  graphc to-code model.py::predict
  graphc to-code mypkg.layers:Dense.__call__

The output is the function as gc.function traces it: Python if/while/for, break, continue,
return, and/or/not, ternaries and assert rewritten into ag__ operators that keep Python
semantics on Python values and build graph control flow on tensors. Lines the trace-time
side-effect lint flags carry a `# graphc lint` comment.
Bad paths and missing functions print one line and exit with status 2."""


def add_parser(subparsers):
    """Register the `to-code` subcommand."""
    import argparse
    p = subparsers.add_parser(
        "to-code", help="print the AutoGraph-converted source of a function",
        description="Print the source gc.function traces for FUNC after AutoGraph has "
                    "converted its Python control flow (gc.autograph.to_code).",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("target", metavar="TARGET",
                   help="PATH.py::FUNC or module.sub:FUNC (FUNC may be dotted: Class.method)")
    return p


def run(args):
    """Load the function and print its converted source."""
    import sys
    from ..autograph import to_code
    from ..autograph.pyct.parsing import SourceUnavailable
    from .graph import load_function
    fn = load_function(args.target)
    try:
        text = to_code(fn)
    except SourceUnavailable as e:
        raise UsageError(f"cannot convert {args.target}: {e}") from None
    except TypeError as e:
        raise UsageError(f"cannot convert {args.target}: {e}") from None
    sys.stdout.write(text)
    return 0
