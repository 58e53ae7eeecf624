"""Finding a function's source: the whole file is parsed (lines as in the file), then the
function's `def` or `lambda` node is picked by its first line and parameters."""
import copy
import inspect
import linecache

import gast

_trees = {}   # filename -> (source text, gast module)


class SourceUnavailable(OSError):
    """The function's source cannot be found or parsed; the message says why."""


def _file_tree(filename):
    lines = linecache.getlines(filename)
    if not lines:
        linecache.checkcache(filename)
        lines = linecache.getlines(filename)
    if not lines:
        raise SourceUnavailable(f"its source file {filename!r} cannot be read (functions made "
                                "by exec/eval or in an interactive session have no source)")
    text = "".join(lines)
    cached = _trees.get(filename)
    if cached is not None and cached[0] == text:
        return cached[1]
    try:
        tree = gast.parse(text)
    except SyntaxError as e:
        raise SourceUnavailable(f"its source file {filename!r} does not parse: {e}") from None
    _trees[filename] = (text, tree)
    return tree


def _param_names(node):
    a = node.args
    names = [p.id for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.id for p in (a.vararg, a.kwarg) if p is not None]
    return names


def _code_params(code):
    n = code.co_argcount + code.co_kwonlyargcount
    flags = code.co_flags
    n += bool(flags & inspect.CO_VARARGS) + bool(flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:n])


def function_node(fn):
    """A fresh copy of the gast FunctionDef or Lambda node of `fn`, and its filename."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailable("it is not a Python function")
    filename = code.co_filename
    if filename.startswith("<") and not linecache.getlines(filename):
        raise SourceUnavailable(f"it was defined in {filename}, which has no source file "
                                "(exec/eval or an interactive session)")
    tree = _file_tree(filename)
    first, params = code.co_firstlineno, _code_params(code)
    is_lambda = code.co_name == "<lambda>"
    found = []
    for node in gast.walk(tree):
        if is_lambda and isinstance(node, gast.Lambda):
            if node.lineno == first and _param_names(node) == params:
                found.append(node)
        elif not is_lambda and isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)):
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if node.name == code.co_name and first in (start, node.lineno):
                found.append(node)
    if not found:
        raise SourceUnavailable(f"its source in {filename} (line {first}) does not match the "
                                "running code (was the file edited after import?)")
    if len(found) > 1:
        raise SourceUnavailable(f"{len(found)} lambdas with the same parameters start on "
                                f"{filename}:{first}, so its source is ambiguous; put it on its "
                                "own line or make it a def")
    return copy.deepcopy(found[0]), filename
