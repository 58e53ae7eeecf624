"""Rebuild a function from its to_code text: exec it with the runtime bound to `ag__`."""
import graphc as gc
from graphc.autograph import operators


def run_to_code(fn):
    """The function defined by gc.autograph.to_code(fn), in fn's globals and closure."""
    src = gc.autograph.to_code(fn)
    compile(src, "<to_code>", "exec")
    names = dict(fn.__globals__)
    if fn.__closure__:
        names.update({n: c.cell_contents for n, c in zip(fn.__code__.co_freevars,
                                                        fn.__closure__)})
    names["ag__"] = operators
    if src.lstrip().startswith("lambda") or fn.__name__ == "<lambda>":
        return eval(src, names)
    exec(src, names)
    return names[fn.__name__]
