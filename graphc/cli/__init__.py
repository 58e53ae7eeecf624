"""The `graphc` command line: one module per subcommand, each with `add_parser` and `run`."""
import argparse
import importlib
import os
import sys

# subcommand name -> module under graphc.cli (modules are imported lazily, so a missing
# optional subcommand never breaks the others)
SUBCOMMANDS = {"to-code": "to_code", "graph": "graph", "bench": "bench",
               "saved-model": "saved_model"}


class UsageError(Exception):
    """A bad path, name or spec: reported as one line, exit status 2."""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="graphc", description="graphc: a tracing graph "
                                     "compiler for Python numeric code.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"graphc {__version__}")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = {}
    for name, mod in SUBCOMMANDS.items():
        try:
            modules[name] = importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise
            continue
        modules[name].add_parser(subs)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return modules[args.command].run(args) or 0
    except UsageError as e:
        print(f"graphc {args.command}: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader went away (`graphc graph ... | head`): stop quietly, as other Unix
        # tools do, and keep the interpreter's final flush from raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141      # 128 + SIGPIPE, what a shell reports for a killed writer


if __name__ == "__main__":
    sys.exit(main())
