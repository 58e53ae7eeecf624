"""Which callables are converted, the per-function cache, and building converted functions."""
import __future__
import functools
import inspect
import sys
import threading
import types
import warnings
import weakref

from . import transformer
from .pyct.parsing import SourceUnavailable, function_node

# modules whose functions are always called as they are
_NOT_CONVERTED = {"graphc", "numpy", "numba", "llvmlite", "scipy", "gast", "pytest", "_pytest",
                  "hypothesis", "builtins"} | set(sys.stdlib_module_names)

_cache = weakref.WeakKeyDictionary()     # function -> converted function (or itself)
_by_code = weakref.WeakKeyDictionary()   # original code object -> transformer.Converted
_converted_code = weakref.WeakSet()      # code objects that came out of the converter
_warned = set()
# Held while converting (parsing and transforming source, no user code): threads that
# convert one function at once get one converted function. Reentrant: converting may
# look up other conversions.
_lock = threading.RLock()
# `from __future__ import ...` features of the user's module apply to its converted code
_FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag


class AutoGraphWarning(UserWarning):
    """A function called from compiled code could not be converted; it runs unconverted."""


def do_not_convert(func=None):
    """Mark `func` to be called as is from converted code (usable as a decorator)."""
    def mark(f):
        try:
            f.__graphc_do_not_convert__ = True
        except (AttributeError, TypeError):
            pass
        return f
    return mark if func is None else mark(func)


def _module_excluded(fn):
    module = getattr(fn, "__module__", None) or ""
    return module.split(".")[0] in _NOT_CONVERTED


def converted_callable(f):
    """What converted code calls for `f`: its converted version, or `f` itself."""
    from ..runtime.function import Function
    hook = getattr(f, "__graphc_convert__", None)    # gc.custom_gradient: converts its f
    if hook is not None:
        return hook()
    if isinstance(f, Function) or inspect.isclass(f) or getattr(f, "__graphc_do_not_convert__",
                                                               False):
        return f
    if isinstance(f, types.FunctionType):
        return convert(f)
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        conv = convert(f.__func__)
        return f if conv is f.__func__ else types.MethodType(conv, f.__self__)
    if isinstance(f, functools.partial):
        inner = converted_callable(f.func)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and not _module_excluded(type(f)):
        conv = convert(call)
        return f if conv is call else types.MethodType(conv, f)
    return f


def convert(fn):
    """The converted version of Python function `fn` (cached per function object)."""
    done = _cache.get(fn)
    if done is not None:
        return done
    with _lock:
        done = _cache.get(fn)
        if done is not None:
            return done
        if fn.__code__ in _converted_code or _uses_ag(fn) or \
                getattr(fn, "__graphc_do_not_convert__", False) or _module_excluded(fn) or \
                fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                                        inspect.CO_ASYNC_GENERATOR):
            result = fn
        else:
            try:
                result = _instantiate(fn, converted_code(fn))
            except SourceUnavailable as e:
                _warn_unconverted(fn, str(e))
                result = fn
        try:
            _cache[fn] = result
        except TypeError:
            pass
    return result


def _uses_ag(fn):
    """Code that already calls the runtime, or is defined where `ag__` is a global (exec'd
    to_code output, whose nested lambdas and defs need no second conversion), is
    converted."""
    code = fn.__code__
    if "ag__" in code.co_names or "ag__" in code.co_freevars:
        return True
    from . import operators
    return getattr(fn, "__globals__", {}).get("ag__") is operators


def converted_code(fn):
    """The transformer result for `fn`'s code (shared by closures of one def)."""
    code = fn.__code__
    done = _by_code.get(code)
    if done is not None:
        return done
    with _lock:
        done = _by_code.get(code)
        if done is not None:
            return done
        node, filename = function_node(fn)
        try:
            done = transformer.convert(node, filename, code.co_freevars,
                                       code.co_flags & _FUTURE_FLAGS, _resolver(fn))
        except SyntaxError as e:   # a construct the converter cannot express
            raise SourceUnavailable(f"its converted code does not compile ({e})") from None
        except Exception as e:  # noqa: BLE001 - a converter limitation must not break the call
            raise SourceUnavailable(f"the converter failed on it ({type(e).__name__}: {e}); "
                                    "please report this with the function's source") from e
        _register(done.code)
        _by_code[code] = done
    return done


def _resolver(fn):
    """A free name of `fn` -> its value now (closure cell, global, builtin), for the
    converter's static directives."""
    import builtins
    from .converters.directives import _MISSING
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    namespace = getattr(fn, "__globals__", {})

    def resolve(name):
        if name in cells:
            try:
                return cells[name].cell_contents
            except ValueError:      # an empty cell
                return _MISSING
        if name in namespace:
            return namespace[name]
        return getattr(builtins, name, _MISSING)
    return resolve


def _register(code):
    _converted_code.add(code)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _register(c)


def _instantiate(fn, done):
    from . import operators
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells["ag__"] = types.CellType(operators)
    closure = tuple(cells[name] for name in done.code.co_freevars)
    new = types.FunctionType(done.code, fn.__globals__, fn.__name__, fn.__defaults__, closure)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__dict__.update(fn.__dict__)
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
    new.__graphc_original__ = fn
    return new


def _warn_unconverted(fn, why):
    key = getattr(fn, "__qualname__", repr(fn))
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(f"AutoGraph could not convert {key}: {why}. It is called unconverted, so "
                  "Python control flow on tensors inside it will fail while tracing; use "
                  "gc.cond / gc.while_loop there, or decorate it with "
                  "@gc.autograph.do_not_convert to silence this warning.",
                  AutoGraphWarning, stacklevel=4)
